"""TOML for experiment and variant files: a depth-limited reader.

`loads_toml` is ``tomllib.loads`` with the nesting refused past `MAX_TOML_DEPTH` levels before
the standard library's recursive parser could hit Python's recursion limit (``a = [[[[...``),
and after it, for dotted keys (``a.b.c.d... = 1``), which parse flat but nest the data.

Writing goes through ``tomli-w`` (`Experiment.to_toml`), from the pydantic model with its
defaults left out.
"""

from __future__ import annotations

import datetime
import tomllib
from typing import TypeAlias, Union

from workbench.errors import ConfigError

TOMLScalar: TypeAlias = str | int | float | bool | datetime.datetime | datetime.date | datetime.time
"""A TOML leaf: string, number, boolean, or a date/time (`tomllib` decodes those too)."""
TOMLValue: TypeAlias = Union[TOMLScalar, list["TOMLValue"], dict[str, "TOMLValue"]]
"""Any decoded TOML value, nested to any depth."""
TOMLTable: TypeAlias = dict[str, TOMLValue]
"""A decoded TOML table (a whole file is one)."""

MAX_TOML_DEPTH = 32
"""Deepest nesting of arrays and tables an experiment or variant file may have."""
TOO_DEEP = ("{source}:{line}: arrays or tables nested deeper than {limit} levels; an "
            "experiment file never needs that many")


def _too_deep_line(text: str, limit: int) -> int | None:
    """The line where brackets (outside strings and comments) nest past `limit`, or None."""
    depth, line, i, n = 0, 1, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end == -1 else end
            continue
        elif ch in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else ch
            end = i + len(quote)
            while True:
                end = text.find(quote, end)
                if end == -1:
                    return None  # an unterminated string: tomllib reports it
                if quote[0] == '"' and _escaped(text, end):
                    end += 1
                    continue
                break
            line += text.count("\n", i, end)
            i = end + len(quote)
            continue
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return line
        elif ch in "]}":
            depth = max(depth - 1, 0)
        i += 1
    return None


def _escaped(text: str, at: int) -> bool:
    backslashes = 0
    while at - backslashes - 1 >= 0 and text[at - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _data_depth(value: TOMLValue) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def loads_toml(text: str, source: str, limit: int = MAX_TOML_DEPTH) -> TOMLTable:
    """Parse TOML text, refusing nesting past `limit` levels.

    Args:
        text: The file's text.
        source: The file, named in errors.
        limit: The deepest nesting allowed.

    Raises:
        ConfigError: invalid TOML, or nesting past `limit` (names the file and line).
    """
    line = _too_deep_line(text, limit)
    if line is not None:
        raise ConfigError(TOO_DEEP.format(source=source, line=line, limit=limit))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: invalid TOML: {exc}") from exc
    except RecursionError:  # nesting the bracket count cannot see
        raise ConfigError(TOO_DEEP.format(source=source, line="?", limit=limit)) from None
    if _data_depth(data) > limit:
        raise ConfigError(f"{source}: keys nested deeper than {limit} levels (dotted keys "
                          "such as a.b.c...); an experiment file never needs that many")
    return data
