"""The sandbox itself: the one Jinja environment, how it compiles, and a render in this process.

This module runs inside the render process (`workbench.compaction._sandbox`); nothing else
calls it directly. `ImmutableSandboxedEnvironment` keeps templates away from Python internals;
`_Sandbox` also fails loudly on an unsafe attribute (instead of rendering it empty) and checks
the size limits (`_limits`) on the operators that can build huge values. Compiling refuses a
template nested deeper than ``max_depth`` levels or longer than ``max_template_chars`` before
Python's recursion limit or memory is reached. Compiled templates and the variables each reads
are kept by source in the render process's memo (``templates``, ``variables``: `workbench._memo`).
"""

from __future__ import annotations

import os
import re
import signal
import sys
from multiprocessing.connection import Connection
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from workbench._memo import memo
from workbench.compaction import _limits
from workbench.compaction._lifeline import die_with_parent
from workbench.compaction._limits import RenderLimitExceeded, RenderLimits
from workbench.errors import TemplateError

__all__ = ["code_fence", "compile_here", "compiled", "printed_whole_here", "render_here", "serve",
           "template_error", "variables_here"]

_BACKTICK_RUN = re.compile(r"`+")
_SECURITY_HINT = (
    "the template tried to reach Python internals through an unsafe attribute or call ({detail}); "
    "templates may only read the summary variables and use filters such as code_fence"
)
TOO_DEEP = "nested {depth} levels deep at line {line}; the limit is {limit} levels"
TOO_DEEP_FOR_PYTHON = "nested too deeply for Python to compile; the limit is {limit} levels"
TOO_LONG = "the template is {chars:,} characters long; the limit is {limit:,}"
# Block tags that open a level closed by their end tag ({% set x %} without '=' too).
_OPENING_TAGS = frozenset({"if", "for", "macro", "call", "filter", "with", "block", "autoescape"})
_OPEN_BRACKETS = frozenset("([{")
PARENT_CHECK_SECONDS = 1.0
"""How often an idle render process checks that the workbench that started it still runs."""
_CLOSE_BRACKETS = frozenset(")]}")

def code_fence(code: Any) -> str:
    """Wrap code in a backtick fence longer than any backtick run inside it.

    The fence is at least three backticks; only trailing ``\\n`` characters of the code are
    removed (spaces and ``\\r`` stay), exactly like Goose's filter.

    Args:
        code: The snippet (non-strings are converted with ``str``).

    Returns:
        ``fence + "\\n" + code + "\\n" + fence``.
    """
    text = code if isinstance(code, str) else str(code)
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * max(longest + 1, 3)
    return f"{fence}\n{text.rstrip(chr(10))}\n{fence}"


def _finalize(value: Any) -> Any:
    # minijinja prints None and booleans in lowercase; keep custom templates rendering the same.
    if value is None:
        return "none"
    if value is True:
        return "true"
    if value is False:
        return "false"
    _limits.check_walk(value, "a printed value")  # printing walks every item, in C
    return value


class _Sandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, but an unsafe attribute fails loudly instead of rendering empty,
    and the operators that can build huge values check the render's limits first."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        raise SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
        )

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _limits.check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _limits.check_call(__obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        return _limits.check_result(result, "the result of a call")


_ENV = _Sandbox(
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.Undefined,
    autoescape=False,
    finalize=_finalize,
)
_ENV.filters["code_fence"] = code_fence
_ENV.filters = {key: _limits.bounded_filter(fn, key) for key, fn in _ENV.filters.items()}
_ENV.globals["range"] = _limits.bounded_range


class _CompileFailed(Exception):
    """Compiling stopped on something other than a syntax error (a literal out of range)."""


def _too_deep(depth: int, line: int, limit: int) -> RenderLimitExceeded:
    return RenderLimitExceeded(TOO_DEEP.format(depth=depth, line=line, limit=limit))


def _check_nesting(source: str, limit: int) -> None:
    """Refuse block tags and brackets nested past `limit`, from the token stream (the lexer
    does not recurse; Jinja's parser would, down to Python's recursion limit)."""
    depth = brackets = 0
    tag: str | None = None
    expect_tag = assigns = False
    for line, kind, value in _ENV.lex(source):
        if kind == "block_begin":
            tag, expect_tag, assigns = None, True, False
        elif kind == "name" and expect_tag:
            tag, expect_tag = value, False
            if tag in _OPENING_TAGS:
                depth += 1
            elif tag.startswith("end"):
                depth = max(depth - 1, 0)
        elif kind == "operator":
            if value in _OPEN_BRACKETS:
                brackets += 1
            elif value in _CLOSE_BRACKETS:
                brackets = max(brackets - 1, 0)
            elif value == "=" and tag == "set" and brackets == 0:
                assigns = True
        elif kind == "block_end":
            if tag == "set" and not assigns:  # a block set: {% set x %}...{% endset %}
                depth += 1
            brackets = 0
        if depth + brackets > limit:
            raise _too_deep(depth + brackets, line, limit)


def _check_depth(tree: nodes.Node, limit: int) -> None:
    """Refuse a syntax tree deeper than `limit` (chains such as ``a|f|f|f...`` or ``1+1+...``
    parse in a loop but nest in the tree, which the compiler then walks recursively)."""
    stack: list[tuple[nodes.Node, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise _too_deep(depth, getattr(node, "lineno", 1) or 1, limit)
        stack.extend((child, depth + 1) for child in node.iter_child_nodes())


def _parse(source: str, limits: RenderLimits) -> nodes.Template:
    if len(source) > limits.max_template_chars:
        raise RenderLimitExceeded(TOO_LONG.format(chars=len(source),
                                                  limit=limits.max_template_chars))
    _check_nesting(source, limits.max_depth)
    try:
        tree = _ENV.parse(source)
    except RecursionError:  # a construct the token check does not count (a ~ b if c else ...)
        raise RenderLimitExceeded(TOO_DEEP_FOR_PYTHON.format(limit=limits.max_depth)) from None
    _check_depth(tree, limits.max_depth)
    return tree


def _compile(source: str, max_depth: int, max_chars: int) -> jinja2.Template:
    limits = RenderLimits(max_depth=max_depth, max_template_chars=max_chars)
    try:
        tree = _parse(source, limits)
        template = _ENV.from_string(tree)
    except RecursionError:
        raise RenderLimitExceeded(TOO_DEEP_FOR_PYTHON.format(limit=max_depth)) from None
    except (ValueError, OverflowError) as exc:  # a literal Python cannot hold (5,000 digits)
        raise _CompileFailed(f"{type(exc).__name__}: {exc}") from exc
    # '~' compiles to a call of the module-level str_join/markup_join of the template's code;
    # bound them too, since no sandbox hook sees that operator.
    namespace = template.root_render_func.__globals__
    for join in ("str_join", "markup_join"):
        if join in namespace:
            namespace[join] = _limits.bounded_join(namespace[join])
    return template


def compiled(source: str, limits: RenderLimits) -> jinja2.Template | None:
    """The compiled template when this process has it already, else None."""
    found: jinja2.Template | None = memo().templates.get(
        (source, limits.max_depth, limits.max_template_chars))
    return found


def compile_here(source: str, limits: RenderLimits) -> jinja2.Template:
    """`source` compiled in the sandbox (kept in the memo's ``templates``).

    Raises:
        RenderLimitExceeded: nesting or length past `limits`.
        jinja2.TemplateSyntaxError: the source does not parse.
    """
    key = (source, limits.max_depth, limits.max_template_chars)
    found: jinja2.Template = memo().templates.get_or(key, lambda: _compile(*key))
    return found


def error_detail(exc: BaseException) -> str:
    """What a failure to compile or render says after the template's name (one wording
    everywhere)."""
    if isinstance(exc, TemplateError):
        return str(exc).removeprefix(f"template {exc.template!r}: ")
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return f"does not compile: {exc.message} (line {exc.lineno}); fix the template syntax"
    if isinstance(exc, RenderLimitExceeded):
        return f"stopped: {exc.limit}; simplify the template"
    if isinstance(exc, SecurityError):
        return _SECURITY_HINT.format(detail=exc)
    if isinstance(exc, _CompileFailed):
        return f"does not compile: {exc}; fix the template"
    if isinstance(exc, SyntaxError):  # Python's compiler refused the generated code
        return f"does not compile: {exc.msg}; nest fewer blocks"
    if isinstance(exc, MemoryError):
        return "ran out of memory; simplify the template"
    return f"failed to render: {type(exc).__name__}: {exc}; check the variables it uses"


def template_error(exc: BaseException, name: str) -> TemplateError:
    """The `TemplateError` a failure to compile or render becomes."""
    if isinstance(exc, TemplateError):
        return exc
    return TemplateError(name, error_detail(exc))


def _variables(source: str, max_depth: int, max_chars: int) -> frozenset[str]:
    limits = RenderLimits(max_depth=max_depth, max_template_chars=max_chars)
    try:
        return frozenset(meta.find_undeclared_variables(_parse(source, limits)))
    except RecursionError:
        raise RenderLimitExceeded(TOO_DEEP_FOR_PYTHON.format(limit=max_depth)) from None


def variables_here(source: str, limits: RenderLimits) -> frozenset[str]:
    """The undeclared variables `source` reads (kept in the memo's ``variables``), without
    building any constant (the sandbox parses, it does not fold)."""
    key = (source, limits.max_depth, limits.max_template_chars)
    return memo().variables.get_or(key, lambda: _variables(*key))


def render_here(source: str, context: dict[str, Any], limits: RenderLimits,
                stand_ins: dict[str, int] | None = None) -> str:
    """Render `source` in this process's sandbox, checking the size limits; stripped.
    `stand_ins`: variables sent as stand-ins (`workbench.compaction._stand_in`), each with the
    characters of the value it stands for, which the size limits count as printed.

    Raises:
        Exception: whatever stopped it (`template_error` names it).
    """
    stood_in = sum(chars - len(mark) for mark, chars in (stand_ins or {}).items())
    with _limits.bounded(limits, context, stood_in) as bound:
        template = compile_here(source, limits)
        return _limits.stream(template.generate(context), bound.budget, stand_ins).strip()


_PLAIN = (nodes.Output, nodes.If, nodes.For)
"""Where a printed variable is printed as it is: directly in the template, or in the body of
an ``if`` or ``for`` (not in a macro, a call, a filter block or a block ``set``)."""


def _printed_whole(source: str, max_depth: int, max_chars: int) -> frozenset[str]:
    limits = RenderLimits(max_depth=max_depth, max_template_chars=max_chars)
    whole: set[str] = set()
    other: set[str] = set()
    stack: list[tuple[nodes.Node, bool]] = [(_parse(source, limits), True)]
    while stack:
        node, plain = stack.pop()
        for child in node.iter_child_nodes():
            if isinstance(child, nodes.Name):
                printed = plain and isinstance(node, nodes.Output) and child.ctx == "load"
                (whole if printed else other).add(child.name)
            stack.append((child, plain and isinstance(child, _PLAIN)))
    return frozenset(whole - other)


def printed_whole_here(source: str, limits: RenderLimits) -> frozenset[str]:
    """The variables `source` only ever prints as they are (``{{ name }}``, nothing applied,
    not inside a macro, call or filter block): a stand-in for such a value, printed and then
    replaced by the value, gives the text the value gives (kept in the memo's ``variables``)."""
    key = (source, limits.max_depth, limits.max_template_chars)
    return memo().variables.get_or(("printed whole", *key), lambda: _printed_whole(*key))


def _render_each(replies: Connection, source: str,
                 context: tuple[dict[str, Any], list[dict[str, Any]]],
                 limits: RenderLimits) -> None:
    """Answer a ``renders`` request: one answer per set of variables, each sent when it is
    made (a source that does not compile answers its error for every set)."""
    shared, each = context
    if compiled(source, limits) is None:
        replies.send(("compiling",))
        try:
            compile_here(source, limits)
        except Exception as exc:  # the template's: every render of it would say the same
            failed = ("error", error_detail(exc))
            for _ in each:
                replies.send(failed)
            return
        replies.send(("rendering",))
    for values in each:
        try:
            answer: tuple[str, str] = ("ok", render_here(source, {**shared, **values}, limits))
        except MemoryError:
            raise  # the process ends (`serve`)
        except Exception as exc:  # every failure is the template's, named in the answer
            answer = ("error", error_detail(exc))
        replies.send(answer)


def serve(fd_in: int, fd_out: int, memory: int, parent: int = 0) -> None:
    """The render process's loop (`workbench.compaction._sandbox` starts it): answer requests
    until the workbench closes the pipe or its process `parent` is gone (a process it forked
    may hold the pipe open). Ctrl-C is the workbench's to handle: it kills this process, which
    therefore ignores the signal. A workbench killed outright takes it along (`_lifeline`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    try:
        import resource  # POSIX only: where it is missing, the render runs without a cap

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not on this platform
        pass
    requests, replies = Connection(fd_in, writable=False), Connection(fd_out, readable=False)
    replies.send(("ready",))
    while True:
        try:
            while not requests.poll(PARENT_CHECK_SECONDS):
                if parent and os.getppid() != parent:
                    return  # the workbench that started it is gone
            op, source, context, _name, limits = requests.recv()
        except (EOFError, OSError):
            return
        try:
            if op == "renders":
                _render_each(replies, source, context, limits)
                continue
            rendering = op in ("render", "render with stand-ins")
            if op not in ("variables", "printed whole") and compiled(source, limits) is None:
                replies.send(("compiling",))
                compile_here(source, limits)
                if rendering:
                    replies.send(("rendering",))
            if op == "render":
                value: Any = render_here(source, context or {}, limits)
            elif op == "render with stand-ins":
                values, stand_ins = context
                value = render_here(source, values, limits, stand_ins)
            elif op == "check":
                compile_here(source, limits)
                value = None
            elif op == "check and read":
                compile_here(source, limits)
                value = (variables_here(source, limits), printed_whole_here(source, limits))
            elif op == "printed whole":
                value = printed_whole_here(source, limits)
            else:
                value = variables_here(source, limits)
            replies.send(("ok", value))
        except MemoryError:
            replies.send(("error", _limits.memory_limit_message(memory)))
            sys.exit(1)  # a fresh process for the next render
        except Exception as exc:  # every failure is the template's, named in the reply
            replies.send(("error", error_detail(exc)))
