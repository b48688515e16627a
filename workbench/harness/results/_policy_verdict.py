"""The policy verdict: per window x threshold of a run's replays, which compaction policy to run.

In: replay rows, one per session x strategy x window x threshold (`policy_rows` builds them
from a run: the totals and detectors of every replay that ran, `ReplayResult.summary`, and the
stored rows of those that did not). Out: a `PolicyVerdict` (`_policy_verdict_model`), which the
run's `Verdict` carries (``policies``) when its ``[replay]`` asks for the detectors
(`reported_rows`).

In each window x threshold:

- A policy is *infeasible*, and listed unranked with its reason, when any of its replays is
  ``n/a`` (a provider-side policy offline: the stored reason), failed (the error), or sent a
  prompt over the window (its billed tokens are then not a cost anyone could have paid).
- The feasible policies are compared on the sessions every one of them replayed, on three
  metrics: recall after the last compaction (``facts_recall_last``), billed tokens and the
  re-trigger rate. Per metric the best is the best mean (equal means: the first by name), and
  every other policy is compared with it exactly as the template verdict compares templates
  (`compare_with_best`: paired by session, a cluster bootstrap resampling sessions, Holm's
  adjustment across the comparisons with the best, ``tie``/``worse``/``better``).
- The rule (`POLICY_RULE`): among the feasible policies not significantly worse than the best
  on recall, the one with the fewest billed tokens (exactly equal means: a tie, said as such).

A session a policy never compacted holds every fact planted in it: its recall after the last
compaction counts as 1.0 when the session has planted facts (some replay of it measured them),
and has no value otherwise. A re-trigger rate needs a round; without one it has no value. A
missing value leaves that session out of that metric's pairs only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import pandas as pd

from workbench.harness.results._paired import LOWER_IS_BETTER
from workbench.harness.results._policy_verdict_model import (
    BILLED,
    POLICY_METRICS,
    RECALL,
    RETRIGGER,
    PolicyRow,
    PolicyStratum,
    PolicyVerdict,
    amount,
    diff_words,
    interval,
)
from workbench.harness.results._versus_best import (
    MIN_SESSIONS,
    WORSE,
    PairedValues,
    compare_with_best,
)

if TYPE_CHECKING:  # pragma: no cover
    from workbench.strategies import ReplayResult


class RunReplays(Protocol):
    """What the verdict reads of a run (a `Results`): its spec, stored and rebuilt replays."""

    @property
    def spec(self) -> object:
        """The experiment as run (its ``replay`` table)."""

    @property
    def replays(self) -> pd.DataFrame:
        """One stored row per replay."""

    def replay_results(self) -> Sequence[ReplayResult]:
        """The replays that ran, as `ReplayResult` objects."""

__all__ = ["policy_rows", "policy_verdict", "reported_rows"]

NA, OK = "n/a", "ok"
_OWN_TRIGGER = -1.0  # stands in for a NULL threshold (each policy at its own) when grouping
ROW_COLUMNS = ("session_id", "strategy", "window", "threshold", "status", "compactions",
               "billed_tokens", "overflow_turns", "feasible", RECALL, RETRIGGER, "error_type",
               "error_message")
"""The columns `policy_verdict` reads (`policy_rows` gives them)."""


def policy_rows(results: RunReplays) -> pd.DataFrame:
    """A run's replay rows for `policy_verdict`: one per stored replay, in stored order.

    Args:
        results: A `Results` (its ``replays``).

    Returns:
        A DataFrame with `ROW_COLUMNS`: the totals and detectors of the replays that ran
        (status ``ok``), and the key, status and error of those that did not.
    """
    # light start: the strategies (and their replay) load only when a run has replays
    from workbench.strategies import replay_frame

    stored = results.replays
    if stored.empty:
        return pd.DataFrame(columns=list(ROW_COLUMNS))
    ran = replay_frame(results.replay_results()).assign(status=OK)
    rest = stored[stored["status"] != OK]
    frame = pd.concat([ran, rest], ignore_index=True) if len(rest) else ran
    return frame.reindex(columns=list(ROW_COLUMNS))


def reported_rows(results: RunReplays) -> pd.DataFrame | None:
    """The replay rows whose policy verdict the run reports (`Results.verdict` passes them to
    `verdict`): when the spec's ``[replay]`` asks for the failure analysis (``detectors =
    true``, as `experiments/agents.toml` does) and replays were stored; else None."""
    replay = getattr(results.spec, "replay", None)
    if not getattr(replay, "detectors", False) or results.replays.empty:
        return None
    return policy_rows(results)


def _numbers(df: pd.DataFrame, column: str) -> pd.Series:
    """`column` as numbers (NaN where absent or not a number)."""
    if column not in df:
        return pd.Series(math.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[column], errors="coerce")


def _prepare(rows: pd.DataFrame) -> pd.DataFrame:
    df = rows.copy()
    df["status"] = df["status"].fillna(OK) if "status" in df else OK
    if "billed_tokens" not in df:
        df["billed_tokens"] = _numbers(df, "billed_input_tokens") + _numbers(
            df, "billed_output_tokens")
    # Feasible as stated, else from the overflow turns (a row with neither counts as feasible).
    stated = df["feasible"] if "feasible" in df else None
    from_overflow = _numbers(df, "overflow_turns").fillna(0).eq(0)
    df["feasible"] = from_overflow if stated is None else stated.where(stated.notna(),
                                                                        from_overflow)
    ok = df["status"].eq(OK)
    recall = _numbers(df, RECALL)
    planted = set(df.loc[ok & recall.notna(), "session_id"])
    never = ok & _numbers(df, "compactions").eq(0)
    df[RECALL] = recall.where(~(never & df["session_id"].isin(planted)), 1.0)
    df[RETRIGGER] = _numbers(df, RETRIGGER)
    df[BILLED] = _numbers(df, BILLED)
    df["_threshold"] = _numbers(df, "threshold").fillna(_OWN_TRIGGER)
    return df


def _reason(g: pd.DataFrame) -> str | None:
    """Why a policy's replays in one stratum are infeasible, or None when they are feasible."""
    n = len(g)
    na = g[g["status"] == NA]
    if len(na):
        return f"n/a in {len(na)} of {n} sessions: {na['error_message'].iloc[0]}"
    failed = g[g["status"] != OK]
    if len(failed):
        first = failed.iloc[0]
        what = ": ".join(str(v) for v in (first.get("error_type"), first.get("error_message"))
                         if isinstance(v, str) and v)
        return f"error in {len(failed)} of {n} sessions ({what or 'no message stored'})"
    over = g[~g["feasible"].astype(bool)]
    if len(over):
        turns = _numbers(g, "overflow_turns").mean()
        per = f" ({turns:,.1f} overflow turns per session)" if turns == turns else ""
        return f"prompts over the window in {len(over)} of {n} sessions{per}"
    return None


def _compare(common: pd.DataFrame, rows: dict[str, PolicyRow], metric: str, seed: int,
             n_boot: int) -> tuple[str | None, PairedValues]:
    """Each feasible policy's mean on `metric` and its comparison with the best; the best."""
    values = common[metric]
    means = values.groupby(common["strategy"]).mean().dropna()
    for name, row in rows.items():
        row.means[metric] = float(means.get(name, math.nan))
    paired = PairedValues(common.assign(_pair=common["session_id"]), "strategy", metric)
    if means.empty:
        return None, paired
    sign = 1.0 if metric in LOWER_IS_BETTER else -1.0
    ranked = sorted(means.index, key=lambda v: (sign * means[v], v))
    for c in compare_with_best(paired, ranked[0], ranked[1:], seed=seed, n_boot=n_boot):
        rows[c.variant].comparisons[metric] = c
    return str(ranked[0]), paired


def _stratum(part: pd.DataFrame, seed: int, n_boot: int) -> PolicyStratum:
    window = int(part["window"].iloc[0])
    threshold = float(part["_threshold"].iloc[0])
    rows = {name: PolicyRow(name, int((part["strategy"] == name).sum()), True)
            for name in dict.fromkeys(part["strategy"])}
    for name, row in rows.items():
        row.reason = _reason(part[part["strategy"] == name])
        row.feasible = row.reason is None
    feasible = {n: r for n, r in rows.items() if r.feasible}
    sessions = [set(part.loc[part["strategy"] == n, "session_id"]) for n in feasible]
    common_ids = set.intersection(*sessions) if sessions else set()
    common = part[part["strategy"].isin(feasible) & part["session_id"].isin(common_ids)]
    stratum = PolicyStratum(window, None if threshold == _OWN_TRIGGER else threshold,
                            len(common_ids))
    stratum.rows = list(rows.values())  # in replay order until ranked below
    paired = {}
    for metric in POLICY_METRICS:
        stratum.best[metric], paired[metric] = _compare(common, feasible, metric, seed, n_boot)
    _apply_rule(stratum, feasible, paired[BILLED], seed, n_boot)
    ranked = sorted((r for r in feasible.values() if r.eligible),
                    key=lambda r: (r.rank or 0, r.strategy))
    rest = sorted((r for r in feasible.values() if not r.eligible),
                  key=lambda r: (r.means.get(BILLED, math.inf), r.strategy))
    stratum.rows = ranked + rest + [r for r in rows.values() if not r.feasible]
    return stratum


def _apply_rule(stratum: PolicyStratum, feasible: dict[str, PolicyRow], billed: PairedValues,
                seed: int, n_boot: int) -> None:
    """Mark the eligible policies, rank them by billed tokens, and say why the pick."""
    best_recall = stratum.best.get(RECALL)
    for name, row in feasible.items():
        c = row.comparisons.get(RECALL)
        if best_recall is None or name == best_recall:
            row.eligible = True
        else:
            row.eligible = c is not None and c.status != WORSE
    eligible = sorted((r for r in feasible.values() if r.eligible),
                      key=lambda r: (r.means.get(BILLED, math.inf), r.strategy))
    for i, row in enumerate(eligible, 1):
        row.rank = i
    if not eligible:  # the best on recall is always eligible: nothing is feasible
        stratum.reasons = ["no policy is feasible here: each is n/a, errored, or sent a prompt "
                           "over the window"]
        return
    pick = eligible[0]
    stratum.pick = pick.strategy
    stratum.tied = [r.strategy for r in eligible[1:]
                    if r.means.get(BILLED) == pick.means.get(BILLED)]
    stratum.reasons = _reasons(stratum, feasible, eligible, billed, seed, n_boot)


def _reasons(stratum: PolicyStratum, feasible: dict[str, PolicyRow], eligible: list[PolicyRow],
             billed: PairedValues, seed: int, n_boot: int) -> list[str]:
    pick = eligible[0]
    best = stratum.best.get(RECALL)
    out = []
    if best is None:
        out.append("no recall after a compaction was measured here (no planted facts): the "
                   "choice rests on billed tokens alone")
    elif pick.strategy == best:
        ties = [r.strategy for r in eligible if r.strategy != best]
        out.append(f"the best recall after the last compaction ({amount(pick.means[RECALL], RECALL)})"
                   + (f", not significantly ahead of {', '.join(ties)}" if ties else
                      ", significantly ahead of every other feasible policy"))
    else:
        out.append(f"recall after the last compaction {amount(pick.means[RECALL], RECALL)}, not "
                   f"significantly lower than the best, {best} "
                   f"({diff_words(pick.comparisons[RECALL], RECALL)})")
    head = (f"the fewest billed tokens of the {len(eligible)} not significantly worse on recall "
            f"({amount(pick.means[BILLED], BILLED)})")
    others = [r for r in eligible[1:] if r.strategy not in stratum.tied]
    if others:
        nxt = others[0]
        d = billed.diff(nxt.strategy, pick.strategy, seed=seed, n_boot=n_boot)
        head += f", {interval(d.mean_diff, d.ci_low, d.ci_high, BILLED)} against {nxt.strategy}"
    out.append(head)
    cheaper = [r for r in feasible.values() if not r.eligible and RECALL in r.comparisons
               and r.means.get(BILLED, math.inf) < pick.means.get(BILLED, math.inf)]
    if cheaper:
        names = sorted(cheaper, key=lambda r: (r.means[BILLED], r.strategy))
        out.append("cheaper but significantly worse on recall: "
                   + ", ".join(r.strategy for r in names))
    retrig = pick.comparisons.get(RETRIGGER)
    if retrig is not None and retrig.status == WORSE:
        out.append(f"but its re-trigger rate is significantly higher than the best, "
                   f"{stratum.best[RETRIGGER]} ({diff_words(retrig, RETRIGGER)})")
    if stratum.n_sessions < MIN_SESSIONS:
        out.append(f"only {stratum.n_sessions} session(s) replayed by every feasible policy, "
                   f"below the {MIN_SESSIONS} a significance test needs: provisional")
    return out


def policy_verdict(rows: pd.DataFrame | None, *, seed: int = 0,
                   n_boot: int = 2000) -> PolicyVerdict:
    """The policy verdict of replay rows (see the module docstring).

    Args:
        rows: One row per replay (`policy_rows`; at least ``session_id``, ``strategy``,
            ``window``, ``threshold``, ``billed_tokens`` and ``facts_recall_last``; ``status``,
            ``feasible`` or ``overflow_turns``, ``compactions``, ``retrigger_rate`` and the
            error columns when known).
        seed: Bootstrap seed (the run's spec seed; the same seed gives the same verdict).
        n_boot: Bootstrap resamples.

    Returns:
        A `PolicyVerdict`, one stratum per window x threshold (windows ascending, each policy's
        own trigger before the shares).
    """
    if rows is None or len(rows) == 0:
        return PolicyVerdict([])
    df = _prepare(rows)
    strata = [_stratum(part, seed, n_boot)
              for _, part in df.groupby(["window", "_threshold"], sort=True)]
    return PolicyVerdict(strata)
