"""One writer per run folder: a second run fails at once naming the holder; stale locks are
taken over; runs killed earlier are marked interrupted."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.hardening._provider_server import SUMMARY, ProviderServer
from workbench.errors import ConfigError, RunFolderLocked
from workbench.harness import Cell, Experiment, run_experiment
from workbench.harness.results._store import ResultsStore
from workbench.harness.run import _lock as lock_module
from workbench.harness.run._lock import LOCK_FILE, RunLock, pid_alive
from workbench.messages import Message
from workbench.sessions import Session
from workbench.testing import ScriptedModel


def write_sessions(folder: Path, count: int) -> None:
    for i in range(count):
        sid = f"s{i}"
        messages = [Message.user(f"fix the bug in app.py ({sid})"), Message.assistant("fixed it")]
        Session(sid, "goose-json", str(folder / f"{sid}.json"), messages).write_goose_json(
            folder / f"{sid}.json")


def experiment(folder: Path, **over: Any) -> Experiment:
    data: dict[str, Any] = {"name": "t", "sessions": ["s*.json"], "models": ["extractive"],
                            "base_dir": str(folder)}
    data.update(over)
    return Experiment.from_dict(data)


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)
    return child.pid


def test_two_concurrent_runs_on_one_folder_make_exactly_one_set_of_provider_requests(
        tmp_path: Path, server: ProviderServer) -> None:
    write_sessions(tmp_path, 3)
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "twice"\nsessions = ["s*.json"]\nconcurrency = 1\n'
                    f'models = [{{ model = "openai/counted", params = {{ api_base = '
                    f'"{server.base()}", api_key = "sk-local-not-real" }} }}]\n',
                    encoding="utf-8")
    out = tmp_path / "run"
    server.gate = threading.Event()  # hold the first run's calls until the second has tried
    command = [sys.executable, "-m", "workbench", "run", str(spec), "--out", str(out),
               "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        assert server.first_request.wait(timeout=120), "the first run never called the model"
        second = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=120)
    finally:
        server.gate.set()
        _, first_err = first.communicate(timeout=120)
    assert first.returncode == 0, first_err.decode()
    assert second.returncode == 1
    message = second.stderr.decode()
    assert f"Error: run folder {out} is in use by pid {first.pid} on host {socket.gethostname()}" \
        " since " in message
    assert f"(lock file {out / LOCK_FILE}); wait for that run to finish or stop it, or pass " \
        "another --out" in message
    assert [r["model"] for r in server.requests] == ["counted"] * 3
    db = sqlite3.connect(out / "results.sqlite")
    assert db.execute("SELECT status FROM runs").fetchall() == [("finished",)]
    assert db.execute("SELECT COUNT(*) FROM cells WHERE status = 'ok'").fetchone() == (3,)
    assert not (out / LOCK_FILE).exists()


def test_a_second_run_in_this_process_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    write_sessions(tmp_path, 2)
    out = tmp_path / "run"
    model = ScriptedModel([SUMMARY])

    def factory(cell: Cell) -> ScriptedModel:
        return model

    with RunLock(out) as held:
        info = json.loads((out / LOCK_FILE).read_text())
        with pytest.raises(RunFolderLocked) as err:
            run_experiment(experiment(tmp_path), out, model_factory=factory, progress=False)
    assert isinstance(err.value, ConfigError)
    assert str(err.value) == (
        f"run folder {out} is in use by pid {os.getpid()} on host {socket.gethostname()} since "
        f"{info['started_at']} (lock file {out / LOCK_FILE}); wait for that run to finish or "
        "stop it, or pass another --out")
    assert err.value.holder == info
    assert not held.held
    assert model.call_count == 0
    assert not (out / "results.sqlite").exists()


def test_a_stale_lock_is_taken_over_and_the_killed_run_is_marked_interrupted(
        tmp_path: Path) -> None:
    write_sessions(tmp_path, 2)
    out = tmp_path / "run"
    out.mkdir()
    stale = {"pid": dead_pid(), "host": socket.gethostname(), "started_at": "2026-01-01T00:00:00"}
    (out / LOCK_FILE).write_text(json.dumps(stale))
    with ResultsStore(out / "results.sqlite") as store:
        killed = store.start_run("t", "{}", "0.1.0")  # left 'running' by a killed process

    results = run_experiment(experiment(tmp_path), out, progress=False)

    assert len(results.cells) == 2
    runs = results.runs
    assert list(runs["run_id"])[0] == killed
    assert list(runs["status"]) == ["interrupted", "finished"]
    assert not (out / LOCK_FILE).exists()


def test_without_flock_a_dead_holders_lock_is_renamed_away_and_a_live_one_refuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock_module, "fcntl", None)
    folder = tmp_path / "run"
    folder.mkdir()
    stale = {"pid": dead_pid(), "host": socket.gethostname(), "started_at": "then"}
    (folder / LOCK_FILE).write_text(json.dumps(stale))
    with RunLock(folder) as lock:
        assert lock.previous == stale
        assert json.loads((folder / LOCK_FILE).read_text())["pid"] == os.getpid()
        with pytest.raises(RunFolderLocked, match=f"in use by pid {os.getpid()} on host "):
            RunLock(folder).acquire()
    assert sorted(p.name for p in folder.iterdir()) == []


def test_without_flock_a_lock_from_another_host_is_never_taken_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock_module, "fcntl", None)
    folder = tmp_path / "run"
    folder.mkdir()
    other = {"pid": dead_pid(), "host": "some-other-host", "started_at": "then"}
    (folder / LOCK_FILE).write_text(json.dumps(other))
    with pytest.raises(RunFolderLocked) as err:
        RunLock(folder).acquire()
    assert err.value.holder == other
    assert json.loads((folder / LOCK_FILE).read_text()) == other


def test_on_a_file_system_without_flock_the_exclusive_protocol_is_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class NoFlock:
        LOCK_EX, LOCK_NB = 2, 4

        @staticmethod
        def flock(fd: int, op: int) -> None:
            raise OSError(37, "No locks available")

    monkeypatch.setattr(lock_module, "fcntl", NoFlock)
    folder = tmp_path / "run"
    with RunLock(folder):
        assert json.loads((folder / LOCK_FILE).read_text())["pid"] == os.getpid()
        with pytest.raises(RunFolderLocked, match=f"in use by pid {os.getpid()} on host "):
            RunLock(folder).acquire()
    assert list(folder.iterdir()) == []
