"""Windows as experiment files write them: ``8000``, ``"8k"``, ``"1m"`` or ``"none"``."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from workbench.models._identity import format_window as format_model_window
from workbench.models._spec import MAX_WINDOW_TOKENS

__all__ = ["Window", "format_window", "parse_window"]

_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")
_NO_WINDOW = frozenset({"none", "off", "uncapped", ""})


def parse_window(value: object) -> int | None:
    """``8000``, ``"8k"`` (k = 1024, as in model strings), or ``"none"`` -> tokens (None = no cap)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise PydanticCustomError("window", "a window is a token count like 8000 or '8k', not a boolean")
    if isinstance(value, int):
        if value <= 0:
            raise PydanticCustomError("window", "a window must be a positive token count, not {v}",
                                      {"v": value})
        return _at_most_max(value)
    if isinstance(value, str):
        if value.strip().lower() in _NO_WINDOW:
            return None
        m = _WINDOW.match(value)
        if m and len(m.group(1)) > 12:  # thousands of digits: too big, and float() may refuse
            raise _too_big(f"a {len(m.group(1)):,}-digit number of")
        if m:
            scale = {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
            tokens = int(float(m.group(1)) * scale)
            if tokens > 0:
                return _at_most_max(tokens)
        raise PydanticCustomError(
            "window", "cannot read window {v}: write a token count like 8000, '8k' or '1m', "
            "or 'none' for no cap", {"v": repr(value)})
    raise PydanticCustomError("window", "a window is a token count like 8000 or '8k', not {t}",
                              {"t": type(value).__name__})


def _too_big(tokens: object) -> PydanticCustomError:
    shown = f"{tokens:,} tokens" if isinstance(tokens, int) else f"{tokens} tokens"
    return PydanticCustomError(
        "window", "a window of {v} is over the limit of {limit} tokens (100m)",
        {"v": shown, "limit": f"{MAX_WINDOW_TOKENS:,}"})


def _at_most_max(tokens: int) -> int:
    if tokens > MAX_WINDOW_TOKENS:
        raise _too_big(tokens)
    return tokens


def format_window(window: int | None) -> str:
    """The inverse of `parse_window` for display: 8192 -> ``"8k"``, None -> ``"none"``."""
    return "none" if window is None else format_model_window(window)


Window = Annotated[int | None, BeforeValidator(parse_window)]
"""A context window in tokens (None = no cap); accepts the shorthands of `parse_window`."""
