"""System and internal messages beside Goose's roles, and how awaken's four roles are read."""

from __future__ import annotations

from tests.strategies.awaken.helpers import assistant, tool, user
from workbench.messages import (
    Message,
    MessageMetadata,
    internal_message,
    is_internal_message,
    is_system_message,
    system_message,
)
from workbench.strategies.awaken import (
    ContextWindowPolicy,
    latest_user_suffix,
    render_transcript,
    role_of,
    truncate,
)


def test_a_system_message_round_trips_through_goose_json_exactly() -> None:
    msg = system_message("You are a careful agent.", id="s1", created=1700000000)
    data = msg.to_goose()
    assert data == {"id": "s1", "role": "user", "created": 1700000000,
                    "content": [{"type": "text", "text": "You are a careful agent."}],
                    "metadata": {"userVisible": True, "agentVisible": True, "system": True}}
    back = Message.from_goose(data)
    assert is_system_message(back) and back.to_goose() == data


def test_plain_goose_messages_are_neither_system_nor_internal() -> None:
    for msg in (Message.user("u"), Message.assistant("a"),
                Message.user("x", metadata=MessageMetadata.user_only())):
        assert not is_system_message(msg) and not is_internal_message(msg)


def test_internal_messages_are_agent_only_and_goose_summaries_read_as_internal() -> None:
    for role in ("user", "assistant", "system"):
        msg = internal_message(role, "note")
        assert is_internal_message(msg) and msg.id
        assert msg.to_goose()["metadata"]["userVisible"] is False
    assert is_system_message(internal_message("system", "n"))
    assert not is_system_message(internal_message("user", "n"))
    goose_summary = Message.user("summary", metadata=MessageMetadata.agent_only())
    assert is_internal_message(goose_summary)


def test_awaken_roles_are_read_off_goose_messages() -> None:
    batch = Message.user().with_tool_response("c1", "r1").with_tool_response("c2", "r2")
    assert [role_of(m) for m in (system_message("s"), user("u"), assistant("a", ["c1"]),
                                 tool("c1", "r"), batch)] == [
        "system", "user", "assistant", "tool", "tool"]
    assert render_transcript([batch]) == "[Tool]: r1\nr2"


def test_tool_results_do_not_count_as_the_latest_user_message() -> None:
    messages = [user("task"), assistant("", ["c1"]), tool("c1", "r"), assistant("done")]
    assert latest_user_suffix(messages) == 4


def test_only_leading_system_messages_form_the_protected_prefix() -> None:
    prompt, injected = system_message("prompt " * 50), system_message("context " * 50)
    late = system_message("late " * 50)
    messages = [prompt, injected, user("u" * 400), late, user("v" * 400), assistant("w" * 400)]
    policy = ContextWindowPolicy(max_context_tokens=300, max_output_tokens=0,
                                 min_recent_messages=2)
    result = truncate(messages, policy)
    assert result.system_prefix == 2
    assert result.messages == [prompt, injected, messages[4], messages[5]]
