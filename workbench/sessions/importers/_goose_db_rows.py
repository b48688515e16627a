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

__all__ = ["Cell", "fingerprint", "guarded_rows", "message_of", "number", "session_infos",
           "table_columns", "text"]

NUMBER_TYPES = frozenset({"integer", "real", "null"})
EXPECTED_TIME = "Unix seconds, or milliseconds above 1e10"
EXPECTED_CONTENT = "a JSON array of Goose content items in content_json"


class Cell:
    """One column of one row: its SQLite type, length and value (None when over the limit)."""

    __slots__ = ("kind", "length", "name", "value")

    def __init__(self, name: str, kind: str, length: int | None, value: Any) -> None:
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


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The columns of `table`, generated ones included."""
    return {row[1] for row in conn.execute(f"PRAGMA table_xinfo({table})")}


def guarded_rows(conn: sqlite3.Connection, table: str, wanted: Sequence[str], present: set[str],
                 tail: str = "", args: Sequence[Any] = ()) -> Iterator[dict[str, Cell]]:
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
         expected: str | None = None, blob: bool = False) -> Any:
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
    if cell.kind == "text" or (blob and cell.kind == "blob"):
        return cell.value
    problems.bad(where, f"{name} is {cell.describe()}, not text", expected=expected)
    return None


def number(row: dict[str, Cell], name: str, where: str, problems: Problems, *,
           what: str = "a number", expected: str | None = None) -> Any:
    """The value of a numeric column (None when absent or NULL); a bad record (None returned)
    when it holds text or a blob."""
    cell = row.get(name)
    if cell is None or cell.kind == "null":
        return None
    if cell.kind in NUMBER_TYPES:
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


def fingerprint(row: dict[str, Cell]) -> str:
    """What makes two messages rows the same record: every column but the row id."""
    return repr([(c.kind, c.value) for name, c in row.items() if name != "id"])


def message_of(row: dict[str, Cell], where: str, problems: Problems,
             stats: dict[str, int]) -> dict[str, Any] | None:
    """The Goose message dict of one messages row, or None (skipped role or a bad record)."""
    role = text(row, "role", where, problems)
    if role not in ("user", "assistant"):
        if role is not None or "role" not in row or row["role"].kind == "null":
            stats["skipped_roles"] += 1  # Goose skips other roles
        return None
    content_json = text(row, "content_json", where, problems, expected=EXPECTED_CONTENT,
                        blob=True)
    if content_json is None:
        if "content_json" not in row or row["content_json"].kind == "null":
            problems.bad(where, "content_json is NULL", expected=EXPECTED_CONTENT)
        return None
    created = number(row, "created_timestamp", where, problems, what="a whole number",
                     expected=EXPECTED_TIME)
    if created is None and row.get("created_timestamp", Cell("", "null", 0, None)).kind != "null":
        return None
    try:
        content = loads(content_json)
    except json.JSONDecodeError as exc:
        problems.bad(where, f"invalid JSON: {exc}", expected=EXPECTED_CONTENT)
        return None
    if not isinstance(content, list):
        problems.bad(where, f"content_json is a JSON {type(content).__name__}",
                     expected=EXPECTED_CONTENT)
        return None
    meta_cell = row.get("metadata_json")
    meta = _metadata(meta_cell.value if meta_cell is not None and meta_cell.kind == "text"
                     else None)
    if meta is None:
        stats["metadata_defaults"] += 1
        meta = {"userVisible": True, "agentVisible": True}
    created = created or 0
    message_id = row.get("message_id")
    return {"id": str(message_id.value) if message_id is not None
            and message_id.kind in ("text", "integer") and not message_id.oversized() else None,
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
