"""Results store: named migrations on a blank database, exact columns, atomic cell writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from workbench._ulid import new_ulid
from workbench.harness import ResultsStore
from workbench.harness.results._migrations import MIGRATIONS, migrate
from workbench.harness.results._store import ATTEMPT_COLUMNS, CELL_COLUMNS


def columns(db: sqlite3.Connection, table: str) -> list[tuple[str, str, int]]:
    return [(r[1], r[2], r[5]) for r in db.execute(f"PRAGMA table_info({table})")]


def test_a_blank_database_gets_every_migration_once(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "r.sqlite", isolation_level=None)
    assert migrate(db) == ["m001_runs", "m002_cells", "m003_attempts",
                           "m004_attempt_prompt_hash", "m005_cell_outcome_columns", "m010_replays",
                           "m012_shared_calls", "m013_template_params", "m014_run_executor",
                           "m015_qa_calls", "m016_spent_columns", "m017_attempt_node",
                           "m018_cell_texts"]
    assert migrate(db) == []
    names = [r[0] for r in db.execute("SELECT name FROM _workbench_migrations ORDER BY rowid")]
    assert names == [m.__name__ for m in MIGRATIONS]


def test_pending_migrations_apply_all_or_nothing(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.results import _migrations

    def m999_broken(db: sqlite3.Connection) -> None:
        db.execute("ALTER TABLE no_such_table ADD COLUMN x TEXT")

    monkeypatch.setattr(_migrations, "MIGRATIONS", [*MIGRATIONS, m999_broken])
    db = sqlite3.connect(tmp_path / "r.sqlite", isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="no such table: no_such_table"):
        migrate(db)
    assert _migrations.applied(db) == []
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"_workbench_migrations"}  # m001-m017 rolled back with the broken one
    monkeypatch.setattr(_migrations, "MIGRATIONS", MIGRATIONS)
    assert migrate(db) == [m.__name__ for m in MIGRATIONS]


def _schema(db: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
    return [tuple(r) for r in rows]


def test_a_blank_file_gets_in_one_step_the_schema_the_migrations_build(tmp_path: Path) -> None:
    from workbench.harness.results import _migrations

    stepwise = sqlite3.connect(tmp_path / "stepwise.sqlite", isolation_level=None)
    _migrations.applied(stepwise)
    for m in MIGRATIONS:
        m(stepwise)
    statements = _migrations.new_store_schema(tuple(MIGRATIONS))
    assert statements is not None and not any("ALTER" in s for s in statements)
    tables = [s.split()[2] for s in statements if s.startswith("CREATE TABLE")]
    assert tables == ["runs", "cells", "attempts", "replays", "cell_texts"]
    store = ResultsStore(tmp_path / "r.sqlite")
    assert _schema(store.db) == _schema(stepwise)
    assert [c[0] for c in columns(store.db, "cells")] == list(CELL_COLUMNS)
    assert _migrations.applied(store.db) == [m.__name__ for m in MIGRATIONS]


def test_a_migration_that_leaves_rows_runs_on_the_file_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.harness.results import _migrations

    def m998_seed(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO runs (run_id, status) VALUES ('seed', 'finished')")

    migrations = (*MIGRATIONS, m998_seed)
    assert _migrations.new_store_schema(migrations) is None
    monkeypatch.setattr(_migrations, "MIGRATIONS", list(migrations))
    db = sqlite3.connect(tmp_path / "r.sqlite", isolation_level=None)
    assert migrate(db)[-1] == "m998_seed"
    assert db.execute("SELECT run_id FROM runs").fetchall() == [("seed",)]


def test_the_tables_have_exactly_the_contract_columns(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    assert columns(store.db, "runs") == [
        ("run_id", "TEXT", 1), ("name", "TEXT", 0), ("spec_json", "TEXT", 0),
        ("started_at", "TEXT", 0), ("finished_at", "TEXT", 0), ("workbench_version", "TEXT", 0),
        ("status", "TEXT", 0), ("executor", "TEXT", 0), ("cluster", "TEXT", 0)]
    cells = columns(store.db, "cells")
    assert [c[0] for c in cells] == list(CELL_COLUMNS)
    assert dict((c[0], c[1]) for c in cells) | {} == {
        **{c: "INTEGER" for c in ("window", "repeat", "original_tokens", "retained_tokens",
                                  "summary_tokens", "billed_input_tokens", "billed_output_tokens",
                                  "cache_read_tokens", "cache_write_tokens", "structured",
                                  "attempts", "retries", "max_removal_percent",
                                  "tool_responses_removed", "http_retries", "reported_tokens",
                                  "estimated_tokens", "effective_window", "calls_made",
                                  "calls_shared", "qa_input_tokens", "qa_output_tokens",
                                  "qa_calls", "spent_input_tokens", "spent_output_tokens")},
        **{c: "REAL" for c in ("cost", "latency_ms", "qa_cost", "spent_cost")},
        **{c: "TEXT" for c in CELL_COLUMNS if c not in (
            "window", "repeat", "original_tokens", "retained_tokens", "summary_tokens",
            "billed_input_tokens", "billed_output_tokens", "cache_read_tokens",
            "cache_write_tokens", "structured", "attempts", "retries", "max_removal_percent",
            "tool_responses_removed", "cost", "latency_ms", "http_retries", "reported_tokens",
            "estimated_tokens", "effective_window", "calls_made", "calls_shared",
            "qa_input_tokens", "qa_output_tokens", "qa_calls", "qa_cost", "spent_input_tokens",
            "spent_output_tokens", "spent_cost")}}
    assert [c[0] for c in columns(store.db, "attempts")] == list(ATTEMPT_COLUMNS)
    indexes = {r[1] for r in store.db.execute("SELECT * FROM sqlite_master WHERE type='index'")}
    assert {"cells_status", "cells_run", "attempts_cell", "cells_outcome_kind"} <= indexes


def test_connections_use_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] == 30000


def test_recording_a_cell_again_replaces_it_and_its_attempts(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    store.record_cell({"cell_id": "c1", "status": "error", "cost": 0.5},
                      [{"attempt_no": 1, "outcome": "error"}, {"attempt_no": 2, "outcome": "error"}])
    store.record_cell({"cell_id": "c1", "status": "ok", "billed_input_tokens": 10,
                       "billed_output_tokens": 5, "cost": 0.25, "spent_input_tokens": 10,
                       "spent_output_tokens": 5, "spent_cost": 0.25},
                      [{"attempt_no": 1, "outcome": "ok"}])
    store.record_cell({"cell_id": "c2", "status": "ok", "billed_input_tokens": 10,
                       "billed_output_tokens": 5, "cost": 0.25, "spent_input_tokens": 0,
                       "spent_output_tokens": 0, "spent_cost": 0.0})  # shared: not paid again
    assert [(c["cell_id"], c["status"]) for c in store.cells()] == [("c1", "ok"), ("c2", "ok")]
    assert [(a["cell_id"], a["attempt_no"], a["outcome"]) for a in store.attempts()] == [("c1", 1, "ok")]
    assert store.cell_statuses() == {"c1": "ok", "c2": "ok"}
    assert store.spent() == (0.25, 15)


def test_cells_written_together_keep_their_order_and_a_cell_written_twice_its_last_write(
        tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    store.record_cell({"cell_id": "c0", "status": "error"}, [{"attempt_no": 1, "outcome": "x"}])
    store.record_cells([
        ({"cell_id": "c1", "status": "ok", "cost": 0.5}, [{"attempt_no": 1, "outcome": "ok"}]),
        ({"cell_id": "c0", "status": "ok"}, [{"attempt_no": 1}, {"attempt_no": 2}]),
        ({"cell_id": "c2", "status": "error", "error_type": "E"}, []),
        ({"cell_id": "c1", "status": "error", "error_type": "F"},
         [{"attempt_no": 1, "outcome": "error"}]),
        ({"cell_id": "c3", "status": "ok", "cost": 0.1}, [{"attempt_no": 1, "outcome": "ok"}]),
    ], {"c1": {"raw.txt": "second"}, "c0": {"raw.txt": "zero"}})
    assert [(c["cell_id"], c["status"], c["error_type"], c["cost"]) for c in store.cells()] == [
        ("c0", "ok", None, None), ("c2", "error", "E", None), ("c1", "error", "F", None),
        ("c3", "ok", None, 0.1)]
    assert [(a["cell_id"], a["attempt_no"], a["outcome"]) for a in store.attempts()] == [
        ("c0", 1, None), ("c0", 2, None), ("c1", 1, "error"), ("c3", 1, "ok")]
    assert (store.cell_text("c0", "raw.txt"), store.cell_text("c1", "raw.txt")) == ("zero",
                                                                                   "second")


def test_a_failed_write_leaves_no_half_cell(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    with pytest.raises(sqlite3.IntegrityError):
        store.record_cell({"cell_id": "c1", "status": "ok"},
                          [{"attempt_id": "same", "attempt_no": 1}, {"attempt_id": "same", "attempt_no": 2}])
    assert store.cells() == [] and store.attempts() == []


def test_runs_record_status_and_ulids_sort_by_time(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    run = store.start_run("x", "{}", "0.1.0")
    store.finish_run(run, "budget_reached")
    (row,) = store.runs()
    assert (row["name"], row["status"], row["workbench_version"]) == ("x", "budget_reached", "0.1.0")
    assert row["finished_at"] is not None
    ids = [new_ulid() for _ in range(100)]
    assert ids == sorted(ids) and len(set(ids)) == 100 and all(len(i) == 26 for i in ids)


def test_an_older_store_gains_the_prompt_hash_column_and_keeps_its_rows(tmp_path: Path) -> None:
    from workbench.harness.results._migrations import m001_runs, m002_cells, m003_attempts

    db = sqlite3.connect(tmp_path / "old.sqlite", isolation_level=None)
    db.execute("CREATE TABLE _workbench_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for m in (m001_runs, m002_cells, m003_attempts):
        m(db)
        db.execute("INSERT INTO _workbench_migrations VALUES (?, 'then')", (m.__name__,))
    db.execute("INSERT INTO attempts (attempt_id, cell_id, attempt_no) VALUES ('a1', 'c1', 1)")
    assert migrate(db) == ["m004_attempt_prompt_hash", "m005_cell_outcome_columns", "m010_replays",
                           "m012_shared_calls", "m013_template_params", "m014_run_executor",
                           "m015_qa_calls", "m016_spent_columns", "m017_attempt_node",
                           "m018_cell_texts"]
    assert db.execute("SELECT attempt_id, prompt_hash FROM attempts").fetchall() == [("a1", None)]


def test_a_run_records_its_executor_and_cluster(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.sqlite")
    run = store.start_run("x", "{}", "0.1.0")
    store.record_executor(run, "ray", '{"address": "auto", "nodes": 3}')
    (row,) = store.runs()
    assert (row["executor"], row["cluster"]) == ("ray", '{"address": "auto", "nodes": 3}')


def test_an_older_store_gains_the_outcome_columns_and_keeps_its_cells(tmp_path: Path) -> None:
    from workbench.harness.results._migrations import (
        m001_runs,
        m002_cells,
        m003_attempts,
        m004_attempt_prompt_hash,
    )

    db = sqlite3.connect(tmp_path / "old.sqlite", isolation_level=None)
    db.execute("CREATE TABLE _workbench_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for m in (m001_runs, m002_cells, m003_attempts, m004_attempt_prompt_hash):
        m(db)
        db.execute("INSERT INTO _workbench_migrations VALUES (?, 'then')", (m.__name__,))
    db.execute("INSERT INTO cells (cell_id, status, error_type) "
               "VALUES ('c1', 'error', 'CompactionContextExceeded')")
    assert migrate(db) == ["m005_cell_outcome_columns", "m010_replays", "m012_shared_calls",
                           "m013_template_params", "m014_run_executor", "m015_qa_calls",
                           "m016_spent_columns", "m017_attempt_node",
                           "m018_cell_texts"]
    assert db.execute("SELECT cell_id, status, outcome_kind, http_retries, window_tokenizer "
                      "FROM cells").fetchall() == [("c1", "error", None, None, None)]


def test_an_older_store_gains_the_qa_columns_and_keeps_its_cells_and_attempts(
        tmp_path: Path) -> None:
    from workbench.harness.results._migrations import m015_qa_calls

    db = sqlite3.connect(tmp_path / "old.sqlite", isolation_level=None)
    db.execute("CREATE TABLE _workbench_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for m in MIGRATIONS[:MIGRATIONS.index(m015_qa_calls)]:
        m(db)
        db.execute("INSERT INTO _workbench_migrations VALUES (?, 'then')", (m.__name__,))
    db.execute("INSERT INTO cells (cell_id, status, cost) VALUES ('c1', 'ok', 0.5)")
    db.execute("INSERT INTO attempts (attempt_id, cell_id, attempt_no) VALUES ('a1', 'c1', 1)")
    assert migrate(db) == ["m015_qa_calls", "m016_spent_columns", "m017_attempt_node",
                           "m018_cell_texts"]
    assert db.execute("SELECT cell_id, cost, qa_input_tokens, qa_output_tokens, qa_cost, qa_calls"
                      " FROM cells").fetchall() == [("c1", 0.5, None, None, None, None)]
    assert db.execute("SELECT attempt_id, purpose, question_id FROM attempts").fetchall() == [
        ("a1", None, None)]


def test_an_older_store_is_brought_to_honest_billing_sharers_at_their_calls_usage(
        tmp_path: Path) -> None:
    from workbench.harness.results._migrations import MIGRATIONS, m016_spent_columns

    db = sqlite3.connect(tmp_path / "old.sqlite", isolation_level=None)
    db.execute("CREATE TABLE _workbench_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for m in MIGRATIONS[:MIGRATIONS.index(m016_spent_columns)]:
        m(db)
        db.execute("INSERT INTO _workbench_migrations VALUES (?, 'then')", (m.__name__,))
    cells = [  # cell, billed in, billed out, cost, reported, estimated
        ("payer", 100, 20, 0.5, 120, 0),  # sent the call
        ("sharer", 0, 0, 0.0, 0, 0),      # answered from it: stored at zero back then
        ("replayed", 40, 10, 0.2, 50, 0),  # read its answer from a recording
    ]
    db.executemany("INSERT INTO cells (cell_id, billed_input_tokens, billed_output_tokens, cost,"
                   " reported_tokens, estimated_tokens) VALUES (?, ?, ?, ?, ?, ?)", cells)
    db.executemany("INSERT INTO attempts (attempt_id, cell_id, attempt_no, input_tokens,"
                   " output_tokens, cost, cache_hit, shared, shared_from)"
                   " VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?)",
                   [("A1", "payer", 100, 20, 0.5, None, 0, None),
                    ("A2", "sharer", 0, 0, 0.0, None, 1, "A1"),
                    ("A3", "replayed", 40, 10, 0.2, 1, 0, None)])
    assert migrate(db) == ["m016_spent_columns", "m017_attempt_node",
                           "m018_cell_texts"]
    got = db.execute("SELECT cell_id, billed_input_tokens, billed_output_tokens, cost,"
                     " reported_tokens, estimated_tokens, spent_input_tokens,"
                     " spent_output_tokens, spent_cost FROM cells ORDER BY rowid").fetchall()
    assert got == [("payer", 100, 20, 0.5, 120, 0, 100, 20, 0.5),
                   ("sharer", 100, 20, 0.5, 120, 0, 0, 0, 0.0),
                   ("replayed", 40, 10, 0.2, 50, 0, 0, 0, 0.0)]
    assert db.execute("SELECT input_tokens, output_tokens, cost, shared FROM attempts"
                      " WHERE attempt_id = 'A2'").fetchone() == (100, 20, 0.5, 1)


def test_an_empty_store_loads_as_read_sql_query_would(tmp_path: Path) -> None:
    import pandas as pd
    from pandas.testing import assert_frame_equal

    from workbench.harness.results._rows import CELL_ORDER, read_tables

    store = ResultsStore(tmp_path / "r.sqlite")
    frames = dict(zip(("cells", "attempts", "runs"), read_tables(store.db), strict=True))
    for table, order in (("cells", CELL_ORDER), ("attempts", "rowid"), ("runs", "rowid")):
        expected = pd.read_sql_query(f"SELECT * FROM {table} ORDER BY {order}", store.db)
        assert_frame_equal(frames[table], expected)
        assert frames[table].empty and list(frames[table].columns) == list(expected.columns)
