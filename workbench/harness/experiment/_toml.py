"""A tiny TOML writer for the experiment spec (the standard library only reads TOML).

Handles what an `Experiment` dumps to: strings, numbers, booleans, lists of those, inline tables
inside lists, and one level of ``[section]`` tables. ``None`` values are left out (TOML has no
null); callers encode a meaningful None beforehand.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are a subset of TOML basic-string escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        items = [f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None]
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def dumps_toml(data: dict[str, Any]) -> str:
    """Serialize `data`: scalars and lists at the top, then each dict as a ``[section]``.

    Args:
        data: A mapping whose values are scalars, lists, or dicts of scalars and lists.

    Returns:
        TOML text that ``tomllib.loads`` reads back to the same data (minus None values).
    """
    head: list[str] = []
    sections: list[str] = []
    for name, value in data.items():
        if value is None:
            continue
        if isinstance(value, dict):
            body = [f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None]
            if not body:
                continue
            sections.append("\n".join([f"[{_key(name)}]", *body]))
        else:
            head.append(f"{_key(name)} = {_value(value)}")
    parts = ["\n".join(head)] if head else []
    parts.extend(sections)
    return "\n\n".join(parts) + "\n"
