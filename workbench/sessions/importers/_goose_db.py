"""Goose's SQLite session store (``~/.local/share/goose/sessions/sessions.db``).

Loading opens the file read-only and reads as Goose does: messages ordered by ``created_timestamp, id``; timestamps above 1e10 are
milliseconds; roles other than user/assistant are skipped; a ``metadata_json`` that does not parse
falls back to the defaults (both visible). Every message is kept with its visibility flags.
``usage_ledger`` rows (one per billed call, compaction calls flagged) become ``meta["usage"]``.
`write_goose_db_session` is the one writer: it replaces a session's messages the way Goose's
``replace_conversation`` does after a compaction.

Rows are read with their types checked and their sizes bounded (`_goose_db_rows`): a
timestamp that is text, or a content larger than `MAX_RECORD_BYTES`, is a bad record naming
the row and column. Before any message is read, the sessions selected are counted: more than
`MAX_MESSAGES` messages, or more than `MAX_FILE_BYTES` of content, is an error asking to select
fewer sessions; then the messages are streamed from the cursor. A message row repeating an
earlier one (same ``message_id``, role, time, content and metadata) is read once and noted in
``meta["warnings"]``.
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
from workbench.sessions._limits import (
    MAX_FILE_BYTES,
    MAX_RECORD_BYTES,
    SELECT_FEWER,
    check_message_count,
)
from workbench.sessions._registry import importer
from workbench.sessions._session import Session
from workbench.sessions.importers._goose_common import read_goose_message, visibility_meta
from workbench.sessions.importers._goose_db_rows import (
    build_message,
    checked_row,
    guarded_rows,
    message_of,
    message_rows,
    number,
    same_record,
    session_infos,
    table_columns,
    text,
)
from workbench.sessions.importers._readers import Problems, loads

FORMAT = "goose-db"
SQLITE_MAGIC = "SQLite format 3"
_SESSION_SCALARS = ("name", "description", "session_type", "working_dir", "created_at",
                    "updated_at", "provider_name", "schedule_id", "project_id",
                    "parent_session_id", "goose_mode", "total_tokens", "input_tokens",
                    "output_tokens", "cache_read_tokens", "cache_write_tokens",
                    "accumulated_total_tokens", "accumulated_input_tokens",
                    "accumulated_output_tokens", "accumulated_cache_read_tokens",
                    "accumulated_cache_write_tokens", "accumulated_cost")
SESSION_COLUMNS = ("id", *_SESSION_SCALARS, "model_config_json")
LEDGER_TEXT = ("model", "cost_source")
LEDGER_NUMBERS = ("id", "created_timestamp", "input_tokens", "output_tokens", "total_tokens",
                  "cache_read_tokens", "cache_write_tokens", "cost", "is_compaction")


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
    path = Path(path)
    with closing(_open_checked(path)) as conn:
        infos = session_infos(conn, path, "raise", SESSION_COLUMNS)
        counts = dict(conn.execute("SELECT session_id, COUNT(*) FROM messages "
                                   "GROUP BY session_id").fetchall())
    return [{"id": sid, "name": _name(info), "created": info.get("created_at"),
             "messages": counts.get(sid, 0)} for sid, info in infos]


def _name(info: dict[str, object]) -> str:
    name = info.get("name") or info.get("description") or ""
    return name if isinstance(name, str) else str(name)


def _read_messages(conn: sqlite3.Connection, sid: str, problems: Problems,
                   stats: dict[str, int]) -> list[Message]:
    out: list[Message] = []
    first: dict[str, tuple[int, str]] = {}  # message_id -> (row id, where) of its first row
    for row_id, values in message_rows(conn, sid):
        where = f"messages row {row_id}"
        if values is None:  # a value of the wrong type or size: say which, cell by cell
            raw = message_of(checked_row(conn, row_id), where, problems, stats)
        else:
            raw = build_message(values, where, problems, stats)
        if raw is None:
            continue
        if raw["id"]:
            earlier = first.setdefault(raw["id"], (row_id, where))
            if earlier[0] != row_id and same_record(conn, earlier[0], row_id):
                problems.duplicate(where, earlier[1], raw["id"])
                continue
        msg = read_goose_message(raw, where, problems)
        if msg is not None:
            out.append(msg)
    return out


def _ledger(conn: sqlite3.Connection, sid: str, problems: Problems) -> list[dict[str, object]]:
    if "usage_ledger" not in _tables(conn):
        return []
    present = table_columns(conn, "usage_ledger")
    found = []
    for row in guarded_rows(conn, "usage_ledger", (*LEDGER_NUMBERS, *LEDGER_TEXT), present,
                            "WHERE session_id = ? ORDER BY created_timestamp, id", (sid,)):
        where = "usage_ledger row " + str(row["id"].value if "id" in row else "?")
        entry: dict[str, object] = {"session_id": sid}
        for name in LEDGER_NUMBERS:
            if name in row:
                entry[name] = number(row, name, where, problems)
        for name in LEDGER_TEXT:
            if name in row:
                entry[name] = text(row, name, where, problems)
        found.append(entry)
    return found


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


def _session(conn: sqlite3.Connection, path: Path, sid: str, info: dict[str, object]) -> Session:
    problems = info.pop("_problems")
    assert isinstance(problems, Problems)  # put there by session_infos
    stats = {"skipped_roles": 0, "metadata_defaults": 0}
    messages = _read_messages(conn, sid, problems, stats)
    ledger = _ledger(conn, sid, problems)
    meta: dict[str, Any] = {k: info[k] for k in _SESSION_SCALARS if k in info}
    meta["name"] = _name(info)
    config_json = info.get("model_config_json")
    try:
        model_config = loads(config_json) if isinstance(config_json, str) else None
    except json.JSONDecodeError:
        model_config = config_json
    meta["model_config"] = model_config
    models = [r["model"] for r in ledger if r.get("model")]
    if isinstance(model_config, dict) and isinstance(model_config.get("model_name"), str):
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
        infos = session_infos(conn, path, errors, SESSION_COLUMNS)
        if wanted is not None:
            by_id = dict(infos)
            missing = [w for w in wanted if w not in by_id]
            if missing:
                known = ", ".join(by_id) or "(none)"
                raise SessionFormatError(str(path), None, f"no session {missing[0]!r}; "
                                         f"sessions in this file: {known}")
            infos = [(w, by_id[w]) for w in dict.fromkeys(wanted)]
        _check_selected(conn, path, [sid for sid, _ in infos], wanted is None)
        return [_session(conn, path, sid, info) for sid, info in infos]


def _check_selected(conn: sqlite3.Connection, path: Path, sids: list[str], every: bool) -> None:
    """Refuse, before reading any message, sessions holding more messages or content than one
    session file may (`MAX_MESSAGES`, `MAX_FILE_BYTES`)."""
    # Rows over the record limit are never fetched (each is a bad record): not counted here.
    sized = "content_json" in table_columns(conn, "messages")
    fetched = (f"COALESCE(SUM(CASE WHEN length(content_json) <= {MAX_RECORD_BYTES} THEN "
               "length(content_json) END), 0)")
    totals = f"SELECT COUNT(*), {fetched if sized else '0'} FROM messages"
    count = size = 0
    if every:
        count, size = conn.execute(totals).fetchone()
    for start in range(0, 0 if every else len(sids), 500):
        chunk = sids[start:start + 500]
        marks = ", ".join("?" for _ in chunk)
        more, bytes_ = conn.execute(f"{totals} WHERE session_id IN ({marks})", chunk).fetchone()
        count, size = count + more, size + bytes_
    check_message_count(path, count, selected=True)
    if size > MAX_FILE_BYTES:
        raise SessionFormatError(str(path), None, f"the sessions selected hold {size:,} bytes "
                                 f"of messages; the limit is {MAX_FILE_BYTES:,} per session "
                                 f"file ({SELECT_FEWER})")


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
