"""Tolerance rules of the `[regress]` table: each form, its bounds, and bad input."""

from __future__ import annotations

import math

import pytest

from workbench.errors import ConfigError
from workbench.harness import Experiment
from workbench.regress import parse_tolerance

CASES = [
    # rule, baseline, current, allowed
    ("not lower", 80.0, 80.0, True),
    ("not lower", 80.0, 79.9, False),
    ("not lower", 80.0, 95.0, True),
    ("Not  Lower", 0.5, 0.49, False),
    ("not higher", 3, 3, True),
    ("not higher", 3, 4, False),
    ("no new", 0, 1, False),
    ("no new", 2, 0, True),
    ("exact", 612.5, 612.5, True),
    ("exact", 612.5, 612.6, False),
    ("+5%", 600, 630, True),
    ("+5%", 600, 630.1, False),
    ("+5%", 600, 100, True),
    ("-5%", 600, 570, True),
    ("-5%", 600, 569, False),
    ("-5%", 600, 9000, True),
    ("±5%", 600, 631, False),
    ("+-5%", 600, 569, False),
    ("±5%", 600, 590, True),
    ("+10", 100, 110, True),
    ("+10", 100, 110.5, False),
    ("-0.02", 0.9, 0.88, True),
    ("-0.02", 0.9, 0.87, False),
    ("±1", 5, 3.9, False),
    # float noise from summing in another order never counts as a move
    ("exact", 0.1 + 0.2, 0.3, True),
    ("not lower", 0.3, 0.1 + 0.2 - 1e-12, True),
    # a missing value only matches a missing value
    ("not lower", None, None, True),
    ("not lower", math.nan, None, True),
    ("not lower", 80.0, None, False),
    ("+5%", None, 600, False),
]


@pytest.mark.parametrize(("rule", "baseline", "current", "allowed"), CASES)
def test_each_rule_form_allows_exactly_its_range(rule: str, baseline: float | None,
                                                 current: float | None, allowed: bool) -> None:
    assert parse_tolerance(rule).allows(baseline, current) is allowed, (rule, baseline, current)


def test_each_rule_describes_its_bound_against_the_baseline() -> None:
    assert parse_tolerance("not lower").describe(80) == "at least 80"
    assert parse_tolerance("no new").describe(2) == "at most 2"
    assert parse_tolerance("+5%").describe(600) == "at most 630"
    assert parse_tolerance("-0.02").describe(0.9) == "at least 0.88"
    assert parse_tolerance("±5%").describe(600) == "between 570 and 630"
    assert parse_tolerance("exact").describe(1.5) == "exactly 1.5"


@pytest.mark.parametrize("text", ["lower", "5%", "+5 %%", "+five%", "", "at most 5%"])
def test_an_unreadable_rule_is_a_config_error_listing_the_forms(text: str) -> None:
    with pytest.raises(ConfigError, match=r"cannot read tolerance .*write 'not lower'"):
        parse_tolerance(text)


def test_an_experiment_with_a_bad_rule_fails_naming_the_metric() -> None:
    with pytest.raises(ConfigError) as info:
        Experiment.from_dict({"sessions": ["gen-005k-s1"], "models": ["extractive"],
                              "regress": {"retained_tokens": "a bit"}}, source="spec.toml")
    assert str(info.value).startswith("spec.toml: regress: retained_tokens: cannot read "
                                      "tolerance 'a bit'")


def test_the_regress_table_round_trips_through_the_spec_file() -> None:
    experiment = Experiment.from_dict({"sessions": ["gen-005k-s1"], "models": ["extractive"],
                                       "regress": {"failures": "no new",
                                                   "retained_tokens": "+5%"}})
    assert '[regress]\nfailures = "no new"\nretained_tokens = "+5%"\n' in experiment.to_toml()
    import tomllib

    again = Experiment.from_dict(tomllib.loads(experiment.to_toml()))
    assert again.regress == {"failures": "no new", "retained_tokens": "+5%"}
