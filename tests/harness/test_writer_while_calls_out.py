"""What a new run folder's writer does while the calls are out: it reads the rows written so
far (`RowsSoFar`), which give the tables `read_rows` gives, whatever it cannot vouch for (a
cell written twice, rows it did not see go) read whole; and it writes the spec's copy."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from pandas.testing import assert_frame_equal

from tests.harness.test_runner import experiment, scripted, write_session
from workbench.harness import Results, run_experiment
from workbench.harness.results._cell_result import AttemptResult, CellResult
from workbench.harness.results._rows import RowsSoFar, read_rows
from workbench.harness.results._store import ResultsStore
from workbench.harness.results._writer import CellWriter


def _result(cell_id: str, session: str, repeat: int, attempts: int = 1) -> CellResult:
    result = CellResult(cell_id=cell_id, run_id="r", session_id=session, status="ok",
                        strategy="goose", model="m", template="default", repeat=repeat)
    result.attempt_results = [AttemptResult(attempt_no=i + 1, outcome="ok")
                              for i in range(attempts)]
    return result


def _write(store: ResultsStore, results: list[CellResult]) -> None:
    store.record_results(results)


def test_rows_read_a_write_at_a_time_are_the_tables_in_sqlite_s_order(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "results.sqlite") as store:
        store.start_run("x", "{}", "0", run_id="r")
        so_far = RowsSoFar()
        # Written out of key order (sessions b, a; repeats 1, 0), two attempts for some.
        _write(store, [_result("c1", "b", 1), _result("c2", "a", 1, attempts=2)])
        so_far.catch_up(store.db)
        _write(store, [_result("c3", "b", 0), _result("c4", "a", 0)])
        so_far.catch_up(store.db)
        _write(store, [_result("c5", "a", 2, attempts=0)])  # not caught up: the last
        store.finish_run("r", "finished")
        tables, expected = so_far.tables(store.db), read_rows(store.db)
    assert tables == expected
    cells, columns = tables[0]
    assert [row[columns.index("cell_id")] for row in cells] == ["c4", "c2", "c5", "c3", "c1"]
    assert len(tables[1][0]) == 5 and tables[2][0][0][tables[2][1].index("status")] == "finished"


def _two_cells_read(store: ResultsStore) -> RowsSoFar:
    """A run row and two cells written, and read by a `RowsSoFar`."""
    store.start_run("x", "{}", "0", run_id="r")
    so_far = RowsSoFar()
    _write(store, [_result("c1", "a", 0), _result("c2", "a", 1)])
    so_far.catch_up(store.db)
    return so_far


def test_a_cell_written_twice_is_read_whole_even_under_its_old_rowid(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "results.sqlite") as store:
        so_far = _two_cells_read(store)
        again = _result("c2", "a", 1, attempts=3)  # the last row: its rowid is used again
        _write(store, [again])
        db = store.db
        assert [r[0] for r in db.execute("SELECT rowid FROM cells ORDER BY rowid")] == [1, 2]
        assert store.replaced == 1  # the store counts it: the rows read cannot show it
        assert so_far.tables(db, replaced=True) == read_rows(db)
        assert len(so_far.tables(db, replaced=True)[1][0]) == 4  # c1's attempt and c2's three


def test_rows_removed_behind_its_back_are_read_whole(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "results.sqlite") as store:
        so_far = _two_cells_read(store)
        store.delete_cells(["c1"])  # not a write replacing it: not counted
        assert store.replaced == 0
        assert so_far.tables(store.db) == read_rows(store.db)
        assert len(so_far.tables(store.db)[0][0]) == 1


def test_nothing_caught_up_reads_the_tables_as_read_rows_does(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "results.sqlite") as store:
        so_far = RowsSoFar()
        _write(store, [_result("c1", "a", 0)])
        assert so_far.tables(store.db) == read_rows(store.db)


class _Counted(RowsSoFar):
    def __init__(self) -> None:
        super().__init__()
        self.catch_ups = 0

    def catch_up(self, db: sqlite3.Connection) -> None:
        super().catch_up(db)
        self.catch_ups += 1


def test_the_writer_catches_up_between_writes_and_a_cell_written_again_reads_all(tmp_path: Path) -> None:
    """A writer given `rows` reads them after a write that left nothing queued: what it read
    before the last write plus that write's rows are the tables."""
    path = tmp_path / "results.sqlite"
    so_far = _Counted()
    tables: list[object] = []
    replaced: list[int] = []

    def finished(s: ResultsStore) -> None:
        replaced.append(s.replaced)
        tables.append(so_far.tables(s.db, replaced=s.replaced > 0))

    writer = CellWriter(path, lambda s: s.start_run("x", "{}", "0", run_id="r"), rows=so_far)
    writer.put(_result("c1", "a", 0))
    deadline = time.monotonic() + 10
    while not so_far.catch_ups and time.monotonic() < deadline:
        time.sleep(0.005)
    assert so_far.catch_ups == 1  # after the first write, with nothing queued
    writer.put(_result("c1", "a", 0))  # written again: the tables are read whole
    writer.put(_result("c2", "b", 0))
    writer.finish(finished)
    writer.close()
    db = sqlite3.connect(path)
    try:
        assert tables == [read_rows(db)] and replaced == [1]
        assert len(tables[0][0][0]) == 2  # type: ignore[index]
    finally:
        db.close()


def test_a_run_with_replies_that_take_time_returns_its_rows_as_they_were_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With replies that take 30 ms, two at a time, the writer reads each wave's rows while
    the next wave's calls are out, and the run's `Results` (made of the rows read so, not of
    a read of the whole tables) equal a load of the folder."""
    import workbench.harness.results._rows as rows_module

    write_session(tmp_path, "s1")
    write_session(tmp_path, "s2")
    counted = {"catch_up": 0, "read_rows": 0}
    catch_up, whole = RowsSoFar.catch_up, rows_module.read_rows

    def counting_catch_up(self: RowsSoFar, db: sqlite3.Connection) -> None:
        counted["catch_up"] += 1
        catch_up(self, db)

    def counting_read(db: sqlite3.Connection) -> object:
        counted["read_rows"] += 1
        return whole(db)

    monkeypatch.setattr(RowsSoFar, "catch_up", counting_catch_up)
    monkeypatch.setattr(rows_module, "read_rows", counting_read)
    out = tmp_path / "run"
    returned = run_experiment(experiment(tmp_path, repeats=3, concurrency=2), out,
                              model_factory=scripted(latency=0.03), progress=False)
    assert counted["catch_up"] >= 2 and counted["read_rows"] == 0
    monkeypatch.undo()
    loaded = Results.load(out)
    for name in ("cells", "attempts", "runs"):
        assert_frame_equal(getattr(returned, name), getattr(loaded, name))
    assert len(returned.cells) == 6 and returned.status == "finished"


def test_a_new_folder_s_spec_copy_is_written_with_its_store_once_the_calls_are_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy of the spec is the writer's first write to a new folder (before its run row):
    by the time it is written the first calls are out; a resumed folder's is written first."""
    from workbench.harness.run import _runner

    write_session(tmp_path, "s1")
    order: list[str] = []
    write_spec, start_run = _runner.write_spec, ResultsStore.start_run

    def spec_copy(experiment: object, out: Path) -> Path:
        order.append(f"spec on {threading.current_thread().name}")
        return write_spec(experiment, out)  # type: ignore[arg-type]

    def run_row(self: ResultsStore, *args: object, **kw: object) -> str:
        order.append("run row")
        return start_run(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(_runner, "write_spec", spec_copy)
    monkeypatch.setattr(ResultsStore, "start_run", run_row)
    out = tmp_path / "run"
    for _ in range(2):  # a new folder, then the same one resumed
        run_experiment(experiment(tmp_path, repeats=2), out, model_factory=scripted(latency=0.02),
                       progress=False, retry_errors=True)
    assert order == ["spec on workbench-store-writer", "run row", "spec on MainThread", "run row"]
    assert (out / "spec.toml").read_text(encoding="utf-8").startswith('name = "t"')
