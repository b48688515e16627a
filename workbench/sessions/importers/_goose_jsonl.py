"""Goose's legacy session files (``sessions/<id>.jsonl``): a metadata line, then one message per line.

Goose itself skips lines that do not parse; here a bad line raises `SessionFormatError` naming the
file and line, or with ``errors="skip"`` is skipped and counted in ``meta["warnings"]``. A line
repeating an earlier message byte for byte (same ``id``) is read once and noted there too.
"""

from __future__ import annotations

from pathlib import Path

from workbench._json_types import JSONObject, JSONValue
from workbench.errors import ConfigError
from workbench.messages import Message
from workbench.sessions._registry import importer
from workbench.sessions._session import Session
from workbench.sessions.importers._goose_common import (
    looks_like_goose_message,
    read_goose_message,
    visibility_meta,
)
from workbench.sessions.importers._readers import Problems, head_json_lines, iter_json_lines

FORMAT = "goose-jsonl"
EXPECTED_LINE = "line 1 session metadata, then one Goose message JSON object per line"
METADATA_KEYS = frozenset({"working_dir", "description", "message_count", "total_tokens",
                           "schedule_id", "accumulated_total_tokens"})


def _is_metadata(d: JSONValue) -> bool:
    return isinstance(d, dict) and "role" not in d and bool(METADATA_KEYS & d.keys())


def _detect(path: Path, head: str) -> bool:
    lines = head_json_lines(head, limit=2)
    if not lines:
        return False
    if _is_metadata(lines[0]):
        return len(lines) == 1 or looks_like_goose_message(lines[1])
    return looks_like_goose_message(lines[0])


def _message_id(record: object) -> object:
    return record.get("id") if isinstance(record, dict) and "role" in record else None


@importer(FORMAT, detect=_detect, description="Goose legacy session JSONL")
def load_goose_jsonl(path: Path, errors: str = "raise", **select: object) -> list[Session]:
    """Load a legacy Goose ``.jsonl`` session (id = file stem).

    Raises:
        SessionFormatError: a line is not JSON or not a Goose message.
        ConfigError: any selection keyword (a file holds one session).
    """
    if select:
        raise ConfigError(f"goose-jsonl files hold one session; no selection {sorted(select)}")
    problems = Problems(path, errors)
    messages: list[Message] = []
    header: JSONObject = {}
    for number, raw in iter_json_lines(path, problems, EXPECTED_LINE, identity=_message_id):
        if number == 1 and _is_metadata(raw):
            header = raw
            continue
        msg = read_goose_message(raw, number, problems)
        if msg is not None:
            messages.append(msg)
    meta: JSONObject = {"goose_metadata": header}
    if header.get("description"):
        meta["name"] = header["description"]
    meta.update(visibility_meta(messages))
    problems.finish(meta)
    return [Session(id=path.stem, format=FORMAT, path=str(path), messages=messages, meta=meta)]
