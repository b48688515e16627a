"""The report's replay section: the replay table and one context-size plot per session."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from workbench._storage import write_atomic

__all__ = ["replay_report"]


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
        write_atomic(out / name, pngs[name])
    return table, pngs
