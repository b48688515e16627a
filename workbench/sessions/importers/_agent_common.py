"""Helpers shared by the SWE-agent, mini-swe-agent, OpenHands and aider importers.

Reading a whole-file JSON recording with errors that name the file, line and expected shape;
collecting skipped records for ``errors="skip"``; summing recorded usage; building messages
with a fixed ``created`` time so imports are reproducible.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import TypeVar

from workbench._json_types import JSONObject, JSONValue
from workbench.compaction._model import Usage
from workbench.errors import SessionFormatError
from workbench.messages import Message, UnknownContent
from workbench.sessions.importers._readers import loads, read_text

T = TypeVar("T")


def read_json(path: Path, expected: str) -> JSONValue:
    """Parse a whole-file JSON recording.

    Raises:
        SessionFormatError: the text is not valid UTF-8 (names the byte offset) or not valid
            JSON, nested too deeply included (names the line and column).
    """
    text = read_text(path)
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise SessionFormatError(str(path), exc.lineno,
                                 f"malformed JSON: {exc.msg} at column {exc.colno}",
                                 expected=expected) from exc


def require_key(path: Path, data: JSONValue, key: str, kind: type[T], expected: str) -> T:
    """``data[key]`` when `data` is an object holding a `kind` there, else `SessionFormatError`."""
    if not isinstance(data, dict):
        raise SessionFormatError(str(path), None,
                                 f"the top level is a JSON {_json_kind(data)}, not an object",
                                 expected=expected)
    if key not in data:
        raise SessionFormatError(str(path), None, f'missing key "{key}"', expected=expected)
    value = data[key]
    if not isinstance(value, kind):
        raise SessionFormatError(str(path), None,
                                 f'key "{key}" holds a JSON {_json_kind(value)}, '
                                 f"not a JSON {_json_kind(kind())}", expected=expected)
    return value


def _json_kind(value: object) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null"


class Problems:
    """Bad records of one file: raised at once (``errors="raise"``) or collected (``"skip"``)."""

    def __init__(self, path: Path, errors: str) -> None:
        self.path = path
        self.errors = errors
        self.skipped: list[str] = []

    def bad(self, where: int | str, message: str, expected: str | None = None) -> None:
        """Report a bad record; returns only when skipping (the caller then skips it)."""
        err = SessionFormatError(str(self.path), where, message, expected=expected)
        if self.errors != "skip":
            raise err
        self.skipped.append(str(err))
        warnings.warn(f"skipped a bad record: {err}", stacklevel=3)

    def duplicate(self, where: int | str, first: int | str, key: object) -> None:
        """Note a record read once because it repeats the one at `first` (same id and content)."""
        note = SessionFormatError(str(self.path), where,
                                  f"a duplicate of {first} (id {key!r}); read once")
        self.skipped.append(str(note))
        warnings.warn(f"read a duplicate record once: {note}", stacklevel=3)

    def into(self, meta: JSONObject) -> JSONObject:
        """Store the skipped records under ``meta["warnings"]`` and return `meta`."""
        meta["warnings"] = list(self.skipped)
        return meta


def as_dict(value: JSONValue) -> JSONObject:
    """`value` when it is a JSON object, else an empty dict (for optional nested fields)."""
    return value if isinstance(value, dict) else {}


def unknown_message(record: JSONValue, role: str = "user", created: int = 0) -> Message:
    """A message keeping a record the importer does not understand, whole."""
    raw = record if isinstance(record, dict) else {"value": record}
    return Message(role=role, content=[UnknownContent(raw=raw)], created=created)  # type: ignore[arg-type]


def usage_from_openai(u: JSONValue, model: str = "") -> Usage:
    """A `Usage` from an OpenAI-style ``usage`` object (prompt/completion tokens, cost)."""
    if not isinstance(u, dict):
        return Usage(model=model)
    details = u.get("prompt_tokens_details") or {}
    cache_read = u.get("cache_read_input_tokens")
    if cache_read is None and isinstance(details, dict):
        cache_read = details.get("cached_tokens")
    return Usage(
        model=model,
        input_tokens=token_count(u.get("prompt_tokens")),
        output_tokens=token_count(u.get("completion_tokens")),
        total_tokens=token_count(u.get("total_tokens")),
        cache_read_input_tokens=token_count(cache_read),
        cache_write_input_tokens=token_count(u.get("cache_creation_input_tokens")),
        cost=u_cost if isinstance(u_cost := u.get("cost"), int | float) else None,
    )


def token_count(value: JSONValue) -> int | None:
    """A recorded token count: the integer, or None when it is missing or not an integer."""
    return value if isinstance(value, int) else None


def sum_usage(items: list[Usage]) -> JSONObject | None:
    """The sum of `items` as a plain dict (`Usage.to_dict`), or None when there are none."""
    if not items:
        return None
    total = items[0]
    for u in items[1:]:
        total = total + u
    return total.to_dict()
