"""Limits on one template render: time, memory, output size, ``range`` length, number sizes.

Templates are user files, and the sandbox alone only keeps them away from Python internals: a
template can still loop for hours (``{% for a in range(99999) %}{% for b in range(99999) %}``)
or grow a string until the machine swaps (``{{ 'x' * 10 ** 10 }}``). `RenderLimits` bounds
both, in two layers:

- **time and memory**: every compile and render runs in the render process (`_sandbox`), which
  the workbench stops the moment the time limit passes, whatever the template is doing (a
  Python loop, or a C call that never returns), and whose memory is capped
  (`RENDER_MEMORY_LIMIT`). Nothing inside the render watches the clock.
- **sizes**, checked in the render process before a value is built, so a template that asks
  for a gigabyte gets a message saying which operation and which limit: the characters
  produced so far (between output chunks); the sandbox's operator intercepts (``*``, ``**``,
  ``+``, ``%``) and ``~`` joins, which refuse a result larger than the limits *before*
  computing it; ``range`` and every filter and method call, which refuse a length or width
  beyond the limits, predict the result's size where it can be many times the input
  (``replace``, ``join``, ``indent``, ``center``, ``str.format``...: `_growth`) and check
  every result after the call.

Every filter is marked as needing the render context, which keeps Jinja's constant folding
from calling it at compile time with no limits in force (``{{ 'x'|center(10**9) }}`` would
otherwise be built while the template compiles).

Crossing a size limit raises `RenderLimitExceeded`, which the renderer turns into a
`workbench.errors.TemplateError` naming the template and the limit.
"""

from __future__ import annotations

import contextvars
import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2

from workbench.compaction._growth import COUNT_ARGUMENTS, format_size, predicted_size
from workbench.compaction._walk import MAX_WALK, walk_exceeds
from workbench.errors import ConfigError

__all__ = ["MEMORY_LIMIT_ENV", "RENDER_MEMORY_LIMIT", "RenderLimitExceeded", "RenderLimits",
           "memory_limit_message", "render_memory_limit", "time_limit_message"]

STAND_IN_START = "\x00"
"""How every stand-in starts (`workbench.compaction._stand_in`): a chunk of output without this
character holds no stand-in, so only the rare chunk with it is searched for them."""

TIME_LIMIT_ENV = "WORKBENCH_RENDER_TIME_LIMIT"
"""Environment variable overriding `RenderLimits.time_limit` (seconds)."""
MAX_OUTPUT_ENV = "WORKBENCH_RENDER_MAX_CHARS"
"""Environment variable overriding `RenderLimits.max_output_chars`."""

MEMORY_LIMIT_ENV = "WORKBENCH_RENDER_MEMORY_LIMIT"
"""Environment variable overriding `RENDER_MEMORY_LIMIT` (bytes, or with a k, m or g suffix)."""
RENDER_MEMORY_LIMIT = 1024 ** 3
"""Bytes of address space the render process may use (its interpreter and Jinja included): with
the workbench's own process beside it, a run stays under 1.5 GB resident whatever a template
does."""
_MIN_MEMORY = 256 * 1024 ** 2
_UNITS = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


def render_memory_limit() -> int:
    """`RENDER_MEMORY_LIMIT`, or `MEMORY_LIMIT_ENV` when set.

    Raises:
        ConfigError: the variable is not a size of at least 256m.
    """
    raw = os.environ.get(MEMORY_LIMIT_ENV, "").strip().lower()
    if not raw:
        return RENDER_MEMORY_LIMIT
    scale = _UNITS.get(raw[-1], 1)
    try:
        value = int(float(raw[:-1] if scale != 1 else raw) * scale)
    except ValueError:
        value = 0
    if value < _MIN_MEMORY:
        raise ConfigError(f"{MEMORY_LIMIT_ENV}={raw!r}: expected a size of at least 256m "
                          "(bytes, or a number with a k, m or g suffix)")
    return value


def memory_limit_message(memory: int) -> str:
    """The words for a render stopped at the render process's memory limit."""
    return (f"ran out of memory: the render process may use {memory / 1024 ** 2:,.0f} MiB (set "
            f"{MEMORY_LIMIT_ENV} to change it); simplify the template")


def time_limit_message(seconds: float, compiling: bool = False) -> str:
    """The words for a render (or compile) stopped at its time limit."""
    during = " while compiling" if compiling else ""
    return (f"render time limit of {seconds:g} s exceeded{during} "
            f"(set {TIME_LIMIT_ENV} to change it)")


class RenderLimitExceeded(Exception):
    """A render crossed one of its `RenderLimits`; ``limit`` says which, in words."""

    def __init__(self, limit: str) -> None:
        super().__init__(limit)
        self.limit = limit


@dataclass(frozen=True)
class RenderLimits:
    """How much one template render may take.

    Attributes:
        time_limit: Seconds one render (compile included) may run.
        max_output_chars: Characters a render may produce on top of the allowance for its
            inputs (`output_per_input_char` times the characters of the template variables), so
            a prompt holding a long transcript still renders.
        output_per_input_char: The allowance per character of the template variables.
        max_range: Longest ``range()`` a template may build.
        max_int_bits: Largest integer (in bits) ``*`` or ``**`` may produce; Python refuses to
            print integers above 4300 digits (about 14,300 bits) anyway.
        max_depth: Deepest nesting of a template: blocks inside blocks, brackets inside
            brackets, filters and operators chained (levels of Jinja's syntax tree). Real
            templates nest a handful of levels; Python's own compiler gives up near a hundred.
        max_template_chars: Longest template source that may be compiled.
    """

    time_limit: float = 10.0
    max_output_chars: int = 8 * 1024 * 1024
    output_per_input_char: int = 2
    max_range: int = 10_000
    max_int_bits: int = 16_384
    max_depth: int = 32
    max_template_chars: int = 1024 * 1024

    @classmethod
    def from_env(cls) -> RenderLimits:
        """The defaults, with `TIME_LIMIT_ENV` and `MAX_OUTPUT_ENV` applied when set.

        Raises:
            ConfigError: a variable is set to something other than a positive number.
        """
        kwargs: dict[str, Any] = {}
        for env, field, kind in ((TIME_LIMIT_ENV, "time_limit", float),
                                 (MAX_OUTPUT_ENV, "max_output_chars", int)):
            raw = os.environ.get(env)
            if raw is None or not raw.strip():
                continue
            try:
                value = kind(raw)
            except ValueError:
                value = 0
            if not value > 0:
                raise ConfigError(f"{env}={raw!r}: expected a positive number")
            kwargs[field] = value
        # Read several times per cell (each prompt and summary key holds the limits): with no
        # variable set, the one default instance, not a new one to build, hash and compare.
        return cls(**kwargs) if kwargs or cls is not RenderLimits else _DEFAULT_LIMITS

    def output_allowance(self, context: Any) -> int:
        """Characters a render of `context` may produce."""
        return self.max_output_chars + self.output_per_input_char * _chars(context)


_DEFAULT_LIMITS = RenderLimits()
"""The limits with no environment variable set (frozen: shared by every caller)."""


def _chars(value: Any, depth: int = 0) -> int:
    # Characters of the strings a context holds (the transcript, summary fields).
    if isinstance(value, str):
        return len(value)
    if depth > 6:
        return 0
    if isinstance(value, dict):
        return sum(_chars(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_chars(v, depth + 1) for v in value)
    return 0


class _Budget:
    """The size limits of the render in progress."""

    def __init__(self, limits: RenderLimits, allowance: int) -> None:
        self.limits = limits
        self.allowance = allowance

    def check_size(self, chars: int, what: str = "output") -> None:
        if chars > self.allowance:
            raise RenderLimitExceeded(
                f"{what} of {chars:,} characters exceeds the render output limit of "
                f"{self.allowance:,} characters (set {MAX_OUTPUT_ENV} to change it)")

    def check_int_bits(self, bits: float, operator: str) -> None:
        if bits > self.limits.max_int_bits:
            raise RenderLimitExceeded(
                f"'{operator}' would build an integer of about {int(bits):,} bits; the limit "
                f"is {self.limits.max_int_bits:,} bits")


_ACTIVE: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "workbench_render_budget", default=None)


def _active() -> _Budget | None:
    return _ACTIVE.get()


class bounded:  # noqa: N801  (used as a context manager, like contextlib helpers)
    """Context manager: enforce `limits`' sizes on the render run inside it (this thread)."""

    def __init__(self, limits: RenderLimits, context: Any, stood_in: int = 0) -> None:
        # `stood_in`: characters of the variables sent as stand-ins (`stream`), beyond
        # the stand-ins' own: the allowance is that of the variables themselves.
        self.budget = _Budget(limits, limits.output_allowance(context)
                              + limits.output_per_input_char * stood_in)
        self._token: contextvars.Token[_Budget | None] | None = None

    def __enter__(self) -> bounded:
        self._token = _ACTIVE.set(self.budget)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _ACTIVE.reset(self._token)


def stream(chunks: Iterator[str], budget: _Budget,
           stand_ins: Mapping[str, int] | None = None) -> str:
    """Join a render's output chunks, checking the size between chunks. A stand-in printed
    (a key of `stand_ins`, always printed whole, never cut across chunks) counts as the
    characters of the value it stands for."""
    out: list[str] = []
    size, allowance = 0, budget.allowance
    for chunk in chunks:
        size += len(chunk)
        if stand_ins and STAND_IN_START in chunk:
            size += sum((chars - len(mark)) * chunk.count(mark)
                        for mark, chars in stand_ins.items())
        if size > allowance:  # the call only when over: a render yields a chunk per output
            budget.check_size(size)
        out.append(chunk)
    return "".join(out)


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else None


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse ``left <operator> right`` when its result would cross the active limits."""
    budget = _active()
    if budget is None:
        return
    ints = (isinstance(left, int) and not isinstance(left, bool)
            and isinstance(right, int) and not isinstance(right, bool))
    if operator == "**" and ints:
        if right > 0 and abs(left) > 1:
            budget.check_int_bits(right * math.log2(abs(left)), operator)
    elif operator == "*":
        if ints:
            budget.check_int_bits(left.bit_length() + right.bit_length(), operator)
        else:
            for seq, times in ((left, right), (right, left)):
                n = _length(seq)
                if n is not None and isinstance(times, int):
                    budget.check_size(n * max(times, 0), "a repeated string or list")
    elif operator == "+":
        a, b = _length(left), _length(right)
        if a is not None and b is not None:
            budget.check_size(a + b, "a concatenation")
    elif operator == "%" and isinstance(left, str):
        budget.check_size(format_size(left, right), "a %-formatted string")


def bounded_join(join: Callable[[Any], str]) -> Callable[[Any], str]:
    """Wrap Jinja's ``~`` join (``str_join``/``markup_join``) with the output-size check."""
    def guarded(seq: Any) -> str:
        parts = list(seq)
        budget = _active()
        if budget is not None:
            budget.check_size(sum(len(p) if isinstance(p, str) else len(str(p)) for p in parts),
                              "a '~' concatenation")
        return join(parts)
    return guarded


def bounded_range(*args: int) -> range:
    """``range`` refusing more than `RenderLimits.max_range` items."""
    rng = range(*args)
    budget = _active()
    if budget is not None and len(rng) > budget.limits.max_range:
        raise RenderLimitExceeded(
            f"range of {len(rng):,} items exceeds the limit of {budget.limits.max_range:,}")
    return rng


def _check_ints(budget: _Budget, values: Any, what: str, *, counts: bool = False) -> None:
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            if counts and value > budget.limits.max_range:
                raise RenderLimitExceeded(
                    f"a count of {value:,} exceeds the limit of {budget.limits.max_range:,}")
            budget.check_size(value, what)


def check_walk(value: object, what: str) -> None:
    """Refuse a value that printing, joining, serialising or hashing would walk past
    `MAX_WALK` items (`workbench.compaction._walk`), before anything walks it."""
    if walk_exceeds(value, MAX_WALK):
        raise RenderLimitExceeded(
            f"{what} holds more than {MAX_WALK:,} items when walked (a list that holds its "
            f"own parts many times over); the limit is {MAX_WALK:,} items")


def check_result(value: Any, what: str) -> Any:
    """`value` when its length is within the active render's output allowance."""
    budget = _active()
    n = _length(value)
    if budget is not None and n is not None:
        budget.check_size(n, what)
    return value


def check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse a method call from a template whose result would cross the active limits:
    integer arguments past the output allowance, or a predicted result (``str.replace``,
    ``str.join``, ``str.center``, ``str.format``...) past it."""
    budget = _active()
    if budget is None:
        return
    name = getattr(obj, "__name__", None)
    _check_ints(budget, (*args, *kwargs.values()), f"a width or count passed to {name or 'a call'}")
    owner = getattr(getattr(obj, "__wrapped__", obj), "__self__", None)
    if isinstance(name, str) and isinstance(owner, str | bytes):
        size = predicted_size("method", name, owner, args, kwargs)
        if size is not None:
            budget.check_size(size, f"the result of .{name}()")


def bounded_filter(fn: Callable[..., Any], name: str = "") -> Callable[..., Any]:
    """Wrap a filter: integer arguments (widths, counts) may not exceed the output limit, a
    result that can be many times the input is predicted and refused before it is built, and
    every result is checked after the call.

    The wrapper takes the render context (``pass_context``), which also keeps Jinja from
    calling the filter while it folds constants at compile time, outside any render's limits.
    """
    passes = getattr(getattr(fn, "jinja_pass_arg", None), "name", None)

    @jinja2.pass_context
    def guarded(context: Any, *args: Any, **kwargs: Any) -> Any:
        budget = _active()
        if budget is not None:
            if args:
                check_walk(args[0], f"the input of the {name or 'a'} filter")
            _check_ints(budget, (*args[1:], *kwargs.values()), "a filter width or count",
                        counts=name in COUNT_ARGUMENTS)
            if args:
                size = predicted_size("filter", name, args[0], args[1:], kwargs)
                if size is not None:
                    budget.check_size(size, f"the result of the {name} filter")
        if passes == "context":
            result = fn(context, *args, **kwargs)
        elif passes == "eval_context":
            result = fn(context.eval_ctx, *args, **kwargs)
        elif passes == "environment":
            result = fn(context.environment, *args, **kwargs)
        else:
            result = fn(*args, **kwargs)
        return check_result(result, f"the result of the {name or 'a'} filter")
    for attr in ("__name__", "__doc__"):
        if hasattr(fn, attr):
            setattr(guarded, attr, getattr(fn, attr))
    guarded.__wrapped__ = fn  # type: ignore[attr-defined]
    return guarded
