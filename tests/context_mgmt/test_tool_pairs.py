"""Goose's tool-pair summarization: audience projection, hidden pairs, parallel-call groups."""

from __future__ import annotations

import pytest

from workbench.context_mgmt import (
    NO_AGENT_VISIBLE_PAIR_ERROR,
    TOOL_PAIR_SUMMARY_PROMPT,
    maybe_summarize_tool_pairs,
    summarize_tool_pair,
    tool_pair_groups,
)
from workbench.errors import CompactionError, ModelTimeout
from workbench.messages import Message, MessageMetadata
from workbench.messages._content import Annotations, CallToolResult, McpBlock, ToolResponseResult
from workbench.messages._content import ToolResponse as ToolResponseItem
from workbench.testing import ScriptedModel


def response_with_blocks(call_id: str, *blocks: tuple[str, list[str] | None],
                         created: int = 200) -> Message:
    """A user message answering `call_id` with text blocks, each with an optional audience."""
    items = [McpBlock(type="text", text=text,
                      annotations=Annotations(audience=aud) if aud is not None else None)
             for text, aud in blocks]
    result = ToolResponseResult(status="success", value=CallToolResult(content=items))
    return Message(role="user", created=created,
                   content=[ToolResponseItem(id=call_id, tool_result=result)])


def read_request(call_id: str = "tool_0", created: int = 100) -> Message:
    return Message.assistant(created=created).with_tool_request(call_id, "read_file",
                                                                {"path": "a.txt"})


def parallel_session(pairs: int) -> list[Message]:
    messages = [Message.user("start", created=1)]
    for i in range(pairs):
        messages.append(Message.assistant(id=f"request_{i}", created=10 + 2 * i)
                        .with_tool_request(f"tool_{i}a", "read_file")
                        .with_tool_request(f"tool_{i}b", "read_file"))
        messages.append(Message.user(id=f"response_{i}", created=11 + 2 * i)
                        .with_tool_response(f"tool_{i}a", "first result")
                        .with_tool_response(f"tool_{i}b", "second result"))
    return messages


async def test_tool_pair_summary_projects_nested_audiences_before_provider_input() -> None:
    model = ScriptedModel(["read a.txt"])
    response = response_with_blocks("tool_0", ("visible result", None),
                                    ("user-only secret", ["user"]),
                                    ("for the agent", ["assistant"]))
    summary = await summarize_tool_pair(model, read_request(), response)
    system, sent = model.calls[0]
    assert system == TOOL_PAIR_SUMMARY_PROMPT
    assert [(m.role, m.concat_text()) for m in sent] == [
        ("user", '[assistant]: tool_request(read_file): {"path":"a.txt"}\n'
                 "[user]: tool_response: visible result\nfor the agent")]
    assert (summary.role, summary.concat_text(), summary.created) == ("user", "read a.txt", 200)
    assert summary.metadata.to_goose() == {"userVisible": False, "agentVisible": True}
    assert summary.id is not None and summary.id.startswith("msg_")
    # the original response is left untouched
    assert "user-only secret" in response.tool_responses()[0].text()

    only_secret = response_with_blocks("tool_1", ("user-only secret", ["user"]))
    await summarize_tool_pair(model, read_request("tool_1"), only_secret)
    system, sent = model.calls[1]
    assert sent[0].concat_text() == ('[assistant]: tool_request(read_file): {"path":"a.txt"}\n'
                                     "[user]: tool_response: [non-text content]")
    assert "secret" not in system + sent[0].concat_text()


async def test_tool_pair_summary_rejects_agent_hidden_response() -> None:
    model = ScriptedModel(["summary"])
    hidden = Message.user(metadata=MessageMetadata.user_only()).with_tool_response(
        "tool_0", "user-only secret")
    with pytest.raises(CompactionError) as info:
        await summarize_tool_pair(model, read_request(), hidden)
    assert str(info.value) == (
        "No agent-visible tool pair to summarize: the response message has no tool response "
        "the agent can see. Pass an agent-visible assistant message with tool requests and the "
        "agent-visible user message that answers them.")
    assert NO_AGENT_VISIBLE_PAIR_ERROR in str(info.value)
    assert model.call_count == 0


async def test_tool_pair_summary_rejects_a_hidden_request_and_an_unrelated_response() -> None:
    model = ScriptedModel(["summary"])
    hidden_request = read_request().copy_with(metadata=MessageMetadata.user_only())
    answer = Message.user().with_tool_response("tool_0", "out")
    with pytest.raises(CompactionError, match="the request message has no tool request"):
        await summarize_tool_pair(model, hidden_request, answer)
    other = Message.user().with_tool_response("tool_9", "out")
    with pytest.raises(CompactionError,
                       match=r"the response answers none of the calls \['tool_0'\]"):
        await summarize_tool_pair(model, read_request(), other)
    assert model.call_count == 0


async def test_parallel_tool_calls_share_one_summary_request() -> None:
    # 14 calls > cutoff 2 + batch 10, so the oldest 10 ids (tool_0a..tool_4b) are due; they
    # live in the first five request/response message pairs: one request per pair.
    model = ScriptedModel(["summary"])
    conversation = parallel_session(7)
    summaries = await maybe_summarize_tool_pairs(model, conversation, 2)
    assert len(summaries) == 5
    assert model.call_count == 5
    assert [s.created for s in summaries] == [11, 13, 15, 17, 19]
    assert [sent[0].concat_text() for _, sent in model.calls][0] == (
        "[assistant]: tool_request(read_file): null\ntool_request(read_file): null\n"
        "[user]: tool_response: first result\ntool_response: second result")
    assert tool_pair_groups(conversation, 2) == [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10)]


async def test_tool_pair_groups_follow_the_trigger_and_protection() -> None:
    conversation = parallel_session(6)  # 12 calls: not more than cutoff 2 + 10
    assert tool_pair_groups(conversation, 2) == []
    assert await maybe_summarize_tool_pairs(ScriptedModel(), conversation, 2) == []
    conversation = parallel_session(7)
    assert tool_pair_groups(conversation, 2, protect_last_n=2) == []
    assert tool_pair_groups(conversation, 2, protect_last_n=1) == [
        (1, 2), (3, 4), (5, 6), (7, 8), (9, 10)]


def test_a_sibling_answered_in_another_message_is_not_grouped() -> None:
    conversation = parallel_session(7)
    # Pair 0's second call is answered in its own later message: that pair is not clean.
    conversation[2] = Message.user().with_tool_response("tool_0a", "first result")
    conversation.insert(3, Message.user().with_tool_response("tool_0b", "second result"))
    assert tool_pair_groups(conversation, 2) == [(4, 5), (6, 7), (8, 9), (10, 11)]


async def test_a_failed_group_is_left_out_and_the_rest_are_summarized() -> None:
    model = ScriptedModel(["first", "rest"], raise_on={2: ModelTimeout("slow", "scripted")})
    summaries = await maybe_summarize_tool_pairs(model, parallel_session(7), 2)
    assert model.call_count == 5
    assert [s.concat_text() for s in summaries] == ["first", "rest", "rest", "rest"]
