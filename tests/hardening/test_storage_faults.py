"""A full disk, a read-only folder and a damaged store: each a clear error naming the path and
what to do, and the run resumes afterwards to a complete run, nothing lost or billed twice.

Every run is a real ``workbench run`` subprocess against the echoing 127.0.0.1 server; the
faults are injected into that subprocess (`tests.hardening._faults`), confined to the run
folder, as a full or read-only disk would be.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.hardening._faults import FAULT_WRAPPER
from tests.hardening._provider_server import ProviderServer
from tests.hardening._sessions import write_session

SESSIONS = 6
RAW = (b"Traceback", b"sqlite3.", b"OperationalError", b"DatabaseError", b"PermissionError",
       b"OSError")
"""What the output of a storage fault must never show: raw errors and tracebacks."""


def _setup(folder: Path, server: ProviderServer) -> Path:
    for i in range(SESSIONS):
        write_session(folder, f"s{i}")
    spec = folder / "spec.toml"
    spec.write_text("\n".join([
        'name = "faults"', 'sessions = ["s*.json"]', "concurrency = 1",
        f'models = [{{ model = "cached:openai/counted", params = {{ api_base = "{server.base()}", '
        'api_key = "sk-local-not-real" } }]',
        f'cache = {{ path = "{folder / "cache" / "responses.db"}" }}',
        "[qa]", 'answerer = "lookup"']) + "\n", encoding="utf-8")
    return spec


def _run(spec: Path, out: Path, **faults: Any) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAULT_FOLDER": str(out),
           **{f"FAULT_{k.upper()}": str(v) for k, v in faults.items()}}
    return subprocess.run([sys.executable, "-c", FAULT_WRAPPER, "run", str(spec), "--out",
                           str(out), "--no-progress"], cwd=ROOT, env=env, capture_output=True,
                          timeout=600)


def _cells(out: Path) -> dict[str, str]:
    db = sqlite3.connect(out / "results.sqlite")
    try:
        return dict(db.execute("SELECT session_id, status FROM cells"))
    finally:
        db.close()


def _prompts(server: ProviderServer) -> list[str]:
    return [str(r["body"]["messages"]) for r in server.requests if r["path"].endswith(
        "/chat/completions")]


def _no_raw_error(done: subprocess.CompletedProcess[bytes]) -> None:
    for raw in RAW:
        assert raw not in done.stderr + done.stdout, (raw, done.stderr.decode()[-3000:])


def _resumes_to_complete(spec: Path, out: Path, server: ProviderServer) -> None:
    """A run without the fault ends with every cell ok and every prompt sent once over all
    the runs of the folder."""
    again = _run(spec, out)
    assert again.returncode == 0, again.stderr.decode()[-3000:]
    assert _cells(out) == {f"s{i}": "ok" for i in range(SESSIONS)}
    prompts = _prompts(server)
    assert len(prompts) == len(set(prompts)) == SESSIONS
    for i in range(SESSIONS):
        questions = out / "qa" / "questions" / f"s{i}.json"
        assert questions.read_text(encoding="utf-8").startswith("{"), questions
    assert not list(out.rglob(".*.tmp")), "a temporary file was left behind"


def test_a_full_store_stops_the_run_naming_the_file_and_the_run_resumes_billing_nothing_twice(
        tmp_path: Path, server: ProviderServer) -> None:
    spec, out = _setup(tmp_path, server), tmp_path / "run"
    full = _run(spec, out, db_pages=1)
    assert full.returncode == 1, full.stderr.decode()[-3000:]
    message = full.stderr.decode()
    assert (f"Error: {out / 'results.sqlite'}: the disk is full (database or disk is full); "
            "free some space (or point --out at another disk) and run the same command again: "
            "it resumes, and finished cells are not run or billed again") in message, message
    _no_raw_error(full)
    stored = _cells(out)
    assert 0 < len(stored) < SESSIONS, stored
    _resumes_to_complete(spec, out, server)


def test_a_disk_that_fills_while_files_are_written_leaves_no_half_file_and_resumes(
        tmp_path: Path, server: ProviderServer) -> None:
    spec, out = _setup(tmp_path, server), tmp_path / "run"
    full = _run(spec, out, file_writes=5)
    assert full.returncode != 0, full.stderr.decode()[-3000:]
    message = full.stderr.decode() + full.stdout.decode()
    assert "the disk is full (No space left on device); free some space" in message, message
    _no_raw_error(full)
    for path in out.rglob("*.json"):  # question sets, answers: whole or absent
        assert path.read_text(encoding="utf-8").rstrip().endswith("}"), path
    _resumes_to_complete(spec, out, server)


def test_a_read_only_run_folder_is_named_and_the_run_resumes_once_it_is_writable(
        tmp_path: Path, server: ProviderServer) -> None:
    spec, out = _setup(tmp_path, server), tmp_path / "run"
    out.mkdir()
    denied = _run(spec, out, read_only=1)
    assert denied.returncode == 1, denied.stderr.decode()[-3000:]
    assert f"Error: {out}/" in denied.stderr.decode()
    assert (": cannot write here (Read-only file system); make the folder writable, or pass "
            "--out to a writable folder, and run again: it resumes") in denied.stderr.decode(), \
        denied.stderr.decode()
    _no_raw_error(denied)
    assert not server.requests
    _resumes_to_complete(spec, out, server)


def test_a_truncated_store_is_named_with_what_to_do(tmp_path: Path,
                                                     server: ProviderServer) -> None:
    spec, out = _setup(tmp_path, server), tmp_path / "run"
    assert _run(spec, out).returncode == 0
    store = out / "results.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    data = store.read_bytes()
    store.write_bytes(data[: len(data) // 3])
    for args in (["run", str(spec), "--out", str(out), "--no-progress"], ["report", str(out)]):
        done = subprocess.run([sys.executable, "-m", "workbench", *args], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                              timeout=300)
        assert done.returncode == 1, (args[0], done.stderr.decode()[-3000:])
        message = done.stderr.decode()
        assert f"Error: {store}: the SQLite file is damaged (" in message, (args[0], message)
        assert ("); restore it from a copy, or move it aside (e.g. to results.sqlite.damaged) "
                "and run again") in message, (args[0], message)
        _no_raw_error(done)

    store.rename(out / "results.sqlite.damaged")
    requests = len(server.requests)
    again = _run(spec, out)
    assert again.returncode == 0, again.stderr.decode()[-3000:]
    assert len(server.requests) == requests  # the recording answers every cell again
    assert _cells(out) == {f"s{i}": "ok" for i in range(SESSIONS)}


def test_an_interrupted_atomic_write_leaves_the_old_file_and_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench._storage as storage
    from workbench._storage import write_atomic
    from workbench.errors import StorageError

    target = tmp_path / "questions.json"
    target.write_text('{"old": true}', encoding="utf-8")
    real_write = os.write

    def full(fd: int, data: Any) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(storage.os, "write", full)
    with pytest.raises(StorageError) as info:
        write_atomic(target, '{"new": "' + "x" * 10_000 + '"}')
    monkeypatch.undo()
    assert str(info.value).startswith(f"{target}: the disk is full (No space left on device); ")
    assert info.value.kind == "full"
    assert target.read_text(encoding="utf-8") == '{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["questions.json"]
