"""`CellWriter`: cells (`CellResult`) written off the event loop, in order, all of them by
`close`; a write that fails reaches the runner."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from workbench.harness.results._cell_result import AttemptResult, CellResult
from workbench.harness.results._store import ResultsStore
from workbench.harness.results._writer import HAND_OVER_SECONDS, CellWriter

UNSTORABLE = object()
"""A value SQLite cannot bind: the write of a cell holding it fails."""


def _row(cell_id: str, **extra: object) -> dict[str, object]:
    return {"cell_id": cell_id, "run_id": "r", "session_id": "s", "status": "ok", **extra}


def _result(cell_id: str, attempts: int = 0, **columns: object) -> CellResult:
    result = CellResult(cell_id=cell_id, run_id="r", session_id="s", status="ok")
    result.update(columns)
    result.attempt_results = [AttemptResult(attempt_no=i + 1, outcome="ok")
                              for i in range(attempts)]
    return result


def test_close_writes_every_queued_cell_in_order(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    with CellWriter(path) as writer:
        for i in range(50):
            writer.put(_result(f"c{i:02d}", attempts=1))
    assert writer.written == 50
    db = sqlite3.connect(path)
    cells = [r[0] for r in db.execute("SELECT cell_id FROM cells ORDER BY rowid")]
    attempts = db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    db.close()
    assert cells == [f"c{i:02d}" for i in range(50)] and attempts == 50


def test_an_unstarted_writer_makes_nothing_until_started_and_then_writes_as_one_started(
        tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    preludes: list[int] = []
    writer = CellWriter(path, lambda store: preludes.append(1), start=False)
    time.sleep(0.05)
    assert not path.exists() and not writer.ready.is_set() and preludes == []
    writer.start()
    writer.start()  # once
    assert writer.ready.wait(10) and preludes == [1]
    writer.put(_result("c1", attempts=1))
    writer.close()
    assert writer.written == 1 and _cells_in(path) == ["c1"] and preludes == [1]


def test_an_unstarted_writer_starts_with_its_first_cell_or_its_close(tmp_path: Path) -> None:
    first = tmp_path / "first" / "results.sqlite"
    first.parent.mkdir()
    with CellWriter(first, start=False) as writer:
        writer.put(_result("c1"))
    assert writer.written == 1 and _cells_in(first) == ["c1"]
    closed = tmp_path / "closed" / "results.sqlite"
    closed.parent.mkdir()
    preludes: list[int] = []
    writer = CellWriter(closed, lambda store: preludes.append(1), start=False)
    writer.close()  # nothing to write: the store and its prelude are made all the same
    assert preludes == [1] and _cells_in(closed) == []


def test_a_writer_holding_its_cells_starts_only_when_told_finished_or_closed(
        tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    preludes: list[int] = []
    writer = CellWriter(path, lambda store: preludes.append(1), start=False, hold_cells=True)
    writer.put(_result("c1"))
    writer.put(_result("c2"))
    time.sleep(0.05)
    assert not path.exists() and preludes == [] and writer.written == 0
    writer.close()
    assert writer.written == 2 and _cells_in(path) == ["c1", "c2"] and preludes == [1]


def _prelude(store: ResultsStore) -> None:
    store.start_run("t", "{}", "0", run_id="R1")


def _last(store: ResultsStore) -> None:
    store.finish_run("R1", "finished")


def test_a_writer_that_finishes_before_it_starts_makes_its_new_store_whole(
        tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    writer = CellWriter(path, _prelude, start=False, hold_cells=True)
    writer.put(_result("c1", attempts=1))
    writer.put(_result("c2"))
    writer.finish(_last)
    assert writer.whole and writer.last_written and writer.written == 2
    writer.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]  # no log beside
    db = sqlite3.connect(path)
    assert db.execute("SELECT run_id, status FROM runs").fetchall() == [("R1", "finished")]
    assert db.execute("SELECT COUNT(*) FROM attempts").fetchone() == (1,)
    db.close()
    assert _cells_in(path) == ["c1", "c2"]


@pytest.mark.parametrize("how", ["started", "no last step", "no prelude", "not holding"])
def test_a_writer_makes_its_store_on_disk_otherwise(tmp_path: Path, how: str) -> None:
    path = tmp_path / "results.sqlite"
    if how == "no prelude":
        ResultsStore(path).close()
    writer = CellWriter(path, None if how == "no prelude" else _prelude, start=False,
                        hold_cells=how != "not holding")
    if how == "started":
        writer.start()
        assert writer.ready.wait(10) and path.exists()
    if how != "not holding":
        writer.put(_result("c1"))
    writer.finish(None if how == "no last step" else _last)
    writer.close()
    assert not writer.whole and _cells_in(path) == ([] if how == "not holding" else ["c1"])


def test_a_whole_store_whose_last_step_fails_is_on_disk_when_finish_raises(
        tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"

    def failing(store: ResultsStore) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    writer = CellWriter(path, _prelude, start=False, hold_cells=True)
    writer.put(_result("c1"))
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        writer.finish(failing)
    assert writer.whole and not writer.last_written
    assert _cells_in(path) == ["c1"]  # the runner may open the store now: it is there
    writer._thread.join(10)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        writer.close()


def test_a_whole_store_that_cannot_be_written_is_raised_at_close(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    writer = CellWriter(path, _prelude, start=False, hold_cells=True)
    writer.put(_result("c1"))
    path.write_bytes(b"made meanwhile")
    writer.finish(_last)
    with pytest.raises(FileExistsError):
        writer.close()
    assert path.read_bytes() == b"made meanwhile"


def test_a_failed_write_is_raised_on_the_next_put_and_at_close(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    writer = CellWriter(path)
    writer.put(_result("c1", repeat=UNSTORABLE))
    deadline = time.monotonic() + 10
    while writer._error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(sqlite3.ProgrammingError):
        writer.put(_result("c2"))
    with pytest.raises(sqlite3.ProgrammingError):
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
        writer.put(_result("c1"))
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
        writer.put(_result("c1"))
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        writer.close()
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM cells").fetchone() == (0,)


def test_a_store_that_cannot_be_opened_is_raised_by_finish_and_close(tmp_path: Path) -> None:
    # The thread dies at once: a finish that found it alive must not wait for it forever.
    errors: list[BaseException] = []

    def finish_and_close() -> None:
        for _ in range(20):
            writer = CellWriter(tmp_path / "missing" / "results.sqlite", start=False)
            writer.put(_result("c1"))
            for step in (functools.partial(writer.finish, _last), writer.close):
                try:
                    step()
                except sqlite3.OperationalError as exc:
                    errors.append(exc)

    caller = threading.Thread(target=finish_and_close, daemon=True)
    caller.start()
    caller.join(30)
    assert not caller.is_alive(), "finish waited for a writer thread that had died"
    assert len(errors) == 40 and all("unable to open" in str(e) for e in errors)


def test_finish_runs_its_last_step_after_every_cell_handed_over_and_folds_the_log(
        tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    seen: list[list[str]] = []

    def prelude(store: ResultsStore) -> None:
        store.start_run("t", "{}", "0", run_id="R1")

    def last(store: ResultsStore) -> None:
        seen.append([r["cell_id"] for r in store.db.execute("SELECT cell_id FROM cells")])
        store.finish_run("R1", "finished")

    async def go(writer: CellWriter) -> None:  # on a loop: the cells wait for a hand-over
        for i in range(3):
            writer.put(_result(f"c{i}"))
        writer.finish(last)

    writer = CellWriter(path, prelude)
    asyncio.run(go(writer))
    assert seen == [["c0", "c1", "c2"]] and writer.last_written  # after every cell before it
    reader = sqlite3.connect(path)  # read while the writer may still fold the log
    assert reader.execute("SELECT run_id, status FROM runs").fetchall() == [("R1", "finished")]
    reader.close()
    writer.close()
    # The last connection to close folded the log into the file: the writer's, or the
    # reader's when the writer closed while the reader was open (its close is not the last
    # then). Either way the file alone, without its log, holds the finished run.
    assert not path.with_name(path.name + "-wal").exists()
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(path.read_bytes())
    db = sqlite3.connect(copy)
    assert db.execute("SELECT status FROM runs").fetchall() == [("finished",)]
    assert db.execute("SELECT COUNT(*) FROM cells").fetchone() == (3,)
    db.close()


def test_a_failing_last_step_is_raised_by_finish_and_the_cells_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()

    def last(store: ResultsStore) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    writer = CellWriter(path)
    writer.put(_result("c1"))
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        writer.finish(last)
    assert not writer.last_written
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        writer.close()
    assert _cells_in(path) == ["c1"]


def test_between_waves_the_writer_folds_the_log_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    copy = tmp_path / "copy.sqlite"
    with CellWriter(path) as writer:
        for i in range(3):
            writer.put(_result(f"c{i}", attempts=1))  # no loop: straight to the writer
        folded: list[str] = []
        deadline = time.monotonic() + 30
        while folded != ["c0", "c1", "c2"] and time.monotonic() < deadline:
            time.sleep(0.02)
            copy.write_bytes(path.read_bytes())  # the file alone, without its log
            with contextlib.closing(sqlite3.connect(copy)) as db:
                try:
                    folded = [r[0] for r in db.execute("SELECT cell_id FROM cells ORDER BY rowid")]
                except sqlite3.DatabaseError:  # copied in the middle of a checkpoint
                    folded = []
        assert folded == ["c0", "c1", "c2"], "the log was not folded while the run went on"


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
    original = ResultsStore.record_results

    def spy(store: ResultsStore, results: list) -> None:  # type: ignore[type-arg]
        batches.append(len(results))
        original(store, results)

    ResultsStore.record_results = spy  # type: ignore[method-assign]
    try:
        # Queued while the thread waits for the first one to be handed over: one batch, or a
        # first cell alone and the rest together, never five commits.
        for i in range(5):
            writer._queue.put(_result(f"c{i}", attempts=1))
        writer.close()
    finally:
        ResultsStore.record_results = original  # type: ignore[method-assign]
    assert sum(batches) == 5 and len(batches) <= 2 and writer.written == 5
    assert _cells_in(path) == ["c0", "c1", "c2", "c3", "c4"]


def test_cells_finished_on_the_loop_go_over_together_and_close_hands_over_the_rest(
        tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    batches: list[list[str]] = []
    original = ResultsStore.record_results

    def spy(store: ResultsStore, results: list) -> None:  # type: ignore[type-arg]
        batches.append([r.cell_id for r in results])
        original(store, results)

    async def cells(writer: CellWriter) -> None:
        for i in range(4):  # finished within the hand-over time: one item for the writer
            writer.put(_result(f"a{i}", attempts=1))
        for _ in range(1000):  # until the writer has them (however loaded the machine)
            await asyncio.sleep(HAND_OVER_SECONDS)
            if writer.written:
                break
        writer.put(_result("b0", attempts=1))  # still waiting on the loop when it closes
        writer.close()

    ResultsStore.record_results = spy  # type: ignore[method-assign]
    try:
        writer = CellWriter(path)
        writer.ready.wait(10)
        asyncio.run(cells(writer))
    finally:
        ResultsStore.record_results = original  # type: ignore[method-assign]
    assert batches == [["a0", "a1", "a2", "a3"], ["b0"]] and writer.written == 5
    assert _cells_in(path) == ["a0", "a1", "a2", "a3", "b0"]


def test_a_bad_cell_in_a_batch_keeps_the_cells_before_it_and_is_raised(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    writer = CellWriter(path)
    writer.ready.wait(10)
    for result in (_result("c1"), _result("c2"), _result("c3", repeat=UNSTORABLE),
                   _result("c4")):
        writer._queue.put(result)
    with pytest.raises(sqlite3.ProgrammingError):
        writer.close()
    assert _cells_in(path) == ["c1", "c2"] and writer.written == 2


def test_a_full_disk_in_a_batchs_summary_files_stops_the_writer_after_the_cells_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.harness.results._writer as writer_module
    from workbench.errors import StorageError

    path = tmp_path / "results.sqlite"
    ResultsStore(path).close()
    (tmp_path / "summaries").mkdir()
    real = writer_module.write_file

    def full_from_c2(target: Path, text: str) -> None:  # the disk fills at c2's file
        if text != "summary of c1\n":
            raise StorageError(str(target), "the disk is full", "full")
        real(target, text)

    monkeypatch.setattr(writer_module, "write_file", full_from_c2)
    writer = CellWriter(path)
    writer.ready.wait(10)
    batch = [_result(f"c{i}", attempts=1) for i in (1, 2, 3)]
    for result in batch:
        result.texts.summary = f"summary of {result.cell_id}"
    writer._queue.put(batch)  # finished together: one batch
    with pytest.raises(StorageError, match="the disk is full"):
        writer.close()
    assert _cells_in(path) == ["c1"] and writer.written == 1
    files = list((tmp_path / "summaries").iterdir())
    assert [p.read_text(encoding="utf-8") for p in files] == ["summary of c1\n"]


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


def test_a_cells_texts_are_kept_with_its_row_and_replaced_with_it(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    first = _result("c1")
    first.texts.raw, first.texts.forgotten = "the reply", '{"files": []}'
    with CellWriter(path) as writer:
        writer.put(first)
    store = ResultsStore(path)
    assert store.cell_text("c1", "raw.txt") == "the reply"
    assert store.cell_text("c1", "forgotten.json") == '{"files": []}'
    assert store.cell_text("c1", "qa.json") is None
    again = _result("c1", status="error")
    again.texts.raw = "another reply"
    store.record_results([again])  # a re-run cell replaces its texts with its rows
    assert store.cell_text("c1", "raw.txt") == "another reply"
    assert store.cell_text("c1", "forgotten.json") is None
    store.close()
