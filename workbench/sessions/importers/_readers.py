"""Reading helpers shared by the JSON/JSONL importers: bad-record policy, JSON lines, times.

`Problems` applies the ``errors="raise"|"skip"`` policy in one place: a bad record raises
`SessionFormatError` (file, line, what was wrong, what was expected), or, when skipping, is
counted in ``meta["warnings"]`` and reported with one `warnings.warn` per file.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from workbench.errors import SessionFormatError
from workbench.messages import CallToolResult, McpBlock, ToolResponse, ToolResponseResult

_HEAD_LINES = 8
_DECODER = json.JSONDecoder()


class Problems:
    """Collects (or raises) bad-record errors for one file.

    Args:
        path: The file being read (named in every error).
        errors: ``"raise"`` or ``"skip"``.
    """

    def __init__(self, path: Path | str, errors: str = "raise") -> None:
        self.path = str(path)
        self.errors = errors
        self.warnings: list[str] = []

    def bad(self, line: int | str | None, message: str, expected: str | None = None) -> None:
        """Report a bad record: raise under ``"raise"``, remember it under ``"skip"``."""
        err = SessionFormatError(self.path, line, message, expected=expected)
        if self.errors == "raise":
            raise err
        self.warnings.append(str(err))

    def finish(self, meta: dict[str, Any]) -> dict[str, Any]:
        """Store the skipped-record messages in ``meta["warnings"]`` and warn once; returns meta."""
        meta["warnings"] = list(meta.get("warnings") or []) + self.warnings
        if self.warnings:
            warnings.warn(f"{self.path}: skipped {len(self.warnings)} bad record(s); "
                          "see session.meta['warnings']", stacklevel=3)
        return meta


def iter_json_lines(path: Path, problems: Problems, expected: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed value)`` for each non-blank line of a JSONL file.

    Streams the file, so one huge line costs one parse. A line that is not JSON goes to
    `problems` with the message ``invalid JSON: <parser error>``.
    """
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.bad(number, f"invalid JSON: {exc}", expected=expected)
                continue
            yield number, value


def load_json_document(path: Path, expected: str) -> Any:
    """Parse a whole-file JSON document; a syntax error names the line it is on."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return json.loads(text)
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
        except ValueError:
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
    except ValueError:
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
