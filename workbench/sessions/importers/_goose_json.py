"""Goose session JSON: ``goose session export`` output, a bare message list, or `Session.to_goose_json`.

The workbench's own export (``{id, format, path, meta, conversation}``) reads back exactly: same
id, same meta, and messages whose ``to_goose()`` is unchanged; the file it came from is noted in
``meta["exported_from"]``.
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench._json_types import JSONObject, JSONValue
from workbench.errors import ConfigError, SessionFormatError
from workbench.messages import Message
from workbench.sessions._registry import importer
from workbench.sessions._session import Session
from workbench.sessions.importers._goose_common import (
    looks_like_goose_message,
    read_goose_message,
    visibility_meta,
)
from workbench.sessions.importers._readers import (
    Problems,
    first_element,
    load_json_document,
)
from workbench.sessions.importers._records import Duplicates

FORMAT = "goose-json"
EXPECTED_DOC = ("a Goose session object with a 'conversation' (or 'messages') list of Goose "
                "messages, or a JSON list of Goose messages")
_OWN_EXPORT = re.compile(r'^\{\s*"id"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"format"\s*:\s*"')
_FOREIGN = ('"trajectory_format"', '"trajectory"', '"mini_version"', '"exit_status"')


def _detect(path: Path, head: str) -> bool:
    text = head.lstrip()
    if text.startswith("["):
        return looks_like_goose_message(first_element(text))
    if _OWN_EXPORT.match(text):
        return True
    if not text.startswith("{") or any(k in head for k in _FOREIGN):
        return False
    if re.search(r'"conversation"\s*:\s*\[', head):
        return True
    return looks_like_goose_message(first_element(head, "messages"))


def _conversation(data: JSONValue, path: Path) -> list[JSONValue]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in ("conversation", "messages"):
            value = data.get(key)
            if isinstance(value, dict) and isinstance(listed := value.get("messages"), list):
                return listed
            if isinstance(value, list):
                return value
    found = type(data).__name__ if not isinstance(data, dict) else "an object without them"
    raise SessionFormatError(str(path), None, f"no conversation list: found {found}",
                             expected=EXPECTED_DOC)


@importer(FORMAT, detect=_detect, description="Goose session JSON / workbench export")
def load_goose_json(path: Path, errors: str = "raise", **select: object) -> list[Session]:
    """Load an exported Goose session (or a `Session.write_goose_json` file).

    Raises:
        SessionFormatError: invalid JSON, no conversation list, or a bad message (named by index).
        ConfigError: any selection keyword (a file holds one session).
    """
    if select:
        raise ConfigError(f"goose-json files hold one session; no selection {sorted(select)}")
    data = load_json_document(path, EXPECTED_DOC)
    items = _conversation(data, path)
    problems = Problems(path, errors)
    messages: list[Message] = []
    seen = Duplicates()
    for i, raw in enumerate(items):
        first = seen.first_of(raw.get("id"), raw, f"conversation[{i}]") if isinstance(
            raw, dict) else None
        if first is not None and isinstance(raw, dict):  # a first seen is only of an object
            problems.duplicate(f"conversation[{i}]", first, raw["id"])
            continue
        msg = read_goose_message(raw, f"conversation[{i}]", problems)
        if msg is not None:
            messages.append(msg)
    doc = data if isinstance(data, dict) else {}
    if isinstance(recorded := doc.get("meta"), dict):
        meta: JSONObject = dict(recorded)
        if "format" in doc or "path" in doc:
            meta["exported_from"] = {"format": doc.get("format"), "path": doc.get("path")}
    else:
        meta = {"goose_session": {k: v for k, v in doc.items()
                                  if k not in ("conversation", "messages")}}
        if doc.get("name") or doc.get("description"):
            meta["name"] = doc.get("name") or doc.get("description")
        meta.update(visibility_meta(messages))
    if problems.warnings or "warnings" not in meta:
        problems.finish(meta)
    sid = str(doc.get("id") or path.stem)
    return [Session(id=sid, format=FORMAT, path=str(path), messages=messages, meta=meta)]
