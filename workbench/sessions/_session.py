"""`Session`: one recorded conversation as Goose messages, plus what the recording knows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from workbench._json_types import JSONObject, JSONValue
from workbench._storage import write_atomic
from workbench.messages import Message


@dataclass
class Session:
    """A recorded session, imported into Goose's message model.

    Attributes:
        id: A stable id (file stem, session id, or ``file#index`` for multi-session files).
        format: The importer's name (``claude-code``, ``goose-db``, ``aider``...).
        path: The file it came from.
        messages: The conversation, tool requests and responses paired by id.
        meta: What the recording knows: ``models``, ``usage`` (recorded tokens and cost),
            ``compactions`` (where the original agent compacted: message index, trigger,
            pre-tokens), ``reference_summaries`` (summaries the original agent wrote),
            ``planted_facts`` (generated sessions), ``warnings`` (skipped records), and any
            format-specific keys.
    """

    id: str
    format: str
    path: str
    messages: list[Message]
    meta: JSONObject = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"Session(id={self.id!r}, format={self.format!r}, "
                f"messages={len(self.messages)}, path={self.path!r})")

    def to_goose_json(self) -> JSONObject:
        """Goose's session-export shape: ``{id, ..., conversation: [messages]}`` plus our meta."""
        return {
            "id": self.id,
            "format": self.format,
            "path": self.path,
            "meta": self.meta,
            "conversation": [m.to_goose() for m in self.messages],
        }

    def write_goose_json(self, path: str | Path) -> Path:
        """Write `to_goose_json` to `path` (UTF-8, indented) and return the path."""
        out = Path(path)
        write_atomic(out, json.dumps(self.to_goose_json(), ensure_ascii=False, indent=1))
        return out


def meta_list(session: Session, key: str) -> list[JSONValue]:
    """``session.meta[key]`` when it is a list (``models``, ``warnings``...), else []."""
    value = session.meta.get(key)
    return value if isinstance(value, list) else []


def meta_records(session: Session, key: str) -> list[JSONObject]:
    """The object entries of ``session.meta[key]``, a list of records (``planted_facts``,
    ``reference_summaries``, ``compactions``...); [] when the key is missing or empty."""
    return [r for r in meta_list(session, key) if isinstance(r, dict)]


def as_int(value: JSONValue) -> int:
    """``int(value)`` for a recorded number (or numeric string); TypeError for another shape,
    as `int` raises."""
    if isinstance(value, (str, int, float)):
        return int(value)
    raise TypeError(f"not a number: {value!r}")


def prefix_session(session: Session, end: int) -> Session:
    """`session` cut to its first `end` messages; planted facts are those of the prefix, stale
    only when their replacement is inside it."""
    meta = dict(session.meta)
    facts = meta_records(session, "planted_facts")
    if facts:
        inside = {f.get("id"): f for f in facts if as_int(f.get("message_index", 0)) < end}
        kept: list[JSONValue] = [
            {**f, "stale": bool(f.get("stale")) and f.get("superseded_by") in inside}
            for f in inside.values()]
        meta["planted_facts"] = kept
    return replace(session, messages=list(session.messages[:end]), meta=meta)
