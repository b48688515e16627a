"""The one winner rule: the tune and `export --from-run` pick what the verdict recommends."""

from __future__ import annotations

import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.harness import verdict
from workbench.tune import Objective, pareto_mask

SCORES = pd.DataFrame([
    # template, retained, recall, parse
    ("a", 500.0, 0.50, 100.0),
    ("b", 900.0, 0.80, 100.0),
    ("c", 1500.0, 0.95, 100.0),
    ("d", 1000.0, 0.70, 100.0),   # dominated by b
    ("e", 900.0, 0.80, 50.0),     # dominated by b (worse parse)
    ("f", 2000.0, 0.95, 100.0),   # dominated by c
], columns=["template", "retained_tokens", "recall", "parse_success_pct"])


def cell(session: str, template: str, recall: float, retained: float) -> dict[str, object]:
    return {"session_id": session, "strategy": "goose", "model": "m", "template": template,
            "window": 32768, "repeat": 0, "status": "ok", "outcome_kind": "ok",
            "error_class": None, "error_type": None, "parse_outcome": "structured",
            "retained_tokens": retained, "summary_tokens": 100, "probe_recall": recall,
            "template_echo": 0.0, "fill_rate": 0.5}


BASE = [0.80, 0.70, 0.75, 0.85, 0.65, 0.78, 0.72, 0.82, 0.77, 0.74]
NOISE = [-0.02, +0.03, -0.01, +0.02, -0.03, +0.01, -0.02, +0.03, -0.01, +0.00]


def tune_like_cells() -> pd.DataFrame:
    """A baseline, a point with fewer tokens and the same recall (noise only), and the point
    with the fewest tokens whose recall is 8 points lower in every session (what the old rule
    `min-retained:recall>=0.75` crowned)."""
    rows = []
    for i, base in enumerate(BASE):
        rows += [cell(f"s{i}", "lean", base, 1000),
                 cell(f"s{i}", "lean{list_cap=5}", base + NOISE[i], 800),
                 cell(f"s{i}", "lean{list_cap=3}", base - 0.08 + NOISE[i] / 4, 560)]
    return pd.DataFrame(rows)


def test_the_pareto_front_keeps_exactly_the_undominated_points() -> None:
    assert list(SCORES[pareto_mask(SCORES)]["template"]) == ["a", "b", "c"]


def test_a_point_significantly_worse_on_recall_is_not_named_winner() -> None:
    cells = tune_like_cells()
    pick = Objective.parse(None).pick(cells)
    # the fewest tokens of all, but significantly worse than the best on recall: not eligible
    assert pick.winner == "lean{list_cap=5}"
    assert pick.ranking[0] == "lean{list_cap=5}" and pick.ranking[-1] == "lean{list_cap=3}"
    recall = next(m for m in pick.verdict.strata[0].metrics if m.metric == "probe_recall")
    assert "lean{list_cap=3}" in recall.worse
    # the same recommendation the verdict prints for these cells
    assert pick.winner == verdict(cells).recommendation.template
    assert pick.reasons.startswith("Recommendation: lean{list_cap=5} — ")


@pytest.mark.parametrize(("rule", "winner"), [
    ("min-retained-safe", "lean{list_cap=5}"),
    ("max-recall", "lean{list_cap=5}"),   # ahead by noise, not significantly
    ("min-retained", "lean{list_cap=5}"),  # list_cap=3 is 8 points below: outside 2 points
    ("pareto", "lean{list_cap=5}"),
])
def test_every_rule_name_is_the_verdicts_and_picks_what_the_verdict_recommends(
        rule: str, winner: str) -> None:
    cells = tune_like_cells()
    assert Objective.parse(rule).pick(cells).winner == winner
    assert verdict(cells, rule=rule).recommendation.template == winner


def test_a_wider_tolerance_lets_min_retained_take_the_cheap_point() -> None:
    pick = Objective.parse("min-retained", recall_tolerance=0.10).pick(tune_like_cells())
    assert pick.winner == "lean{list_cap=3}"


def test_the_pick_reads_only_the_points_and_sessions_given() -> None:
    cells = tune_like_cells()
    # without the point that ties with it on recall, the baseline wins
    pick = Objective.parse(None).pick(cells, templates=["lean", "lean{list_cap=3}"])
    assert pick.winner == "lean"
    # on two sessions no test is possible: every point is eligible, so the fewest tokens wins
    few = Objective.parse(None).pick(cells, sessions=["s0", "s1"])
    assert few.winner == "lean{list_cap=3}"


def test_the_rule_is_stated_in_words() -> None:
    assert Objective.parse(None).describe() == (
        "min-retained-safe: the fewest retained tokens among the points not significantly worse "
        "than the best on probe recall nor on compaction failures")
    assert Objective.parse("min-retained", 0.05).describe() == (
        "min-retained: the fewest retained tokens among the points whose mean probe recall is "
        "within 5.0 pts of the best")


@pytest.mark.parametrize(("rule", "message"), [
    ("best", "unknown rule 'best'; allowed: min-retained-safe, max-recall, min-retained, "
             "pareto"),
    ("max-recal", "unknown rule 'max-recal' \\(did you mean 'max-recall'\\?\\)"),
    ("min-retained:recall>=0.75", "unknown rule 'min-retained:recall>=0.75' \\(did you mean "
                                  "'min-retained'\\?\\)"),
])
def test_unknown_rules_are_clear_errors_with_the_closest_name(rule: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Objective.parse(rule)
