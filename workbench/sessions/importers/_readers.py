"""Reading helpers shared by the JSON/JSONL importers: bad-record policy, JSON lines, times.

`Problems` applies the ``errors="raise"|"skip"`` policy in one place: a bad record raises
`SessionFormatError` (file, line, what was wrong, what was expected), or, when skipping, is
counted in ``meta["warnings"]`` and reported with one `warnings.warn` per file.

Text is decoded by `decode` / `read_text`: invalid UTF-8 is a `SessionFormatError` naming the
byte offset and line, unless the load runs under ``decoding("replace")``, which substitutes
U+FFFD and counts each substitution. A UTF-8 byte-order mark at the start of a file is
accepted and stripped (Windows editors write one). JSON is parsed by `loads`, which turns
Python's `RecursionError` on absurdly nested input, and its `ValueError` on an integer longer
than Python converts (4,300 digits), into an ordinary `json.JSONDecodeError` naming the line
and column, so every caller's syntax-error path applies.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from workbench.compaction._json_scan import brackets_outside_strings
from workbench.errors import SessionFormatError
from workbench.messages import CallToolResult, McpBlock, ToolResponse, ToolResponseResult
from workbench.sessions._limits import MAX_MESSAGES, MAX_RECORD_BYTES, check_message_count
from workbench.sessions.importers._records import json_lines

_HEAD_LINES = 8
_DECODER = json.JSONDecoder()

ENCODING_ERRORS = ("strict", "replace")
"""Accepted values of ``load_sessions(encoding_errors=...)``."""
MAX_REPORTED_DEPTH = 200
"""Nesting depth `loads` names in its error (the parser itself gives up near Python's
recursion limit, about 1000 levels, depending on the stack already in use)."""
BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark, stripped from the start of a file."""
TOO_LONG_NUMBER = ("a number of {digits:,} digits (Python converts at most {limit:,}; a real "
                   "session never holds one)")
_LONG_NUMBER = re.compile(rf"-?\d{{{sys.get_int_max_str_digits() + 1},}}")

_REPLACED: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "workbench_decode_replacements", default=None)
_COUNTING_HANDLER = "workbench.count-replace"


def _count_and_replace(exc: UnicodeError) -> tuple[str, int]:
    counter = _REPLACED.get()
    if counter is not None:
        counter[0] += 1
    assert isinstance(exc, UnicodeDecodeError)
    return "\ufffd", exc.end


codecs.register_error(_COUNTING_HANDLER, _count_and_replace)


@contextlib.contextmanager
def decoding(encoding_errors: str) -> Iterator[list[int]]:
    """Decode invalid UTF-8 per `encoding_errors` inside the block; yields the replacement count.

    ``"strict"`` (the default outside any block) makes invalid bytes an error; ``"replace"``
    substitutes U+FFFD and counts each substitution in the yielded one-item list.
    """
    token = _REPLACED.set([0] if encoding_errors == "replace" else None)
    try:
        yield _REPLACED.get() or [0]
    finally:
        _REPLACED.reset(token)


def decode(data: bytes, path: Path | str, offset: int = 0, line: int = 1) -> str:
    """UTF-8 text of `data`, read from `path` at byte `offset` (on `line`).

    Raises:
        SessionFormatError: invalid UTF-8 outside a ``decoding("replace")`` block; names the
            file's byte offset and line.
    """
    if offset == 0 and data.startswith(BOM):
        data, offset = data[len(BOM):], len(BOM)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if _REPLACED.get() is None:
            where = line + data.count(b"\n", 0, exc.start)
            raise SessionFormatError(str(path), where, _invalid_utf8(exc, offset)) from exc
        return data.decode("utf-8", errors=_COUNTING_HANDLER)


def _invalid_utf8(exc: UnicodeDecodeError, offset: int) -> str:
    return (f"invalid UTF-8 at byte offset {offset + exc.start} ({exc.reason}); fix the file "
            "or load it with encoding_errors='replace' to substitute U+FFFD")


def read_text(path: Path) -> str:
    """The whole file as UTF-8 text (see `decode`)."""
    return decode(path.read_bytes(), path)


def loads(text: str | bytes) -> Any:
    """`json.loads`, with too-deep nesting and too-long integers reported as a
    `json.JSONDecodeError` at their position."""
    try:
        return json.loads(text)
    except RecursionError:
        doc = text if isinstance(text, str) else text.decode("utf-8", errors="replace")
        raise json.JSONDecodeError(
            f"nested deeper than {MAX_REPORTED_DEPTH} levels (too deep to import)", doc,
            too_deep_at(doc)) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # int() refused a number past sys.get_int_max_str_digits()
        doc = text if isinstance(text, str) else text.decode("utf-8", errors="replace")
        found = _LONG_NUMBER.search(doc)
        digits = len(found.group().lstrip("-")) if found else sys.get_int_max_str_digits() + 1
        raise json.JSONDecodeError(
            TOO_LONG_NUMBER.format(digits=digits, limit=sys.get_int_max_str_digits()), doc,
            found.start() if found else 0) from None


def open_brackets(text: str) -> Iterator[tuple[int, int]]:
    """``(index, depth)`` of every ``[``/``{`` of JSON `text` outside strings, depth from 1."""
    depth = 0
    for i, ch in brackets_outside_strings(text):
        if ch in "[{":
            depth += 1
            yield i, depth
        elif ch in "]}":
            depth -= 1


def too_deep_at(text: str, limit: int = MAX_REPORTED_DEPTH) -> int:
    """Index of the first ``[``/``{`` of `text` past nesting depth `limit` (else the deepest)."""
    deepest = deepest_at = 0
    for i, depth in open_brackets(text):
        if depth > limit:
            return i
        if depth > deepest:
            deepest, deepest_at = depth, i
    return deepest_at


class Problems:
    """Collects (or raises) bad-record errors for one file, and notes duplicate records.

    Args:
        path: The file being read (named in every error).
        errors: ``"raise"`` or ``"skip"``.
    """

    def __init__(self, path: Path | str, errors: str = "raise") -> None:
        self.path = str(path)
        self.errors = errors
        self.warnings: list[str] = []
        self.skipped = 0
        self.duplicates = 0

    def bad(self, line: int | str | None, message: str, expected: str | None = None) -> None:
        """Report a bad record: raise under ``"raise"``, remember it under ``"skip"``."""
        err = SessionFormatError(self.path, line, message, expected=expected)
        if self.errors == "raise":
            raise err
        self.skipped += 1
        self.warnings.append(str(err))

    def duplicate(self, where: int | str, first: int | str, key: Any) -> None:
        """Note a record read once because it repeats the one at `first` (same id, same text)."""
        self.duplicates += 1
        place = f"line {first}" if isinstance(first, int) else str(first)
        self.warnings.append(str(SessionFormatError(
            self.path, where, f"a duplicate of {place} (id {key!r}); read once")))

    def finish(self, meta: dict[str, Any]) -> dict[str, Any]:
        """Store the skipped and duplicate records in ``meta["warnings"]`` (the duplicates'
        count in ``meta["duplicates"]``) and warn once; returns meta."""
        meta["warnings"] = list(meta.get("warnings") or []) + self.warnings
        if self.duplicates:
            meta["duplicates"] = self.duplicates
        parts = [f"skipped {self.skipped} bad record(s)"] if self.skipped else []
        parts += [f"read {self.duplicates} duplicate record(s) once"] if self.duplicates else []
        if parts:
            warnings.warn(f"{self.path}: {'; '.join(parts)}; see session.meta['warnings']",
                          stacklevel=3)
        return meta


def iter_json_lines(path: Path, problems: Problems, expected: str,
                    identity: Callable[[Any], Any] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed value)`` for each non-blank line of a JSONL file.

    Streams the file, so one huge line costs one parse, and a line over `MAX_RECORD_BYTES` is
    a bad record read past without being held; more than `MAX_MESSAGES` records is an error.
    A line that is not JSON (nested too deeply included) or not UTF-8 goes to `problems` with
    the parser's message. With `identity` (record -> its id, or None), a line repeating an
    earlier one with the same id byte for byte is noted as a duplicate and not yielded.
    """
    offset = records = 0
    # id -> (line number, offset, length) of its first line; only a repeated id of the same
    # length reads that line again to compare, so unique records cost nothing.
    first: dict[Any, tuple[int, int, int]] = {}
    with open(path, "rb") as fh:
        for number, (raw, length, size) in enumerate(json_lines(fh), start=1):
            start, offset = offset, offset + length
            if raw is None:
                problems.bad(number, f"the record is {size:,} bytes long; the limit is "
                             f"{MAX_RECORD_BYTES:,} bytes per record", expected=expected)
                continue
            if number == 1 and raw.startswith(BOM):
                raw, start = raw[len(BOM):], len(BOM)
            if not raw or raw.isspace():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                if _REPLACED.get() is None:
                    problems.bad(number, _invalid_utf8(exc, start), expected=expected)
                    continue
                line = raw.decode("utf-8", errors=_COUNTING_HANDLER)
            try:
                value = loads(line)
            except json.JSONDecodeError as exc:
                problems.bad(number, f"invalid JSON: {exc}", expected=expected)
                continue
            key = identity(value) if identity is not None else None
            if isinstance(key, str | int) and not isinstance(key, bool) and key != "":
                earlier = first.setdefault(key, (number, start, len(raw)))
                if earlier[0] != number and earlier[2] == len(raw) and os.pread(
                        fh.fileno(), earlier[2], earlier[1]) == raw:
                    problems.duplicate(number, earlier[0], key)
                    continue
            records += 1
            if records > MAX_MESSAGES:
                check_message_count(path, records)
            yield number, value


def load_json_document(path: Path, expected: str) -> Any:
    """Parse a whole-file JSON document; a syntax error names the line it is on."""
    text = read_text(path)
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise SessionFormatError(str(path), exc.lineno, f"invalid JSON: {exc}",
                                 expected=expected) from exc


def head_json_lines(head: str, limit: int = _HEAD_LINES) -> list[Any]:
    """Parse the complete lines at the start of `head` (a file's first bytes); stops at a bad one.

    The last line of the head may be cut off, so only lines followed by a newline are tried.
    """
    out: list[Any] = []
    for line in head.split("\n")[:-1]:
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except (ValueError, RecursionError):
            break
        if len(out) >= limit:
            break
    return out


def first_element(head: str, key: str | None = None) -> Any:
    """The first element of a JSON array in `head`, parsed alone (None when cut off or absent).

    With `key`, the array is the value of the first ``"key": [`` in the head; otherwise the
    head itself must start with ``[``. Lets detectors look at one record of a big document.
    """
    if key is None:
        start = head.lstrip()
        if not start.startswith("["):
            return None
        rest = start[1:]
    else:
        found = re.search('"' + re.escape(key) + r'"\s*:\s*\[', head)
        if found is None:
            return None
        rest = head[found.end():]
    rest = rest.lstrip()
    try:
        value, _ = _DECODER.raw_decode(rest)
    except (ValueError, RecursionError):
        return None
    return value


def first_line_dict(head: str) -> dict[str, Any] | None:
    """The first line of `head` parsed as a JSON object, or None."""
    lines = head_json_lines(head, limit=1)
    return lines[0] if lines and isinstance(lines[0], dict) else None


_ISO_Z = re.compile(r"Z$")


def parse_time(value: Any, default: int = 0) -> int:
    """Unix seconds from an ISO-8601 string or a number (milliseconds above 1e10); else `default`."""
    if isinstance(value, bool):
        return default
    if isinstance(value, (int, float)):
        return int(value / 1000) if value > 1e10 else int(value)
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(_ISO_Z.sub("+00:00", value)).timestamp())
        except ValueError:
            return default
    return default


def text_blocks(parts: Any) -> list[McpBlock]:
    """MCP content blocks from a tool output: a string, or a list of text/image/other parts.

    Text-like parts (``text``, ``input_text``, ``output_text``) become text blocks; an image
    part becomes an image block; anything else is kept whole as a block of its own type.
    """
    if parts is None:
        return []
    if isinstance(parts, str):
        return [McpBlock(type="text", text=parts)]
    if not isinstance(parts, list):
        return [McpBlock(type="text", text=json.dumps(parts, ensure_ascii=False))]
    blocks: list[McpBlock] = []
    for part in parts:
        if isinstance(part, str):
            blocks.append(McpBlock(type="text", text=part))
        elif not isinstance(part, dict):
            blocks.append(McpBlock(type="text", text=json.dumps(part, ensure_ascii=False)))
        elif part.get("type") in ("text", "input_text", "output_text"):
            blocks.append(McpBlock(type="text", text=str(part.get("text", ""))))
        elif part.get("type") == "image":
            source = part.get("source")
            source = source if isinstance(source, dict) else {}
            blocks.append(McpBlock.model_validate({
                "type": "image", "data": source.get("data", part.get("data", "")),
                "mimeType": source.get("media_type", part.get("mimeType", ""))}))
        else:
            kind = part.get("type")
            blocks.append(McpBlock.model_validate(
                {**part, "type": kind if isinstance(kind, str) else "unknown"}))
    return blocks


def tool_response(call_id: str, blocks: list[McpBlock], is_error: bool = False) -> ToolResponse:
    """A successful-call `ToolResponse` holding `blocks`, flagged ``isError`` when the tool failed."""
    value = CallToolResult(content=blocks, is_error=is_error)
    return ToolResponse(id=call_id, tool_result=ToolResponseResult(status="success", value=value))
