"""Named, append-only migrations for ``results.sqlite``.

Each migration is a function ``mNNN_name(db)``; `migrate` applies those not yet recorded in
``_workbench_migrations(name, applied_at)`` in list order (`workbench._sqlite.migrate`, the one
implementation both stores use). Shipped migrations are never edited: a schema change is a new
function at the end of `MIGRATIONS`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from workbench._sqlite import (
    Migration,
    applied,
    create_store,
    new_store_schema,
    open_in_memory,
    transaction,
)
from workbench._sqlite import migrate as _migrate

__all__ = ["MIGRATIONS", "Migration", "applied", "create", "migrate", "new_store_schema",
           "transaction"]


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


def m015_qa_calls(db: sqlite3.Connection) -> None:
    """Functional probes (``[qa]``): each cell's answerer, judge and probe-author calls, which
    are also in its billed totals (``qa_input_tokens``, ``qa_output_tokens``, ``qa_cost``,
    ``qa_calls``); and what each attempt was for (``purpose``: NULL for a summary call,
    ``answer``, ``answer_full``, ``next_action``, ``next_action_full``, ``judge``, ``author``)
    with the question it asked (``question_id``)."""
    for column, kind in (("qa_input_tokens", "INTEGER"), ("qa_output_tokens", "INTEGER"),
                         ("qa_cost", "REAL"), ("qa_calls", "INTEGER")):
        db.execute(f"ALTER TABLE cells ADD COLUMN {column} {kind}")
    db.execute("ALTER TABLE attempts ADD COLUMN purpose TEXT")
    db.execute("ALTER TABLE attempts ADD COLUMN question_id TEXT")


_USAGE = ("input_tokens", "output_tokens", "cost")


def m016_spent_columns(db: sqlite3.Connection) -> None:
    """What a cell paid in its run (``spent_input_tokens``, ``spent_output_tokens``,
    ``spent_cost``) apart from what its summary cost (the ``billed_*`` columns and ``cost``).

    From here on a shared answer carries the usage of the call that produced it (as a recorded
    answer always did). Rows written before are brought to that rule: each shared attempt takes
    its billed attempt's usage, its cell's billed columns (and the reported / estimated split,
    in the billed cell's proportion) grow by it; a cell's spent columns are its billed columns
    before that, minus its answers read from a recording.
    """
    for column, kind in (("spent_input_tokens", "INTEGER"), ("spent_output_tokens", "INTEGER"),
                         ("spent_cost", "REAL")):
        db.execute(f"ALTER TABLE cells ADD COLUMN {column} {kind}")
    recorded = {r[0]: r[1:] for r in db.execute(
        "SELECT cell_id, SUM(COALESCE(input_tokens, 0)), SUM(COALESCE(output_tokens, 0)),"
        " SUM(COALESCE(cost, 0)) FROM attempts WHERE cache_hit = 1 GROUP BY cell_id")}
    cells = db.execute("SELECT cell_id, billed_input_tokens, billed_output_tokens, cost,"
                       " reported_tokens, estimated_tokens FROM cells").fetchall()
    for cell_id, tokens_in, tokens_out, cost, *_ in cells:
        hit_in, hit_out, hit_cost = recorded.get(cell_id, (0, 0, 0.0))
        db.execute("UPDATE cells SET spent_input_tokens = ?, spent_output_tokens = ?,"
                   " spent_cost = ? WHERE cell_id = ?",
                   ((tokens_in or 0) - hit_in, (tokens_out or 0) - hit_out,
                    None if cost is None else cost - hit_cost, cell_id))
    split = {c[0]: (c[4] or 0, c[5] or 0) for c in cells}
    sources = {r[0]: r[1:] for r in db.execute(
        f"SELECT attempt_id, cell_id, {', '.join(_USAGE)} FROM attempts")}
    shared = db.execute("SELECT attempt_id, cell_id, shared_from FROM attempts"
                        " WHERE shared = 1 AND COALESCE(input_tokens, 0) = 0"
                        " AND COALESCE(output_tokens, 0) = 0").fetchall()
    for attempt_id, cell_id, source_id in shared:
        source = sources.get(source_id)
        if source is None:
            continue  # the billed attempt's cell was run again since: nothing to copy
        source_cell, tokens_in, tokens_out, cost = source
        db.execute("UPDATE attempts SET input_tokens = ?, output_tokens = ?, cost = ?"
                   " WHERE attempt_id = ?", (tokens_in, tokens_out, cost, attempt_id))
        tokens = (tokens_in or 0) + (tokens_out or 0)
        reported, estimated = split.get(source_cell, (0, 0))
        as_reported = round(tokens * reported / (reported + estimated)) if reported else 0
        db.execute("UPDATE cells SET billed_input_tokens = COALESCE(billed_input_tokens, 0) + ?,"
                   " billed_output_tokens = COALESCE(billed_output_tokens, 0) + ?,"
                   " cost = CASE WHEN ? IS NULL THEN NULL ELSE cost + ? END,"
                   " reported_tokens = COALESCE(reported_tokens, 0) + ?,"
                   " estimated_tokens = COALESCE(estimated_tokens, 0) + ? WHERE cell_id = ?",
                   (tokens_in or 0, tokens_out or 0, cost, cost, as_reported,
                    tokens - as_reported, cell_id))


def m017_attempt_node(db: sqlite3.Connection) -> None:
    """Which Ray node made each attempt (the try's node; NULL for the local executor), so a run
    on a cluster says where every call, and every call a killed node lost, was made."""
    db.execute("ALTER TABLE attempts ADD COLUMN node_id TEXT")


def m018_cell_texts(db: sqlite3.Connection) -> None:
    """The texts a cell leaves beside its row (its raw reply ``raw.txt``, what its summary
    forgot ``forgotten.json``, its ``[qa]`` answers ``qa.json``), by cell and name: written
    with the row in one transaction instead of as files of their own. Older run folders keep
    them as files under ``summaries/`` and ``qa/``; readers look in both."""
    db.execute("""
        CREATE TABLE cell_texts (
            cell_id TEXT,
            name TEXT,
            text TEXT,
            PRIMARY KEY (cell_id, name)
        )""")


MIGRATIONS: list[Migration] = [m001_runs, m002_cells, m003_attempts, m004_attempt_prompt_hash,
                               m005_cell_outcome_columns, m010_replays, m012_shared_calls,
                               m013_template_params, m014_run_executor, m015_qa_calls,
                               m016_spent_columns, m017_attempt_node, m018_cell_texts]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every pending results-store migration in one transaction (`workbench._sqlite.migrate`).

    Returns:
        The names applied by this call.
    """
    return _migrate(db, MIGRATIONS)


def create(path: str | Path) -> bool:
    """Write a new results store at `path`, migrated, unless a file is there
    (`workbench._sqlite.create_store`). Returns whether it did."""
    return create_store(path, MIGRATIONS)


def create_in_memory() -> sqlite3.Connection | None:
    """A new results store's database in memory, migrated (`workbench._sqlite.open_in_memory`),
    or None where it cannot be made so."""
    return open_in_memory(MIGRATIONS)
