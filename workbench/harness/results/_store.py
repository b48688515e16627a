"""`ResultsStore`: the run folder's ``results.sqlite`` (runs, cells, attempts, cell texts).

One writer at a time: the runner writes the run's rows, and its `CellWriter` thread the cells
(``_writer``). A cell's row, its attempt rows and its texts (`CellResult`) are written in a
single transaction, so a killed run loses only the cells in flight or queued and never leaves
half a cell. Every text value is passed through `workbench._redact` on its way in, so no key
reaches the file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path

from workbench._redact import redact, redact_json, redactor
from workbench._sqlite import enable_wal, write_whole
from workbench._ulid import new_ulid
from workbench.harness.results._cell_result import (
    ATTEMPT_COLUMNS,
    CELL_COLUMNS,
    CellResult,
    SQLValue,
)
from workbench.harness.results._migrations import create, create_in_memory, migrate, transaction

BUSY_TIMEOUT_MS = 30_000

_IDS_PER_STATEMENT = 500
"""Cell ids per ``DELETE ... IN (...)``: well under SQLite's smallest bound on parameters."""

_CELL_COLUMN_SET = frozenset(CELL_COLUMNS)
_CELL_VALUES = attrgetter(*CELL_COLUMNS)
"""A `CellResult`'s cells columns, in `CELL_COLUMNS` order (its fields bear their names)."""
_ATTEMPT_VALUES = attrgetter(*ATTEMPT_COLUMNS[2:])
"""An `AttemptResult`'s attempts columns after ``attempt_id`` and ``cell_id``."""
_INSERT_CELL = (f"INSERT INTO cells ({', '.join(CELL_COLUMNS)})"
                f" VALUES ({', '.join('?' for _ in CELL_COLUMNS)})")
_INSERT_ATTEMPT = (f"INSERT INTO attempts ({', '.join(ATTEMPT_COLUMNS)})"
                   f" VALUES ({', '.join('?' for _ in ATTEMPT_COLUMNS)})")

def utc_now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat()


def connect(path: str | Path) -> sqlite3.Connection:
    """Open (creating) a results database: autocommit, WAL, busy timeout, migrated. A new
    file is written whole, migrated and in WAL mode (`_migrations.create`): it is opened
    without asking for either again."""
    made = create(path)
    db = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    if not made:
        enable_wal(db, BUSY_TIMEOUT_MS / 1000)
    db.execute("PRAGMA synchronous=NORMAL")
    if not made:
        migrate(db)
    return db


class ResultsStore:
    """Typed helpers over ``results.sqlite``.

    Args:
        path: The database file (created and migrated when missing).
        whole: Make a new store in memory, and write it to `path` in one piece when it is
            closed (a writer that has all its rows at hand: `CellWriter`); a file store
            where that cannot be done. `whole` says which it is. `replaced` counts the
            cell rows its writes replaced (a cell written again: `RowsSoFar` reads all then).
    """

    def __init__(self, path: str | Path, *, whole: bool = False) -> None:
        self.path = Path(path)
        db = create_in_memory() if whole else None
        self.whole = db is not None
        if db is None:
            db = connect(self.path)
        db.row_factory = sqlite3.Row
        self.db, self.replaced = db, 0

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database file as far as readers allow (what the
        last connection's close would otherwise do, on the caller's time)."""
        self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def restart_log(self) -> None:
        """Start the write-ahead log over now, after a checkpoint folded all of it: the first
        write after a full checkpoint rewrites the log's header and syncs it (an fsync, at
        ``synchronous=NORMAL``), and this write (the user version set to what it is, which
        changes nothing) takes that on the caller's time instead of the next cells'."""
        with transaction(self.db):
            version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
            self.db.execute(f"PRAGMA user_version = {version}")

    def close(self) -> None:
        """Close the connection; a `whole` store is written to its file first (raising
        `FileExistsError` where a file is there, `OSError` where it cannot be written)."""
        try:
            if self.whole:
                write_whole(self.db, self.path)
        finally:
            self.db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs -------------------------------------------------------------------------------

    def start_run(self, name: str, spec_json: str, version: str,
                  run_id: str | None = None) -> str:
        """Insert a ``running`` run row and return its id (`run_id`, or a new one)."""
        run_id = run_id or new_ulid()
        with transaction(self.db):
            self.db.execute(
                "INSERT INTO runs (run_id, name, spec_json, started_at, workbench_version, status)"
                " VALUES (?, ?, ?, ?, ?, 'running')",
                (run_id, redact(name), redact_json(spec_json), utc_now(), version))
        return run_id

    def mark_interrupted(self, exclude: str | None = None) -> int:
        """Mark runs still 'running' (their process died) as 'interrupted'; returns how many.

        Only safe while holding the run folder's lock: then no other process is running.
        """
        with transaction(self.db):
            cur = self.db.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = COALESCE(finished_at, ?)"
                " WHERE status = 'running' AND run_id IS NOT ?", (utc_now(), exclude))
        return cur.rowcount

    def finish_run(self, run_id: str, status: str) -> None:
        """Set a run's final status and finish time."""
        with transaction(self.db):
            self.db.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                            (status, utc_now(), run_id))

    def record_executor(self, run_id: str, executor: str, cluster: str) -> None:
        """Note which executor (``local``/``ray``) and cluster (JSON text) run `run_id`."""
        with transaction(self.db):
            self.db.execute("UPDATE runs SET executor = ?, cluster = ? WHERE run_id = ?",
                            (executor, redact(cluster), run_id))

    def has_run(self, run_id: str) -> bool:
        """Whether a run row `run_id` is stored."""
        return self.db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() \
            is not None

    def runs(self) -> list[dict[str, SQLValue]]:
        """Every run row, oldest first."""
        return [dict(r) for r in self.db.execute("SELECT * FROM runs ORDER BY run_id")]

    # -- cells ------------------------------------------------------------------------------

    def cell_statuses(self) -> dict[str, str]:
        """cell_id -> status of every stored cell."""
        return {r[0]: r[1] for r in self.db.execute("SELECT cell_id, status FROM cells")}

    def cells_with_error_type(self, error_type: str) -> set[str]:
        """Ids of the stored cells whose ``error_type`` is `error_type`."""
        return {r[0] for r in self.db.execute(
            "SELECT cell_id FROM cells WHERE error_type = ?", (error_type,))}

    def cells_of_sessions_starting(self, prefix: str) -> set[str]:
        """Ids of the stored cells whose ``session_id`` starts with `prefix`."""
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return {r[0] for r in self.db.execute(
            "SELECT cell_id FROM cells WHERE session_id LIKE ? ESCAPE '\\'", (pattern,))}

    def delete_cells(self, cell_ids: Iterable[str]) -> int:
        """Remove cells and their attempts; returns how many cells were removed."""
        removed = 0
        with transaction(self.db):
            for cell_id in cell_ids:
                self.db.execute("DELETE FROM attempts WHERE cell_id = ?", (cell_id,))
                removed += self.db.execute("DELETE FROM cells WHERE cell_id = ?",
                                           (cell_id,)).rowcount
        return removed

    def record_cell(self, row: Mapping[str, object],
                    attempts: Iterable[Mapping[str, object]] = ()) -> None:
        """Write a finished cell and its attempts in one transaction, replacing an older row.

        Args:
            row: Cell columns (see `CELL_COLUMNS`); missing ones are NULL.
            attempts: Attempt columns (see `ATTEMPT_COLUMNS`); ``attempt_id`` is generated
                and ``cell_id`` filled in when absent.
        """
        self.record_cells([(row, attempts)])

    def record_results(self, results: Iterable[CellResult]) -> None:
        """Write finished cells (rows, attempts and kept texts) in one transaction: all of
        them or none (never part of a cell), at the cost of one commit. A cell written before
        is replaced.

        The rows are what `record_cells` would write for ``r.row()`` and each attempt's
        ``row()``, made straight from the objects: every column in one statement per table (a
        value left None is NULL, as a column left out is: no column has a default), and each
        distinct text redacted once per call (a wave's rows share most of theirs)."""
        results = list(results)
        if not results:  # no transaction (and no commit) for nothing
            return
        last = {r.cell_id: i for i, r in enumerate(results)}  # a cell written twice: its last
        clean = _Cleaner()
        cell_rows: list[list[object]] = []
        attempt_rows: list[list[object]] = []
        text_rows: list[tuple[object, str, str]] = []
        for i, result in enumerate(results):
            cell_id = result.cell_id
            if last[cell_id] != i:
                continue
            cell_rows.append(clean.values(_CELL_VALUES(result)))
            for attempt in result.attempt_results:
                attempt_id = attempt.attempt_id
                attempt_rows.append(clean.values((
                    new_ulid() if attempt_id is None else attempt_id, cell_id,
                    *_ATTEMPT_VALUES(attempt))))
            if isinstance(cell_id, str):  # texts are keyed by the (text) cell id
                text_rows.extend((cell_id, name, text)
                                 for name, text in result.texts.kept().items())
        with transaction(self.db):
            self._delete_cells_in(list(last))
            self.db.executemany(_INSERT_CELL, cell_rows)
            self.db.executemany(_INSERT_ATTEMPT, attempt_rows)
            self.db.executemany("INSERT INTO cell_texts (cell_id, name, text) VALUES (?, ?, ?)",
                                text_rows)

    def cell_text(self, cell_id: str, name: str) -> str | None:
        """A text a cell kept beside its row (``raw.txt``, ``forgotten.json``, ``qa.json``),
        or None."""
        row = self.db.execute("SELECT text FROM cell_texts WHERE cell_id = ? AND name = ?",
                              (cell_id, name)).fetchone()
        return None if row is None else str(row[0])

    def record_cells(self, cells: Iterable[tuple[Mapping[str, object],
                                                 Iterable[Mapping[str, object]]]],
                     texts: dict[str, dict[str, str]] | None = None) -> None:
        """Write several finished cells, each as `record_cell` does, in one transaction: all
        of them or none (never part of a cell), at the cost of one commit.

        Args:
            cells: (cell columns, attempt columns) per cell.
            texts: Cell id -> name -> text kept beside the row (already redacted).

        Raises:
            ValueError: a row has a column the table does not (nothing is written).
        """
        cells = [(row, list(attempts)) for row, attempts in cells]
        for row, _ in cells:
            unknown = set(row) - _CELL_COLUMN_SET
            if unknown:
                raise ValueError(f"unknown cell columns: {sorted(unknown)}")
        # A cell written twice in one call keeps its last write, as if written one by one.
        last = {row["cell_id"]: i for i, (row, _) in enumerate(cells)}
        cells = [cell for i, cell in enumerate(cells) if last[cell[0]["cell_id"]] == i]
        clean = redactor().text
        cell_rows: list[Mapping[str, object]] = []
        attempt_rows: list[Mapping[str, object]] = []
        text_rows: list[tuple[object, str, str]] = []
        for row, attempts in cells:
            cell_id = row["cell_id"]
            cell_rows.append(row)
            attempt_rows.extend({"attempt_id": new_ulid(), "cell_id": cell_id, **attempt}
                                for attempt in attempts)
            # texts are keyed by the (text) cell id: a row without one has none
            kept = (texts or {}).get(cell_id, {}) if isinstance(cell_id, str) else {}
            text_rows.extend((cell_id, name, text) for name, text in kept.items())
        with transaction(self.db):
            self._delete_cells_in(list(last))
            self._insert_many("cells", CELL_COLUMNS, cell_rows, clean)
            self._insert_many("attempts", ATTEMPT_COLUMNS, attempt_rows, clean)
            self.db.executemany("INSERT INTO cell_texts (cell_id, name, text) VALUES (?, ?, ?)",
                                text_rows)

    def _delete_cells_in(self, ids: list[object]) -> None:
        """Remove the rows (cell, attempts, texts) of the cells `ids`, inside a transaction."""
        for start in range(0, len(ids), _IDS_PER_STATEMENT):
            chunk = ids[start:start + _IDS_PER_STATEMENT]
            marks = ", ".join("?" for _ in chunk)
            for table in ("attempts", "cells", "cell_texts"):
                gone = self.db.execute(f"DELETE FROM {table} WHERE cell_id IN ({marks})", chunk)
                self.replaced += gone.rowcount if table == "cells" else 0

    def _insert(self, table: str, columns: tuple[str, ...], row: Mapping[str, object],
                clean: Callable[[str], str] | None = None) -> None:
        self._insert_many(table, columns, [row], clean)

    def _insert_many(self, table: str, columns: tuple[str, ...],
                     rows: list[Mapping[str, object]],
                     clean: Callable[[str], str] | None = None) -> None:
        """Insert `rows` in their order, one statement per run of rows naming the same
        columns (a column a row leaves out gets its default, as in a single insert)."""
        start = 0
        while start < len(rows):
            names = [c for c in columns if c in rows[start]]
            end = start + 1
            while end < len(rows) and len(rows[end]) == len(names) and \
                    all(c in rows[end] for c in names):
                end += 1
            values = [[_sql_value(row[c]) for c in names] for row in rows[start:end]]
            if clean is not None:
                values = [[clean(v) if isinstance(v, str) else v for v in vs] for vs in values]
            marks = ", ".join("?" for _ in names)
            self.db.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
                                values)
            start = end

    def cells(self) -> list[dict[str, SQLValue]]:
        """Every cell row as a dict, in insertion order."""
        return [dict(r) for r in self.db.execute("SELECT * FROM cells ORDER BY rowid")]

    def attempts(self) -> list[dict[str, SQLValue]]:
        """Every attempt row as a dict, ordered by id (time)."""
        return [dict(r) for r in self.db.execute("SELECT * FROM attempts ORDER BY attempt_id")]

    def billed(self) -> tuple[float, int, int]:
        """(cost, input tokens, output tokens) this run folder paid for: the ``spent_*``
        columns summed over every stored cell (recorded and shared answers cost nothing)."""
        row = self.db.execute(
            "SELECT COALESCE(SUM(spent_cost), 0), COALESCE(SUM(spent_input_tokens), 0),"
            " COALESCE(SUM(spent_output_tokens), 0) FROM cells").fetchone()
        return float(row[0]), int(row[1]), int(row[2])

    def spent(self) -> tuple[float, int]:
        """(cost, input + output tokens) this run folder paid for (see `billed`)."""
        cost, tokens_in, tokens_out = self.billed()
        return cost, tokens_in + tokens_out


_REMEMBERED_CHARS = 256
"""Texts at least this long are redacted through the run memo (a traceback, an error message
met cell after cell); shorter ones (ids, times, names) at once, a memo lookup costing about
what their redaction does."""


class _Cleaner:
    """Column values as stored (`_sql_value`), every text redacted (the redactor's), each
    distinct text once per write: a wave's rows share most of their texts, and a dict lookup
    costs less than the run memo's (a key, a lock, an ordered table)."""

    def __init__(self) -> None:
        clean = redactor()
        self._remembered = clean.text
        self._once = clean.text_once
        self._seen: dict[str, str] = {}

    def _clean(self, text: str) -> str:
        return (self._once if len(text) < _REMEMBERED_CHARS else self._remembered)(text)

    def values(self, raw: Iterable[object]) -> list[object]:
        """`raw` as stored: None and numbers as they are, the rest through `text`."""
        return [value if value is None or type(value) is int or type(value) is float
                else self.text(value) for value in raw]

    def text(self, value: object) -> object:
        """A text redacted (once per distinct text); another value as `_sql_value` stores it,
        redacted when that is a text."""
        if type(value) is str:
            found = self._seen.get(value)
            if found is None:
                found = self._seen[value] = self._clean(value)
            return found
        value = _sql_value(value)
        return self._clean(value) if isinstance(value, str) else value


def _sql_value(value: object) -> object:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value
