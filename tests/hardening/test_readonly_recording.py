"""A recording that may not be written replays through a read-only connection, unchanged."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from workbench.errors import ConfigError
from workbench.harness import Experiment, run_experiment
from workbench.models import load_model
from workbench.models._cache import ResponseCache, is_read_only

RECORDING = ROOT / "datasets" / "recordings" / "local-gemma3-270m.db"


@pytest.fixture
def read_only_copy(tmp_path: Path) -> Iterator[Path]:
    """The committed recording copied into a folder, then file and folder made read-only."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    copy = folder / RECORDING.name
    shutil.copyfile(RECORDING, copy)
    copy.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        yield copy
    finally:
        folder.chmod(stat.S_IRWXU)
        copy.chmod(stat.S_IRUSR | stat.S_IWUSR)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_run_replays_from_a_read_only_recording_without_touching_it(
        read_only_copy: Path, tmp_path: Path) -> None:
    before = _digest(read_only_copy)
    assert is_read_only(read_only_copy)
    exp = Experiment.from_dict({
        "name": "ro", "sessions": ["gen-005k-s1"], "templates": ["default"], "windows": ["8k"],
        "models": [{"model": "replay:local/gemma3-270m", "name": "gemma-270m/prefill",
                    "params": {"n_ctx": 16384, "max_tokens": 512, "grammar": "off"}}],
        "cache": {"path": str(read_only_copy)}, "base_dir": str(tmp_path)})
    results = run_experiment(exp, tmp_path / "run", progress=False)

    cells = results.cells
    assert list(cells["status"]) == ["ok"], list(cells["error_message"])
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    hits = [row[0] for row in db.execute("SELECT cache_hit FROM attempts")]
    db.close()
    assert hits and all(hits)
    assert _digest(read_only_copy) == before
    assert sorted(p.name for p in read_only_copy.parent.iterdir()) == [RECORDING.name]


def test_the_read_only_cache_answers_lookups_and_refuses_writes(read_only_copy: Path) -> None:
    cache = ResponseCache(read_only_copy)
    try:
        assert cache.read_only
        assert cache.stats()["entries"] > 0
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            cache.clear()
    finally:
        cache.close()
    assert sorted(p.name for p in read_only_copy.parent.iterdir()) == [RECORDING.name]


def test_recording_into_a_read_only_file_is_a_clear_error(read_only_copy: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_model("cached:extractive", cache_path=read_only_copy)
    assert str(info.value) == (
        f"response cache {read_only_copy} is read-only: replay it ('replay:' prefix or cache mode "
        "'replay'), or copy it somewhere writable to record")


def test_a_read_only_recording_from_an_older_workbench_says_how_to_upgrade(
        tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old)
    conn.executescript("CREATE TABLE _workbench_migrations (name TEXT PRIMARY KEY, applied_at TEXT);"
                       "INSERT INTO _workbench_migrations VALUES ('m001_responses', 'x');")
    conn.close()
    old.chmod(stat.S_IRUSR)
    with pytest.raises(ConfigError) as info:
        ResponseCache(old)
    assert str(info.value) == (
        f"read-only response cache {old} was recorded by an older workbench (missing "
        "migrations: m002_indexes, m003_refusals, m004_prompt_tokens); copy it somewhere writable "
        "and open it once "
        "to upgrade it")


def test_a_writable_recording_still_opens_read_write(tmp_path: Path) -> None:
    path = tmp_path / "rw.db"
    shutil.copyfile(RECORDING, path)
    cache = ResponseCache(path)
    try:
        assert not cache.read_only and not is_read_only(path)
    finally:
        cache.close()
