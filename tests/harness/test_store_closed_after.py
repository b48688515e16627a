"""A run returns once its last row is written and read back; its writer thread folds the log
into ``results.sqlite`` and closes the store after it. Whatever opens that store next in this
process waits for the close, and so does the process's exit: nothing sees it half-closed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.harness.test_runner import experiment, scripted, write_session
from workbench._sqlite import wait_closed
from workbench.harness import Results, ResultsStore, run_experiment


@pytest.fixture
def held_close(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event,
                                                          list[str]]:
    """The first close of a store on a writer thread waits for `release`; `closing` is set
    once it has begun; `events` records that close and whatever the test appends."""
    closing, release, events = threading.Event(), threading.Event(), []
    real = ResultsStore.close

    def close(self: ResultsStore) -> None:
        if threading.current_thread().name == "workbench-store-writer" and not closing.is_set():
            closing.set()
            released = release.wait(30)
            real(self)
            events.append("closed" if released else "closed without release")
            return
        real(self)

    monkeypatch.setattr(ResultsStore, "close", close)
    return closing, release, events


def test_a_run_returns_while_its_store_closes_and_a_load_waits_for_the_close(
        tmp_path: Path, held_close: tuple[threading.Event, threading.Event, list[str]]) -> None:
    closing, release, events = held_close
    write_session(tmp_path, "s1")
    out = tmp_path / "run"
    results = run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    # returned with its rows, and the writer's close (held until released) comes after
    assert list(results.cells["status"]) == ["ok"] and results.status == "finished"
    assert closing.wait(30) and events == []

    loader = threading.Thread(target=lambda: events.append(
        f"loaded {len(Results.load(out).cells)}"))
    loader.start()
    time.sleep(0.2)  # time for a load that did not wait to finish first
    release.set()
    loader.join(30)
    assert events == ["closed", "loaded 1"]
    assert _cells_in_the_file(out) == 1  # the log was folded into the file before the load


def _cells_in_the_file(out: Path) -> int:
    """The cells the database file itself holds, not counting its write-ahead log."""
    db = sqlite3.connect(f"{(out / 'results.sqlite').resolve().as_uri()}?immutable=1", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM cells").fetchone()[0])
    finally:
        db.close()


def test_a_second_run_on_the_folder_opens_its_store_after_the_close(
        tmp_path: Path, held_close: tuple[threading.Event, threading.Event, list[str]]) -> None:
    closing, release, events = held_close
    write_session(tmp_path, "s1")
    out = tmp_path / "run"
    run_experiment(experiment(tmp_path), out, model_factory=scripted(), progress=False)
    assert closing.wait(30) and events == []

    def again() -> None:
        resumed = run_experiment(experiment(tmp_path), out, model_factory=scripted(),
                                 progress=False)
        events.append(f"resumed {len(resumed.runs)} runs")

    second = threading.Thread(target=again)
    second.start()
    time.sleep(0.2)
    release.set()
    second.join(60)
    assert events == ["closed", "resumed 2 runs"]
    wait_closed()


def test_wait_closed_is_free_when_nothing_is_closing(tmp_path: Path) -> None:
    wait_closed(tmp_path / "results.sqlite")
    wait_closed()


def test_a_command_line_run_leaves_one_file(tmp_path: Path) -> None:
    write_session(tmp_path, "s1")
    spec = tmp_path / "spec.toml"
    spec.write_text(f'name = "t"\nsessions = ["s*.json"]\nmodels = ["extractive"]\n'
                    f'base_dir = "{tmp_path}"\n', encoding="utf-8")
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "workbench", "run", str(spec), "--out", str(out),
                           "--no-progress"], cwd=ROOT, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert sorted(p.name for p in out.glob("results.sqlite*")) == ["results.sqlite"]
