"""How big a filter's or a string method's result will be, predicted before it is built.

A render limit that looks at a value only after it exists is too late for memory: one
``replace`` of the empty string, one ``join`` with a long separator or one ``center`` with a
huge width builds gigabytes in a single C call. For the filters and methods whose output can
be many times their input, `predicted_size` computes an upper bound of the result's length
from the arguments alone (counting, never building); `_limits` refuses the call when the bound
passes the render's output allowance. Everything else grows at most a few times its input, and
its result is checked after the call, so a chain of them is stopped one step past the limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["COUNT_ARGUMENTS", "format_size", "predicted_size"]

COUNT_ARGUMENTS = frozenset({"slice", "batch"})
"""Filters whose integer argument is a number of lists to build (bounded like ``range``)."""

# A %-conversion's width and precision; a str.format field's spec (after the colon).
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\d+|\*)?(?:\.(\d+|\*))?")
_BRACE_SPEC = re.compile(r"\{[^{}:]*:([^{}]*)\}")
_DIGITS = re.compile(r"\d+")
_WALK_LIMIT = 100_000  # values a JSON-size estimate looks at before it gives up counting


def _length(value: Any) -> int:
    if isinstance(value, str | bytes | list | tuple | dict):
        return len(value)
    return len(str(value)) if isinstance(value, int | float) else 0


def _number(digits: str) -> int:
    # Past a dozen digits the exact value no longer matters (and int() may refuse it).
    return int(digits) if len(digits) <= 12 else 10**12


def format_size(template: str, args: Any) -> int:
    """An upper bound of ``template % args`` (or ``template.format(...)``): the template, every
    argument's text, and every field width, a ``*`` width taken from the integer arguments."""
    values = list(args.values()) if isinstance(args, Mapping) else (
        list(args) if isinstance(args, tuple | list) else [args])
    widths = 0
    for match in _PERCENT.finditer(template):
        widths += sum(_number(g) for g in match.groups() if g and g != "*")
    for spec in _BRACE_SPEC.findall(template):
        widths += sum(_number(d) for d in _DIGITS.findall(spec))
    if "*" in template or ":{" in template:  # widths taken from the arguments
        widths += sum(v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0)
    return len(template) + widths + sum(_length(v) for v in values)


def _replace(text: Any, old: Any, new: Any, count: Any = None) -> int | None:
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return None
    hits = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(len(new) - len(old), 0)


def _joined(items: Any, separator: Any) -> int | None:
    if not isinstance(items, Sequence) or isinstance(items, str):
        return None
    sep = len(separator) if isinstance(separator, str) else 0
    return sum(_length(item) for item in items) + sep * max(len(items) - 1, 0)


def _indent(text: Any, width: Any = 4, *_: Any, **__: Any) -> int | None:
    if not isinstance(text, str):
        return None
    each = width if isinstance(width, int) and not isinstance(width, bool) else len(str(width))
    return len(text) + (text.count("\n") + 1) * max(each, 0)


def _wordwrap(text: Any, width: Any = 79, break_long_words: Any = True,
              wrapstring: Any = None, *_: Any, **__: Any) -> int | None:
    if not isinstance(text, str):
        return None
    size = max(width, 1) if isinstance(width, int) and not isinstance(width, bool) else 79
    # A wrapped line and the word that did not fit on it hold more than `width` characters.
    lines = 2 * len(text) // size + text.count("\n") + 2
    return len(text) + lines * (len(wrapstring) if isinstance(wrapstring, str) else 2)


def _padded(text: Any, width: Any = 0, *_: Any) -> int | None:
    if isinstance(width, int) and not isinstance(width, bool):
        return max(_length(text), width)
    return None


def _expandtabs(text: Any, tabsize: Any = 8) -> int | None:
    if not isinstance(text, str) or not isinstance(tabsize, int):
        return None
    return len(text) + text.count("\t") * max(tabsize, 0)


def _json_size(value: Any, indent: Any = None, **_: Any) -> int | None:
    if indent is None:
        return None
    each = indent if isinstance(indent, int) and not isinstance(indent, bool) else len(str(indent))
    # Every value of the document starts a line indented by its depth.
    lines = depth_sum = 0
    stack = [(value, 1)]
    while stack and lines < _WALK_LIMIT:
        item, depth = stack.pop()
        lines += 1
        depth_sum += depth
        if isinstance(item, Mapping):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list | tuple):
            stack += [(v, depth + 1) for v in item]
    return depth_sum * max(each, 0) + lines


def _format_filter(template: Any, *args: Any, **kwargs: Any) -> int | None:
    if not isinstance(template, str):
        return None
    return format_size(template, list(args) + list(kwargs.values()))


# (filtered value, *filter arguments) -> predicted length, by filter name.
_FILTERS: dict[str, Callable[..., int | None]] = {
    "replace": _replace,
    "join": lambda items, d="", *_, **__: _joined(items, d),
    "indent": _indent,
    "wordwrap": _wordwrap,
    "center": _padded,
    "format": _format_filter,
    "tojson": _json_size,
}

# (the object the method belongs to, *call arguments) -> predicted length, by method name.
_METHODS: dict[str, Callable[..., int | None]] = {
    "replace": _replace,
    "join": lambda sep, items=(), *_: _joined(list(items) if isinstance(items, tuple) else items,
                                              sep),
    "center": _padded,
    "ljust": _padded,
    "rjust": _padded,
    "zfill": _padded,
    "expandtabs": _expandtabs,
    "format": lambda template, *args, **kwargs: (
        format_size(template, list(args) + list(kwargs.values()))
        if isinstance(template, str) else None),
    "format_map": lambda template, mapping=None, *_: (
        format_size(template, mapping or {}) if isinstance(template, str) else None),
}


def predicted_size(kind: str, name: str, value: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> int | None:
    """An upper bound of the length of a filter's or method's result, or None when unknown.

    Args:
        kind: ``"filter"`` or ``"method"``.
        name: The filter or method name.
        value: The filtered value, or the object the method is bound to.
        args: The remaining positional arguments.
        kwargs: The keyword arguments.
    """
    table = _FILTERS if kind == "filter" else _METHODS
    predict = table.get(name)
    if predict is None:
        return None
    try:
        return predict(value, *args, **kwargs)
    except TypeError:
        return None  # arguments the filter itself will refuse
