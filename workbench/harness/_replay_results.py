"""Reading stored replays back: the ``replays`` table as a DataFrame and as `ReplayResult`
objects, and the report's replay section (table plus one context-size plot per session)."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["read_replays", "replay_report", "results_from_rows"]


def read_replays(db_path: Path) -> Any:
    """The ``replays`` table of a results store (empty, with its columns, when absent)."""
    import pandas as pd

    from workbench.harness._replay_run import REPLAY_COLUMNS

    db = sqlite3.connect(f"{Path(db_path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'replays'"
                           ).fetchone()
        if found is None:
            return pd.DataFrame(columns=list(REPLAY_COLUMNS))
        return pd.read_sql_query("SELECT * FROM replays ORDER BY rowid", db)
    finally:
        db.close()


def results_from_rows(frame: Any, session_id: str | None = None) -> list[Any]:
    """`ReplayResult` objects rebuilt from stored rows ('ok' rows; one session when given)."""
    from workbench.strategies import CompactionRound, ReplayResult, TurnRow

    out = []
    for row in frame.to_dict("records"):
        if row.get("status") != "ok" or (session_id is not None and row["session_id"] != session_id):
            continue
        out.append(ReplayResult(
            session_id=row["session_id"], strategy=row["strategy"], window=int(row["window"]),
            threshold=float(row["threshold"]), model=row.get("model") or "",
            turns=[TurnRow(**t) for t in json.loads(row["turns_json"] or "[]")],
            rounds=[CompactionRound(**r) for r in json.loads(row["rounds_json"] or "[]")]))
    return out


def replay_report(results: Any, out: Path) -> tuple[Any, dict[str, bytes]]:
    """The replay table and one PNG per replayed session (``replay-<n>.png``) for a report.

    Returns:
        ``(table, {file name: png bytes})``; the table is empty without replays.
    """
    from workbench.strategies import plot_replay

    table = results.replay_table()
    pngs: dict[str, bytes] = {}
    replays = results.replay_results()
    sessions = list(dict.fromkeys(r.session_id for r in replays))
    for i, sid in enumerate(sessions, 1):
        buf = io.BytesIO()
        plot_replay([r for r in replays if r.session_id == sid]).savefig(buf, format="png",
                                                                          dpi=100)
        name = f"replay-{i}.png"
        pngs[name] = buf.getvalue()
        (out / name).write_bytes(pngs[name])
    return table, pngs
