"""Compaction templates: built-in sources, Goose's override lookup, one sandboxed renderer.

Mirrors the crate's ``templates.rs`` plus the goose-side lookup (``prompt_template::template_source``)
that lets a user override a template under ``<goose config dir>/prompts/``.

Every time the workbench touches a template it goes through one module-level
`jinja2.sandbox.ImmutableSandboxedEnvironment` and its limits: rendering (`render`), loading a
variant (`check_template` compiles it), and finding the variables a template reads
(`template_variables`). Templates are user files (exported variants, overrides copied from
other machines), so they must not reach Python internals, and nothing they do may run away:
each render is bounded in time and output size (`RenderLimits`, enforced by ``_limits``), and
so is each compile, which also refuses a template nested deeper than ``max_depth`` levels or
longer than ``max_template_chars`` before Python's recursion limit or memory is reached.
Crossing a limit is a `TemplateError` naming the template and the limit.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from workbench.compaction import _limits
from workbench.compaction._limits import RenderLimitExceeded, RenderLimits
from workbench.errors import ConfigError, TemplateError

__all__ = [
    "COMPACTION_SUMMARY_TEMPLATE",
    "COMPACTION_TEMPLATE",
    "RenderLimits",
    "Templates",
    "bake",
    "builtin_template",
    "check_template",
    "code_fence",
    "goose_config_dir",
    "jinja_literal",
    "render",
    "template_variables",
]

COMPACTION_TEMPLATE = "compaction.md"
"""File name of the prompt that asks the model for the summary (variable: ``messages``)."""
COMPACTION_SUMMARY_TEMPLATE = "compaction_summary.md"
"""File name of the template that renders the parsed summary as markdown."""

_TEMPLATE_NAMES = (COMPACTION_TEMPLATE, COMPACTION_SUMMARY_TEMPLATE)
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
_TOKENS_PER_CLOCK_READ = 4096
_OPEN_BRACKETS = frozenset("([{")
_CLOSE_BRACKETS = frozenset(")]}")


def builtin_template(name: str) -> str | None:
    """The source of a built-in template shipped in ``workbench/prompts``.

    Args:
        name: A file name such as `COMPACTION_TEMPLATE`.

    Returns:
        The template text, or None when no such built-in exists.
    """
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    resource = importlib.resources.files("workbench").joinpath("prompts").joinpath(name)
    try:
        # Bytes, then decode: read_text would translate newlines, which Rust's include_str! does not.
        return resource.read_bytes().decode("utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


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
    for count, (line, kind, value) in enumerate(_ENV.lex(source)):
        if not count % _TOKENS_PER_CLOCK_READ:
            _limits.check_time()
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
    _limits.check_time()  # the clock read between stages does not depend on tracing
    _check_depth(tree, limits.max_depth)
    return tree


@functools.lru_cache(maxsize=128)
def _compile(source: str, max_depth: int, max_chars: int) -> jinja2.Template:
    limits = RenderLimits(max_depth=max_depth, max_template_chars=max_chars)
    try:
        tree = _parse(source, limits)
        template = _ENV.from_string(tree)
        _limits.check_time()
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


def _compiled(source: str, bound: _limits.bounded, limits: RenderLimits) -> jinja2.Template:
    with bound.compiling():
        return _compile(source, limits.max_depth, limits.max_template_chars)


def _template_error(exc: Exception, name: str) -> TemplateError:
    """The `TemplateError` a failure to compile or render becomes (one wording everywhere)."""
    if isinstance(exc, TemplateError):
        return exc
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return TemplateError(
            name, f"does not compile: {exc.message} (line {exc.lineno}); fix the template syntax")
    if isinstance(exc, RenderLimitExceeded):
        return TemplateError(name, f"stopped: {exc.limit}; simplify the template")
    if isinstance(exc, SecurityError):
        return TemplateError(name, _SECURITY_HINT.format(detail=exc))
    if isinstance(exc, _CompileFailed):
        return TemplateError(name, f"does not compile: {exc}; fix the template")
    if isinstance(exc, SyntaxError):  # Python's compiler refused the generated code
        return TemplateError(name, f"does not compile: {exc.msg}; nest fewer blocks")
    if isinstance(exc, MemoryError):
        return TemplateError(name, "ran out of memory; simplify the template")
    return TemplateError(
        name, f"failed to render: {type(exc).__name__}: {exc}; check the variables it uses")


def check_template(source: str, name: str = "<template>",
                   limits: RenderLimits | None = None) -> None:
    """Compile a template in the shared sandbox under its limits, without rendering it.

    Loading a variant calls this, so a template that cannot be compiled fails once, at load,
    instead of once per cell. The compiled template is cached for the renders that follow.

    Raises:
        TemplateError: a syntax error, nesting past ``max_depth``, a source past
            ``max_template_chars``, or compiling past the time limit.
    """
    limits = limits if limits is not None else RenderLimits.from_env()
    try:
        with _limits.bounded(limits, {}) as bound:
            _compiled(source, bound, limits)
    except Exception as exc:
        raise _template_error(exc, name) from exc


def template_variables(source: str, name: str = "<template>",
                       limits: RenderLimits | None = None) -> set[str]:
    """The undeclared variables a template reads, found in the shared sandbox under its limits.

    Raises:
        TemplateError: the template cannot be parsed within its limits (see `check_template`).
    """
    limits = limits if limits is not None else RenderLimits.from_env()
    try:
        with _limits.bounded(limits, {}) as bound, bound.compiling():
            return set(_variables(source, limits.max_depth, limits.max_template_chars))
    except Exception as exc:
        raise _template_error(exc, name) from exc


@functools.lru_cache(maxsize=256)
def _variables(source: str, max_depth: int, max_chars: int) -> frozenset[str]:
    limits = RenderLimits(max_depth=max_depth, max_template_chars=max_chars)
    try:
        return frozenset(meta.find_undeclared_variables(_parse(source, limits)))
    except RecursionError:
        raise RenderLimitExceeded(TOO_DEEP_FOR_PYTHON.format(limit=max_depth)) from None


def render(source: str, context: dict[str, Any], name: str = "<template>",
           limits: RenderLimits | None = None) -> str:
    """Render a template source in the shared sandbox and strip the result.

    Synchronous and CPU-bound: async callers run it on a worker thread
    (``await asyncio.to_thread(render, ...)``) so one slow template cannot stall an event loop.

    Args:
        source: The template text (compiled templates are cached by text).
        context: Template variables.
        name: The template's name, used in error messages.
        limits: Time and size limits; default `RenderLimits.from_env()`.

    Returns:
        The rendered text with surrounding whitespace removed (Goose trims too).

    Raises:
        TemplateError: The template does not compile, fails while rendering, tries to reach
            Python internals, or crosses a render limit (the message names the limit).
    """
    limits = limits if limits is not None else RenderLimits.from_env()
    try:
        with _limits.bounded(limits, context) as bound:
            template = _compiled(source, bound, limits)
            return _limits.stream(template.generate(context), bound.budget).strip()
    except Exception as exc:  # any failure becomes a TemplateError naming the template
        raise _template_error(exc, name) from exc


def jinja_literal(value: Any) -> str:
    """A value as a Jinja (and minijinja) literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(jinja_literal(v) for v in value) + "]"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def bake(source: str, values: dict[str, Any], name: str = "<template>") -> str:
    """`source` with a ``{% set %}`` line for each parameter it reads (none: unchanged).

    The workbench renders a parametrised template with its values as render variables (see
    `Templates.params`); baking writes them into the text for a renderer that knows nothing of
    parameters (Goose, after an export). Both render the same text.

    Raises:
        TemplateError: `source` cannot be parsed within the render limits (only when there
            are values to bake: a template without parameters is returned unread).
    """
    if not values:
        return source
    used = template_variables(source, name)
    lines = [f"{{% set {key} = {jinja_literal(v)} %}}\n" for key, v in values.items()
             if key in used]
    return "".join(lines) + source


def goose_config_dir() -> Path:
    """Goose's config directory, resolved the way Goose resolves it.

    ``$GOOSE_PATH_ROOT/config`` when ``GOOSE_PATH_ROOT`` is set to an absolute path; otherwise
    ``$XDG_CONFIG_HOME/goose`` when that is an absolute path, else ``~/.config/goose``
    (``%APPDATA%\\Block\\goose\\config`` on Windows).
    """
    root = os.environ.get("GOOSE_PATH_ROOT")
    if root and Path(root).is_absolute():
        return Path(root) / "config"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", Path.home())) / "Block" / "goose" / "config"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "goose"
    return Path.home() / ".config" / "goose"


def _read_template_file(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read template {path}: {exc}; fix or remove the file to use the built-in"
        ) from exc


def _builtin(name: str) -> str:
    source = builtin_template(name)
    if source is None:  # only when the package data was not installed
        raise ConfigError(f"built-in template {name!r} is missing; reinstall the workbench")
    return source


@dataclass
class Templates:
    """The pair of template sources one compaction uses (the crate's ``Templates``).

    Attributes:
        compaction: Source of the prompt template (`COMPACTION_TEMPLATE`).
        summary: Source of the summary render template (`COMPACTION_SUMMARY_TEMPLATE`).
        name: A label for reports (variant folder name, ``"default"``, ``"goose"``).
        params: Template parameter values (a parametrised variant's point), passed to both
            templates as render variables: every point of a variant shares one compiled
            template per source. `baked` writes them into the text instead (an export).
    """

    compaction: str
    summary: str
    name: str = "default"
    params: dict[str, Any] = field(default_factory=dict)

    def baked(self) -> Templates:
        """These templates with `params` written in as ``{% set %}`` lines (see `bake`): what
        an export writes, rendering without any variables beside the templates' own exactly
        what these templates render with `params`. Computed once per instance.

        Raises:
            TemplateError: a source cannot be parsed within the render limits.
        """
        if not self.params:
            return self
        cached = self.__dict__.get("_baked")
        if cached is None or cached[0] != (self.compaction, self.summary, self.params):
            where = f"{self.name}/" if self.name else ""
            done = Templates(bake(self.compaction, self.params, where + COMPACTION_TEMPLATE),
                             bake(self.summary, self.params, where + COMPACTION_SUMMARY_TEMPLATE),
                             self.name)
            cached = ((self.compaction, self.summary, dict(self.params)), done)
            self.__dict__["_baked"] = cached
        return cached[1]

    @classmethod
    def default(cls) -> Templates:
        """The built-in templates."""
        return cls(_builtin(COMPACTION_TEMPLATE), _builtin(COMPACTION_SUMMARY_TEMPLATE))

    @classmethod
    def from_dir(cls, path: str | os.PathLike[str], name: str | None = None) -> Templates:
        """Templates from a variant folder; a file the folder lacks falls back to the built-in.

        Args:
            path: Folder holding ``compaction.md`` and/or ``compaction_summary.md``.
            name: Label; defaults to the folder name.

        Raises:
            ConfigError: The folder does not exist or a file in it cannot be read.
        """
        folder = Path(path)
        if not folder.is_dir():
            raise ConfigError(
                f"template folder {folder} does not exist; pass a folder holding "
                f"{COMPACTION_TEMPLATE} and/or {COMPACTION_SUMMARY_TEMPLATE}"
            )
        sources = []
        for file_name in _TEMPLATE_NAMES:
            candidate = folder / file_name
            sources.append(
                _read_template_file(candidate) if candidate.exists() else _builtin(file_name)
            )
        return cls(sources[0], sources[1], name or folder.name)

    @classmethod
    def goose_overrides(cls) -> Templates:
        """The templates Goose itself would use on this machine.

        ``<goose_config_dir()>/prompts/<name>`` wins when it exists (a read error is a hard
        error, as in Goose); otherwise the built-in is used.

        Raises:
            ConfigError: An override file exists but cannot be read.
        """
        prompts = goose_config_dir() / "prompts"
        sources = []
        for file_name in _TEMPLATE_NAMES:
            candidate = prompts / file_name
            sources.append(
                _read_template_file(candidate) if candidate.exists() else _builtin(file_name)
            )
        return cls(sources[0], sources[1], "goose")

    def content_hash(self) -> str:
        """A tagged digest of both sources (``"sha256:<hex>"``) for cache keys and result rows;
        a parametrised pair is hashed baked, so it digests what it renders."""
        digest = hashlib.sha256()
        baked = self.baked()
        for source in (baked.compaction, baked.summary):
            data = source.encode("utf-8")
            digest.update(f"{len(data)}:".encode())
            digest.update(data)
        return f"sha256:{digest.hexdigest()}"
