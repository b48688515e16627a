"""The comparison rule and the recommendation on constructed runs with known answers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.harness import Results, paired_comparison, verdict
from workbench.harness.experiment import Experiment
from workbench.harness.results._holm import bootstrap_p_value, holm_adjust
from workbench.harness.results._power import minimum_detectable_effect, sessions_needed


def cell(session, template, *, window=8000, model="m", kind="ok", recall=0.5, retained=500,
         error_class=None):
    ok = kind == "ok"
    return {"session_id": session, "strategy": "goose", "model": model, "template": template,
            "window": window, "repeat": 0, "status": "ok" if ok else "error",
            "outcome_kind": kind, "error_class": error_class,
            "error_type": None if ok else "CompactionCallFailed",
            "parse_outcome": "structured" if ok else None,
            "retained_tokens": retained if ok else None, "summary_tokens": 100 if ok else None,
            "probe_recall": recall if ok else None, "template_echo": 0.0 if ok else None,
            "fill_rate": 0.5 if ok else None}


def metric_of(v, name, stratum=0):
    return next(m for m in v.strata[stratum].metrics if m.metric == name)


def by_variant(m):
    return {c.variant: c for c in m.comparisons}


# -- the comparison rule ----------------------------------------------------------------------

A_BASE = [0.80, 0.70, 0.75, 0.85, 0.65, 0.78, 0.72, 0.82]
B_DIFF = [-0.10, +0.06, -0.08, +0.04, -0.09, +0.05, -0.07, +0.03]   # mean -0.02, noisy
C_DIFF = [-0.05, -0.06, -0.04, -0.05, -0.06, -0.04, -0.05, -0.05]   # mean -0.05, steady


def test_worse_than_the_best_but_not_than_the_runner_up_is_named_worse() -> None:
    rows = []
    for i, base in enumerate(A_BASE):
        rows += [cell(f"s{i}", "a", recall=base, retained=900),
                 cell(f"s{i}", "b", recall=base + B_DIFF[i], retained=800),
                 cell(f"s{i}", "c", recall=base + C_DIFF[i], retained=700)]
    cells = pd.DataFrame(rows)
    recall = metric_of(verdict(cells), "probe_recall")
    assert (recall.best, recall.runner_up, recall.winner) == ("a", "b", None)
    cmp = by_variant(recall)
    assert cmp["b"].status == "tie" and cmp["c"].status == "worse"
    assert round(cmp["c"].mean_diff, 9) == -0.05 and cmp["c"].ci_high < 0
    assert cmp["c"].p_adjusted < 0.05 <= cmp["b"].p_adjusted
    assert recall.worse == ["c"] and recall.ties == ["b"]
    # the old rule tested only best against runner-up; c against the runner-up is no difference
    against_runner_up = paired_comparison(cells, "b", "c", stratify=())
    assert against_runner_up.winner is None
    assert any(line.startswith("  c: worse than best, -5.0 pts [")
               for line in recall.to_lines())


HOLM_BASE = [0.5, 0.6, 0.55, 0.7, 0.65, 0.45, 0.6, 0.5, 0.55, 0.62]
HOLM_DIFF = [-0.05, -0.02, +0.03, -0.04, -0.01, -0.06, +0.02, -0.03, +0.01, -0.04]


def _holm_rows(templates: str) -> list[dict]:
    rows = []
    for i, base in enumerate(HOLM_BASE):
        rows.append(cell(f"s{i}", "a", recall=base))
        for j, t in enumerate(templates):
            rows.append(cell(f"s{i}", t, recall=base + HOLM_DIFF[i] + 0.0001 * j,
                             retained=500 + j))
    return rows


def test_holm_adjustment_turns_a_lone_significant_gap_into_a_tie_among_three() -> None:
    alone = by_variant(metric_of(verdict(pd.DataFrame(_holm_rows("b"))), "probe_recall"))["b"]
    assert alone.status == "worse" and alone.p_value == alone.p_adjusted
    assert round(alone.p_value, 4) == 0.0470
    family = by_variant(metric_of(verdict(pd.DataFrame(_holm_rows("bcd"))), "probe_recall"))
    for c in family.values():
        assert round(c.p_value, 4) == 0.0470 and c.ci_high < 0  # unadjusted: excludes zero
        assert round(c.p_adjusted, 4) == 0.1409 and c.status == "tie"  # Holm: 3 x 0.047


def test_holm_adjust_and_bootstrap_p_value_exact() -> None:
    assert holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_adjust([0.02, float("nan"), 0.5]) [0] == pytest.approx(0.04)
    assert math.isnan(holm_adjust([0.02, float("nan")])[1])
    import numpy as np
    assert bootstrap_p_value(np.full(1999, -14.0)) == 2 / 2000
    assert bootstrap_p_value(np.zeros(99)) == 1.0
    assert bootstrap_p_value(np.array([-1.0] * 90 + [1.0] * 9)) == pytest.approx(2 * 10 / 100)


def test_identical_summaries_are_named_identical(tmp_path) -> None:
    rows = []
    for i in range(5):
        for t, text in (("a", f"summary {i}"), ("b", f"summary {i}"), ("c", f"other {i}")):
            path = f"summaries/{t}-{i}.md"
            (tmp_path / "summaries").mkdir(exist_ok=True)
            (tmp_path / path).write_text(text, encoding="utf-8")
            rows.append({**cell(f"s{i}", t, recall=0.6), "summary_path": path})
    results = Results(tmp_path, None, pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame())
    frame = results.verdict_frame()  # the summaries' texts, read from the run folder
    assert list(frame["summary_key"][:3]) == ["summary 0", "summary 0", "other 0"]
    v = verdict(frame)  # the verdict itself reads nothing but its frame
    assert v.to_dict() == results.verdict().to_dict()
    recall = metric_of(v, "probe_recall")
    cmp = by_variant(recall)
    assert (cmp["b"].status, cmp["c"].status) == ("identical", "tie")  # c: same numbers only
    assert recall.identical == ["b"]
    assert "  b: identical to a (the same summary text on every common session)" \
        in recall.to_lines()
    assert v.strata[0].warnings == []  # c differs: not every template is the same


def test_a_constant_token_gap_is_consistent_even_below_five_sessions() -> None:
    rows = []
    for i in range(3):
        rows += [cell(f"s{i}", "a", retained=1000 + 100 * i),
                 cell(f"s{i}", "b", retained=1014 + 100 * i)]
    retained = metric_of(verdict(pd.DataFrame(rows)), "retained_tokens")
    (c,) = retained.comparisons
    assert (c.status, c.consistent, c.mean_diff, c.ci_low, c.ci_high) == \
        ("worse", True, 14.0, 14.0, 14.0)
    assert retained.to_lines()[1] == (
        "  b: consistently worse than best: +14 in every one of 3 sessions; too few sessions "
        "for a p-value: a fact about these sessions, not a test")


def test_mde_and_sessions_needed_exact() -> None:
    diffs = [0.02, -0.02, 0.04, -0.04, 0.0, 0.0]  # SD 0.0282843, n 6
    rows = []
    for i, d in enumerate(diffs):
        rows += [cell(f"s{i}", "a", recall=0.5), cell(f"s{i}", "b", recall=0.5 + d)]
    recall = metric_of(verdict(pd.DataFrame(rows)), "probe_recall")
    assert recall.nothing_significant
    assert round(recall.sd, 7) == 0.0282843
    # (z_0.975 + z_0.8) * sd / sqrt(6) = 2.8015852 * 0.0282843 / 2.4494897
    assert round(recall.mde, 5) == 0.03235
    assert recall.reference_effect == 0.03
    assert recall.sessions_needed == 7  # ceil((2.8015852 * 0.0282843 / 0.03) ** 2) = ceil(6.98)
    assert recall.to_lines()[-1] == (
        "  no significant difference: at 6 sessions the smallest detectable difference is 3.2 "
        "pts (80% power, two-sided 5 % after Holm, paired SD 2.8 pts); 7 sessions needed to "
        "detect 3.0 pts")
    # three comparisons: Holm's first step tests at 0.05 / 3
    assert round(minimum_detectable_effect(0.0282843, 6, 3), 5) == round(
        3.2359 * 0.0282843 / 6 ** 0.5, 5)
    assert sessions_needed(0.0, 0.03) is None and sessions_needed(0.1, 0.0) is None


def test_equal_means_are_a_tie_never_an_alphabetical_win() -> None:
    rows = []
    for i in range(6):
        rows += [cell(f"s{i}", "a", recall=0.5, retained=500),
                 cell(f"s{i}", "b", recall=0.5, retained=500)]
    v = verdict(pd.DataFrame(rows))
    for m in v.strata[0].metrics:
        assert m.winner is None
    rec = v.strata[0].recommendation
    assert (rec.template, rec.tied) == ("a", ["b"])
    assert rec.to_text().startswith("Recommendation: a (tie with b: either can ship) — ")


# -- the recommendation -------------------------------------------------------------------------

RULE_BASE = [0.80, 0.78, 0.82, 0.79, 0.81, 0.77, 0.83, 0.80]
RULE_B = [+0.02, -0.02, +0.015, -0.015, +0.01, -0.01, +0.005, -0.013]   # mean -0.001: a tie


def _rule_cells() -> pd.DataFrame:
    rows = []
    for i, base in enumerate(RULE_BASE):
        rows += [cell(f"s{i}", "a", recall=base, retained=1000),
                 cell(f"s{i}", "b", recall=base + RULE_B[i], retained=990),
                 cell(f"s{i}", "c", recall=base - 0.01, retained=500),     # consistently worse
                 cell(f"s{i}", "d", recall=base - 0.20, retained=450)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("rule", "tolerance", "expected"), [
    ("min-retained-safe", None, "b"),   # a and b are not worse on recall; b keeps fewer tokens
    ("max-recall", None, "a"),
    ("min-retained", 0.02, "c"),        # c is 1 point below a, d 20 points
    ("min-retained", 0.25, "d"),
    ("pareto", None, "c"),              # the front is a, b, c, d; c is nearest the ideal point
])
def test_each_rule_picks_the_expected_template(rule, tolerance, expected) -> None:
    v = verdict(_rule_cells(), rule=rule, recall_tolerance=tolerance)
    rec = v.strata[0].recommendation
    assert rec.template == expected and rec.rule == rule and v.rule == rule
    assert rec.to_text().startswith(f"Recommendation: {expected} — ")
    assert v.recommendation.template == expected


def test_the_default_recommendation_says_why_with_intervals() -> None:
    v = verdict(_rule_cells())
    rec = v.strata[0].recommendation
    assert rec.eligible == ["a", "b"]
    recall = by_variant(metric_of(v, "probe_recall"))
    assert recall["c"].status == "worse" and recall["d"].status == "worse"
    assert rec.reasons[0].startswith("recall not significantly lower than the best, a (-0.1 pts [")
    assert rec.reasons[2].startswith("the fewest retained tokens of the 2 eligible, 1 % fewer "
                                     "than a (-10 [-10, -10])")
    assert [(i.metric, i.template, i.versus) for i in rec.intervals] == [
        ("probe_recall", "b", "a"), ("failed", "b", "a"), ("retained_tokens", "b", "a")]
    run = v.recommendation
    assert run.to_text().startswith(
        "Recommendation: b — recommended in 1 of 1 model x window strata and not significantly "
        "worse on recall or failures in all of them")
    assert v.recommendation_lines()[1].startswith("m @ 8000: Recommendation: b — ")
    text = v.to_text()
    assert "\n    Recommendation: b — recall not significantly lower" in text
    assert "\nRun as a whole (1 model x window, rule min-retained-safe):\n  Recommendation: b" \
        in text


def test_the_recommendation_names_a_metric_the_rule_does_not_weigh_where_the_pick_is_worse(
) -> None:
    rows = []
    for i in range(8):
        a, b = cell(f"s{i}", "a", recall=0.8, retained=900), cell(f"s{i}", "b", recall=0.8,
                                                                   retained=500)
        a["qa_accuracy"], b["qa_accuracy"] = 0.6, 0.6 - 0.05 - 0.01 * (i % 3)
        rows += [a, b]
    rec = verdict(pd.DataFrame(rows)).strata[0].recommendation
    assert rec.template == "b"
    assert rec.caveats == ["but significantly worse than the best, a, on questions answered "
                           "(exact) (-5.9 pts [-6.4, -5.4], Holm p <0.001)"]
    assert rec.to_text().endswith("; " + rec.caveats[0])  # the stratum's line states it
    assert [(i.metric, i.template, i.versus) for i in rec.intervals][-1] == (
        "qa_accuracy", "b", "a")


def test_failures_exclude_a_template_from_the_default_rule() -> None:
    rows = []
    for i in range(10):
        rows += [cell(f"s{i}", "a", recall=0.8, retained=900),
                 cell(f"s{i}", "b", recall=0.8, retained=400) if i < 5 else
                 cell(f"s{i}", "b", kind="failed", error_class="ContextLengthExceeded")]
    v = verdict(pd.DataFrame(rows))
    failed = by_variant(metric_of(v, "failed"))
    assert failed["b"].status == "worse"
    assert v.strata[0].recommendation.template == "a"
    assert verdict(pd.DataFrame(rows), rule="min-retained").strata[0].recommendation.template == "b"


def test_the_run_recommendation_needs_eligibility_in_every_stratum() -> None:
    rows = []
    for i in range(6):
        rows += [cell(f"s{i}", "a", model="m", recall=0.8, retained=900),
                 cell(f"s{i}", "b", model="m", recall=0.8, retained=600),
                 cell(f"s{i}", "a", model="n", recall=0.8, retained=900),
                 cell(f"s{i}", "b", model="n", recall=0.6, retained=300)]  # b worse on n
    v = verdict(pd.DataFrame(rows))
    assert [s.recommendation.template for s in v.strata] == ["b", "a"]
    run = v.recommendation
    assert run.template == "a" and run.eligible == ["a"]
    assert run.reasons[0] == ("recommended in 1 of 2 model x window strata and not "
                              "significantly worse on recall or failures in all of them")
    assert [p["template"] for p in run.per_stratum] == ["b", "a"]


def test_no_template_can_be_recommended_when_every_cell_fails() -> None:
    rows = [cell(f"s{i}", t, kind="failed", error_class="ContextLengthExceeded")
            for i in range(3) for t in "ab"]
    v = verdict(pd.DataFrame(rows))
    assert v.strata[0].recommendation.to_text() == \
        "Recommendation: none — no template produced a summary in m @ 8000"
    assert v.recommendation.to_text() == \
        "Recommendation: none — no model x window could recommend a template"


def test_a_bad_rule_is_a_config_error_naming_the_allowed_values() -> None:
    allowed = "allowed: min-retained-safe, max-recall, min-retained, pareto"
    with pytest.raises(ConfigError, match=f"unknown rule 'best'; {allowed}"):
        verdict(_rule_cells(), rule="best")
    data = {"sessions": ["dataset:all"], "models": ["extractive"], "verdict": {"rule": "best"}}
    with pytest.raises(ConfigError) as err:
        Experiment.from_dict(data, source="x.toml")
    assert str(err.value) == f"x.toml: verdict.rule: unknown rule 'best'; {allowed}"
    with pytest.raises(ConfigError, match="unknown rule 'min-retained-saf' \\(did you mean "
                                          "'min-retained-safe'\\?\\)"):
        verdict(_rule_cells(), rule="min-retained-saf")


def test_the_spec_sets_the_rule_and_round_trips() -> None:
    base = {"sessions": ["dataset:all"], "models": ["extractive"]}
    assert "verdict" not in Experiment.from_dict(base).to_dict()
    spec = Experiment.from_dict({**base, "verdict": {"rule": "min-retained",
                                                     "recall_tolerance": 0.25}})
    assert spec.to_dict()["verdict"] == {"rule": "min-retained", "recall_tolerance": 0.25}
    assert "[verdict]" in spec.to_toml()
    results = Results(Path("."), spec, _rule_cells(), pd.DataFrame(), pd.DataFrame())
    v = results.verdict()
    assert (v.rule, v.recall_tolerance, v.recommendation.template) == ("min-retained", 0.25, "d")


def test_to_dict_round_trips_through_json() -> None:
    v = verdict(_rule_cells())
    data = v.to_dict()
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data
    rec = data["recommendation"]
    assert (rec["template"], rec["rule"], rec["scope"]) == ("b", "min-retained-safe", "run")
    assert rec["per_stratum"] == [{"scope": "m @ 8000", "template": "b", "eligible": ["a", "b"]}]
    stratum = data["strata"][0]
    assert stratum["recommendation"]["intervals"][2]["mean_diff"] == -10.0
    recall = next(m for m in stratum["metrics"] if m["metric"] == "probe_recall")
    assert recall["worse"] == ["c", "d"] and recall["ties"] == ["b"]
    assert {c["variant"]: c["status"] for c in recall["comparisons"]} == \
        {"b": "tie", "c": "worse", "d": "worse"}


def test_few_sessions_and_zero_recall_make_the_recommendation_say_so() -> None:
    rows = []
    for i in range(3):
        rows += [cell(f"s{i}", "a", recall=0.0, retained=600 + i),
                 cell(f"s{i}", "b", recall=0.0, retained=500 + 3 * i)]
    v = verdict(pd.DataFrame(rows))
    rec = v.strata[0].recommendation
    assert rec.template == "b"
    assert rec.reasons[0] == "no evidence on recall: every template scored 0"
    assert rec.caveats == [
        "no template recalled a single probe item here: the choice rests on tokens alone",
        "only 3 session(s) completed by every template, below the 5 a significance test "
        "needs: provisional"]
    assert v.recommendation.caveats == [f"m @ 8000: {c}" for c in rec.caveats]


def test_sessions_needed_is_never_below_the_fewest_sessions_tested() -> None:
    assert sessions_needed(0.05, 0.10) == 2  # (2.8016 * 0.5) ** 2 = 1.96
    assert sessions_needed(0.05, 0.10, floor=5) == 5
