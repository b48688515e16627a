"""Parametrised variants: domains, points and labels, baking, the [tune] grid, the store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from workbench.compaction import render
from workbench.errors import ConfigError
from workbench.harness import Experiment
from workbench.harness.experiment._cells import template_names
from workbench.harness.experiment._params import (
    bake,
    expand_points,
    parse_label,
    parse_params,
    point_label,
)
from workbench.harness.experiment._variants import load_variant

PARAMS = parse_params({
    "limit": {"default": 3, "min": 1, "max": 4},
    "show": {"default": True},
    "style": {"default": "lean", "values": ["lean", "full text"]},
    "order": {"default": ["a", "b"], "values": [["a", "b"], ["b", "a"]]},
}, "variant.toml")


def test_domains_come_from_ranges_values_and_booleans() -> None:
    assert [(p.name, p.default, p.domain) for p in PARAMS.values()] == [
        ("limit", 3, (1, 2, 3, 4)), ("show", True, (False, True)),
        ("style", "lean", ("lean", "full text")), ("order", ["a", "b"], (["a", "b"], ["b", "a"]))]


def test_a_label_lists_only_non_default_values_and_parses_back() -> None:
    values = {"limit": 2, "show": False, "style": "full text", "order": ["b", "a"]}

    label = point_label("v", values, PARAMS)

    assert label == 'v{limit=2,show=false,style="full text",order=[b,a]}'
    assert parse_label(label) == ("v", values)
    assert point_label("v", {"limit": 3, "show": True, "style": "lean", "order": ["a", "b"]},
                       PARAMS) == "v"


def test_the_grid_puts_the_defaults_first_and_a_sample_is_seeded() -> None:
    grid = expand_points(PARAMS, {"limit": "all", "show": "all"})
    sample = expand_points(PARAMS, {}, sample=5, seed=7)

    assert len(grid) == 8 and grid[0] == {"limit": 3, "show": True, "style": "lean",
                                          "order": ["a", "b"]}
    assert len({json.dumps(p, sort_keys=True) for p in grid}) == 8
    assert sample == expand_points(PARAMS, {}, sample=5, seed=7) and len(sample) == 5
    assert sample != expand_points(PARAMS, {}, sample=5, seed=8)


@pytest.mark.parametrize(("search", "message"), [
    ({"nope": [1]}, "tune: unknown parameter 'nope' (declared: limit, show, style, order)"),
    ({"limit": [9]}, "tune: limit = 9 is not allowed (domain: 1, 2, 3, 4)"),
    ({"limit": []}, 'tune: limit: give a non-empty list of values or "all"'),
])
def test_bad_searches_are_clear_errors(search: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        expand_points(PARAMS, search)
    assert str(err.value) == message


def test_a_bad_declaration_names_the_file_and_parameter() -> None:
    with pytest.raises(ConfigError, match=r"^v.toml: params.n \(default\): n = 9 is not allowed"):
        parse_params({"n": {"default": 9, "values": [1, 2]}}, "v.toml")
    with pytest.raises(ConfigError, match="v.toml: params.messages: not a usable parameter name"):
        parse_params({"messages": 1}, "v.toml")


def test_baking_sets_only_the_variables_a_template_reads() -> None:
    source = "{% for x in items[:limit] %}{{ x }}{% endfor %}"

    baked = bake(source, {"limit": 2, "show": False})

    assert baked == "{% set limit = 2 %}\n" + source
    assert render(baked, {"items": [1, 2, 3]}) == "12"
    assert bake("no variables", {"limit": 2}) == "no variables"


def test_a_summary_only_point_leaves_the_prompt_byte_identical() -> None:
    base = load_variant("lean-facts")
    point = load_variant("lean-facts{intent_limit=2,key_code=false}")
    prompt_point = load_variant("lean-facts{list_cap=3}")

    assert point.name == "lean-facts{intent_limit=2,key_code=false}"
    assert point.templates.baked().compaction == base.templates.baked().compaction
    assert point.templates.baked().summary != base.templates.baked().summary
    assert prompt_point.templates.baked().compaction != base.templates.baked().compaction
    # unbaked, every point shares the folder's sources (one compiled template per source)
    assert (point.templates.compaction, point.templates.summary) == \
        (base.templates.compaction, base.templates.summary)
    assert point.templates.params["intent_limit"] == 2 and base.templates.params["intent_limit"] == 0
    assert point.params["intent_limit"] == 2 and point.params["problem_limit"] == 5


def test_a_point_naming_an_undeclared_parameter_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"templates: 'top3-intent\{foo=1\}': unknown parameter "
                                          r"'foo' \(declared: intent_limit, show_concepts\)"):
        load_variant("top3-intent{foo=1}")


def test_the_tune_table_adds_its_points_to_the_templates() -> None:
    exp = Experiment.from_dict({
        "sessions": ["dataset:all"], "models": ["extractive"],
        "templates": ["default", "top3-intent{intent_limit=3}", "lean-facts{intent_limit=1}"],
        "tune": {"variant": "top3-intent", "params": {"intent_limit": [1, 3, 5]}}})

    assert template_names(exp) == ["default", "top3-intent", "lean-facts{intent_limit=1}",
                                   "top3-intent{intent_limit=1}", "top3-intent{intent_limit=5}"]


def test_the_store_keeps_the_short_label_and_the_full_parameters(tmp_path: Path) -> None:
    from workbench.harness import run_experiment

    exp = Experiment.from_dict({"name": "p", "sessions": ["gen-005k-s1"], "models": ["extractive"],
                                "templates": ["top3-intent{intent_limit=1}"]})
    run_experiment(exp, tmp_path / "run", progress=False)

    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    template, params = db.execute("SELECT template, template_params FROM cells").fetchone()
    assert template == "top3-intent{intent_limit=1}"
    assert json.loads(params) == {"intent_limit": 1, "show_concepts": True}


@pytest.mark.parametrize("name", ["top3-intent", "lean-facts"])
def test_a_shipped_parametrised_folder_used_as_is_renders_like_its_defaults(name: str) -> None:
    from workbench.compaction import FileActivity, StructuredSummary

    folder = Path(__file__).resolve().parents[2] / "prompts" / name
    baked = load_variant(name).templates.baked()
    summary = StructuredSummary(user_intent=list("abcd"), technical_concepts=["t"],
                                problem_solving=list("abcdefg"),
                                files=[FileActivity("p.py", "read", "x = 1")])
    raw_prompt = (folder / "compaction.md")
    if raw_prompt.is_file():
        assert render(raw_prompt.read_text(), {"messages": "M"}) == \
            render(baked.compaction, {"messages": "M"})
    assert summary.render((folder / "compaction_summary.md").read_text()) == \
        summary.render(baked.summary)
