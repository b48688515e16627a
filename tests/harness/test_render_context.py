"""Parameters as render variables: every shipped point renders byte for byte as its baked
export does, and all points of a variant share one compiled template per source."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from workbench.compaction import FileActivity, StructuredSummary, Templates, render
from workbench.compaction._format import format_transcript
from workbench.harness.experiment._params import point_label
from workbench.harness.experiment._variants import load_variant, read_variant_params
from workbench.messages import Message

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"
SHIPPED = sorted(p.name for p in PROMPTS.iterdir()
                 if "[params." in ((p / "variant.toml").read_text()
                                   if (p / "variant.toml").is_file() else ""))

CONVERSATION = [
    Message.user("Fix the failing test in src/app.py; keep negative numbers working"),
    Message.assistant("Looking.").with_tool_request("t1", "shell", {"command": "cat src/app.py"}),
    Message.user().with_tool_response("t1", "def add(a, b):\n    return a - b\n"),
    Message.assistant("Found it: the sign is wrong. Fixed and the tests pass."),
]
SUMMARY = StructuredSummary(
    user_intent=[f"goal {i}" for i in range(12)],
    technical_concepts=["pytest", "integer signs"],
    files=[FileActivity("src/app.py", "edited", "def add(a, b):\n    return a + b"),
           FileActivity("tests/test_app.py", "read", "")],
    errors_and_fixes=["AssertionError in test_add: fixed the sign"],
    problem_solving=[f"step {i}" for i in range(14)],
    user_messages=["Fix the failing test", "keep negative numbers working"],
    pending_tasks=["add a docstring"],
    current_work="tests pass",
    next_step="write the docstring")


def _points(folder: Path) -> list[dict]:
    declared = read_variant_params(folder)
    names = list(declared)
    return [dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(declared[n].domain for n in names))]


def test_the_shipped_parametrised_variants_are_found() -> None:
    assert SHIPPED == ["lean-facts", "top3-intent"]


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_point_renders_as_its_baked_export(name: str) -> None:
    folder = PROMPTS / name
    points = _points(folder)
    assert len(points) > 1, f"{name} declares no parameters with more than one value"
    variant = load_variant(name)
    style = variant.options.get("transcript_style", "goose")
    transcript = format_transcript(CONVERSATION, style)
    baked_renders: dict[tuple[str, str], str] = {}

    def baked_render(kind: str, source: str) -> str:  # one compile per distinct baked text
        key = (kind, source)
        if key not in baked_renders:
            baked_renders[key] = (render(source, {"messages": transcript}) if kind == "prompt"
                                  else SUMMARY.render(source))
        return baked_renders[key]

    for values in points:
        label = point_label(name, values, variant.declared)
        templates = load_variant(label).templates
        baked = templates.baked()
        assert baked.params == {}
        assert render(templates.compaction, {"messages": transcript, **templates.params}) == \
            baked_render("prompt", baked.compaction), label
        assert SUMMARY.render(templates.summary, params=templates.params) == \
            baked_render("summary", baked.summary), label
    # the points really differ: more than one distinct render of each parametrised template
    assert len({v for (k, _), v in baked_renders.items() if k == "summary"}) > 1


def test_all_points_of_a_variant_share_one_compiled_template_per_source() -> None:
    # Compiled templates are kept by source (tests/compaction/test_templates.py): points whose
    # sources are the variant's own, parameters aside, share its compiled templates.
    first = load_variant("lean-facts").templates
    outputs, sources = set(), set()
    for limit in (0, 1, 2, 3, 5, 10):
        templates = load_variant(f"lean-facts{{intent_limit={limit},list_cap=3}}").templates
        render(templates.compaction, {"messages": "M", **templates.params})
        outputs.add(SUMMARY.render(templates.summary, params=templates.params))
        sources.add((templates.compaction, templates.summary))

    assert sources == {(first.compaction, first.summary)}
    assert len(outputs) == 6


def test_a_parameter_wins_over_a_summary_field_of_the_same_name_as_its_set_line_does() -> None:
    source = "{{ limit }}|{{ user_intent|length }}"
    summary = StructuredSummary(user_intent=["a"], extra={"limit": "from the model"})
    templates = Templates("{{ messages }}", source, "t", params={"limit": 2})

    assert summary.render(templates.summary, params=templates.params) == \
        summary.render(templates.baked().summary) == "2|1"


def test_baking_is_done_once_per_templates_and_hashes_what_renders() -> None:
    templates = Templates("{{ messages }}{{ cap }}", "{{ other }}", "t", params={"cap": 3})

    assert templates.baked() is templates.baked()
    assert templates.baked().compaction == "{% set cap = 3 %}\n{{ messages }}{{ cap }}"
    assert templates.baked().summary == "{{ other }}"
    assert templates.content_hash() == Templates(templates.baked().compaction,
                                                 "{{ other }}").content_hash()
    assert templates.content_hash() != Templates("{{ messages }}{{ cap }}",
                                                 "{{ other }}").content_hash()
