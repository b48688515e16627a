"""Goose's SQLite session store (``~/.local/share/goose/sessions/sessions.db``).

Loading opens the file read-only and reads as Goose does: messages ordered by ``created_timestamp, id``; timestamps above 1e10 are
milliseconds; roles other than user/assistant are skipped; a ``metadata_json`` that does not parse
falls back to the defaults (both visible). Every message is kept with its visibility flags.
``usage_ledger`` rows (one per billed call, compaction calls flagged) become ``meta["usage"]``.
`write_goose_db_session` is the one writer: it replaces a session's messages the way Goose's
``replace_conversation`` does after a compaction.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from workbench.compaction._model import Usage
from workbench.errors import ConfigError, SessionFormatError
from workbench.messages import Message
from workbench.sessions._registry import importer
from workbench.sessions._session import Session
from workbench.sessions.importers._goose_common import read_goose_message, visibility_meta
from workbench.sessions.importers._readers import Problems, loads

FORMAT = "goose-db"
SQLITE_MAGIC = "SQLite format 3"
EXPECTED_CONTENT = "a JSON array of Goose content items in content_json"
_SESSION_SCALARS = ("name", "description", "session_type", "working_dir", "created_at",
                    "updated_at", "provider_name", "schedule_id", "project_id",
                    "parent_session_id", "goose_mode", "total_tokens", "input_tokens",
                    "output_tokens", "cache_read_tokens", "cache_write_tokens",
                    "accumulated_total_tokens", "accumulated_input_tokens",
                    "accumulated_output_tokens", "accumulated_cache_read_tokens",
                    "accumulated_cache_write_tokens", "accumulated_cost")


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _detect(path: Path, head: str) -> bool:
    if not head.startswith(SQLITE_MAGIC):
        return False
    try:
        with closing(_connect(path)) as conn:
            return {"sessions", "messages"} <= _tables(conn)
    except sqlite3.DatabaseError:
        # A SQLite header over unreadable pages: claim it, so loading names the corruption.
        return True
    except sqlite3.Error:
        return False


def _open_checked(path: Path) -> sqlite3.Connection:
    try:
        conn = _connect(path)
        tables = _tables(conn)
    except sqlite3.Error as exc:
        raise SessionFormatError(str(path), None, f"cannot read the SQLite file: {exc}",
                                 expected="a Goose sessions.db") from exc
    if not {"sessions", "messages"} <= tables:
        conn.close()
        raise SessionFormatError(str(path), None, "no sessions/messages tables",
                                 expected="a Goose sessions.db")
    return conn


def list_goose_sessions(path: str | Path) -> list[dict[str, Any]]:
    """The sessions in a Goose ``sessions.db``, oldest first.

    Returns:
        One dict per session: ``id``, ``name`` (falls back to the legacy description),
        ``created`` (the ``created_at`` text) and ``messages`` (row count).
    """
    with closing(_open_checked(Path(path))) as conn:
        rows = conn.execute(
            "SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n "
            "FROM sessions s ORDER BY s.created_at, s.id").fetchall()
    return [{"id": r["id"], "name": _name(r), "created": r["created_at"], "messages": r["n"]}
            for r in rows]


def _name(row: sqlite3.Row) -> str:
    keys = row.keys()
    name = row["name"] if "name" in keys else ""
    if not name and "description" in keys:
        name = row["description"]
    return name or ""


def _read_messages(conn: sqlite3.Connection, sid: str, problems: Problems,
                   stats: dict[str, int]) -> list[Message]:
    out: list[Message] = []
    rows = conn.execute(
        "SELECT * FROM messages WHERE session_id = ? ORDER BY created_timestamp, id", (sid,))
    for row in rows:
        where = f"messages row {row['id']}"
        if row["role"] not in ("user", "assistant"):
            stats["skipped_roles"] += 1
            continue
        try:
            content = loads(row["content_json"])
        except (TypeError, json.JSONDecodeError) as exc:
            problems.bad(where, f"invalid JSON: {exc}", expected=EXPECTED_CONTENT)
            continue
        if not isinstance(content, list):
            problems.bad(where, f"content_json is a JSON {type(content).__name__}",
                         expected=EXPECTED_CONTENT)
            continue
        meta = _metadata(row["metadata_json"] if "metadata_json" in row.keys() else None)
        if meta is None:
            stats["metadata_defaults"] += 1
            meta = {"userVisible": True, "agentVisible": True}
        created = row["created_timestamp"] or 0
        raw = {"id": row["message_id"] if "message_id" in row.keys() else None,
               "role": row["role"], "created": int(created / 1000) if created > 1e10 else created,
               "content": content, "metadata": meta}
        msg = read_goose_message(raw, where, problems)
        if msg is not None:
            out.append(msg)
    return out


def _metadata(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = loads(text)
    except (TypeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _ledger(conn: sqlite3.Connection, sid: str) -> list[dict[str, Any]]:
    if "usage_ledger" not in _tables(conn):
        return []
    rows = conn.execute("SELECT * FROM usage_ledger WHERE session_id = ? "
                        "ORDER BY created_timestamp, id", (sid,))
    return [dict(r) for r in rows]


def _usage(ledger: list[dict[str, Any]], session_row: dict[str, Any]) -> dict[str, Any] | None:
    if ledger:
        total = Usage()
        for r in ledger:
            total = total + Usage(model=r.get("model") or "", input_tokens=r.get("input_tokens"),
                                  output_tokens=r.get("output_tokens"),
                                  total_tokens=r.get("total_tokens"),
                                  cache_read_input_tokens=r.get("cache_read_tokens"),
                                  cache_write_input_tokens=r.get("cache_write_tokens"),
                                  cost=r.get("cost"))
        return total.to_dict()
    if session_row.get("accumulated_total_tokens") is None:
        return None
    return Usage(input_tokens=session_row.get("accumulated_input_tokens"),
                 output_tokens=session_row.get("accumulated_output_tokens"),
                 total_tokens=session_row.get("accumulated_total_tokens"),
                 cache_read_input_tokens=session_row.get("accumulated_cache_read_tokens"),
                 cache_write_input_tokens=session_row.get("accumulated_cache_write_tokens"),
                 cost=session_row.get("accumulated_cost")).to_dict()


def _session(conn: sqlite3.Connection, path: Path, row: sqlite3.Row, errors: str) -> Session:
    sid = row["id"]
    problems = Problems(f"{path}#{sid}", errors)
    stats = {"skipped_roles": 0, "metadata_defaults": 0}
    messages = _read_messages(conn, sid, problems, stats)
    info = dict(row)
    ledger = _ledger(conn, sid)
    meta: dict[str, Any] = {k: info[k] for k in _SESSION_SCALARS if k in info}
    meta["name"] = _name(row)
    try:
        model_config = loads(info.get("model_config_json") or "null")
    except json.JSONDecodeError:
        model_config = info.get("model_config_json")
    meta["model_config"] = model_config
    models = [r["model"] for r in ledger if r.get("model")]
    if isinstance(model_config, dict) and model_config.get("model_name"):
        models.insert(0, model_config["model_name"])
    meta["models"] = list(dict.fromkeys(models))
    usage = _usage(ledger, info)
    if usage is not None:
        meta["usage"] = usage
    meta["usage_ledger"] = ledger
    meta["compaction_calls"] = sum(1 for r in ledger if r.get("is_compaction"))
    meta.update(stats)
    meta.update(visibility_meta(messages))
    problems.finish(meta)
    return Session(id=sid, format=FORMAT, path=str(path), messages=messages, meta=meta)


@importer(FORMAT, detect=_detect, description="Goose sessions.db (SQLite)")
def load_goose_db(path: Path, errors: str = "raise", session_id: str | list[str] | None = None,
                  **select: Any) -> list[Session]:
    """Load sessions from a Goose ``sessions.db`` (opened read-only).

    Args:
        path: The database file.
        errors: ``"raise"`` or ``"skip"`` for rows whose ``content_json`` is bad.
        session_id: One id or a list of ids; None loads every session (oldest first).

    Raises:
        SessionFormatError: not a Goose database, a bad row, or an unknown session id.
        ConfigError: an unknown selection keyword.
    """
    if select:
        raise ConfigError(f"goose-db sessions are selected with session_id=, not {sorted(select)}")
    wanted = [session_id] if isinstance(session_id, str) else session_id
    try:
        return _load(path, errors, wanted)
    except sqlite3.DatabaseError as exc:
        raise SessionFormatError(
            str(path), None, f"the SQLite database is corrupt ({exc}); restore it from a backup "
            f"or salvage it with: sqlite3 {path} .recover", expected="a Goose sessions.db") from exc


def _load(path: Path, errors: str, wanted: list[str] | None) -> list[Session]:
    with closing(_open_checked(path)) as conn:
        rows = conn.execute("SELECT * FROM sessions ORDER BY created_at, id").fetchall()
        if wanted is not None:
            by_id = {r["id"]: r for r in rows}
            missing = [w for w in wanted if w not in by_id]
            if missing:
                known = ", ".join(by_id) or "(none)"
                raise SessionFormatError(str(path), None, f"no session {missing[0]!r}; "
                                         f"sessions in this file: {known}")
            rows = [by_id[w] for w in wanted]
        return [_session(conn, path, r, errors) for r in rows]


def _message_row(session_id: str, message: Message) -> tuple[Any, ...]:
    data = message.to_goose()
    metadata = data.get("metadata", message.metadata.to_goose())
    # Goose gives a message without an id one of the form msg_<session>_<uuid> on insert.
    message_id = message.id or f"msg_{session_id}_{uuid.uuid4()}"
    return (message_id, session_id, message.role, json.dumps(data["content"]),
            message.created, json.dumps(metadata))


def write_goose_db_session(path: str | Path, session_id: str,
                           messages: Sequence[Message]) -> int:
    """Replace a session's messages in a Goose ``sessions.db``, as ``replace_conversation`` does.

    Every message row of the session is deleted and the whole list is inserted again in order
    (so ``id`` follows list order), with Goose's column layout: ``message_id`` (the message id,
    or ``msg_<session>_<uuid>`` when it has none), ``role``, ``content_json`` and
    ``metadata_json`` (from `Message.to_goose`) and ``created_timestamp`` (Unix seconds).
    Goose reloads in ``created_timestamp, id`` order, so a message whose ``created`` is older
    than an earlier one's comes back earlier.

    Args:
        path: An existing Goose database (it must have the ``sessions`` and ``messages`` tables).
        session_id: The session to rewrite; its ``sessions`` row must exist.
        messages: The new conversation, in order.

    Returns:
        The number of message rows written.

    Raises:
        SessionFormatError: the file is not a Goose database or has no such session.
    """
    path = Path(path)
    try:
        conn = sqlite3.connect(path)
    except sqlite3.Error as exc:
        raise SessionFormatError(str(path), None, f"cannot open the SQLite file: {exc}",
                                 expected="a Goose sessions.db") from exc
    with closing(conn):
        try:
            tables = _tables(conn)
        except sqlite3.Error as exc:
            raise SessionFormatError(str(path), None, f"cannot read the SQLite file: {exc}",
                                     expected="a Goose sessions.db") from exc
        if not {"sessions", "messages"} <= tables:
            raise SessionFormatError(str(path), None, "no sessions/messages tables",
                                     expected="a Goose sessions.db")
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise SessionFormatError(str(path), None,
                                     f"no session {session_id!r}; create its sessions row first")
        rows = [_message_row(session_id, m) for m in messages]
        with conn:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.executemany(
                "INSERT INTO messages (message_id, session_id, role, content_json, "
                "created_timestamp, metadata_json) VALUES (?, ?, ?, ?, ?, ?)", rows)
    return len(rows)
