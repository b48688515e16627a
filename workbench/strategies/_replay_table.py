"""`ReplayResult` objects as a table (strategy x window x threshold) and as a plot of context
size over the session with the compaction points marked.

Table rules: ``sessions`` counts the replays of the group; every other column is the mean over
them (for one session, that session's figure), except ``peak_context`` (the largest) and
``errors`` (the sum). ``billed_tokens`` = billed input + billed output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from workbench.strategies._replay import ReplayResult

__all__ = ["REPLAY_COLUMNS", "plot_replay", "replay_frame", "replay_table"]

REPLAY_KEYS = ("strategy", "window", "threshold")
REPLAY_COLUMNS = ("turns", "compactions", "rounds", "billed_input_tokens",
                  "billed_output_tokens", "billed_tokens", "cached_tokens", "cache_breaks",
                  "peak_context", "overflow_turns", "facts_recall_mean", "facts_recall_last",
                  "probe_recall_mean", "errors")
"""The table's value columns, in display order."""


def replay_frame(results: Iterable[ReplayResult]) -> Any:
    """One row per replay (`ReplayResult.summary`), as a pandas DataFrame."""
    import pandas as pd

    rows = [r.summary() for r in results]
    columns = ["session_id", *REPLAY_KEYS, "model", *REPLAY_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def replay_table(results: Iterable[ReplayResult] | Any,
                 by: Sequence[str] = REPLAY_KEYS) -> Any:
    """Group replays by strategy, window and threshold (see the module docstring's rules).

    Args:
        results: `ReplayResult` objects, or a `replay_frame` DataFrame.
        by: Grouping columns.

    Returns:
        A DataFrame: the `by` columns, ``sessions``, then `REPLAY_COLUMNS`, in spec order of
        first appearance.
    """
    import pandas as pd

    frame = results if isinstance(results, pd.DataFrame) else replay_frame(results)
    by = list(by)
    columns = [*by, "sessions", *REPLAY_COLUMNS]
    if "billed_tokens" not in frame.columns and not frame.empty:
        frame = frame.assign(billed_tokens=pd.to_numeric(frame["billed_input_tokens"])
                             + pd.to_numeric(frame["billed_output_tokens"]))
    if frame.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, g in frame.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = {**dict(zip(by, key, strict=True)), "sessions": len(g)}
        for col in REPLAY_COLUMNS:
            if col not in g.columns:
                row[col] = None
                continue
            values = pd.to_numeric(g[col], errors="coerce")
            if col == "peak_context":
                row[col] = values.max()
            elif col == "errors":
                row[col] = values.sum()
            else:
                row[col] = values.mean()
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def plot_replay(results: Sequence[ReplayResult], *, title: str | None = None) -> Any:
    """Context size (prompt tokens) per turn, one line per replay, compaction turns marked.

    The window and each distinct trigger (threshold x window) are drawn as horizontal lines.

    Args:
        results: Replays of one session (several strategies, windows or thresholds).
        title: The axes title (default: the session ids).

    Returns:
        A `matplotlib.figure.Figure` (no pyplot, no backend needed).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.add_subplot()
    if not results:
        ax.text(0.5, 0.5, "no replays", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    for i, r in enumerate(results):
        xs = [t.turn for t in r.turns]
        ys = [t.prompt_tokens for t in r.turns]
        label = f"{r.strategy} @{r.window} x{r.threshold:g} ({r.compactions} compactions)"
        (line,) = ax.plot(xs, ys, linewidth=1.2, label=label, zorder=2 + i)
        marks = [t for t in r.turns if t.compaction_round is not None]
        ax.scatter([t.turn for t in marks], [t.prompt_tokens for t in marks], marker="v",
                   s=28, color=line.get_color(), zorder=10 + i)
    for window in sorted({r.window for r in results}):
        ax.axhline(window, color="black", linewidth=0.8, linestyle="--")
    for trigger in sorted({r.trigger_tokens for r in results}):
        ax.axhline(trigger, color="grey", linewidth=0.6, linestyle=":")
    sessions = sorted({r.session_id for r in results})
    ax.set_title(title or ", ".join(sessions))
    ax.set_xlabel("turn (agent call)")
    ax.set_ylabel("prompt tokens")
    ax.legend(fontsize="small", loc="upper left")
    return fig
