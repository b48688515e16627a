"""Goose's context_mgmt: threshold parsing and check, compact_messages, tool-pair cutoff."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.goose_db_helpers import build_goose_db
from workbench.compaction._templates import Templates
from workbench.context_mgmt import (
    CONVERSATION_CONTINUATION_TEXT,
    MANUAL_COMPACT_CONTINUATION_TEXT,
    TOOL_LOOP_CONTINUATION_TEXT,
    check_if_compaction_needed,
    compact_messages,
    compute_tool_call_cutoff,
    threshold_from_env,
    tool_ids_to_summarize,
)
from workbench.errors import ContextLengthExceeded
from workbench.messages import Message, MessageMetadata
from workbench.sessions import load_session
from workbench.sessions.importers._goose_db import write_goose_db_session
from workbench.testing import ScriptedModel
from workbench.tokens import default_estimator

PLAIN = Templates(compaction="{{ messages }}", summary="", name="plain")
STRUCTURED_REPLY = (
    "<analysis>\nThe user wants {brace handling} fixed.\n</analysis>\n```json\n"
    '{"user_intent": ["Fix the parser bug"], "files": [{"path": "src/parser.rs", '
    '"summary": "parser"}], "current_work": "editing"}\n```'
)


def turn_context(text: str, created: int = 100) -> Message:
    return Message.user(text, created=created,
                        metadata=MessageMetadata(turn_context=True))


def agent_view(conversation: list[Message]) -> list[Message]:
    return [m for m in conversation if m.is_agent_visible]


def assert_valid_conversation(messages: list[Message]) -> None:
    """What Goose's Conversation::new checks: user first, roles alternate, tool ids pair up."""
    assert messages and messages[0].role == "user"
    for a, b in zip(messages, messages[1:], strict=False):
        assert a.role != b.role, [m.role for m in messages]
    requests = {r.id for m in messages for r in m.tool_requests()}
    responses = {r.id for m in messages for r in m.tool_responses()}
    assert requests == responses


def tool_pairs(n: int) -> list[Message]:
    messages = [Message.user("start")]
    for i in range(n):
        messages.append(Message.assistant().with_tool_request(f"call{i}", "shell", {"n": i}))
        messages.append(Message.user().with_tool_response(f"call{i}", f"out{i}"))
    return messages


# ---- threshold ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, expected", [
    (None, 0.8), ("0.6", 0.6), ("0", 0.0), ("80", 80.0), ("1", 1.0), ("+0.5", 0.5),
    (".5", 0.5), ("5.", 5.0), ("007", 7.0), ("1e-1", 0.1), (" 0.3 ", 0.3),
    ("true", 0.8), ("false", 0.8), ('"0.5"', 0.8), ("abc", 0.8), ("", 0.8),
    ("nan", 0.8), ("NaN", 0.8), ("inf", 0.8), ("Infinity", 0.8), ("1e400", 0.8),
    ("[0.5]", 0.8), ("null", 0.8), ("0.5%", 0.8), ("1_0", 0.8),
])
def test_threshold_from_env_parses_like_goose_config(raw: str | None, expected: float) -> None:
    assert threshold_from_env(raw) == expected, raw


def test_threshold_of_80_disables_auto_compaction_instead_of_meaning_80_percent(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOSE_AUTO_COMPACT_THRESHOLD", "80")
    assert check_if_compaction_needed([], 1000, session_total_tokens=999) is False
    monkeypatch.setenv("GOOSE_AUTO_COMPACT_THRESHOLD", "0.8")
    assert check_if_compaction_needed([], 1000, session_total_tokens=801) is True


def test_check_if_compaction_needed_uses_a_strict_greater_than() -> None:
    assert check_if_compaction_needed([], 1000, threshold=0.8, session_total_tokens=800) is False
    assert check_if_compaction_needed([], 1000, threshold=0.8, session_total_tokens=801) is True


def test_check_if_compaction_needed_is_off_for_self_managing_providers_and_off_thresholds() -> None:
    assert check_if_compaction_needed([], 10, session_total_tokens=10,
                                      manages_own_context=True) is False
    for off in (0.0, -0.5, 1.0, 1.5):
        assert check_if_compaction_needed([], 10, threshold=off, session_total_tokens=10) is False


def test_check_if_compaction_needed_estimates_agent_visible_messages_when_no_total() -> None:
    est = default_estimator()
    visible = Message.user("hello world")
    hidden = Message.user("x " * 500, metadata=MessageMetadata.user_only())
    tokens = est.count_chat_tokens("", [visible])
    assert tokens == est.count_text_tokens("hello world") + 7
    conversation = [visible, hidden]
    assert check_if_compaction_needed(conversation, tokens * 2, threshold=0.49) is True
    assert check_if_compaction_needed(conversation, tokens * 2, threshold=0.5) is False


def test_compute_tool_call_cutoff_scales_with_context() -> None:
    cases = [((128_000, 0.8), 15), ((200_000, 0.8), 24), ((1_000_000, 0.8), 120),
             ((50_000, 0.8), 10), ((10_000, 0.8), 10), ((10_000_000, 0.8), 500),
             ((200_000, 0.3), 10), ((1_000_000, 0.5), 75), ((200_000, 0.0), 24),
             ((200_000, -1.0), 24)]
    for args, expected in cases:
        assert compute_tool_call_cutoff(*args) == expected, args


def test_tool_ids_to_summarize_triggers_at_cutoff_plus_batch() -> None:
    assert tool_ids_to_summarize(tool_pairs(15), 5) == []
    assert tool_ids_to_summarize(tool_pairs(16), 5) == [f"call{i}" for i in range(10)]


def test_tool_ids_to_summarize_protects_current_turn() -> None:
    conversation = tool_pairs(20)
    assert tool_ids_to_summarize(conversation, 2, protect_last=0) == [f"call{i}" for i in range(10)]
    assert tool_ids_to_summarize(conversation, 2, protect_last=8) == []
    assert tool_ids_to_summarize(conversation, 2, protect_last=7) == [f"call{i}" for i in range(10)]


# ---- compact_messages -----------------------------------------------------------------------


async def test_keeps_tool_request() -> None:
    conversation = [Message.user("text"),
                    Message.assistant().with_tool_request("t1", "read", {"path": "a"}),
                    Message.user().with_tool_response("t1", "contents")]
    result = await compact_messages(ScriptedModel(["summary"]), conversation, templates=PLAIN)
    visible = agent_view(result.conversation)
    assert_valid_conversation(visible)
    assert [(m.role, m.concat_text()) for m in visible] == [
        ("user", "summary"), ("assistant", TOOL_LOOP_CONTINUATION_TEXT), ("user", "text")]
    assert len(result.conversation) == 6
    assert all(not m.is_agent_visible and m.is_user_visible for m in result.conversation[:3])
    assert result.conversation[1].tool_requests()[0].id == "t1"


async def test_structured_summary_is_rendered() -> None:
    conversation = [Message.user("fix the parser"), Message.assistant("on it")]
    result = await compact_messages(ScriptedModel([STRUCTURED_REPLY]), conversation,
                                    manual_compact=True)
    first = agent_view(result.conversation)[0].concat_text()
    for fragment in ("# Conversation Summary", "## User Intent", "- Fix the parser bug",
                     "### src/parser.rs"):
        assert fragment in first
    assert "```json" not in first and "<analysis>" not in first
    assert result.retained_context_tokens > 0
    assert result.usage.output_tokens is not None
    assert [m.concat_text() for m in agent_view(result.conversation)][1:] == [
        MANUAL_COMPACT_CONTINUATION_TEXT]


async def test_retained_context_counts_preserved_user_message() -> None:
    async def retained(final: str) -> int:
        conversation = [Message.user("first"), Message.assistant("ok"), Message.user(final)]
        result = await compact_messages(ScriptedModel(["summary"]), conversation, templates=PLAIN)
        return result.retained_context_tokens

    short, long = await retained("go"), await retained("please go " * 50)
    assert long > short
    est = default_estimator()
    assert short == sum(est.count_chat_tokens("", [Message.user(t)])
                        for t in ("summary", CONVERSATION_CONTINUATION_TEXT, "go"))


async def test_preserved_user_message_keeps_audience_projection_after_compaction() -> None:
    request = (Message.user().with_text("agent text", audience=["assistant"])
               .with_text("user secret", audience=["user"]).with_text("plain"))
    conversation = [Message.user("earlier"), Message.assistant("sure"), request]
    model = ScriptedModel(["summary"])
    result = await compact_messages(model, conversation, templates=PLAIN)
    archived, replay = result.conversation[2], result.conversation[-1]
    assert (archived.is_user_visible, archived.is_agent_visible) == (True, False)
    assert archived.concat_text() == "agent text\nuser secret\nplain"
    assert (replay.is_user_visible, replay.is_agent_visible) == (False, True)
    assert replay.concat_text() == "agent text\nplain"
    assert replay.id is None
    assert replay.created == result.conversation[-2].created
    assert "user secret" not in model.calls[0][0]
    assert "agent text" in model.calls[0][0]


async def test_preserved_user_message_skips_turn_context_events() -> None:
    conversation = [Message.user("do it", created=100), Message.assistant("ok", created=101),
                    Message.user("the prompt", created=102),
                    turn_context("<turn-context>cwd=/a</turn-context>", created=103),
                    turn_context("<turn-context>cwd=/b</turn-context>", created=104)]
    result = await compact_messages(ScriptedModel(["summary"]), conversation, templates=PLAIN)
    visible = agent_view(result.conversation)
    assert [m.concat_text() for m in visible] == [
        "summary", CONVERSATION_CONTINUATION_TEXT, "the prompt",
        "<turn-context>cwd=/b</turn-context>"]
    assert sum(m.is_turn_context for m in visible) == 1
    carried = visible[-1]
    assert carried.id is None
    assert carried.created >= max(m.created for m in result.conversation[:-1])


async def test_stale_turn_context_from_an_earlier_turn_is_not_carried() -> None:
    conversation = [Message.user("old"), turn_context("<turn-context>stale</turn-context>"),
                    Message.assistant("ok"), Message.user("newest prompt")]
    result = await compact_messages(ScriptedModel(["summary"]), conversation, templates=PLAIN)
    visible = agent_view(result.conversation)
    assert visible[-1].concat_text() == "newest prompt"
    assert not any(m.is_turn_context for m in visible)


async def test_carried_turn_context_stays_last_after_persist_and_reload(tmp_path: Path) -> None:
    hour_ago = int(time.time()) - 3600
    conversation = [Message.user("the real current request", created=hour_ago),
                    Message.user("<turn-context>frozen block</turn-context>", created=hour_ago,
                                 metadata=MessageMetadata(user_visible=False, turn_context=True))]
    result = await compact_messages(ScriptedModel(["summary"]), conversation, templates=PLAIN)
    assert result.conversation[-1].is_turn_context

    # Goose's replace_conversation: delete the session's rows, insert the whole list again.
    db = build_goose_db(tmp_path / "sessions.db", {"20260301_1": [
        ("user", [{"type": "text", "text": "stale row"}], 1, None)]})
    assert write_goose_db_session(db, "20260301_1", result.conversation) == 6
    reloaded = load_session(db, format="goose-db", session_id="20260301_1").messages

    assert len(reloaded) == len(result.conversation) == 6
    assert [(m.concat_text(), m.is_user_visible, m.is_agent_visible) for m in reloaded] == [
        ("the real current request", True, False),
        ("<turn-context>frozen block</turn-context>", False, False),
        ("summary", False, True),
        (CONVERSATION_CONTINUATION_TEXT, False, True),
        ("the real current request", False, True),
        ("<turn-context>frozen block</turn-context>", False, True)]
    assert reloaded[-1].is_turn_context
    assert reloaded[-1].created == result.conversation[-2].created > hour_ago
    assert reloaded[-1].id.startswith("msg_20260301_1_")


async def test_summarizer_input_excludes_turn_context_events() -> None:
    conversation = [turn_context("<turn-context>/old/path</turn-context>"),
                    Message.user("user request text"),
                    turn_context("<turn-context>/new/path</turn-context>")]
    model = ScriptedModel(["summary"])
    result = await compact_messages(model, conversation, templates=PLAIN)
    system = model.calls[0][0]
    assert "user request text" in system
    assert "/old/path" not in system and "/new/path" not in system
    assert agent_view(result.conversation)[-1].concat_text() == "<turn-context>/new/path</turn-context>"


async def test_progressive_removal_on_context_exceeded() -> None:
    """Goose's test, reproduced: the mock overflows when the *request messages* hold more than
    two tool responses. summarize sends one user text message, so the mock never overflows and
    the removal ladder is never exercised (a known quirk of the upstream test)."""

    class FailsOnManyToolResponses(ScriptedModel):
        async def complete(self, system, messages):  # type: ignore[no-untyped-def,override]
            if sum(len(m.tool_responses()) for m in messages) > 2:
                self.calls.append((system, list(messages)))
                raise ContextLengthExceeded("too many tool responses", "mock")
            return await super().complete(system, messages)

    model = FailsOnManyToolResponses(["summary"])
    result = await compact_messages(model, tool_pairs(10), templates=PLAIN)
    assert model.call_count == 1
    assert result.summary.attempts == 1
    assert agent_view(result.conversation)[0].concat_text() == "summary"


async def test_progressive_removal_when_the_system_prompt_overflows() -> None:
    class FailsOnManyToolResponses(ScriptedModel):
        async def complete(self, system, messages):  # type: ignore[no-untyped-def,override]
            if system.count("tool_response:") > 2:
                self.calls.append((system, list(messages)))
                raise ContextLengthExceeded("too many tool responses", "mock")
            return await super().complete(system, messages)

    model = FailsOnManyToolResponses(["summary"])
    result = await compact_messages(model, tool_pairs(10), templates=PLAIN)
    assert [a.removal_percent for a in result.summary.attempt_records] == [0, 10, 20, 50, 100]
    assert model.calls[-1][0].count("tool_request(shell)") == 10


async def test_manual_compaction_preserves_no_prompt() -> None:
    conversation = [Message.user("hello"), Message.assistant("hi")]
    result = await compact_messages(ScriptedModel(["summary"]), conversation,
                                    manual_compact=True, templates=PLAIN)
    assert [m.concat_text() for m in agent_view(result.conversation)] == [
        "summary", MANUAL_COMPACT_CONTINUATION_TEXT]


async def test_archived_originals_round_trip_as_agent_invisible() -> None:
    original = Message.from_goose({"role": "user", "created": 5, "content": [
        {"type": "text", "text": "hi"}]})
    result = await compact_messages(ScriptedModel(["summary"]), [original], templates=PLAIN)
    dumped = result.conversation[0].to_goose()
    assert dumped["metadata"] == {"userVisible": True, "agentVisible": False}
    assert Message.from_goose(dumped).is_agent_visible is False
    assert result.conversation[1].metadata.to_goose() == {"userVisible": False,
                                                         "agentVisible": True}


def test_continuation_texts_say_the_context_was_compacted() -> None:
    for text in (CONVERSATION_CONTINUATION_TEXT, TOOL_LOOP_CONTINUATION_TEXT,
                 MANUAL_COMPACT_CONTINUATION_TEXT):
        assert "compacted" in text and "summary" in text
    assert "tools" in TOOL_LOOP_CONTINUATION_TEXT
    assert "user asked" in MANUAL_COMPACT_CONTINUATION_TEXT


def test_summarizer_input_projects_for_the_agent_and_drops_what_ends_up_empty() -> None:
    from workbench.context_mgmt import summarizer_input

    conversation = [Message.user("keep"),
                    Message.user().with_text("only for the user", audience=["user"]),
                    Message.assistant("archived", metadata=MessageMetadata.user_only()),
                    Message.assistant().with_text("agent", audience=["assistant"])
                    .with_text("hidden", audience=["user"]),
                    turn_context("<turn-context>x</turn-context>")]
    assert [m.concat_text() for m in summarizer_input(conversation)] == ["keep", "agent"]


def test_an_archived_copy_is_what_a_json_round_trip_with_the_flag_would_read() -> None:
    from workbench.context_mgmt._compact_messages import archived_copy
    from workbench.harness.experiment._cells import read_manifest
    from workbench.sessions import load_session

    checked = 0
    for path, fmt in list(read_manifest().values())[::4]:
        for message in load_session(path, fmt).messages:
            data = message.to_goose()
            data["metadata"] = {**message.metadata.to_goose(), "agentVisible": False}
            trip = Message.from_goose(data)
            copy = archived_copy(message)
            assert copy == trip and copy.to_goose() == trip.to_goose(), message.id
            assert not copy.is_agent_visible and copy.content == message.content
            checked += 1
    assert checked > 500
