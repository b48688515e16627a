"""The run's end: the lock goes once every row is on disk, and `run_experiment` joins the
writer (its last fold of the log, or the write of a store made whole in memory, and its close)
after the event loop has shut down, yet returns only once the store is closed; an awaited run
closes it before it returns."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest

from tests.harness.test_runner import experiment, scripted, write_session
from workbench import _sqlite
from workbench.errors import StorageError
from workbench.harness import run_experiment, run_experiment_async
from workbench.harness.results._writer import CellWriter
from workbench.harness.run._close_later import closing_after, take_close_later


def _watch_close(monkeypatch: pytest.MonkeyPatch, out: Path) -> list[tuple[bool, bool, bool]]:
    """Record, at each writer close: was an event loop running, did the lock file exist, and
    was the store written whole (in memory, its file written by this close)."""
    seen: list[tuple[bool, bool, bool]] = []
    close = CellWriter.close

    def watched(self: CellWriter) -> None:
        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False
        seen.append((running, (out / "run.lock").exists(), self.whole))
        close(self)

    monkeypatch.setattr(CellWriter, "close", watched)
    return seen


def test_run_experiment_joins_its_writer_after_the_loop_and_keeps_the_lock_for_a_whole_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cells end before the writer starts: the new store is made in memory, and its file
    # is written by the writer's close, so the lock is held until then.
    write_session(tmp_path, "s1")
    out = tmp_path / "run"
    seen = _watch_close(monkeypatch, out)
    results = run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    assert seen == [(False, True, True)]
    assert sorted(p.name for p in out.iterdir()) == ["results.sqlite", "spec.toml", "summaries"]
    assert results.status == "finished" and len(results.cells) == 1


def test_the_lock_is_gone_before_the_writer_closes_a_store_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A slow model: the writer starts while the calls are out and commits to the file.
    write_session(tmp_path, "s1")
    out = tmp_path / "run"
    seen = _watch_close(monkeypatch, out)
    results = run_experiment(experiment(tmp_path), out, model_factory=scripted(latency=0.2),
                             progress=False)
    assert seen == [(False, False, False)]
    assert results.status == "finished" and len(results.cells) == 1


def test_a_whole_store_the_disk_has_no_room_for_is_a_storage_error_and_the_lock_goes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_session(tmp_path, "s1")
    out = tmp_path / "run"

    def full(target: str, data: object, *, or_rename: bool = False) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_sqlite, "write_new_file", full)
    with pytest.raises(StorageError, match="disk is full"):
        run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["spec.toml", "summaries"]  # no lock left
    monkeypatch.undo()
    results = run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    assert results.status == "finished" and len(results.cells) == 1  # the cell ran again


def test_an_awaited_run_closes_its_store_before_it_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_session(tmp_path, "s1")
    out = tmp_path / "run"
    seen = _watch_close(monkeypatch, out)

    async def run() -> list[str]:
        await run_experiment_async(experiment(tmp_path), out, model_factory=scripted(),
                                   progress=False)
        return sorted(p.name for p in out.iterdir())  # still on the loop

    assert asyncio.run(run()) == ["results.sqlite", "spec.toml", "summaries"]
    assert seen == [(True, True, True)]  # the lock goes after the close, with the run's end


def test_a_resumed_run_hands_over_its_own_connection_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_session(tmp_path, "s1")
    out = tmp_path / "run"
    run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    write_session(tmp_path, "s2")
    seen = _watch_close(monkeypatch, out)
    results = run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    assert seen == [(False, False, False)] and len(results.cells) == 2
    assert sorted(p.name for p in out.iterdir()) == ["results.sqlite", "spec.toml", "summaries"]


def test_the_close_later_list_is_taken_once_and_every_closer_runs() -> None:
    ran: list[str] = []
    with pytest.raises(OSError, match="first"):
        with closing_after():
            closers = take_close_later()
            assert closers is not None and take_close_later() is None  # a nested run's view

            def fail(name: str) -> None:
                ran.append(name)
                raise OSError(name)

            closers += [lambda: fail("first"), lambda: fail("second"), lambda: ran.append("3")]
    assert ran == ["first", "second", "3"]
    assert take_close_later() is None  # outside the block


def test_while_the_writer_folds_its_log_the_run_s_young_objects_are_collected_and_its_cells_frame_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_experiment`'s thread has nothing to do while the writer's last checkpoint waits for
    the disk: it collects the young generation `fewer_collections` put off (the run's raised
    thresholds still in force) and makes the cells frame it returns, then joins the writer."""
    import gc

    from workbench.harness.results import _results

    write_session(tmp_path, "s1")
    events: list[str] = []
    close, frame = CellWriter.close, _results.cells_frame

    def closing(self: CellWriter) -> None:
        events.append(f"join at thresholds {gc.get_threshold()[0]}")
        close(self)

    def collected(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 0 and "join" not in " ".join(events):
            events.append("young collected")

    monkeypatch.setattr(CellWriter, "close", closing)
    monkeypatch.setattr(_results, "cells_frame",
                        lambda table: events.append("cells frame") or frame(table))
    before = gc.get_threshold()
    gc.callbacks.append(collected)
    try:
        gc.set_threshold(700, 10, 10)
        results = run_experiment(experiment(tmp_path), tmp_path / "run",
                                 model_factory=scripted(), progress=False)
        after = gc.get_threshold()
    finally:
        gc.callbacks.remove(collected)
        gc.set_threshold(*before)
    assert events[-2:] == ["cells frame", "join at thresholds 10000"]
    assert "young collected" in events[:-2]
    assert after == (700, 10, 10)  # put back once the writer is joined
    assert "cells" in vars(results) and "attempts" not in vars(results)
    assert len(results.cells) == 1
