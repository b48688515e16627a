"""A long variable the template only prints goes to the render process as a stand-in: the same
text, the same errors, and the value itself never crosses the pipe."""

from __future__ import annotations

import asyncio

import pytest

from workbench._memo import run_memo
from workbench.compaction import _sandbox
from workbench.compaction._limits import RenderLimits
from workbench.compaction._stand_in import (
    STAND_IN_MIN_CHARS,
    printed_whole,
    render_standing_in,
)
from workbench.compaction._templates import check_template, render_async, template_variables
from workbench.errors import TemplateError

LONG = "[user]: fix the parser\n" + "[tool]: x = 1\n" * 400
"""A transcript-like value past `STAND_IN_MIN_CHARS`."""


def _sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    requests: list[tuple[object, ...]] = []
    send = _sandbox._send

    def spy(worker: object, request: tuple[object, ...]) -> None:
        requests.append(request)
        send(worker, request)  # type: ignore[arg-type]

    monkeypatch.setattr(_sandbox, "_send", spy)
    return requests


def _both(source: str, value: str, limits: RenderLimits | None = None,
          **context: object) -> tuple[str, str]:
    limits = limits or RenderLimits()

    async def go() -> tuple[str, str]:
        with run_memo():
            standing = await render_standing_in(source, context, "t", limits, "messages", value)
        with run_memo():
            plain = await render_async(source, {**context, "messages": value}, "t", limits)
        return standing, plain

    return asyncio.run(go())


@pytest.mark.parametrize(("source", "names"), [
    ("head\n{{ messages }}\ntail", {"messages"}),
    ("{% if tone %}{{ tone }}{% endif %}{{ messages }}", {"messages"}),
    ("{% for i in range(2) %}{{ messages }}\n{% endfor %}", {"messages"}),
    ("{{ messages }}{{ messages | length }}", set()),
    ("{% if messages %}{{ messages }}{% endif %}", set()),
    ("{% filter upper %}{{ messages }}{% endfilter %}", set()),
    ("{% macro m() %}{{ messages }}{% endmacro %}{{ m() }}", set()),
    ("{% set x %}{{ messages }}{% endset %}{{ x }}", set()),
    ("{% set messages = 'short' %}{{ messages }}", set()),
    ("{% for messages in [1] %}{{ messages }}{% endfor %}", set()),
    ("{{ messages ~ '!' }}", set()),
])
def test_only_a_variable_printed_as_it_is_everywhere_can_stand_in(
        source: str, names: set[str]) -> None:
    with run_memo():
        found = asyncio.run(printed_whole(source, "t", RenderLimits()))
    assert found == frozenset(names)


@pytest.mark.parametrize(("source", "value"), [
    ("Summarize:\n\n{{ messages }}\n\nReply in JSON.", LONG),
    ("{{ messages }}", "  \n" + LONG + "\n\n  "),  # the value's own edges are stripped
    ("   {{ messages }}   ", " " * STAND_IN_MIN_CHARS + "x"),  # stripped into the value
    ("{{ messages }}", " \n" * STAND_IN_MIN_CHARS),  # a value of whitespace only: ""
    ("{% for i in range(3) %}<{{ i }}>{{ messages }}{% endfor %}", LONG),
    ("{% if tone %}{{ tone }}: {% endif %}{{ messages }}{% if not tone %}!{% endif %}", LONG),
    ("{{ messages | upper }}", LONG),  # read another way: the value itself is sent
])
def test_a_stand_in_renders_the_text_the_value_renders(source: str, value: str) -> None:
    standing, plain = _both(source, value, tone="terse")
    assert standing == plain


def test_the_value_never_crosses_the_pipe_when_it_stands_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _sent(monkeypatch)
    standing, plain = _both("head\n{{ messages }}\ntail", LONG)
    assert standing == plain == f"head\n{LONG}\ntail"
    ops = [request[0] for request in requests]
    assert ops == ["printed whole", "render with stand-ins", "render"]
    sent = repr(requests[1][2])
    assert LONG not in sent and "x = 1" not in sent
    assert f"{{{len(LONG)}}}" not in sent and f": {len(LONG)}}}" in sent  # its length goes


def test_a_short_value_or_one_read_another_way_is_sent_itself(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _sent(monkeypatch)
    _both("{{ messages }}", "[user]: hi")
    _both("{{ messages | upper }}", LONG)
    assert [r[0] for r in requests] == ["render", "render", "printed whole", "render", "render"]


def test_a_render_crosses_the_output_limit_at_the_same_place_with_the_same_message() -> None:
    limits = RenderLimits(max_output_chars=10, output_per_input_char=1)
    source = "{{ messages }}{% if tone %}{{ messages }}{% endif %}"

    async def go(standing: bool) -> str:
        with run_memo():
            try:
                if standing:
                    await render_standing_in(source, {"tone": "x"}, "t", limits, "messages", LONG)
                else:
                    await render_async(source, {"tone": "x", "messages": LONG}, "t", limits)
            except TemplateError as exc:
                return str(exc)
        raise AssertionError("the render did not cross its limit")

    message = asyncio.run(go(True))
    assert message == asyncio.run(go(False))
    chars, allowance = 2 * len(LONG), 10 + len(LONG) + 1
    assert f"output of {chars:,} characters exceeds the render output limit of " \
        f"{allowance:,} characters" in message
    # one copy is within the allowance of the value itself: no error, the same text
    standing, plain = _both("{{ messages }}", LONG, limits)
    assert standing == plain == LONG.strip()


def test_a_checked_template_is_rendered_in_one_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    # Loading a variant checks its templates; the prompt template's answer names what it
    # reads and prints whole, so the run's first render of it is one request.
    requests = _sent(monkeypatch)
    source, limits = "head\n{{ messages }}\n{{ tone }}", RenderLimits()

    async def go() -> tuple[str, frozenset[str], set[str]]:
        with run_memo():
            check_template(source, "t", limits, reads=True)
            text = await render_standing_in(source, {"tone": "terse"}, "t", limits, "messages",
                                            LONG)
            return text, await printed_whole(source, "t", limits), \
                template_variables(source, "t", limits)

    text, whole, names = asyncio.run(go())
    assert text == f"head\n{LONG}\nterse"
    assert whole == {"messages", "tone"} and names == {"messages", "tone"}
    assert [r[0] for r in requests] == ["check and read", "render with stand-ins"]
