"""`ReplayResult` objects as a table (strategy x window x threshold), the ranking of the feasible
rows on billed tokens, and a plot of context size over the session with the compaction points
marked.

Table rules: ``sessions`` counts the replays of the group; every other column is the mean over
them (for one session, that session's figure), except ``peak_context_max`` (the largest peak
of any of them), ``errors_total`` (the sum), ``feasible`` (true only when every replay of
the group kept every prompt within the window), and in the `detector_table`
``post_fill_max`` (the largest of any of them) and ``cliff`` (the cliff of the group's
survival curve, `survival_curve`; empty when the table is built from a frame). Fact and probe survival are the means of each replay's survival
over its rounds that fit the window (`ReplayResult.summary`); a detector that does not apply
to a replay (None) is left out of its mean. A row that is not feasible is listed with its
overflow turns and never ranked on billed tokens (`replay_ranking`): its prompts could not
have been sent. A threshold of None (each strategy at its own trigger) reads ``policy``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from workbench.strategies._detectors import DETECTOR_COLUMNS, survival_curve
from workbench.strategies._replay_result import ReplayResult

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["DETECTOR_TABLE_COLUMNS", "REPLAY_COLUMNS", "detector_table", "plot_replay",
           "replay_frame", "replay_ranking", "replay_table", "threshold_label"]

REPLAY_KEYS = ("strategy", "window", "threshold")
FRAME_COLUMNS = ("turns", "compactions", "rounds", "billed_input_tokens",
                 "billed_output_tokens", "billed_tokens", "cached_tokens", "cache_breaks",
                 "peak_context", "overflow_turns", "rounds_over_window", "feasible",
                 "facts_recall_mean", "facts_recall_last", "probe_recall_mean", "errors",
                 "trigger_tokens", *DETECTOR_COLUMNS)
"""One replay's totals (`ReplayResult.summary`), in display order."""
REPLAY_COLUMNS = ("turns", "compactions", "rounds", "billed_input_tokens",
                  "billed_output_tokens", "billed_tokens", "cached_tokens", "cache_breaks",
                  "peak_context_max", "overflow_turns", "rounds_over_window", "feasible",
                  "facts_recall_mean", "facts_recall_last", "probe_recall_mean", "errors_total")
"""The table's value columns, in display order."""
DETECTOR_TABLE_COLUMNS = ("trigger_tokens", "rounds", "compactions", *DETECTOR_COLUMNS)
"""The detector table's value columns (`detector_table`), in display order."""
_AGGREGATE = {"peak_context_max": ("peak_context", "max"), "errors_total": ("errors", "sum"),
              "feasible": ("feasible", "all"), "post_fill_max": ("post_fill_max", "max"),
              "cliff": ("cliff", "curve")}
"""Table columns that are not a mean of the replay column of the same name."""
RANKED_ON = "billed_tokens"


def replay_frame(results: Iterable[ReplayResult]) -> pd.DataFrame:
    """One row per replay (`ReplayResult.summary`), as a pandas DataFrame."""
    # only the tables need pandas: `import workbench.strategies` stays without it
    import pandas as pd

    rows = [r.summary() for r in results]
    columns = ["session_id", *REPLAY_KEYS, "model", *FRAME_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def detector_table(results: Iterable[ReplayResult] | pd.DataFrame,
                   by: Sequence[str] = REPLAY_KEYS) -> pd.DataFrame:
    """The failures users report per strategy, window and threshold: `replay_table`'s rules
    over `DETECTOR_TABLE_COLUMNS` (the detectors, defined in `workbench.strategies._detectors`,
    and the cliff of the group's survival curve)."""
    return replay_table(results, by, columns=DETECTOR_TABLE_COLUMNS)


def replay_table(results: Iterable[ReplayResult] | pd.DataFrame,
                 by: Sequence[str] = REPLAY_KEYS,
                 columns: Sequence[str] = REPLAY_COLUMNS) -> pd.DataFrame:
    """Group replays by strategy, window and threshold (see the module docstring's rules).

    Args:
        results: `ReplayResult` objects, or a `replay_frame` DataFrame.
        by: Grouping columns.
        columns: The value columns (`REPLAY_COLUMNS`; `detector_table` asks for others).

    Returns:
        A DataFrame: the `by` columns, ``sessions``, then `columns`, in spec order of first
        appearance.
    """
    import pandas as pd  # (as in replay_frame)

    cliffs: dict[tuple[object, ...], object] = {}
    if isinstance(results, pd.DataFrame):
        frame = results
    else:
        results = list(results)
        frame = replay_frame(results)
        if "cliff" in columns:
            for key, g in survival_curve(results).groupby(["strategy", "window", "threshold"],
                                                          sort=False, dropna=False):
                cliffs[_key(key)] = g["cliff"].iloc[0]
    by = list(by)
    shown = list(columns)
    columns = [*by, "sessions", *shown]
    if "billed_tokens" not in frame.columns and not frame.empty:
        frame = frame.assign(billed_tokens=pd.to_numeric(frame["billed_input_tokens"])
                             + pd.to_numeric(frame["billed_output_tokens"]))
    if "feasible" not in frame.columns and "overflow_turns" in frame.columns:
        frame = frame.assign(feasible=pd.to_numeric(frame["overflow_turns"]).eq(0))
    if frame.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, g in frame.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, object] = {**dict(zip(by, key, strict=True)), "sessions": len(g)}
        for col in shown:
            source, how = _AGGREGATE.get(col, (col, "mean"))
            if how == "curve":
                full = dict(zip(by, key, strict=True))
                wanted = (full.get("strategy"), full.get("window"), full.get("threshold"))
                row[col] = cliffs.get(_key(wanted)) if by == list(REPLAY_KEYS) else None
            elif source not in g.columns:
                row[col] = None
            elif how == "all":
                row[col] = bool(g[source].astype(bool).all())
            else:
                values = pd.to_numeric(g[source], errors="coerce")
                row[col] = getattr(values, how)()
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _key(key: object) -> tuple[object, ...]:
    """A group key with NaN thresholds made comparable (None)."""
    out = []
    for part in key if isinstance(key, tuple) else (key,):
        try:
            missing = part is None or part != part
        except (TypeError, ValueError):
            missing = False
        out.append(None if missing else part)
    return tuple(out)


def threshold_label(threshold: float | None) -> str:
    """``0.8`` as ``0.8``; None or NaN (each strategy at its own trigger) as ``policy``."""
    if threshold is None or threshold != threshold:
        return "policy"
    return f"{float(threshold):g}"


def replay_ranking(table: pd.DataFrame) -> list[str]:
    """Per window x threshold, the feasible strategies from fewest billed tokens up, and the
    infeasible ones with their overflow turns (never ranked: their prompts did not fit).

    Args:
        table: A `replay_table`.

    Returns:
        One line per window x threshold.
    """
    lines: list[str] = []
    if table.empty:
        return lines
    for (window, threshold), g in table.groupby(["window", "threshold"], sort=False,
                                                dropna=False):
        fits = g[g["feasible"].astype(bool)].sort_values(RANKED_ON, kind="stable")
        over = g[~g["feasible"].astype(bool)]
        ranked = ", ".join(f"{r.strategy} ({getattr(r, RANKED_ON):,.0f})"
                           for r in fits.itertuples())
        at = ("each at its own trigger" if threshold_label(threshold) == "policy"
              else f"x{threshold_label(threshold)}")
        line = (f"{_window(window)} {at}: fewest billed tokens, feasible only: "
                f"{ranked or 'none feasible'}")
        if not over.empty:
            line += "; infeasible (prompts over the window): " + ", ".join(
                f"{r.strategy} ({r.overflow_turns:,.0f} overflow turns per session)"
                for r in over.itertuples())
        lines.append(line)
    return lines


def _window(window: float) -> str:
    # the models package (~24 modules) only for the ranking's text, not at `import
    # workbench.strategies`
    from workbench.models._identity import format_window

    return format_window(int(window))


def plot_replay(results: Sequence[ReplayResult], *, title: str | None = None) -> Figure:
    """Context size (prompt tokens) per turn, one line per replay, compaction turns marked.

    The window and each distinct trigger (threshold x window) are drawn as horizontal lines.

    Args:
        results: Replays of one session (several strategies, windows or thresholds).
        title: The axes title (default: the session ids).

    Returns:
        A `matplotlib.figure.Figure` (no pyplot, no backend needed).
    """
    from matplotlib.figure import Figure  # matplotlib only when a replay is plotted

    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.add_subplot()
    if not results:
        ax.text(0.5, 0.5, "no replays", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    for i, r in enumerate(results):
        xs = [t.turn for t in r.turns]
        ys = [t.prompt_tokens for t in r.turns]
        label = (f"{r.strategy} @{r.window} x{threshold_label(r.threshold)} "
                 f"({r.compactions} compactions)")
        (line,) = ax.plot(xs, ys, linewidth=1.2, label=label, zorder=2 + i)
        marks = [t for t in r.turns if t.compaction_round is not None]
        ax.scatter([t.turn for t in marks], [t.prompt_tokens for t in marks], marker="v",
                   s=28, color=line.get_color(), zorder=10 + i)
    for window in sorted({r.window for r in results}):
        ax.axhline(window, color="black", linewidth=0.8, linestyle="--")
    for trigger in sorted({r.trigger_tokens for r in results if r.trigger_tokens is not None}):
        ax.axhline(trigger, color="grey", linewidth=0.6, linestyle=":")
    sessions = sorted({r.session_id for r in results})
    ax.set_title(title or ", ".join(sessions))
    ax.set_xlabel("turn (agent call)")
    ax.set_ylabel("prompt tokens")
    ax.legend(fontsize="small", loc="upper left")
    return fig
