"""Results store, the fast ways in: a new store written whole from a migrated image (or made
in memory and written in one piece when closed), and `record_results` writing exactly what
`record_cells` writes for the same cells."""

from __future__ import annotations

import errno
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from workbench import _sqlite
from workbench.harness import ResultsStore
from workbench.harness.results import _migrations
from workbench.harness.results._cell_result import AttemptResult, CellResult, CellTexts
from workbench.harness.results._migrations import MIGRATIONS


def _schema(db: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
    return [tuple(r) for r in rows]


def test_a_new_store_is_written_whole_migrated_in_wal_mode_and_never_over_a_file(
        tmp_path: Path) -> None:
    stepwise = sqlite3.connect(tmp_path / "stepwise.sqlite", isolation_level=None)
    _migrations.applied(stepwise)
    for m in MIGRATIONS:
        m(stepwise)
    folder = tmp_path / "run"
    folder.mkdir()
    path = folder / "results.sqlite"
    before_made = datetime.now(UTC).isoformat(timespec="microseconds")
    assert _migrations.create(path)
    after_made = datetime.now(UTC).isoformat(timespec="microseconds")
    assert os.listdir(folder) == ["results.sqlite"]  # no temporary file left beside it
    db = sqlite3.connect(path, isolation_level=None)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert _schema(db) == _schema(stepwise)
    assert _migrations.applied(db) == [m.__name__ for m in MIGRATIONS]
    # each migration applied at the moment the file was made (the image's placeholder replaced)
    times = {at for _, at in db.execute("SELECT name, applied_at FROM _workbench_migrations")}
    assert len(times) == 1 and before_made <= times.pop() <= after_made
    assert _migrations.migrate(db) == []
    db.execute("INSERT INTO runs (run_id, status) VALUES ('r1', 'running')")
    db.close()
    before = path.read_bytes()
    assert not _migrations.create(path)  # a store is there: left as it is
    assert path.read_bytes() == before
    store = ResultsStore(path)
    assert [r["run_id"] for r in store.runs()] == ["r1"]


def test_an_empty_file_is_migrated_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    path.touch()
    assert not _migrations.create(path)
    store = ResultsStore(path)
    assert _migrations.applied(store.db) == [m.__name__ for m in MIGRATIONS]
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_whole_store_is_made_in_memory_and_its_file_written_when_it_closes(
        tmp_path: Path) -> None:
    path = tmp_path / "run" / "results.sqlite"
    path.parent.mkdir()
    made = ResultsStore(tmp_path / "made.sqlite")  # the same store, made on disk
    before_made = datetime.now(UTC).isoformat(timespec="microseconds")
    store = ResultsStore(path, whole=True)
    assert store.whole and not path.exists()
    store.start_run("t", "{}", "0", run_id="R1")
    store.record_results(_cells())
    store.finish_run("R1", "finished")
    assert not path.exists()  # nothing on disk until the close
    store.close()
    assert os.listdir(path.parent) == ["results.sqlite"]  # no log, no temporary file beside
    db = sqlite3.connect(path, isolation_level=None)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert _schema(db) == _schema(made.db)
    times = {at for _, at in db.execute("SELECT name, applied_at FROM _workbench_migrations")}
    assert len(times) == 1 and before_made <= times.pop()
    assert db.execute("SELECT run_id, status FROM runs").fetchall() == [("R1", "finished")]
    db.close()
    made.record_results(_cells())
    assert _dump(ResultsStore(path)) == _dump(made)


def test_a_whole_store_never_writes_over_a_file_and_a_failed_write_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "results.sqlite"
    store = ResultsStore(path, whole=True)
    path.write_bytes(b"someone else's")
    with pytest.raises(FileExistsError):
        store.close()
    assert path.read_bytes() == b"someone else's" and os.listdir(tmp_path) == [path.name]
    path.unlink()

    def full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    store = ResultsStore(path, whole=True)
    store.start_run("t", "{}", "0", run_id="R1")
    monkeypatch.setattr(_sqlite.os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        store.close()
    assert os.listdir(tmp_path) == []  # no half file, no temporary one


def test_without_hard_links_a_whole_store_is_renamed_into_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src: str, dst: str) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(_sqlite.os, "link", no_links)
    assert not _migrations.create(tmp_path / "made.sqlite")  # a connection makes that one
    path = tmp_path / "results.sqlite"
    store = ResultsStore(path, whole=True)
    store.start_run("t", "{}", "0", run_id="R1")
    store.close()
    assert os.listdir(tmp_path) == [path.name]
    assert [r["run_id"] for r in ResultsStore(path).runs()] == ["R1"]


def test_where_no_image_can_be_made_a_whole_store_is_a_store_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_migrations, "open_in_memory", lambda migrations: None)
    path = tmp_path / "results.sqlite"
    store = ResultsStore(path, whole=True)
    assert not store.whole and path.exists()
    store.start_run("t", "{}", "0", run_id="R1")
    store.close()
    assert [r["run_id"] for r in ResultsStore(path).runs()] == ["R1"]


def _cells() -> list[CellResult]:
    secret_error = "api_key=sk-abcdefghijklmnopqrstuvwxyz0123 was refused"
    one = CellResult("c1", "r", session_id="s", status="error", structured=True, cost=0.5,
                     error_message=secret_error, metrics_json='{"token": "abc123456789"}',
                     attempt_results=[AttemptResult(1, "error", error=secret_error,
                                                    attempt_id="01A"),
                                      AttemptResult(2, "ok", latency_ms=1.5, attempt_id="01B")],
                     texts=CellTexts(summary="s", raw="raw reply", qa='{"q": 1}'))
    two = CellResult("c2", "r", status="ok", repeat=0, window=1000,
                     attempt_results=[AttemptResult(1, "ok", shared=0, attempt_id="01C")])
    again = CellResult("c1", "r", status="ok", retries=1,
                       attempt_results=[AttemptResult(1, "ok", attempt_id="01D")],
                       texts=CellTexts(forgotten="[]"))
    odd = CellResult("c3", "r", status="ok", template_params={"k": [1, 2]},  # type: ignore[arg-type]
                     attempt_results=[AttemptResult(1, "ok", attempt_id="01E")])
    return [one, two, again, odd]


def _dump(store: ResultsStore) -> dict[str, list[tuple[object, ...]]]:
    out = {}
    for table in ("cells", "attempts", "cell_texts"):
        names = [r[1] for r in store.db.execute(f"PRAGMA table_info({table})")]
        typed = ", ".join(f"{n}, typeof({n})" for n in names)
        out[table] = [tuple(r) for r in store.db.execute(
            f"SELECT rowid, {typed} FROM {table} ORDER BY rowid")]
    return out


def test_record_results_writes_what_record_cells_writes(tmp_path: Path) -> None:
    fast, slow = ResultsStore(tmp_path / "a.sqlite"), ResultsStore(tmp_path / "b.sqlite")
    for store in (fast, slow):
        store.record_cell({"cell_id": "c2", "status": "error"}, [{"attempt_no": 1}])
    fast.record_results(_cells())
    cells = _cells()
    slow.record_cells([(c.row(), [a.row() for a in c.attempt_results]) for c in cells],
                      {c.cell_id: c.texts.kept() for c in cells})
    # the first write of c2 made its attempt's id: the rest is the same, ids included
    fast_rows, slow_rows = _dump(fast), _dump(slow)
    assert fast_rows == slow_rows
    assert "sk-abcdefghijklmnopqrstuvwxyz0123" not in str(fast_rows)
    assert [(c["cell_id"], c["status"]) for c in fast.cells()] == [("c2", "ok"), ("c1", "ok"),
                                                                  ("c3", "ok")]
    fast.record_results([])  # nothing: no transaction
    assert _dump(fast) == fast_rows


def test_an_attempt_without_an_id_gets_a_new_one(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    store.record_results([CellResult("c1", "r", status="ok",
                                     attempt_results=[AttemptResult(1, "ok"),
                                                      AttemptResult(2, "ok")])])
    ids = [str(a["attempt_id"]) for a in store.attempts()]
    assert len(ids) == 2 and all(len(i) == 26 for i in ids) and ids == sorted(ids)


def _wal_salts(db_path: Path) -> bytes:
    """The write-ahead log header's two salts: SQLite draws new ones each time it starts the
    log over."""
    with open(f"{db_path}-wal", "rb") as wal:
        return wal.read(32)[16:24]


def test_a_fold_between_writes_starts_the_log_over_at_once(tmp_path: Path) -> None:
    from workbench.harness.results._writer import _fold

    path = tmp_path / "results.sqlite"
    store = ResultsStore(path)
    try:
        store.start_run("t", "{}", "0", run_id="r1")
        before = _wal_salts(path)
        store.checkpoint()
        assert _wal_salts(path) == before  # a checkpoint alone leaves it to the next write
        _fold(store)
        after = _wal_salts(path)
        assert after != before  # started over by the fold, not by the next cells' write
        store.finish_run("r1", "finished")
        assert _wal_salts(path) == after
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == 0
        assert [r["status"] for r in store.runs()] == ["finished"]
    finally:
        store.close()
