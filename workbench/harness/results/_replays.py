"""Reading stored replays back: the ``replays`` table's columns, the table as a DataFrame and
as `ReplayResult` objects."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd

from workbench.strategies import CompactionRound, ReplayResult, TurnRow

__all__ = ["REPLAY_COLUMNS", "read_replays", "results_from_rows"]

REPLAY_COLUMNS: tuple[str, ...] = (
    "replay_id", "run_id", "session_id", "strategy", "model", "window", "threshold", "status",
    "turns", "compactions", "rounds", "billed_input_tokens", "billed_output_tokens",
    "cached_tokens", "cache_breaks", "peak_context", "overflow_turns", "facts_recall_mean",
    "facts_recall_last", "probe_recall_mean", "errors", "turns_json", "rounds_json",
    "error_type", "error_message", "latency_ms", "finished_at")
"""Columns of the ``replays`` table."""


def read_replays(db_path: Path) -> pd.DataFrame:
    """The ``replays`` table of a results store (empty, with its columns, when absent)."""
    db = sqlite3.connect(f"{Path(db_path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'replays'"
                           ).fetchone()
        if found is None:
            return pd.DataFrame(columns=list(REPLAY_COLUMNS))
        return pd.read_sql_query("SELECT * FROM replays ORDER BY rowid", db)
    finally:
        db.close()


def _threshold(value: float | str | None) -> float | None:
    """A stored threshold; NULL (NaN in a frame) is a replay at each strategy's own trigger."""
    if value is None or value != value:
        return None
    return float(value)


def results_from_rows(frame: pd.DataFrame, session_id: str | None = None) -> list[ReplayResult]:
    """`ReplayResult` objects rebuilt from stored rows ('ok' rows; one session when given)."""
    out = []
    for row in frame.to_dict("records"):
        if row.get("status") != "ok" or (session_id is not None and row["session_id"] != session_id):
            continue
        out.append(ReplayResult(
            session_id=row["session_id"], strategy=row["strategy"], window=int(row["window"]),
            threshold=_threshold(row.get("threshold")), model=row.get("model") or "",
            turns=[TurnRow(**t) for t in json.loads(row["turns_json"] or "[]")],
            rounds=[CompactionRound(**r) for r in json.loads(row["rounds_json"] or "[]")]))
    return out
