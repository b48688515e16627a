"""The policy verdict on hand-made replay rows whose answer is known: every feasible policy
against the best, paired by session; the fewest billed tokens among those not significantly
worse on recall; infeasible policies unranked with their reason."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pandas as pd

from workbench.harness.results._policy_verdict import policy_verdict

SESSIONS = [f"s{i}" for i in range(6)]
BEST = [0.90, 0.80, 0.85, 0.95, 0.75, 0.88]
CHEAP_GAP = [-0.25, -0.35, -0.30, -0.28, -0.32, -0.30]   # mean -0.30: clearly worse
MID_GAP = [+0.05, -0.06, +0.04, -0.05, +0.03, -0.07]     # mean -0.01: noise


def replay(session: str, strategy: str, *, recall: float | None = 0.5, billed: int = 1000,
           retrig: float | None = 0.0, window: int = 8192, threshold: float | None = None,
           status: str = "ok", overflow: int = 0, compactions: int = 3,
           error: tuple[str, str] | None = None) -> dict[str, Any]:
    ok = status == "ok"
    return {"session_id": session, "strategy": strategy, "window": window,
            "threshold": threshold, "status": status,
            "compactions": compactions if ok else None, "billed_tokens": billed if ok else None,
            "overflow_turns": overflow if ok else None, "facts_recall_last": recall if ok else None,
            "retrigger_rate": retrig if ok else None,
            "error_type": error[0] if error else None, "error_message": error[1] if error else None}


def known_frame() -> pd.DataFrame:
    rows = []
    for i, s in enumerate(SESSIONS):
        rows += [
            replay(s, "best", recall=BEST[i], billed=300, retrig=0.10),
            replay(s, "cheap", recall=BEST[i] + CHEAP_GAP[i], billed=100, retrig=0.50),
            replay(s, "mid", recall=BEST[i] + MID_GAP[i], billed=200, retrig=0.20),
            # the cheapest and the best on recall, but one session's prompts did not fit
            replay(s, "over", recall=1.0, billed=50, overflow=2 if i == 0 else 0),
            replay(s, "remote", status="n/a",
                   error=("StrategyUnavailable", "it needs a live model of its provider")),
            replay(s, "broken", billed=10, **({"status": "error",
                                               "error": ("RuntimeError", "boom")}
                                              if i == 3 else {})),
        ]
    return pd.DataFrame(rows)


def test_the_cheapest_policy_worse_on_recall_loses_to_the_second_cheapest() -> None:
    found = policy_verdict(known_frame())
    [stratum] = found.strata
    assert (stratum.window, stratum.threshold, stratum.n_sessions) == (8192, None, 6)
    assert stratum.title == "8k, each policy at its own trigger"
    assert stratum.best == {"facts_recall_last": "best", "billed_tokens": "cheap",
                            "retrigger_rate": "best"}
    rows = {r.strategy: r for r in stratum.rows}
    cheap, mid = rows["cheap"].comparisons["facts_recall_last"], rows["mid"].comparisons[
        "facts_recall_last"]
    assert round(cheap.mean_diff, 9) == -0.30 and cheap.status == "worse"
    assert cheap.p_adjusted == 2 * 2 / 2001  # every resample below zero, Holm over 2
    assert round(mid.mean_diff, 9) == -0.01 and mid.status == "tie"
    assert (stratum.pick, stratum.tied) == ("mid", [])
    assert [(r.strategy, r.rank, r.verdict) for r in stratum.rows] == [
        ("mid", 1, "pick"), ("best", 2, "eligible"), ("cheap", None, "worse on recall"),
        ("over", None, "unranked"), ("remote", None, "unranked"), ("broken", None, "unranked")]
    assert round(rows["best"].means["facts_recall_last"], 9) == round(sum(BEST) / 6, 9)
    assert rows["mid"].means["billed_tokens"] == 200.0
    assert round(rows["cheap"].means["retrigger_rate"], 9) == 0.5
    assert "billed_tokens" not in rows["cheap"].comparisons  # the best on billed tokens
    assert rows["best"].comparisons["billed_tokens"].mean_diff == 200.0
    assert rows["best"].comparisons["billed_tokens"].status == "worse"  # same gap everywhere


def test_an_infeasible_policy_is_unranked_with_its_reason() -> None:
    [stratum] = policy_verdict(known_frame()).strata
    reasons = {r.strategy: r.reason for r in stratum.unranked}
    assert reasons == {
        "over": "prompts over the window in 1 of 6 sessions (0.3 overflow turns per session)",
        "remote": "n/a in 6 of 6 sessions: it needs a live model of its provider",
        "broken": "error in 1 of 6 sessions (RuntimeError: boom)"}
    assert all(not r.means and not r.comparisons for r in stratum.unranked)


def test_the_recommendation_says_why_the_pick() -> None:
    [stratum] = policy_verdict(known_frame()).strata
    line = stratum.recommendation()
    pattern = (r"Recommendation: mid — recall after the last compaction 84\.5%, not significantly "
               r"lower than the best, best \(-1\.0 pts \[-\d+\.\d, \+\d+\.\d\], Holm p 0\.\d{3}\); "
               r"the fewest billed tokens of the 2 not significantly worse on recall \(200\), "
               r"-100 \[-100, -100\] against best; cheaper but significantly worse on recall: "
               r"cheap; but its re-trigger rate is significantly higher than the best, best "
               r"\(\+10\.0 pts \[\+10\.0, \+10\.0\], Holm p 0\.002\)")
    assert re.fullmatch(pattern, line), line


def test_the_text_and_the_plain_data_render_one_object() -> None:
    found = policy_verdict(known_frame())
    text = found.to_text()
    table = text[text.index("policy recall"):text.index("over: unranked")]
    lines = [line.split() for line in table.splitlines() if line.strip()]
    assert lines[0] == ["policy", "recall", "recall", "vs", "best", "Holm", "p", "billed", "tok",
                        "billed", "tok", "vs", "best", "retrig", "retrig", "vs", "best",
                        "verdict"]
    assert [(w[0], w[1], w[-2:]) for w in lines[1:]] == [
        ("mid", "84.5%", ["1.", "pick"]), ("best", "85.5%", ["2.", "eligible"]),
        ("cheap", "55.5%", ["on", "recall"])]
    assert "    over: unranked, prompts over the window in 1 of 6 sessions" in text
    data = json.loads(json.dumps(found.to_dict()))
    [stratum] = data["strata"]
    assert stratum["pick"] == "mid" and stratum["threshold"] is None
    assert [r["verdict"] for r in stratum["rows"]] == ["pick", "eligible", "worse on recall",
                                                      "unranked", "unranked", "unranked"]
    assert stratum["rows"][2]["comparisons"]["facts_recall_last"]["status"] == "worse"
    assert stratum["recommendation"] == found.strata[0].recommendation()
    assert data["text"] == text


def test_a_session_never_compacted_keeps_every_planted_fact() -> None:
    rows = pd.DataFrame([
        replay("planted", "eager", recall=0.4), replay("planted", "lazy", recall=None,
                                                      compactions=0, retrig=None),
        replay("bare", "eager", recall=None), replay("bare", "lazy", recall=None,
                                                     compactions=0, retrig=None)])
    [stratum] = policy_verdict(rows).strata
    means = {r.strategy: r.means for r in stratum.rows}
    # "planted": some replay measured its facts, so the untouched context holds all of them;
    # "bare" has none planted: no value, and that session leaves the recall pairs only.
    assert means["lazy"]["facts_recall_last"] == 1.0
    assert means["eager"]["facts_recall_last"] == 0.4
    assert math.isnan(means["lazy"]["retrigger_rate"])
    rows_by = {r.strategy: r for r in stratum.rows}
    assert stratum.best["facts_recall_last"] == "lazy"
    assert rows_by["eager"].comparisons["facts_recall_last"].n_sessions == 1
    # one session is too few to call -0.6 worse; equal billed tokens are a tie, said as such
    assert (stratum.pick, stratum.tied) == ("eager", ["lazy"])
    assert stratum.recommendation().startswith("Recommendation: eager (tie with lazy: either "
                                               "can run) — ")


def test_windows_and_thresholds_are_never_pooled() -> None:
    rows = []
    for s in SESSIONS[:2]:
        rows += [replay(s, "a", window=8192), replay(s, "b", window=8192),
                 replay(s, "a", window=8192, threshold=0.8), replay(s, "a", window=32768)]
    found = policy_verdict(pd.DataFrame(rows))
    assert [s.title for s in found.strata] == ["8k, each policy at its own trigger",
                                               "8k, at 0.8 of the window",
                                               "32k, each policy at its own trigger"]
    assert [len(s.rows) for s in found.strata] == [2, 1, 1]
    first = found.strata[0]
    assert first.reasons[-1] == ("only 2 session(s) replayed by every feasible policy, below "
                                 "the 5 a significance test needs: provisional")


def test_no_feasible_policy_picks_nothing_and_no_rows_give_an_empty_verdict() -> None:
    rows = pd.DataFrame([replay("s0", "a", overflow=1), replay("s0", "b", status="n/a",
                                                               error=("X", "offline"))])
    [stratum] = policy_verdict(rows).strata
    assert stratum.pick is None
    assert stratum.recommendation() == (
        "Recommendation: none — no policy is feasible here: each is n/a, errored, or sent a "
        "prompt over the window")
    empty = policy_verdict(pd.DataFrame())
    assert empty.strata == [] and "nothing to compare: no replay ran" in empty.to_text()


def test_a_run_reports_the_policy_verdict_only_when_its_replay_asks_for_the_detectors() -> None:
    from types import SimpleNamespace

    from workbench.harness.results._policy_verdict import reported_rows

    stored = known_frame()
    results = SimpleNamespace(replays=stored, spec=SimpleNamespace(
        seed=0, replay=SimpleNamespace(detectors=False)))
    assert reported_rows(results) is None  # the default run's replay: unchanged output
    results.spec.replay.detectors = True
    results.replays = stored.iloc[:0]
    assert reported_rows(results) is None  # no replay ran


def test_the_fewest_columns_do_and_a_policy_without_recall_is_said_so() -> None:
    rows = pd.DataFrame([
        {"session_id": s, "strategy": name, "window": 8192, "threshold": 0.8,
         "billed_tokens": billed, "facts_recall_last": recall, "overflow_turns": 0}
        for s in ("s0", "s1") for name, billed, recall in (
            ("kept", 300, 0.9), ("blind", 100, None))])
    [stratum] = policy_verdict(rows).strata
    assert stratum.title == "8k, at 0.8 of the window"
    assert [(r.strategy, r.verdict) for r in stratum.rows] == [("kept", "pick"),
                                                               ("blind", "no recall")]
    assert stratum.reasons[1] == "the fewest billed tokens of the 1 not significantly worse " \
                                 "on recall (300)"  # blind is cheaper, but not called worse


def test_the_run_verdict_carries_the_policy_verdict_and_every_renderer_shows_it() -> None:
    from workbench.harness.results._verdict import verdict

    found = verdict(pd.DataFrame(), replays=known_frame(), seed=0)
    assert found.policies is not None and found.policies.strata[0].pick == "mid"
    assert found.to_text().endswith("\n\n" + found.policies.to_text())  # printed last
    data = json.loads(found.to_json())
    assert data["policies"] == json.loads(json.dumps(found.policies.to_dict()))
    assert data["policies"]["strata"][0]["rows"][0]["strategy"] == "mid"
    alone = verdict(pd.DataFrame())
    assert alone.policies is None and json.loads(alone.to_json())["policies"] is None
    assert "Policy verdict" not in alone.to_text()
