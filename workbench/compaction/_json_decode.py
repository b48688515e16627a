"""The port of goose's ``safely_parse_json``: a strict parse, then truncated-document repair,
then raw control-character escaping, then both, with serde_json's number and depth rules
(`workbench.compaction._candidates` finds the candidates this parses).
"""

from __future__ import annotations

import json
import math
import re
from typing import NoReturn

from workbench._json_types import JSONValue
from workbench.compaction._json_scan import brackets_outside_strings

__all__ = ["CONTROL", "ERROR_LOOKAHEAD", "ESCAPE_TABLE", "DecodeFailed", "decode_at",
           "escape_control_chars", "repair_truncated_json", "safely_parse_json"]

CONTROL = re.compile("[\x00-\x1f]")
_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
ESCAPE_TABLE = {
    c: _SHORT_ESCAPES.get(chr(c), f"\\u{c:04x}") for c in range(0x20)
}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SERDE_MAX_DEPTH = 127  # serde_json's recursion limit of 128 fails at the 128th nested level
# A JSON parse error at pos is decided by at most this many characters after pos (\uXXXX pairs).
ERROR_LOOKAHEAD = 16
_FIRST_WINDOW = 2048


def _parse_int(literal: str) -> int | float:
    # serde_json: integers outside u64/i64 become f64, and "-0" becomes -0.0.
    if literal == "-0":
        return -0.0
    value = int(literal)
    if -(2**63) <= value < 2**64:
        return value
    return _parse_float(literal)


def _parse_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"number out of range: {literal}")
    return value


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_reject_constant
)


def _serde_compatible(value: JSONValue, check_surrogates: bool) -> bool:
    """False when serde_json would have refused the document (too deep, lone surrogate)."""
    stack: list[tuple[JSONValue, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > _SERDE_MAX_DEPTH:
                return False
            for key, child in node.items():
                if check_surrogates and _SURROGATE.search(key):
                    return False
                stack.append((child, depth + 1))
        elif isinstance(node, list):
            if depth > _SERDE_MAX_DEPTH:
                return False
            stack.extend((child, depth + 1) for child in node)
        elif check_surrogates and isinstance(node, str) and _SURROGATE.search(node):
            return False
    return True


class DecodeFailed(Exception):
    def __init__(self, pos: int | None) -> None:
        self.pos = pos


def decode_at(text: str, start: int, end: int, windowed: bool = True) -> JSONValue:
    """``serde_json::from_str(&text[start:end])`` for a brace-balanced slice, paid by depth reached.

    The slice (which must start with an object) is decoded through growing windows. A parse
    error well inside a window is decided by that prefix alone (the parser only looks a few characters ahead), and so is a value that
    completes inside a window shorter than the slice (trailing data). Nested candidates of a
    hostile response therefore cost what the parser reads, not their full length; decoding the
    whole response in place would not help either, since every JSON error counts the newlines
    before its position.
    """
    size = end - start
    window = _FIRST_WINDOW if windowed else size
    while window < size:
        chunk = text[start : start + window]
        try:
            _, stop = _DECODER.raw_decode(chunk, 0)
        except json.JSONDecodeError as exc:
            # An unterminated string reports where it started, not where the window cut it.
            cut_short = exc.msg.startswith("Unterminated string")
            if not cut_short and exc.pos < window - ERROR_LOOKAHEAD:
                raise DecodeFailed(start + exc.pos) from None
        except (ValueError, RecursionError):
            raise DecodeFailed(None) from None
        else:
            raise DecodeFailed(start + stop)  # the object closed early: trailing data follows
        window *= 4
    chunk = text[start:end]
    try:
        value, stop = _DECODER.raw_decode(chunk, 0)
    except json.JSONDecodeError as exc:
        raise DecodeFailed(start + exc.pos) from None
    except (ValueError, RecursionError):
        raise DecodeFailed(None) from None
    if stop != size:
        raise DecodeFailed(start + stop)
    surrogates = _SURROGATE_ESCAPE.search(chunk) is not None
    if not _serde_compatible(value, surrogates):
        raise DecodeFailed(None)
    return value


def escape_control_chars(text: str) -> str:
    """Replace every raw U+0000..U+001F with its JSON escape, structural whitespace included."""
    return text.translate(ESCAPE_TABLE)


def repair_truncated_json(text: str) -> str:
    """Close an open string, then every open bracket and brace, innermost first.

    A ``}`` or ``]`` only closes when it matches the innermost opener (otherwise it is kept
    and ignored), as in goose's ``repair_truncated_json``.
    """
    closers: list[str] = []
    suffix = ""
    for at, ch in brackets_outside_strings(text):
        if ch == '"':
            # A lone backslash ends the text: it escapes the new quote, so one more goes before.
            suffix = '"' if at >= len(text) else '\\"'
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        elif closers and closers[-1] == ch:
            closers.pop()
    return text + suffix + "".join(reversed(closers))


def safely_parse_json(text: str) -> JSONValue:
    """Goose's tolerant JSON parse, with serde_json's rules.

    Strict parse; if that fails, the truncated-document repair, then raw control-character
    escaping, then both (repair of the escaped text).

    Raises:
        ValueError: No attempt produced a JSON document.
    """
    attempts = (text, repair_truncated_json(text), escape_control_chars(text))
    for attempt in (*attempts, repair_truncated_json(attempts[2])):
        start = _skip_json_ws(attempt)
        try:
            value = decode_at(attempt, start, len(attempt.rstrip(" \t\n\r")), windowed=False)
        except DecodeFailed:
            continue
        return value
    raise ValueError("not a JSON document, even after repairing truncation and control characters")


def _skip_json_ws(text: str) -> int:
    return len(text) - len(text.lstrip(" \t\n\r"))
