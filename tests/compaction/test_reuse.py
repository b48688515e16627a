"""Work done once: a prompt rendered once per distinct input, a reply parsed once per text,
and its summary rendered once per template and parameters."""

from __future__ import annotations

import asyncio

import pytest

from workbench._memo import run_memo
from workbench.compaction import _reuse
from workbench.compaction._format import transcript_lines
from workbench.compaction._reuse import parsed_reply, remembered_prompt, render_prompt
from workbench.compaction._stand_in import render_standing_in
from workbench.compaction._summarize import (
    apply_structured_summary,
    remembered_structured_summary,
    summarize,
)
from workbench.compaction._templates import Templates, render, render_async
from workbench.errors import TemplateError
from workbench.messages import Message
from workbench.testing import ScriptedModel
from workbench.tokens import PromptText

REPLY = '```json\n{"user_intent": ["ship the parser"], "current_work": "tests"}\n```'
SOURCE = "History ({{ tone }}):\n{{ messages }}"


@pytest.fixture(autouse=True)
def _fresh_memos() -> object:
    with run_memo() as fresh:  # each test is a run of its own: nothing remembered before
        yield fresh


def _counting_render(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    async def counted(source: str, context: dict, name: str = "<template>",
                      limits: object = None) -> str:
        seen.append(name)
        return await render_async(source, context, name, limits)  # type: ignore[arg-type]

    async def counted_standing_in(source: str, context: dict, name: str, limits: object,
                                  variable: str, value: str) -> str:
        seen.append(name)
        return await render_standing_in(source, context, name, limits,  # type: ignore[arg-type]
                                        variable, value)

    monkeypatch.setattr(_reuse, "render_async", counted)
    monkeypatch.setattr(_reuse, "render_standing_in", counted_standing_in)
    return seen


def _prompt(source: str, context: dict, messages: list[Message], name: str = "t") -> str:
    lines = transcript_lines(messages)
    return asyncio.run(render_prompt(source, context, name, messages, lines, "goose"))


def test_a_prompt_renders_once_for_variants_that_differ_only_in_what_it_does_not_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    renders = _counting_render(monkeypatch)
    messages = [Message.user("fix the parser"), Message.assistant("on it")]

    def variant(**params: object) -> Templates:
        return Templates(SOURCE, "{{ user_intent | length }} of {{ limit }}", name="v",
                         params=dict(params))

    async def run(templates: Templates) -> str:
        summary = await summarize(ScriptedModel([REPLY]), None, templates, messages)
        return summary.message.concat_text()

    # `limit` is read by the summary template only: one compaction render for both
    assert asyncio.run(run(variant(tone="terse", limit=3))) == "1 of 3"
    assert asyncio.run(run(variant(tone="terse", limit=7))) == "1 of 7"
    prompts = [n for n in renders if n.endswith("/compaction.md")]
    assert prompts == ["v/compaction.md"]
    # `tone` is read by the compaction prompt: a new render
    asyncio.run(run(variant(tone="chatty", limit=3)))
    prompts = [n for n in renders if n.endswith("/compaction.md")]
    assert prompts == ["v/compaction.md", "v/compaction.md"]


def test_a_remembered_prompt_is_the_text_render_gives() -> None:
    messages = [Message.user("hi")]
    lines = transcript_lines(messages)
    context = {"tone": "terse", "unread": [1, 2]}
    assert remembered_prompt(SOURCE, context, lines) is None  # never rendered: nothing known
    text = _prompt(SOURCE, context, messages)
    assert text == render(SOURCE, {**context, "messages": "[user]: hi"}) == \
        "History (terse):\n[user]: hi"
    assert remembered_prompt(SOURCE, {**context, "unread": "other"}, lines) == text
    assert remembered_prompt(SOURCE, context, transcript_lines([Message.user("bye")])) is None
    assert remembered_prompt(SOURCE, context, list(lines)) == text  # the same line objects


def test_a_prompt_knows_its_parts_when_its_transcript_is_whole_in_it() -> None:
    messages = [Message.user("hi"), Message.assistant("there"), Message.user("bye")]
    prompt = _prompt(SOURCE, {"tone": "t"}, messages)
    assert isinstance(prompt, PromptText)
    assert prompt.head == "History (t):\n" and prompt.tail == ""
    assert prompt.lines == tuple(transcript_lines(messages))
    assert prompt.head + "\n".join(prompt.lines) + prompt.tail == str(prompt)
    # a template that changes the transcript gives a plain text (it is counted whole)
    shouted = _prompt("{{ messages | upper }}", {}, messages)
    assert type(shouted) is str and shouted == "[USER]: HI\n[ASSISTANT]: THERE\n[USER]: BYE"


def test_a_failing_render_is_never_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    renders = _counting_render(monkeypatch)
    broken = "{{ messages }}{{ 1 // zero }}"
    messages = [Message.user("m")]
    for _ in range(2):
        with pytest.raises(TemplateError):
            _prompt(broken, {"zero": 0}, messages, "broken")
    assert renders == ["broken", "broken"]
    assert remembered_prompt(broken, {"zero": 0}, transcript_lines(messages)) is None


def test_the_render_limits_are_part_of_what_a_render_depends_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [Message.user("m")]
    _prompt(SOURCE, {"tone": "t"}, messages)
    monkeypatch.setenv("WORKBENCH_RENDER_TIME_LIMIT", "7")
    assert remembered_prompt(SOURCE, {"tone": "t"}, transcript_lines(messages)) is None


def test_a_reply_is_parsed_once_per_text() -> None:
    first = parsed_reply(REPLY)
    assert first.reason == "ok" and first.summary.user_intent == ["ship the parser"]
    assert parsed_reply(REPLY) is first
    assert parsed_reply(REPLY + " ").summary is not first.summary
    assert parsed_reply("no json here").reason == "no_candidate"


SUMMARY = "Intent: {{ user_intent | join(', ') }}{% if tone %} ({{ tone }}){% endif %}"


def test_a_remembered_summary_rewrites_the_reply_as_the_parse_and_render_do() -> None:
    fresh, known = Message.assistant(REPLY), Message.assistant(REPLY)
    assert remembered_structured_summary(known, SUMMARY, {"tone": "dry"}) is None  # work to do
    assert known.concat_text() == REPLY  # left as it was
    assert apply_structured_summary(fresh, SUMMARY, {"tone": "dry"}) == "structured"
    assert fresh.concat_text() == "Intent: ship the parser (dry)"
    assert remembered_structured_summary(known, SUMMARY, {"tone": "dry"}) == "structured"
    assert known.content == fresh.content
    # another parameter value, template or reply text is a render of its own
    for template, params, text in ((SUMMARY, {"tone": "warm"}, REPLY), (SUMMARY, None, REPLY),
                                   (None, {"tone": "dry"}, REPLY),
                                   (SUMMARY, {"tone": "dry"}, REPLY + " ")):
        assert remembered_structured_summary(Message.assistant(text), template, params) is None


def test_a_remembered_parse_failure_keeps_the_raw_reply_without_a_render() -> None:
    raw = Message.assistant("no json here")
    assert remembered_structured_summary(raw, SUMMARY) is None
    assert apply_structured_summary(Message.assistant("no json here"), SUMMARY) == "no_candidate"
    assert remembered_structured_summary(raw, SUMMARY) == "no_candidate"
    assert raw.concat_text() == "no json here"


def test_a_failing_summary_render_is_never_remembered() -> None:
    broken = "{{ user_intent | no_such_filter }}"
    reply = Message.assistant(REPLY)
    assert apply_structured_summary(reply, broken) == "render_error"
    assert reply.concat_text() == REPLY
    assert remembered_structured_summary(Message.assistant(REPLY), broken) is None


def test_an_empty_remembered_summary_still_keeps_the_raw_reply(
        caplog: pytest.LogCaptureFixture) -> None:
    empty = "{% if false %}x{% endif %}"
    assert apply_structured_summary(Message.assistant(REPLY), empty) == "render_empty"
    caplog.clear()
    reply = Message.assistant(REPLY)
    assert remembered_structured_summary(reply, empty) == "render_empty"
    assert reply.concat_text() == REPLY
    assert "rendered empty" in caplog.text  # warned each time, as the render does
