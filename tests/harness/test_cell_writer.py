"""`CellWriter`: cells written off the event loop, in order, all of them by `close`; a write
that fails reaches the runner."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from workbench.harness.results._store import ResultsStore
from workbench.harness.results._writer import CellWriter


def _row(cell_id: str, **extra: object) -> dict[str, object]:
    return {"cell_id": cell_id, "run_id": "r", "session_id": "s", "status": "ok", **extra}


def test_close_writes_every_queued_cell_in_order(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    with CellWriter(path) as writer:
        for i in range(50):
            writer.put(_row(f"c{i:02d}"), [{"attempt_no": 1, "outcome": "ok"}])
    assert writer.written == 50
    db = sqlite3.connect(path)
    cells = [r[0] for r in db.execute("SELECT cell_id FROM cells ORDER BY rowid")]
    attempts = db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    db.close()
    assert cells == [f"c{i:02d}" for i in range(50)] and attempts == 50


def test_a_failed_write_is_raised_on_the_next_put_and_at_close(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    writer = CellWriter(path)
    writer.put(_row("c1", no_such_column=1))
    deadline = time.monotonic() + 10
    while writer._error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(ValueError, match=r"unknown cell columns: \['no_such_column'\]"):
        writer.put(_row("c2"))
    with pytest.raises(ValueError, match="unknown cell columns"):
        writer.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM cells").fetchone()[0] == 0
    db.close()


def test_a_new_store_is_made_and_its_prelude_written_before_the_first_cell(
        tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    assert not path.exists()
    seen: list[list[str]] = []

    def prelude(store: ResultsStore) -> None:
        seen.append([r["cell_id"] for r in store.db.execute("SELECT cell_id FROM cells")])
        store.start_run("t", "{}", "0", run_id="R1")

    with CellWriter(path, prelude) as writer:
        writer.put(_row("c1"))
    db = sqlite3.connect(path)
    assert seen == [[]]  # migrated and empty when the prelude ran
    assert db.execute("SELECT run_id, status FROM runs").fetchall() == [("R1", "running")]
    assert [r[0] for r in db.execute("SELECT cell_id FROM cells")] == ["c1"]


def test_a_failing_prelude_is_raised_like_a_failed_write_and_no_cell_is_written(
        tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"

    def prelude(store: ResultsStore) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    writer = CellWriter(path, prelude)
    deadline = time.monotonic() + 10
    while writer._error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        writer.put(_row("c1"))
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        writer.close()
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM cells").fetchone() == (0,)
