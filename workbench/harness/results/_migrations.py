"""Named, append-only migrations for ``results.sqlite``.

Each migration is a function ``mNNN_name(db)``; `migrate` applies those not yet recorded in
``_workbench_migrations(name, applied_at)`` in list order. Shipped migrations are never edited:
a schema change is a new function at the end of `MIGRATIONS`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

Migration = Callable[[sqlite3.Connection], None]


def m001_runs(db: sqlite3.Connection) -> None:
    """One row per invocation of the runner over a run folder."""
    db.execute("""
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            name TEXT,
            spec_json TEXT,
            started_at TEXT,
            finished_at TEXT,
            workbench_version TEXT,
            status TEXT
        )""")


def m002_cells(db: sqlite3.Connection) -> None:
    """One row per finished cell ('ok' or 'error')."""
    db.execute("""
        CREATE TABLE cells (
            cell_id TEXT PRIMARY KEY,
            run_id TEXT,
            session_id TEXT,
            session_path TEXT,
            session_format TEXT,
            strategy TEXT,
            model TEXT,
            template TEXT,
            window INTEGER,
            repeat INTEGER,
            status TEXT,
            original_tokens INTEGER,
            retained_tokens INTEGER,
            summary_tokens INTEGER,
            billed_input_tokens INTEGER,
            billed_output_tokens INTEGER,
            cache_read_tokens INTEGER,
            cache_write_tokens INTEGER,
            cost REAL,
            parse_outcome TEXT,
            structured INTEGER,
            attempts INTEGER,
            retries INTEGER,
            max_removal_percent INTEGER,
            tool_responses_removed INTEGER,
            latency_ms REAL,
            error_type TEXT,
            error_message TEXT,
            traceback TEXT,
            summary_path TEXT,
            metrics_json TEXT,
            started_at TEXT,
            finished_at TEXT
        )""")
    db.execute("CREATE INDEX cells_status ON cells (status)")
    db.execute("CREATE INDEX cells_run ON cells (run_id)")


def m003_attempts(db: sqlite3.Connection) -> None:
    """One row per model attempt of a cell (the removal ladder makes several)."""
    db.execute("""
        CREATE TABLE attempts (
            attempt_id TEXT PRIMARY KEY,
            cell_id TEXT,
            attempt_no INTEGER,
            removal_percent INTEGER,
            messages_removed INTEGER,
            tool_responses_removed INTEGER,
            outcome TEXT,
            model TEXT,
            input_tokens INTEGER,
            output_tokens INTEGER,
            cache_read_tokens INTEGER,
            cache_write_tokens INTEGER,
            cost REAL,
            latency_ms REAL,
            cache_hit INTEGER,
            error TEXT
        )""")
    db.execute("CREATE INDEX attempts_cell ON attempts (cell_id)")


def m004_attempt_prompt_hash(db: sqlite3.Connection) -> None:
    """The sha256 of each attempt's prompt (system + request), which links an attempt to its
    response-cache recording (``responses.prompt_hash``) without storing the prompt again."""
    db.execute("ALTER TABLE attempts ADD COLUMN prompt_hash TEXT")


def m005_cell_outcome_columns(db: sqlite3.Connection) -> None:
    """What became of a cell and how it was billed and measured.

    ``outcome_kind``: ``ok``, ``failed`` (a compaction outcome: context exhausted) or ``error``
    (infrastructure: cache miss, auth, network, retries exhausted), decided by exception class;
    ``error_class``: the root error's class; ``http_retries``: gateway retries (429, 5xx,
    timeouts) across the cell's calls, separate from removal-ladder ``retries``;
    ``reported_tokens`` / ``estimated_tokens``: billed input + output tokens as the provider
    reported them vs estimated by the workbench; ``effective_window``: the smaller of the
    simulated cap and the model's real context; ``window_tokenizer``: what the cap counted with.
    """
    for column, kind in (("outcome_kind", "TEXT"), ("error_class", "TEXT"),
                         ("http_retries", "INTEGER"), ("reported_tokens", "INTEGER"),
                         ("estimated_tokens", "INTEGER"), ("effective_window", "INTEGER"),
                         ("window_tokenizer", "TEXT")):
        db.execute(f"ALTER TABLE cells ADD COLUMN {column} {kind}")
    db.execute("CREATE INDEX cells_outcome_kind ON cells (outcome_kind)")


def m010_replays(db: sqlite3.Connection) -> None:
    """One row per whole-session replay (session x strategy x window x threshold): its totals,
    and its turns and compaction rounds as JSON."""
    db.execute("""
        CREATE TABLE replays (
            replay_id TEXT PRIMARY KEY,
            run_id TEXT REFERENCES runs (run_id),
            session_id TEXT,
            strategy TEXT,
            model TEXT,
            window INTEGER,
            threshold REAL,
            status TEXT,
            turns INTEGER,
            compactions INTEGER,
            rounds INTEGER,
            billed_input_tokens INTEGER,
            billed_output_tokens INTEGER,
            cached_tokens INTEGER,
            cache_breaks INTEGER,
            peak_context INTEGER,
            overflow_turns INTEGER,
            facts_recall_mean REAL,
            facts_recall_last REAL,
            probe_recall_mean REAL,
            errors INTEGER,
            turns_json TEXT,
            rounds_json TEXT,
            error_type TEXT,
            error_message TEXT,
            latency_ms REAL,
            finished_at TEXT
        )""")


def m012_shared_calls(db: sqlite3.Connection) -> None:
    """Shared model calls: an attempt answered by another cell's call is marked ``shared`` (its
    usage is zero) and names the billed attempt in ``shared_from``; each cell counts the calls
    it made and the calls it shared."""
    db.execute("ALTER TABLE attempts ADD COLUMN shared INTEGER")
    db.execute("ALTER TABLE attempts ADD COLUMN shared_from TEXT")
    db.execute("ALTER TABLE cells ADD COLUMN calls_made INTEGER")
    db.execute("ALTER TABLE cells ADD COLUMN calls_shared INTEGER")


def m013_template_params(db: sqlite3.Connection) -> None:
    """The full parameter values of a parametrised template point, as JSON (the ``template``
    column keeps the short label)."""
    db.execute("ALTER TABLE cells ADD COLUMN template_params TEXT")


def m014_run_executor(db: sqlite3.Connection) -> None:
    """Which executor ran each runner invocation (``local``/``ray``) and on what cluster (a JSON
    description), and which try of its cell made each attempt (Ray re-runs a cell whose worker
    died; NULL for the local executor)."""
    db.execute("ALTER TABLE runs ADD COLUMN executor TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN cluster TEXT")
    db.execute("ALTER TABLE attempts ADD COLUMN task_attempt INTEGER")


def m015_attempt_node(db: sqlite3.Connection) -> None:
    """Which Ray node made each attempt (the try's node; NULL for the local executor), so a run
    on a cluster says where every call, and every call a killed node lost, was made."""
    db.execute("ALTER TABLE attempts ADD COLUMN node_id TEXT")


MIGRATIONS: list[Migration] = [m001_runs, m002_cells, m003_attempts, m004_attempt_prompt_hash,
                               m005_cell_outcome_columns, m010_replays, m012_shared_calls,
                               m013_template_params, m014_run_executor, m015_attempt_node]


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error (DDL included, unlike ``with db``)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def applied(db: sqlite3.Connection) -> list[str]:
    """Names of the migrations already applied, in order."""
    db.execute("CREATE TABLE IF NOT EXISTS _workbench_migrations "
               "(name TEXT PRIMARY KEY, applied_at TEXT)")
    return [r[0] for r in db.execute("SELECT name FROM _workbench_migrations ORDER BY rowid")]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every pending migration, each in its own transaction.

    Args:
        db: A connection in autocommit mode (``isolation_level=None``).

    Returns:
        The names applied by this call.
    """
    done = set(applied(db))
    ran: list[str] = []
    for migration in MIGRATIONS:
        if migration.__name__ in done:
            continue
        with transaction(db):
            migration(db)
            db.execute("INSERT INTO _workbench_migrations (name, applied_at) VALUES (?, ?)",
                       (migration.__name__, datetime.now(UTC).isoformat()))
        ran.append(migration.__name__)
    return ran
