"""Work done once: a prompt rendered once per distinct input, a reply parsed once per text,
and its summary rendered once per template and parameters."""

from __future__ import annotations

import asyncio

import pytest

from workbench.compaction import _reuse
from workbench.compaction._reuse import parsed_reply, remembered_render, render_and_remember
from workbench.compaction._summarize import (
    apply_structured_summary,
    remembered_structured_summary,
    summarize,
)
from workbench.compaction._templates import Templates, render
from workbench.errors import TemplateError
from workbench.messages import Message
from workbench.testing import ScriptedModel

REPLY = '```json\n{"user_intent": ["ship the parser"], "current_work": "tests"}\n```'
SOURCE = "History ({{ tone }}):\n{{ messages }}"


@pytest.fixture(autouse=True)
def _fresh_memos() -> None:
    _reuse.PROMPTS.clear()
    _reuse.REPLIES.clear()
    _reuse.SUMMARIES.clear()


def _counting_render(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def counted(source: str, context: dict, name: str = "<template>", limits: object = None) -> str:
        seen.append(name)
        return render(source, context, name, limits)  # type: ignore[arg-type]

    monkeypatch.setattr(_reuse, "render", counted)
    return seen


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
    assert renders == ["v/compaction.md"]
    # `tone` is read by the compaction prompt: a new render
    asyncio.run(run(variant(tone="chatty", limit=3)))
    assert renders == ["v/compaction.md", "v/compaction.md"]


def test_a_remembered_render_is_the_text_render_gives() -> None:
    context = {"messages": "user: hi", "tone": "terse", "unread": [1, 2]}
    assert remembered_render(SOURCE, context) is None  # never rendered: the loop learns nothing
    text = render_and_remember(SOURCE, context, "t")
    assert text == render(SOURCE, context) == "History (terse):\nuser: hi"
    assert remembered_render(SOURCE, {**context, "unread": "other"}) == text
    assert remembered_render(SOURCE, {**context, "messages": "user: bye"}) is None


def test_a_failing_render_is_never_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    renders = _counting_render(monkeypatch)
    broken = "{{ messages }}{{ 1 // zero }}"
    for _ in range(2):
        with pytest.raises(TemplateError):
            render_and_remember(broken, {"messages": "m", "zero": 0}, "broken")
    assert renders == ["broken", "broken"]
    assert remembered_render(broken, {"messages": "m", "zero": 0}) is None


def test_the_render_limits_are_part_of_what_a_render_depends_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    context = {"messages": "m", "tone": "t"}
    render_and_remember(SOURCE, context)
    monkeypatch.setenv("WORKBENCH_RENDER_TIME_LIMIT", "7")
    assert remembered_render(SOURCE, context) is None


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
