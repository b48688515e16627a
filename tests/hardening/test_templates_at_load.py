"""Templates are bounded wherever they are touched: loading a variant, finding its variables,
compiling it (constant folding included) and rendering it; a hostile one is a `TemplateError`
naming the template and the limit, never a hang, a memory blow-up or a `RecursionError`."""

from __future__ import annotations

import ast
import time
import tracemalloc
from pathlib import Path

import pytest

from tests.conftest import ROOT
from workbench.compaction import RenderLimits, render
from workbench.compaction._templates import check_template, template_variables
from workbench.errors import TemplateError
from workbench.harness import Experiment
from workbench.harness.experiment._params import bake
from workbench.harness.experiment._variants import load_variant

FOLDING_BOMBS = {
    "{{ 'x'|center(10**9) }}": "a filter width or count of 1,000,000,000 characters",
    "{{ 'x'|center(1000000000) }}": "a filter width or count of 1,000,000,000 characters",
    "{{ 'ab'|replace('', 'y'|center(4000000)) }}": "the result of the replace filter of",
    "{{ 9 ** (9 ** 9) }}": "'**' would build an integer of about 1,228,093,894 bits",
    "{{ 'x'.center(1000000000) }}": "a width or count passed to center of 1,000,000,000",
    "{{ '%.900000000f' % 1 }}": "a %-formatted string of 900,000,0",
}
TOO_DEEP = {
    "ifs": "{% if x %}" * 3000 + "y" + "{% endif %}" * 3000,
    "fors": "{% for a in x %}" * 3000 + "y" + "{% endfor %}" * 3000,
    "parens": "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}",
    "lists": "{{ " + "[" * 3000 + "]" * 3000 + " }}",
    "filters": "{{ x" + "|upper" * 3000 + " }}",
    "sums": "{{ x" + " + 1" * 3000 + " }}",
    "set blocks": "{% set a %}" * 3000 + "y" + "{% endset %}" * 3000,
    "conditions": "{{ " + "1 if x else " * 3000 + "2 }}",
    "negations": "{{ " + "not " * 3000 + "x }}",
}


def _bounded(fn: object, *args: object) -> tuple[float, int]:
    """Seconds and peak traced bytes of ``fn(*args)`` (which must raise TemplateError)."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(TemplateError):
            fn(*args)  # type: ignore[operator]
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return time.monotonic() - started, peak


@pytest.mark.parametrize("source", sorted(FOLDING_BOMBS))
def test_finding_variables_and_compiling_never_build_a_folded_constant(source: str) -> None:
    # Variable discovery used a plain Jinja environment, which folds constants while it
    # parses: {{ 'x'|center(10**9) }} took 84 s and died of MemoryError under 3 GiB.
    started = time.monotonic()
    assert template_variables(source, "bomb.md") == set()
    check_template(source, "bomb.md")
    assert time.monotonic() - started < 2.0
    tracemalloc.start()
    try:
        template_variables(source + " ", "bomb.md")
        check_template(source + "  ", "bomb.md")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000, peak
    # The render is where the value would be built, and is refused before it is.
    seconds, peak = _bounded(render, source, {}, "bomb.md")
    assert seconds < 2.0 and peak < 20_000_000
    with pytest.raises(TemplateError) as info:
        render(source, {}, "bomb.md")
    assert FOLDING_BOMBS[source] in str(info.value), str(info.value)


def test_a_power_tower_without_brackets_is_small_and_renders() -> None:
    # Jinja's ** is left-associative: (9 ** 9) ** 9 has 78 digits, nothing to refuse.
    assert render("{{ 9**9**9 }}", {}) == str((9**9) ** 9)


@pytest.mark.parametrize("name", sorted(TOO_DEEP))
def test_nesting_past_the_depth_limit_is_a_template_error_at_load_and_in_render(
        name: str) -> None:
    source = TOO_DEEP[name]
    for touch in (check_template, template_variables, lambda s, n: render(s, {"x": "a"}, n)):
        with pytest.raises(TemplateError) as info:
            touch(source, "deep.md")
        message = str(info.value)
        assert message.startswith("template 'deep.md': stopped: nested "), message
        assert "the limit is 32 levels; simplify the template" in message, message


def test_nesting_within_the_limit_compiles_and_renders() -> None:
    source = "{% if x %}" * 12 + "{{ (((x|upper)|lower)|title) }}" + "{% endif %}" * 12
    check_template(source, "ok.md")
    assert render(source, {"x": "ab"}) == "Ab"
    with pytest.raises(TemplateError, match="nested 9 levels deep at line 1; the limit is 8"):
        check_template(source, "ok.md", RenderLimits(max_depth=8))


def test_compiling_runs_under_the_render_time_limit_and_the_source_under_a_length_limit() -> None:
    source = "{{ messages }} {% if x %}y{% endif %}\n" * 20_000
    started = time.monotonic()
    with pytest.raises(TemplateError) as info:
        check_template(source, "slow.md", RenderLimits(time_limit=0.5))
    assert time.monotonic() - started < 5.0
    assert str(info.value) == (
        "template 'slow.md': stopped: render time limit of 0.5 s exceeded while compiling (set "
        "WORKBENCH_RENDER_TIME_LIMIT to change it); simplify the template")
    with pytest.raises(TemplateError) as info:
        check_template("x" * 2_000_000, "long.md")
    assert str(info.value) == ("template 'long.md': stopped: the template is 2,000,000 "
                               "characters long; the limit is 1,048,576; simplify the template")


def test_growth_filters_and_methods_are_sized_before_they_run() -> None:
    context = {"s": "ab" * 5000, "items": ["x"] * 5000, "lines": "a\n" * 5000}
    for source, what in {
            "{{ s|replace('', s) }}": "the result of the replace filter of 100,020,000",
            "{{ items|join(s) }}": "the result of the join filter of 49,995,000",
            "{{ lines|indent(5000) }}": "the result of the indent filter of 25,015,000",
            "{{ s|wordwrap(1, wrapstring=s) }}": "the result of the wordwrap filter of",
            "{{ s.replace('a', s) }}": "the result of .replace() of 50,005,000",
            "{{ s.join(items) }}": "the result of .join() of 49,995,000",
            "{{ ('\t' * 5000).expandtabs(5000) }}": "the result of .expandtabs() of 25,005,000",
            "{{ '{:>50000000}'.format(s) }}": "the result of .format() of 50,0",
            "{{ items|tojson(indent=9000) }}": "the result of the tojson filter of",
            "{{ items|slice(100000)|list }}": "a count of 100,000 exceeds the limit of 10,000",
    }.items():
        started = time.monotonic()
        with pytest.raises(TemplateError) as info:
            render(source, context, "grow.md")
        assert what in str(info.value), (source, str(info.value))
        assert time.monotonic() - started < 2.0, source
    assert render("{{ s|replace('a', 'b')|length }} {{ items|join(',')|length }}", context) == \
        "10000 9999"


def test_a_bad_variant_fails_once_at_load_naming_the_folder_and_file(tmp_path: Path) -> None:
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "compaction_summary.md").write_text(TOO_DEEP["ifs"], encoding="utf-8")
    experiment = Experiment.from_dict({"sessions": ["x.json"], "models": ["extractive"],
                                       "base_dir": str(tmp_path)})
    with pytest.raises(TemplateError) as info:
        load_variant("deep", experiment)
    assert str(info.value).startswith(
        "template 'deep/compaction_summary.md': stopped: nested 33 levels deep at line 1")
    with pytest.raises(TemplateError):  # baking parameters reads the template in the sandbox
        bake(TOO_DEEP["parens"], {"k": 1}, "p.md")
    assert bake("{{ k }}", {"k": 1}) == "{% set k = 1 %}\n{{ k }}"


def test_no_module_builds_a_jinja_environment_besides_the_sandbox() -> None:
    found = []
    for path in (ROOT / "workbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                    node.func, "id", "")) in ("Environment", "SandboxedEnvironment"):
                found.append(str(path.relative_to(ROOT)))
    assert found == []
