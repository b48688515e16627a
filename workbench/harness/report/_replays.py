"""The report's replay section: the replay table and one context-size plot per session."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from workbench._storage import write_atomic
from workbench.harness.results._plots import PNG_DPI, smallest_text_pt
from workbench.harness.results._results import Results
from workbench.strategies import plot_replay

__all__ = ["replay_report"]


def replay_report(results: Results, out: Path) -> tuple[pd.DataFrame, dict[str, bytes],
                                                       dict[str, float]]:
    """The replay table and one PNG per replayed session (``replay-<n>.png``) for a report.

    Returns:
        ``(table, {file name: png bytes}, {file name: its smallest text in px})``; the table is
        empty without replays.
    """
    table = results.replay_table()
    pngs: dict[str, bytes] = {}
    text_px: dict[str, float] = {}
    replays = results.replay_results()
    sessions = list(dict.fromkeys(r.session_id for r in replays))
    for i, sid in enumerate(sessions, 1):
        buf = io.BytesIO()
        figure = plot_replay([r for r in replays if r.session_id == sid])
        figure.savefig(buf, format="png", dpi=PNG_DPI)
        name = f"replay-{i}.png"
        pngs[name] = buf.getvalue()
        text_px[name] = smallest_text_pt(figure) * PNG_DPI / 72
        write_atomic(out / name, pngs[name])
    return table, pngs, text_px
