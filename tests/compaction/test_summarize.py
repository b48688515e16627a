"""summarize(): the removal ladder, fail-fast, usage estimation and the structured rewrite."""

from __future__ import annotations

import pytest

from workbench.compaction._model import Usage
from workbench.compaction._summarize import (
    ELIDED_TOOL_RESPONSE_TEXT,
    EXHAUSTED_REMOVAL_ERROR,
    REMOVAL_PERCENTAGES,
    SUMMARY_REQUEST,
    CompactionCallFailed,
    CompactionContextExceeded,
    apply_structured_summary,
    elide_tool_responses,
    filter_tool_responses,
    removal_positions,
    summarize,
)
from workbench.compaction._templates import Templates
from workbench.compaction._usage_estimate import display_content
from workbench.errors import (
    CompactionError,
    ContextLengthExceeded,
    RateLimited,
    TemplateError,
)
from workbench.messages import Message, TextContent, ThinkingContent
from workbench.testing import ScriptedModel
from workbench.tokens import default_estimator

PLAIN = Templates(compaction="{{ messages }}", summary="# S\n{% for i in user_intent %}- {{ i }}\n{% endfor %}",
                  name="plain")
STRUCTURED_REPLY = (
    "<analysis>check {braces}</analysis>\n```json\n"
    '{"user_intent": ["Fix the parser bug"], "current_work": "editing parser.rs"}\n```'
)


def overflow() -> ContextLengthExceeded:
    return ContextLengthExceeded("prompt is too long", "scripted")


def tool_conversation(n: int) -> list[Message]:
    """[user, (assistant request, user response) * n]: responses at message indices 2, 4, ..."""
    messages = [Message.user("start")]
    for i in range(n):
        messages.append(Message.assistant().with_tool_request(f"call{i}", "shell", {"n": i}))
        messages.append(Message.user().with_tool_response(f"call{i}", f"out{i}"))
    return messages


def dropped_indices(messages: list[Message], pct: int, order: str = "goose") -> list[int]:
    kept = {id(m) for m in filter_tool_responses(messages, pct, order)}  # type: ignore[arg-type]
    return [i for i, m in enumerate(messages) if id(m) not in kept]


# ---- section 7 tests (summarize.rs, baseline) ------------------------------------------------


async def test_summarize_without_tool_responses_fails_fast() -> None:
    model = ScriptedModel(always_raise=overflow())
    with pytest.raises(CompactionContextExceeded) as info:
        await summarize(model, None, PLAIN, [Message.user("hello")])
    text = str(info.value)
    assert model.call_count == 1
    for fragment in ("there are no tool responses to remove", "larger usable context",
                     "disable some extensions", "start a new session"):
        assert fragment in text
    assert "even after removing all tool responses" not in text
    assert info.value.billed_usage == []
    assert [a.outcome for a in info.value.attempts] == ["context_length_exceeded"]


async def test_summarize_with_tool_responses_preserves_exhausted_removal_error() -> None:
    model = ScriptedModel(always_raise=overflow())
    messages = [Message.user("hello"), Message.user().with_tool_response("t1", "output")]
    with pytest.raises(CompactionContextExceeded) as info:
        await summarize(model, None, PLAIN, messages)
    assert model.call_count == len(REMOVAL_PERCENTAGES) == 5
    assert str(info.value) == (
        "Failed to compact: context limit exceeded even after removing all tool responses")
    assert str(info.value) == EXHAUSTED_REMOVAL_ERROR
    assert isinstance(info.value, CompactionError) and isinstance(info.value, ContextLengthExceeded)
    assert info.value.billed_usage == []
    assert [a.removal_percent for a in info.value.attempts] == [0, 10, 20, 50, 100]


# ---- quirks of the goose removal order ------------------------------------------------------


def test_goose_order_for_ten_tool_responses_is_4_5_3_6_2_7_1_8_0_9() -> None:
    assert removal_positions(10, 100) == [4, 5, 3, 6, 2, 7, 1, 8, 0, 9]


def test_goose_removal_at_10_20_50_100_percent_drops_the_documented_messages() -> None:
    messages = tool_conversation(10)
    assert [i for i, m in enumerate(messages) if m.has_tool_response()] == list(range(2, 21, 2))
    assert dropped_indices(messages, 0) == []
    assert dropped_indices(messages, 10) == [10]
    assert dropped_indices(messages, 20) == [10, 12]
    assert sorted(dropped_indices(messages, 50)) == [6, 8, 10, 12, 14]
    assert dropped_indices(messages, 100) == list(range(2, 21, 2))


def test_odd_count_never_removes_the_last_tool_response() -> None:
    assert removal_positions(5, 100) == [1, 2, 0, 3]
    messages = tool_conversation(5)
    kept = filter_tool_responses(messages, 100)
    assert [m.tool_responses()[0].id for m in kept if m.has_tool_response()] == ["call4"]


def test_three_tool_responses_at_10_percent_remove_position_0() -> None:
    assert removal_positions(3, 10) == [0]


def test_single_tool_response_is_never_removed_so_five_identical_prompts_are_sent() -> None:
    assert all(removal_positions(1, pct) == [] for pct in REMOVAL_PERCENTAGES)


async def test_single_tool_response_sends_the_same_prompt_five_times() -> None:
    model = ScriptedModel(always_raise=overflow())
    with pytest.raises(CompactionContextExceeded):
        await summarize(model, None, PLAIN, tool_conversation(1))
    assert len({system for system, _ in model.calls}) == 1
    assert model.call_count == 5


def test_removed_responses_keep_their_tool_request_line() -> None:
    from workbench.compaction._format import format_transcript

    text = format_transcript(filter_tool_responses(tool_conversation(2), 100))
    assert text == '[user]: start\n[assistant]: tool_request(shell): {"n":0}\n' \
                   '[assistant]: tool_request(shell): {"n":1}'


def test_removed_message_loses_the_text_beside_its_tool_response() -> None:
    messages = [Message.user("go"), Message.assistant().with_tool_request("c", "shell", {}),
                Message.user("note").with_tool_response("c", "out"),
                Message.assistant().with_tool_request("d", "shell", {}),
                Message.user().with_tool_response("d", "out2")]
    kept = filter_tool_responses(messages, 10)
    assert all(m.concat_text() != "note" for m in kept)


async def test_ladder_retries_from_the_original_list_until_the_prompt_fits() -> None:
    class FitsWithFiveResponses(ScriptedModel):
        async def complete(self, system, messages):  # type: ignore[override]
            if system.count("tool_response:") > 5:
                self.calls.append((system, list(messages)))
                raise overflow()
            return await super().complete(system, messages)

    model = FitsWithFiveResponses(["done"])
    summary = await summarize(model, None, PLAIN, tool_conversation(10))
    assert model.call_count == 4
    assert [(a.removal_percent, a.messages_removed, a.outcome) for a in summary.attempt_records] == [
        (0, 0, "context_length_exceeded"), (10, 1, "context_length_exceeded"),
        (20, 2, "context_length_exceeded"), (50, 5, "ok")]
    assert summary.attempts == 4
    assert [s.count("tool_response:") for s, _ in model.calls] == [10, 9, 8, 5]


# ---- the centred (V-prefix) order and elision -----------------------------------------------


def test_centred_order_starts_at_the_true_centre_and_reaches_every_position() -> None:
    assert removal_positions(5, 100, "centred") == [2, 1, 3, 0, 4]
    assert removal_positions(1, 10, "centred") == [0]
    assert removal_positions(10, 100, "centred") == removal_positions(10, 100, "goose")
    assert removal_positions(10, 50, "centred") == [4, 5, 3, 6, 2]


async def test_centred_order_lets_a_single_tool_response_be_removed() -> None:
    model = ScriptedModel([overflow(), "done"])
    summary = await summarize(model, None, PLAIN, tool_conversation(1), order="centred")
    assert summary.attempts == 2
    assert "tool_response:" not in model.calls[1][0]


def test_elide_keeps_every_message_and_replaces_the_response_text() -> None:
    messages = tool_conversation(4)
    messages[4] = Message.user("beside").with_tool_response("call1", "out1")
    elided = elide_tool_responses(messages, 50)
    assert len(elided) == len(messages)
    assert [m.tool_responses()[0].text() for m in elided if m.has_tool_response()] == [
        "out0", ELIDED_TOOL_RESPONSE_TEXT, ELIDED_TOOL_RESPONSE_TEXT, "out3"]
    assert elided[4].concat_text() == "beside"
    assert elided[4].tool_responses()[0].id == "call1"
    assert messages[4].tool_responses()[0].text() == "out1"


async def test_elide_records_responses_removed_but_no_messages_dropped() -> None:
    model = ScriptedModel([overflow(), overflow(), "done"])
    summary = await summarize(model, None, PLAIN, tool_conversation(10), removal="elide")
    third = summary.attempt_records[2]
    assert (third.removal_percent, third.messages_removed, third.tool_responses_removed) == (20, 0, 2)
    assert model.calls[2][0].count(ELIDED_TOOL_RESPONSE_TEXT) == 2
    assert model.calls[2][0].count("tool_response:") == 10


# ---- the request, the reply and errors ------------------------------------------------------


async def test_conversation_goes_into_the_system_prompt_with_one_request_message() -> None:
    model = ScriptedModel(["plain summary"])
    summary = await summarize(model, None, PLAIN, [Message.user("hello"), Message.assistant("hi")])
    system, request = model.calls[0]
    assert system == "[user]: hello\n[assistant]: hi"
    assert [(m.role, m.concat_text()) for m in request] == [("user", SUMMARY_REQUEST)]
    assert summary.message.role == "user"
    assert summary.transcript_chars == len(system)


async def test_other_model_errors_propagate_at_once_without_retry() -> None:
    model = ScriptedModel(always_raise=RateLimited("slow down", "m"))
    with pytest.raises(CompactionCallFailed) as info:
        await summarize(model, None, PLAIN, tool_conversation(3))
    assert model.call_count == 1
    assert str(info.value) == "slow down"
    assert isinstance(info.value.__cause__, RateLimited)
    assert [a.outcome for a in info.value.attempts] == ["error"]


async def test_a_template_error_is_raised_before_any_model_call() -> None:
    model = ScriptedModel(["x"])
    broken = Templates(compaction="{% for %}", summary="", name="broken")
    with pytest.raises(TemplateError):
        await summarize(model, None, broken, [Message.user("hello")])
    assert model.call_count == 0


async def test_without_estimator_usage_is_returned_as_reported() -> None:
    reported = Usage(model="m", input_tokens=None, output_tokens=7, total_tokens=99)
    summary = await summarize(ScriptedModel(["x"], usage=reported), None, PLAIN,
                              [Message.user("hi")])
    assert summary.usage == reported


async def test_estimated_total_overwrites_the_provider_total() -> None:
    reported = Usage(model="m", input_tokens=10, output_tokens=5, total_tokens=999)
    summary = await summarize(ScriptedModel(["x"], usage=reported), default_estimator(), PLAIN,
                              [Message.user("hi")])
    assert (summary.usage.input_tokens, summary.usage.output_tokens,
            summary.usage.total_tokens) == (10, 5, 15)


async def test_usage_is_estimated_from_the_raw_reply_before_the_structured_rewrite() -> None:
    est = default_estimator()
    model = ScriptedModel([STRUCTURED_REPLY])
    summary = await summarize(model, est, PLAIN, [Message.user("fix the parser")])
    system, request = model.calls[0]
    assert summary.structured and summary.parse_outcome == "structured"
    assert summary.message.concat_text() == "# S\n- Fix the parser bug"
    assert summary.usage.input_tokens == est.count_chat_tokens(system, request)
    assert summary.usage.output_tokens == est.count_text_tokens(STRUCTURED_REPLY)
    assert summary.usage.output_tokens != est.count_text_tokens("# S\n- Fix the parser bug")
    assert summary.usage.total_tokens == summary.usage.input_tokens + summary.usage.output_tokens


def test_output_estimate_uses_goose_display_forms() -> None:
    reply = Message(role="assistant", content=[ThinkingContent(thinking="hmm"),
                                               TextContent(text="done")])
    reply.with_tool_request("c1", "shell", {"a": 1}).with_tool_response("c1", "x")
    assert [display_content(c) for c in reply.content] == [
        "[Thinking: hmm]", "done", '[ToolRequest: Tool: shell, Args: {\n  "a": 1\n}]',
        "[ToolResponse: 1 content item(s)]"]


async def test_output_tokens_count_thinking_through_its_display_form() -> None:
    est = default_estimator()
    reply = Message(role="assistant", content=[ThinkingContent(thinking="let me think"),
                                               TextContent(text="raw notes")])
    summary = await summarize(ScriptedModel([reply]), est, PLAIN, [Message.user("hi")])
    assert summary.usage.output_tokens == est.count_text_tokens("[Thinking: let me think] raw notes")


async def test_raw_fallback_keeps_thinking_items() -> None:
    reply = Message(role="assistant", content=[ThinkingContent(thinking="private", signature="s"),
                                               TextContent(text="just prose, no json")])
    summary = await summarize(ScriptedModel([reply]), None, PLAIN, [Message.user("hi")])
    assert not summary.structured
    assert summary.parse_outcome == "no_candidate"
    assert summary.message.role == "user"
    assert [c.type for c in summary.message.content] == ["thinking", "text"]
    assert summary.message.content[0].thinking == "private"  # type: ignore[union-attr]


def test_structured_rewrite_keeps_only_the_rendered_text() -> None:
    reply = Message(role="user", content=[ThinkingContent(thinking="t"),
                                          TextContent(text=STRUCTURED_REPLY)])
    assert apply_structured_summary(reply, PLAIN.summary) == "structured"
    assert [(c.type, c.text) for c in reply.content] == [("text", "# S\n- Fix the parser bug")]


def test_blank_render_keeps_the_raw_reply() -> None:
    reply = Message.user(STRUCTURED_REPLY)
    assert apply_structured_summary(reply, "{# nothing #}   ") == "render_empty"
    assert reply.concat_text() == STRUCTURED_REPLY


def test_render_error_keeps_the_raw_reply() -> None:
    reply = Message.user(STRUCTURED_REPLY)
    assert apply_structured_summary(reply, "{{ user_intent | no_such_filter }}") == "render_error"
    assert reply.concat_text() == STRUCTURED_REPLY


def test_unparseable_json_reports_why_the_raw_reply_was_kept() -> None:
    assert apply_structured_summary(Message.user("</analysis>{}"), None) == "empty"
    assert apply_structured_summary(Message.user("</analysis>{not json}"), None) == "invalid_json"
    assert apply_structured_summary(Message.user("no json here"), None) == "no_candidate"


async def test_scripted_replies_are_copied_so_reusing_one_is_safe() -> None:
    reply = Message.assistant("same")
    model = ScriptedModel([reply])
    first = await summarize(model, None, PLAIN, [Message.user("a")])
    second = await summarize(model, None, PLAIN, [Message.user("b")])
    assert reply.role == "assistant"
    assert first.message is not second.message


@pytest.mark.parametrize("removal", ["drop", "elide"])
@pytest.mark.parametrize("order", ["goose", "centred"])
def test_each_ladder_step_keeps_what_the_public_removal_functions_keep(removal: str,
                                                                       order: str) -> None:
    from workbench.compaction._removal import apply_removal

    messages = [Message.user("start")]
    for i in range(7):
        messages.append(Message.assistant("look").with_tool_request(f"t{i}", "shell", {"n": i}))
        messages.append(Message.user().with_tool_response(f"t{i}", f"out {i}"))
    public = elide_tool_responses if removal == "elide" else filter_tool_responses
    for pct in REMOVAL_PERCENTAGES:
        kept, dropped, responses = apply_removal(messages, pct, order, removal)  # type: ignore[arg-type]
        expected = public(messages, pct, order)  # type: ignore[arg-type]
        assert [m.to_goose() for m in kept] == [m.to_goose() for m in expected]
        removed = len(removal_positions(7, pct, order))  # type: ignore[arg-type]
        assert (dropped, responses) == ((0 if removal == "elide" else removed), removed)
        assert kept is not messages
