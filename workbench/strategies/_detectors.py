"""The failures users report of compaction, measured on a replay, and the survival curve.

Every detector reads the rounds a replay recorded (`CompactionRound`), so it works the same on a
fresh `ReplayResult` and on one rebuilt from a results store. A *round* is one time the trigger
fired (whether or not the strategy changed the context, and whether or not it failed); a
*compaction* is a round that changed the context (``applied``).

- ``retrigger_rate`` (openai/codex#35032: compaction fires again within a few turns because the
  context is still nearly full): the share of rounds followed by another round within
  `RETRIGGER_TURNS` turns (the next round's turn minus this one's is at most N; two rounds
  before the same turn count). None without rounds.
- ``post_fill_mean`` / ``post_fill_max``: the context's share of the window just after each
  round (``tokens_after / window``). None without rounds.
- ``growth`` (openai/codex#40619: ``/compact`` made the context bigger): compactions whose
  output is larger than what they replaced (``tokens_after > tokens_before``).
- ``loops`` (cline#9510, RooCodeInc/Roo-Code#10017): rounds run with no new turn since the
  previous round: that compaction changed the context but left it over the window, so the
  request would be refused and the agent compacted again (the replay does so only when asked
  to: ``rounds_per_turn``).
- ``last_request_kept`` (anthropics/claude-code#19736): the share of compactions after which
  the last human request before them is still in the context, by the overlap grader's rule
  (at least half its content words). None when no compaction had a request before it.
- ``done_redone`` (All-Hands-AI/OpenHands#11910: the agent redoes finished work): tasks
  finished before a compaction that its summary lists as pending, summed over compactions.
  None where the session marks no tasks (``meta["tasks"]``).
- ``stale_kept_mean``: replaced planted values (knowledge updates) the compacted context still
  holds, mean per compaction that fits the window. None when no prefix replaced a value.

Survival: ``recall after the k-th compaction`` is the planted-facts recall of the k-th applied
round (only rounds whose context fits the window count, as for ``facts_recall_mean``; a round
over the window has no value). `survival_curve` averages it per strategy over the sessions that
reached round k; the *cliff* is the first round whose recall is below `CLIFF_RECALL` (half).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CLIFF_RECALL", "DETECTOR_COLUMNS", "RETRIGGER_TURNS", "cliff", "detectors",
           "survival", "survival_curve", "survival_frame"]

RETRIGGER_TURNS = 3
"""A round followed by another within this many turns re-triggered."""
CLIFF_RECALL = 0.5
"""The cliff is the first round whose recall falls below this share."""
DETECTOR_COLUMNS = ("retrigger_rate", "post_fill_mean", "post_fill_max", "growth", "loops",
                    "last_request_kept", "done_redone", "stale_kept_mean", "cliff")
"""The detector columns of a replay's row (`detectors`), in display order."""


class Round(Protocol):
    """What the detectors read of a `CompactionRound` (its module imports this one, so it is
    named by its shape here)."""

    @property
    def turn(self) -> int: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after(self) -> int: ...
    @property
    def applied(self) -> bool: ...
    @property
    def facts_recall(self) -> float | None: ...
    @property
    def stale_kept(self) -> int | None: ...
    @property
    def request_kept(self) -> bool | None: ...
    @property
    def done_redone(self) -> int | None: ...


class Replayed(Protocol):
    """What the detectors read of a `ReplayResult` (as `Round`)."""

    @property
    def session_id(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def window(self) -> int: ...
    @property
    def threshold(self) -> float | None: ...
    @property
    def rounds(self) -> Sequence[Round]: ...


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def detectors(result: Replayed, within: int = RETRIGGER_TURNS) -> dict[str, float | None]:
    """The detector columns of one replay (see the module docstring for each definition).

    Args:
        result: A `ReplayResult`.
        within: Turns within which a following round counts as a re-trigger.
    """
    rounds = list(result.rounds)
    applied = [r for r in rounds if r.applied]
    fitting = [r for r in applied if r.tokens_after <= result.window]
    followed = sum(1 for a, b in zip(rounds, rounds[1:], strict=False) if b.turn - a.turn <= within)
    fills = [r.tokens_after / result.window for r in rounds]
    kept = [r.request_kept for r in applied if r.request_kept is not None]
    redone = [r.done_redone for r in applied if r.done_redone is not None]
    stale = [r.stale_kept for r in fitting if r.stale_kept is not None]
    return {
        "retrigger_rate": followed / len(rounds) if rounds else None,
        "post_fill_mean": _mean(fills),
        "post_fill_max": max(fills) if fills else None,
        "growth": sum(1 for r in applied if r.tokens_after > r.tokens_before),
        "loops": sum(1 for a, b in zip(rounds, rounds[1:], strict=False) if b.turn == a.turn),
        "last_request_kept": _mean([1.0 if k else 0.0 for k in kept]),
        "done_redone": sum(redone) if redone else None,
        "stale_kept_mean": _mean([float(s) for s in stale]),
        "cliff": cliff(survival(result)),
    }


def survival(result: Replayed) -> list[float | None]:
    """Recall after the 1st, 2nd, ... compaction of one replay (None for a compaction whose
    context does not fit the window, or where nothing was probed)."""
    return [r.facts_recall if r.tokens_after <= result.window else None
            for r in result.rounds if r.applied]


def cliff(curve: Sequence[float | None], below: float = CLIFF_RECALL) -> int | None:
    """The first round (1-based) whose recall is below `below`, or None if none is."""
    for k, value in enumerate(curve, 1):
        if value is not None and value < below:
            return k
    return None


def survival_frame(results: Iterable[Replayed]) -> pd.DataFrame:
    """One row per replay and compaction: the identity columns, ``round`` (1-based, applied
    compactions only) and ``recall`` (NaN where `survival` has no value), as a DataFrame."""
    # only the tables need pandas: `import workbench.strategies` stays without it
    import pandas as pd

    rows = [{"session_id": r.session_id, "strategy": r.strategy, "window": r.window,
             "threshold": r.threshold, "round": k, "recall": value}
            for r in results for k, value in enumerate(survival(r), 1)]
    return pd.DataFrame(rows, columns=["session_id", "strategy", "window", "threshold",
                                       "round", "recall"])


def survival_curve(results: Iterable[Replayed], max_rounds: int | None = None) -> pd.DataFrame:
    """The survival curve per strategy x window x threshold: mean recall after the k-th
    compaction over the sessions that reached it with a value, their count, and the cliff.

    Args:
        results: `ReplayResult` objects.
        max_rounds: Keep rounds 1..max_rounds only (None: every round any session reached).

    Returns:
        A DataFrame with ``strategy``, ``window``, ``threshold``, ``round``, ``recall``,
        ``sessions`` and ``cliff`` (the same value on every row of a curve; None when the
        curve never falls below half).
    """
    import pandas as pd  # (as above)

    frame = survival_frame(results).dropna(subset=["recall"])
    columns = ["strategy", "window", "threshold", "round", "recall", "sessions", "cliff"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    if max_rounds is not None:
        frame = frame[frame["round"] <= max_rounds]
    out = []
    keys = ["strategy", "window", "threshold"]
    for key, g in frame.groupby(keys, sort=False, dropna=False):
        points = g.groupby("round", sort=True)["recall"].agg(["mean", "count"])
        found = next((int(k) for k, v in points["mean"].items() if v < CLIFF_RECALL), None)
        for k, row in points.iterrows():
            out.append({**dict(zip(keys, key, strict=True)), "round": int(k),
                        "recall": float(row["mean"]), "sessions": int(row["count"]),
                        "cliff": found})
    return pd.DataFrame(out, columns=columns)
