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


def _cells_in(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT cell_id FROM cells ORDER BY rowid")]
    finally:
        db.close()


def test_cells_queued_together_are_written_in_one_transaction(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    batches: list[int] = []
    writer = CellWriter(path)
    writer.ready.wait(10)
    original = ResultsStore.record_cells

    def spy(store: ResultsStore, cells: list) -> None:  # type: ignore[type-arg]
        batches.append(len(cells))
        original(store, cells)

    ResultsStore.record_cells = spy  # type: ignore[method-assign]
    try:
        # Queued while the thread waits for the first one to be handed over: one batch, or a
        # first cell alone and the rest together, never five commits.
        for i in range(5):
            writer._queue.put((_row(f"c{i}"), [{"attempt_no": 1, "outcome": "ok"}]))
        writer.close()
    finally:
        ResultsStore.record_cells = original  # type: ignore[method-assign]
    assert sum(batches) == 5 and len(batches) <= 2 and writer.written == 5
    assert _cells_in(path) == ["c0", "c1", "c2", "c3", "c4"]


def test_a_bad_cell_in_a_batch_keeps_the_cells_before_it_and_is_raised(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    writer = CellWriter(path)
    writer.ready.wait(10)
    for row in (_row("c1"), _row("c2"), _row("c3", no_such_column=1), _row("c4")):
        writer._queue.put((row, []))
    with pytest.raises(ValueError, match=r"unknown cell columns: \['no_such_column'\]"):
        writer.close()
    assert _cells_in(path) == ["c1", "c2"] and writer.written == 2


def test_record_cells_writes_all_or_none(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results.sqlite")
    with pytest.raises(ValueError, match="unknown cell columns"):
        store.record_cells([(_row("c1"), []), (_row("c2", bogus=1), [])])
    assert store.cells() == []
    store.record_cells([(_row("c1"), [{"attempt_no": 1}]), (_row("c2"), [])])
    store.record_cells([(_row("c1", status="error"), [])])  # a re-run cell replaces its rows
    assert [(c["cell_id"], c["status"]) for c in store.cells()] == [("c2", "ok"),
                                                                   ("c1", "error")]
    assert store.attempts() == []
    store.close()
