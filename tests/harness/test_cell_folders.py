"""A Ray worker's cell folders: named after the worker, removed after the cell, and those a
killed worker left are swept by the next worker process of the host (when their owner is gone
and they are an hour old), nothing else."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from workbench.harness.run.executors import _cell_folders
from workbench.harness.run.executors._cell_folders import (
    PREFIX,
    STALE_SECONDS,
    cell_folder,
    sweep_stale,
)

NO_SUCH_PID = 4_194_305
"""Above Linux's highest possible process id (2**22): never a live process."""


def _folder(root: Path, name: str, age: float, now: float) -> Path:
    path = root / name
    path.mkdir()
    (path / "summary.md").write_text("x\n", encoding="utf-8")
    os.utime(path, (now - age, now - age))
    return path


def test_only_the_old_folders_of_dead_workers_are_swept(tmp_path: Path) -> None:
    now = time.time()
    old = STALE_SECONDS + 60
    dead_old = _folder(tmp_path, f"{PREFIX}{NO_SUCH_PID}-abc123", old, now)
    dead_old_2 = _folder(tmp_path, f"{PREFIX}{NO_SUCH_PID}-zz", old, now)
    kept = [
        _folder(tmp_path, f"{PREFIX}{NO_SUCH_PID}-young", STALE_SECONDS - 60, now),
        _folder(tmp_path, f"{PREFIX}{os.getpid()}-alive", old, now),
        _folder(tmp_path, f"{PREFIX}abc-notapid", old, now),
        _folder(tmp_path, f"{PREFIX}{NO_SUCH_PID}", old, now),  # no dash after the id
        _folder(tmp_path, f"{PREFIX}q1w2e3r4", old, now),  # the old names, of no worker
        _folder(tmp_path, f"other-{NO_SUCH_PID}-x", old, now),
    ]
    plain_file = tmp_path / f"{PREFIX}{NO_SUCH_PID}-file"
    plain_file.write_text("not a folder", encoding="utf-8")
    os.utime(plain_file, (now - old, now - old))

    assert sweep_stale(tmp_path, now=now) == 2

    assert not dead_old.exists() and not dead_old_2.exists()
    assert all(path.is_dir() for path in kept)
    assert plain_file.read_text(encoding="utf-8") == "not a folder"
    assert sweep_stale(tmp_path, now=now) == 0


def test_a_missing_root_sweeps_nothing(tmp_path: Path) -> None:
    assert sweep_stale(tmp_path / "gone") == 0


def test_a_cell_folder_is_named_after_its_worker_and_removed_after_the_cell(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_cell_folders, "_swept_in", 0)

    with cell_folder() as folder:
        assert folder.parent == tmp_path
        assert folder.name.startswith(f"{PREFIX}{os.getpid()}-")
        (folder / "summary.md").write_text("x\n", encoding="utf-8")

    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []


def test_the_first_cell_of_a_process_sweeps_and_the_next_ones_do_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_cell_folders, "_swept_in", 0)
    now = time.time()
    first = _folder(tmp_path, f"{PREFIX}{NO_SUCH_PID}-first", STALE_SECONDS + 60, now)

    with cell_folder():
        pass
    assert not first.exists()

    second = _folder(tmp_path, f"{PREFIX}{NO_SUCH_PID}-second", STALE_SECONDS + 60, now)
    with cell_folder():
        pass
    assert second.is_dir()  # swept once per process: the next worker process takes it
    assert _cell_folders._swept_in == os.getpid()
