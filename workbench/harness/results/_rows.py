"""A run's stored tables (cells, attempts, runs) as rows, and the rows as pandas frames.

The rows are what the runner's writer reads after a run's last write and what `Results.load`
reads over one read-only connection; `Results` makes each frame of them when it is first used.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import pandas as pd

__all__ = ["CELL_ORDER", "RowsSoFar", "TableRows", "Tables", "cells_frame", "expand_metrics",
           "frame_of", "frames_of", "read_rows", "read_rows_of", "read_tables"]

CELL_ORDER = "session_id, strategy, model, template, window, repeat, rowid"
"""Cells load in key order, not in the order they finished (which depends on scheduling), so
everything made from a run (tables, comparisons, the report's sections) reads the same for the
same cells."""


TableRows = tuple[list[tuple[object, ...]], list[str]]
"""One table as read: its rows (plain tuples) and its column names."""


Tables = tuple[TableRows, TableRows, TableRows]
"""The cells, attempts and runs tables as read (`read_rows`)."""


def read_rows(db: sqlite3.Connection) -> Tables:
    """The cells (in `CELL_ORDER`), attempts and runs tables of an open results database, as
    rows: what `read_tables` makes frames of. Cheap: the writer thread reads them after the
    run's last write, and the loop thread makes the frames while the writer closes."""
    cells, attempts, runs = (_select(db, f"SELECT * FROM {table} ORDER BY {order}")
                             for table, order in (("cells", CELL_ORDER), ("attempts", "rowid"),
                                                  ("runs", "rowid")))
    return cells, attempts, runs


def _select(db: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> TableRows:
    """The rows of one query as plain tuples (whatever the connection's row factory), and
    its column names."""
    cursor = db.cursor()
    cursor.row_factory = None
    rows = cursor.execute(sql, params).fetchall()
    return rows, [d[0] for d in cursor.description]


class RowsSoFar:
    """A new run folder's cells and attempts rows, read as they are written: `catch_up` reads
    the rows added since it last read (the writer thread calls it after each write, while the
    calls are out), so `tables`, after the run's last write, reads only that write's rows and
    the runs table: the same `Tables` as `read_rows` (which is on the run's critical path),
    the cells in the order SQLite gives them (`CELL_ORDER`, one query of their rowids).

    Only rows added are read again: where a write replaced a cell's rows (perhaps under the
    same rowids: the store counts them, `ResultsStore.replaced`), `tables` reads them all.
    """

    def __init__(self) -> None:
        self._rows: dict[str, dict[int, tuple[object, ...]]] = {"cells": {}, "attempts": {}}
        self._columns: dict[str, list[str]] = {}
        self._last = {"cells": 0, "attempts": 0}

    def catch_up(self, db: sqlite3.Connection) -> None:
        """Read the cells and attempts rows added since the last call."""
        for table, held in self._rows.items():
            rows, columns = _select(db, f"SELECT rowid, * FROM {table} WHERE rowid > ? "
                                        "ORDER BY rowid", (self._last[table],))
            self._columns[table] = columns[1:]
            held.update((cast(int, row[0]), row[1:]) for row in rows)  # row[0]: the rowid
            if rows:
                self._last[table] = cast(int, rows[-1][0])

    def tables(self, db: sqlite3.Connection, *, replaced: bool = False) -> Tables:
        """What `read_rows` reads now, from the rows read so far and those added since;
        `read_rows` itself when nothing was read before, when rows were `replaced`, or when
        the tables do not hold exactly the rows read (a catch-up that failed, say)."""
        if replaced or not self._columns:
            return read_rows(db)
        self.catch_up(db)
        cells, attempts = self._rows["cells"], self._rows["attempts"]
        order = [r[0] for r in db.execute(f"SELECT rowid FROM cells ORDER BY {CELL_ORDER}")]
        count = db.execute("SELECT count(*) FROM attempts").fetchone()[0]
        if len(order) != len(cells) or count != len(attempts) or not cells.keys() >= set(order):
            return read_rows(db)
        return (([cells[r] for r in order], self._columns["cells"]),
                (list(attempts.values()), self._columns["attempts"]),
                _select(db, "SELECT * FROM runs ORDER BY rowid"))


def read_rows_of(db_path: Path) -> Tables:
    """The cells, attempts and runs tables (`read_rows`) over one read-only connection
    (loading a run never creates or migrates anything)."""
    db = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return read_rows(db)
    finally:
        db.close()


def frame_of(table: TableRows) -> pd.DataFrame:
    """One of `read_rows`' tables as a frame: what ``pandas.read_sql_query`` builds (the same
    columns, values and dtypes: ``DataFrame.from_records`` with ``coerce_float``), without its
    per-query setup. Made from a list per column, which gives the same dtypes for the values
    SQLite returns (None, int, float, str, bytes) in about 0.6 of the time (a run's 40 cells
    and 50 columns: 0.44 against 0.75 ms); an empty table (whose columns ``from_records``
    makes objects) or repeated column names take ``from_records``."""
    rows, columns = table
    if not rows or len(set(columns)) != len(columns):
        return pd.DataFrame.from_records(rows, columns=columns, coerce_float=True)
    return pd.DataFrame(dict(zip(columns, map(list, zip(*rows, strict=True)), strict=True)))


def frames_of(tables: Tables) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """`read_rows`' tables as frames (`frame_of` each)."""
    cells, attempts, runs = (frame_of(table) for table in tables)
    return cells, attempts, runs


def read_tables(db: sqlite3.Connection) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The cells (in `CELL_ORDER`), attempts and runs tables of an open results database, as
    frames (`frames_of` `read_rows`)."""
    return frames_of(read_rows(db))


def _parsed_metrics(texts: Iterable[object]) -> tuple[list[dict[str, object]],
                                                     dict[str, dict[str, object]]]:
    """Each cell's ``metrics_json`` parsed ({} for none), and the distinct texts' values.
    Repeats answered alike store the same text: each distinct one is parsed once (the frames
    only read the dicts)."""
    seen: dict[str, dict[str, object]] = {}
    parsed = [(seen[v] if v in seen else seen.setdefault(v, json.loads(v)))
              if isinstance(v, str) and v else {} for v in texts]
    return parsed, seen


def expand_metrics(cells: pd.DataFrame) -> pd.DataFrame:
    """Cells with ``metrics_json`` expanded into one column per metric name."""
    if "metrics_json" not in cells.columns or cells.empty:
        return cells
    parsed, _ = _parsed_metrics(cells["metrics_json"])
    metrics = pd.DataFrame(parsed, index=cells.index)
    if any(c in cells.columns for c in metrics.columns):
        metrics = metrics[[c for c in metrics.columns if c not in cells.columns]]
    return pd.concat([cells, metrics], axis=1)


def cells_frame(table: TableRows) -> pd.DataFrame:
    """The cells table as `Results.cells` holds it: ``expand_metrics(frame_of(table))``, made
    in one step (each metric a column of the one frame built from the rows, no second frame
    joined to the first), with the same columns, values and dtypes."""
    rows, columns = table
    if "metrics_json" not in columns or not rows:
        return expand_metrics(frame_of(table))
    at = columns.index("metrics_json")
    parsed, seen = _parsed_metrics(row[at] for row in rows)
    if not all(type(m) is dict for m in seen.values()):  # not a run's metrics: as before
        return expand_metrics(frame_of(table))
    names: dict[str, None] = {}
    for metrics in seen.values():  # in order of first appearance, as a frame of dicts has them
        names.update(dict.fromkeys(metrics))
    extra = [name for name in names if name not in columns]
    if not extra:
        return frame_of(table)
    # A metric a cell lacks is NaN, as a frame made of dicts has it (not None).
    wide = [(*row, *(m.get(name, math.nan) for name in extra))
            for row, m in zip(rows, parsed, strict=True)]
    return frame_of((wide, [*columns, *extra]))
