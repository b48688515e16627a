"""Winner rules on constructed fronts whose answer is known."""

from __future__ import annotations

import pandas as pd
import pytest

from workbench.errors import ConfigError
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


def test_the_pareto_front_keeps_exactly_the_undominated_points() -> None:
    assert list(SCORES[pareto_mask(SCORES)]["template"]) == ["a", "b", "c"]


@pytest.mark.parametrize(("rule", "winner"), [
    ("max-recall", "c"),                       # c and f tie on recall; c keeps fewer tokens
    ("max-recall:retained<=1000", "b"),
    ("max-recall:retained<=1000,parse>=100", "b"),
    ("min-retained", "a"),
    ("min-retained:recall>=0.75", "b"),
    ("pareto", "b"),                           # knee: scaled recall - scaled retained is largest
])
def test_each_rule_picks_the_known_winner(rule: str, winner: str) -> None:
    assert Objective.parse(rule).winner(SCORES) == winner


def test_the_rule_is_stated_in_words_with_its_constraints() -> None:
    text = Objective.parse("max-recall:retained<=1000,parse>=90", "facts_recall").describe()

    assert text == ("maximise facts_recall; ties: fewer retained tokens, then the label; "
                    "subject to retained_tokens <= 1000 and parse_success_pct >= 90")


def test_no_feasible_variant_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"no variant satisfies the objective \(.*"
                                          r"retained_tokens <= 100\); relax a constraint"):
        Objective.parse("max-recall:retained<=100").winner(SCORES)


@pytest.mark.parametrize(("rule", "message"), [
    ("best", "unknown rule 'best'; use one of max-recall, max-qa, min-retained, pareto"),
    ("max-recall:tokens<5", "cannot read constraint 'tokens<5'; write retained<=N"),
])
def test_unreadable_rules_are_clear_errors(rule: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Objective.parse(rule)


def test_max_qa_maximises_qa_accuracy_whatever_the_recall_metric() -> None:
    objective = Objective.parse("max-qa:retained<=1000", "facts_recall")
    assert (objective.kind, objective.metric) == ("max-qa", "qa_accuracy")
    assert objective.describe() == ("maximise qa_accuracy; ties: fewer retained tokens, then "
                                    "the label; subject to retained_tokens <= 1000")
    # variant_scores puts the objective's metric in the "recall" column
    assert objective.winner(SCORES) == "b"


def test_max_qa_picks_the_variant_whose_questions_are_answered_best() -> None:
    from workbench.tune import variant_scores

    cells = pd.DataFrame({
        "template": ["a", "a", "b", "b"], "status": ["ok"] * 4,
        "retained_tokens": [500, 520, 900, 880], "parse_outcome": ["structured"] * 4,
        "probe_recall": [0.9, 0.9, 0.5, 0.5], "qa_accuracy": [0.2, 0.4, 0.8, 0.6]})
    objective = Objective.parse("max-qa")
    scores = variant_scores(cells, objective.metric)
    assert scores.set_index("template")["recall"].round(6).to_dict() == {"a": 0.3, "b": 0.7}
    assert objective.winner(scores) == "b"
    assert Objective.parse("max-recall").winner(variant_scores(cells)) == "a"
