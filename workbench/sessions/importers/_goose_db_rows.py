"""Reading a Goose ``sessions.db``'s rows with their types checked and their sizes bounded.

Only the columns the importer uses are selected, by name (``SELECT *`` would also fetch a
generated column holding a gigabyte blob). Each is selected with its SQLite type and length,
and its value only when it is within `MAX_RECORD_BYTES`: SQLite reports a blob's or text's
length without building it, so an oversized value is refused before it reaches Python. A value
of the wrong type (text where Goose writes a timestamp) is a bad record naming the row and the
column, as Goose itself, which decodes each column into a typed field, would fail on it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import SessionFormatError
from workbench.sessions._limits import MAX_RECORD_BYTES
from workbench.sessions.importers._readers import Problems, loads

__all__ = ["Cell", "build_message", "checked_row", "guarded_rows", "message_of",
           "message_rows", "number", "same_record", "session_infos", "table_columns", "text"]

NUMBER_TYPES = frozenset({"integer", "real", "null"})
EXPECTED_TIME = "Unix seconds, or milliseconds above 1e10"
EXPECTED_CONTENT = "a JSON array of Goose content items in content_json"
SqlValue = int | float | str | bytes | None
"""What SQLite hands back for one column."""


class Cell:
    """One column of one row: its SQLite type, length and value (None when over the limit)."""

    __slots__ = ("kind", "length", "name", "value")

    def __init__(self, name: str, kind: str, length: int | None, value: SqlValue) -> None:
        self.name, self.kind, self.length, self.value = name, kind, length, value

    def oversized(self) -> bool:
        """True when the value was too long to fetch."""
        return self.kind in ("text", "blob") and (self.length or 0) > MAX_RECORD_BYTES

    def describe(self) -> str:
        """What the cell holds, for an error message (``text ('yesterday')``, ``a blob``)."""
        if self.kind == "text" and isinstance(self.value, str):
            shown = self.value if len(self.value) <= 40 else self.value[:40] + "..."
            return f"text ({shown!r})"
        return {"blob": "a blob", "null": "NULL", "real": "a real number"}.get(self.kind,
                                                                             self.kind)


_NULL = Cell("", "null", None, None)


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The columns of `table`, generated ones included."""
    return {row[1] for row in conn.execute(f"PRAGMA table_xinfo({table})")}


def guarded_rows(conn: sqlite3.Connection, table: str, wanted: Sequence[str], present: set[str],
                 tail: str = "", args: Sequence[SqlValue] = ()) -> Iterator[dict[str, Cell]]:
    """Rows of `table` as ``{column: Cell}`` for the `wanted` columns that are `present`,
    streamed from the cursor. `tail` is the rest of the statement (``WHERE ... ORDER BY``)."""
    names = [c for c in wanted if c in present]
    parts = [f'typeof("{c}"), length("{c}"), CASE WHEN length("{c}") <= {MAX_RECORD_BYTES} '
             f'THEN "{c}" END' for c in names]
    cursor = conn.execute(f"SELECT {', '.join(parts)} FROM {table} {tail}", tuple(args))
    for raw in cursor:
        yield {name: Cell(name, raw[3 * i], raw[3 * i + 1], raw[3 * i + 2])
               for i, name in enumerate(names)}


def text(row: dict[str, Cell], name: str, where: str, problems: Problems, *,
         expected: str | None = None, blob: bool = False) -> str | bytes | None:
    """The value of a text column (or None when absent or NULL); a bad record (None returned)
    when it is oversized or not text (a blob accepted when `blob`)."""
    cell = row.get(name)
    if cell is None or cell.kind == "null":
        return None
    if cell.oversized():
        unit = "bytes" if cell.kind == "blob" else "characters"
        problems.bad(where, f"{name} holds {cell.length:,} {unit}; the limit is "
                     f"{MAX_RECORD_BYTES:,} per record", expected=expected)
        return None
    if isinstance(cell.value, str) or (blob and isinstance(cell.value, bytes)):
        return cell.value
    problems.bad(where, f"{name} is {cell.describe()}, not text", expected=expected)
    return None


def number(row: dict[str, Cell], name: str, where: str, problems: Problems, *,
           what: str = "a number", expected: str | None = None) -> int | float | None:
    """The value of a numeric column (None when absent or NULL); a bad record (None returned)
    when it holds text or a blob."""
    cell = row.get(name)
    if cell is None or cell.kind == "null":
        return None
    if isinstance(cell.value, int | float):
        return cell.value
    problems.bad(where, f"{name} is {cell.describe()}, not {what}", expected=expected)
    return None


def session_infos(conn: sqlite3.Connection, path: Path, errors: str,
                  columns: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """``(id, {column: value})`` per sessions row, oldest first, each value type-checked."""
    present = table_columns(conn, "sessions")
    order = "ORDER BY created_at, id" if "created_at" in present else "ORDER BY id"
    out = []
    for number_, row in enumerate(guarded_rows(conn, "sessions", columns, present,
                                               order), start=1):
        key = row["id"]
        if key.kind not in ("text", "integer") or key.oversized():
            raise SessionFormatError(str(path), f"sessions row {number_}", f"its id is "
                                     f"{key.describe()}, not text", expected="a Goose sessions.db")
        sid = str(key.value)
        problems = Problems(f"{path}#{sid}", errors)
        info: dict[str, Any] = {}
        for name, cell in row.items():
            if name != "id" and cell.kind in ("text", "blob"):
                info[name] = text(row, name, f"sessions row {sid!r}", problems)
            elif name != "id":
                info[name] = cell.value
        info["_problems"] = problems
        out.append((sid, info))
    return out


# Per column: the SQL condition under which its value needs no check in Python. A row meeting
# them all is read on the fast path; any other row is read again cell by cell (`message_of`),
# to name what is wrong with it.
_CLEAN = {
    "role": "typeof(role) IN ('text', 'null')",
    "content_json": (f"typeof(content_json) IN ('text', 'blob') AND length(content_json) <= "
                     f"{MAX_RECORD_BYTES}"),
    "created_timestamp": "typeof(created_timestamp) IN ('integer', 'real', 'null')",
    "metadata_json": f"metadata_json IS NULL OR length(metadata_json) <= {MAX_RECORD_BYTES}",
    "message_id": (f"message_id IS NULL OR (typeof(message_id) IN ('text', 'integer') AND "
                   f"length(message_id) <= {MAX_RECORD_BYTES})"),
}
MESSAGE_COLUMNS = ("message_id", "role", "content_json", "created_timestamp", "metadata_json")
SAME_RECORD = ("role", "content_json", "created_timestamp", "metadata_json")
"""The columns two rows with one ``message_id`` must share to be the same record."""


def message_rows(conn: sqlite3.Connection,
                 sid: str) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """``(row id, {column: value})`` per messages row of session `sid`, in Goose's order
    (``created_timestamp, id``), streamed; the values are None for a row that fails a check
    (read it again with `checked_row` to say why)."""
    present = table_columns(conn, "messages")
    names = [c for c in MESSAGE_COLUMNS if c in present]
    clean = " AND ".join(f"({_CLEAN[c]})" for c in names)
    values = [f'CASE WHEN length("{c}") <= {MAX_RECORD_BYTES} THEN "{c}" END' for c in names]
    cursor = conn.execute(f"SELECT id, {clean or '1'}, {', '.join(values)} FROM messages "
                          "WHERE session_id = ? ORDER BY created_timestamp, id", (sid,))
    for raw in cursor:
        yield raw[0], dict(zip(names, raw[2:], strict=True)) if raw[1] else None


def checked_row(conn: sqlite3.Connection, row_id: int) -> dict[str, Cell]:
    """One messages row as cells (type, length, value), for `message_of`."""
    present = table_columns(conn, "messages")
    return next(guarded_rows(conn, "messages", MESSAGE_COLUMNS, present, "WHERE id = ?",
                             (row_id,)))


def same_record(conn: sqlite3.Connection, first: int, second: int) -> bool:
    """Whether two messages rows hold the same record (see `SAME_RECORD`)."""
    names = [c for c in SAME_RECORD if c in table_columns(conn, "messages")]
    rows = conn.execute(f"SELECT {', '.join(names)} FROM messages WHERE id IN (?, ?)",
                        (first, second)).fetchall()
    return len(rows) == 2 and rows[0] == rows[1]


def message_of(row: dict[str, Cell], where: str, problems: Problems,
               stats: dict[str, int]) -> dict[str, Any] | None:
    """The Goose message dict of one row read cell by cell, or None (skipped or bad)."""
    role = text(row, "role", where, problems)
    if role is None and row.get("role", _NULL).kind != "null":
        return None
    if role not in ("user", "assistant"):
        stats["skipped_roles"] += 1  # whatever else the row holds, as Goose skips it
        return None
    content_json = text(row, "content_json", where, problems, expected=EXPECTED_CONTENT,
                        blob=True)
    if content_json is None:
        if row.get("content_json", _NULL).kind == "null":
            problems.bad(where, "content_json is NULL", expected=EXPECTED_CONTENT)
        return None
    created = number(row, "created_timestamp", where, problems, what="a whole number",
                     expected=EXPECTED_TIME)
    if created is None and row.get("created_timestamp", _NULL).kind != "null":
        return None
    meta = row.get("metadata_json", _NULL)
    message_id = row.get("message_id", _NULL)
    return build_message({"role": role, "content_json": content_json,
                          "created_timestamp": created,
                          "metadata_json": meta.value if meta.kind == "text" else None,
                          "message_id": None if message_id.oversized() else message_id.value},
                         where, problems, stats)


def build_message(values: dict[str, Any], where: str, problems: Problems,
                  stats: dict[str, int]) -> dict[str, Any] | None:
    """The Goose message dict of a row whose values have their types, or None: a role other
    than user/assistant is skipped (as Goose does), bad content JSON is a bad record."""
    role = values.get("role")
    if role not in ("user", "assistant"):
        stats["skipped_roles"] += 1
        return None
    try:
        content = loads(values["content_json"])
    except json.JSONDecodeError as exc:
        problems.bad(where, f"invalid JSON: {exc}", expected=EXPECTED_CONTENT)
        return None
    if not isinstance(content, list):
        problems.bad(where, f"content_json is a JSON {type(content).__name__}",
                     expected=EXPECTED_CONTENT)
        return None
    meta_json = values.get("metadata_json")
    meta = _metadata(meta_json if isinstance(meta_json, str) else None)
    if meta is None:
        stats["metadata_defaults"] += 1
        meta = {"userVisible": True, "agentVisible": True}
    created = values.get("created_timestamp") or 0
    message_id = values.get("message_id")
    return {"id": str(message_id) if isinstance(message_id, str | int) else None,
            "role": role, "created": int(created / 1000) if created > 1e10 else created,
            "content": content, "metadata": meta}


def _metadata(value_json: str | None) -> dict[str, Any] | None:
    if value_json is None:
        return None
    try:
        value = loads(value_json)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
