"""Template renders are bounded: time, output size, range and number sizes, off the event loop."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from jinja2.sandbox import ImmutableSandboxedEnvironment

from workbench.cli import cli
from workbench.compaction import RenderLimits, Templates, render, summarize
from workbench.errors import ConfigError, TemplateError
from workbench.export import export_template
from workbench.harness import Experiment, run_experiment
from workbench.messages import Message
from workbench.sessions import Session
from workbench.testing import ScriptedModel

NESTED_LOOPS = ("{% for a in range(9999) %}{% for b in range(9999) %}{% for c in range(9999) %}"
                "{% endfor %}{% endfor %}{% endfor %}{{ messages }}")
TIME_LIMIT = 0.5
# Generous: the limit is 0.5 s; anything under this shows the render was cut short, not finished.
WITHIN = 10.0
FAST = RenderLimits(time_limit=TIME_LIMIT)
TIME_MESSAGE = (f"stopped: render time limit of {TIME_LIMIT:g} s exceeded "
                "(set WORKBENCH_RENDER_TIME_LIMIT to change it); simplify the template")


def _render_error(source: str, limits: RenderLimits = FAST, **context: object) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        render(source, dict(context), name="bad.md", limits=limits)
    return info.value


def test_a_nested_loop_template_stops_at_the_time_limit_naming_template_and_limit() -> None:
    started = time.monotonic()
    err = _render_error(NESTED_LOOPS, messages="hello")
    elapsed = time.monotonic() - started
    assert TIME_LIMIT <= elapsed < WITHIN
    assert err.template == "bad.md"
    assert str(err) == f"template 'bad.md': {TIME_MESSAGE}"


def test_a_loop_over_a_long_variable_that_prints_nothing_still_hits_the_time_limit() -> None:
    source = "{% for a in messages %}{% for b in messages %}{% endfor %}{% endfor %}done"
    started = time.monotonic()
    err = _render_error(source, messages="m" * 100_000)
    assert time.monotonic() - started < WITHIN
    assert "render time limit of 0.5 s exceeded" in str(err)


def test_a_huge_power_fails_at_once() -> None:
    render("{{ 1 }}", {})  # the render process is started (once per process)
    started = time.monotonic()
    err = _render_error("{{ 7 ** 10000000000 }}")
    assert time.monotonic() - started < 1.0
    assert str(err) == ("template 'bad.md': stopped: '**' would build an integer of about "
                        "28,073,549,220 bits; the limit is 16,384 bits; simplify the template")


def test_huge_repetition_concatenation_and_padding_fail_before_allocating() -> None:
    limit = FAST.max_output_chars
    cases = {
        "{{ 'x' * 10000000000 }}": "a repeated string or list of 10,000,000,000 characters",
        "{{ [1, 2] * 99999999999 }}": "a repeated string or list of 199,999,999,998 characters",
        "{{ 'x'|center(3000000000) }}": "a filter width or count of 3,000,000,000 characters",
        "{{ '%0999999999d' % 1 }}": "a %-formatted string of 1,000,000,012 characters",
        ("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
         "{% endfor %}{{ ns.s }}"): "a '~' concatenation of 16,777,216 characters",
        ("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
         "{% endfor %}{{ ns.s }}"): "a concatenation of 16,777,216 characters",
    }
    for source, what in cases.items():
        err = _render_error(source)
        assert str(err) == (f"template 'bad.md': stopped: {what} exceeds the render output limit "
                            f"of {limit:,} characters (set WORKBENCH_RENDER_MAX_CHARS to change "
                            "it); simplify the template"), source


def test_output_is_capped_but_a_long_transcript_gets_room_for_itself() -> None:
    limits = RenderLimits(max_output_chars=1000)
    transcript = "t" * 50_000
    assert render("{{ messages }}", {"messages": transcript}, limits=limits) == transcript
    err = _render_error("{% for i in range(5000) %}{{ 'abcdefghij' }}{% endfor %}", limits)
    assert "exceeds the render output limit of 1,000 characters" in str(err)


def test_range_is_capped() -> None:
    assert render("{{ range(10000)|length }}", {}, limits=FAST) == "10000"
    err = _render_error("{{ range(10001)|length }}")
    assert str(err) == ("template 'bad.md': stopped: range of 10,001 items exceeds the limit of "
                        "10,000; simplify the template")


def test_normal_arithmetic_and_filters_are_unchanged() -> None:
    source = ("{{ 2 ** 10 }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ '%05d' % 42 }} {{ 'x' ~ 1 }} "
              "{{ 'hi'|center(6) }}|{{ range(3)|list }} {{ messages|truncate(9) }}")
    context = {"messages": "a long line of text"}
    plain = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    assert plain.from_string(source).render(context) == \
        "1024 ababab [1, 2] 00042 x1   hi  |[0, 1, 2] a..."
    assert render(source, context, limits=FAST) == plain.from_string(source).render(context)


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_RENDER_TIME_LIMIT", "0.25")
    monkeypatch.setenv("WORKBENCH_RENDER_MAX_CHARS", "77")
    assert RenderLimits.from_env() == RenderLimits(time_limit=0.25, max_output_chars=77)
    monkeypatch.setenv("WORKBENCH_RENDER_TIME_LIMIT", "soon")
    with pytest.raises(ConfigError, match=r"WORKBENCH_RENDER_TIME_LIMIT='soon': expected a "
                                          r"positive number"):
        RenderLimits.from_env()


def test_rendering_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_RENDER_TIME_LIMIT", "1")
    templates = Templates(NESTED_LOOPS, Templates.default().summary, name="slow")
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    async def main() -> TemplateError:
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        try:
            await summarize(ScriptedModel(["unused"]), None, templates, [Message.user("hi")])
        except TemplateError as exc:
            return exc
        finally:
            stop.set()
            await task
        raise AssertionError("the slow template rendered")

    err = asyncio.run(main())
    assert err.template == "slow/compaction.md"
    # While the render burned its second, the loop kept ticking (a blocked loop gives ~1 tick).
    assert ticks >= 20


def _slow_variant(tmp_path: Path) -> Path:
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "compaction.md").write_text(NESTED_LOOPS, encoding="utf-8")
    return folder


def test_a_slow_template_becomes_an_error_cell_and_the_run_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_RENDER_TIME_LIMIT", str(TIME_LIMIT))
    path = tmp_path / "s1.json"
    Session("s1", "goose-json", str(path),
            [Message.user("fix app.py"), Message.assistant("done")]).write_goose_json(path)
    _slow_variant(tmp_path)
    exp = Experiment.from_dict({"name": "t", "sessions": ["s1.json"], "models": ["extractive"],
                                "templates": ["slow", "default"], "base_dir": str(tmp_path)})
    started = time.monotonic()
    results = run_experiment(exp, tmp_path / "run", progress=False)
    assert time.monotonic() - started < WITHIN
    db = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    got = {t: (s, et, em) for t, s, et, em in db.execute(
        "SELECT template, status, error_type, error_message FROM cells")}
    assert got["default"][0] == "ok"
    assert got["slow"] == ("error", "TemplateError",
                           f"template 'slow/compaction.md': {TIME_MESSAGE}")
    assert len(results.cells) == 2


def test_export_refuses_a_slow_template_within_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_RENDER_TIME_LIMIT", str(TIME_LIMIT))
    folder = _slow_variant(tmp_path)
    dest = tmp_path / "goose-prompts"
    started = time.monotonic()
    with pytest.raises(TemplateError) as info:
        export_template(folder, dest=dest)
    assert time.monotonic() - started < WITHIN
    assert str(info.value) == f"template '{folder / 'compaction.md'}': {TIME_MESSAGE}"
    assert not dest.exists()

    result = CliRunner().invoke(cli, ["export", str(folder), "--dest", str(dest)])
    assert result.exit_code == 1
    assert TIME_MESSAGE in result.output
    assert not dest.exists()


def test_export_refuses_a_summary_template_that_needs_gigabytes(tmp_path: Path) -> None:
    folder = tmp_path / "huge"
    folder.mkdir()
    (folder / "compaction_summary.md").write_text(
        "{% for f in files %}{{ f.path * 5000000000 }}{% endfor %}", encoding="utf-8")
    with pytest.raises(TemplateError, match="exceeds the render output limit"):
        export_template(folder, dest=tmp_path / "out")
    assert not (tmp_path / "out").exists()
