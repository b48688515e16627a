"""Goose message JSON: exact round trips, unknown items kept, Goose's load migrations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.messages import (
    ActionRequired,
    Annotations,
    DocumentContent,
    ErrorContent,
    FrontendToolRequest,
    ImageContent,
    Message,
    MessageMetadata,
    RedactedThinkingContent,
    SystemNotification,
    TextContent,
    ThinkingContent,
    ToolConfirmationRequest,
    ToolRequest,
    ToolResponse,
    UnknownContent,
)

FIXTURE = Path(__file__).parent / "fixtures" / "goose_all_content_types.json"


def _fixture() -> list[dict]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("index", range(4))
def test_every_fixture_message_survives_from_goose_to_goose_unchanged(index: int) -> None:
    original = _fixture()[index]
    assert Message.from_goose(original).to_goose() == original


def test_every_content_type_parses_to_its_own_class() -> None:
    kinds = [type(c) for d in _fixture() for c in Message.from_goose(d).content]
    assert kinds == [
        TextContent, TextContent, ImageContent, DocumentContent,
        ThinkingContent, RedactedThinkingContent, ToolRequest, ToolRequest,
        ToolResponse, ToolResponse, ToolResponse,
        ToolConfirmationRequest, ActionRequired, ActionRequired, ActionRequired, ActionRequired,
        FrontendToolRequest, SystemNotification, ErrorContent, UnknownContent,
    ]


def test_unknown_content_is_kept_whole_and_written_back() -> None:
    msg = Message.from_goose(_fixture()[3])
    unknown = msg.unknown_items()
    assert [u.raw for u in unknown] == [{"type": "futureWidget", "payload": {"x": 1}}]
    assert msg.to_goose()["content"][-1] == {"type": "futureWidget", "payload": {"x": 1}}


def test_a_known_type_with_invalid_fields_is_kept_as_unknown_not_dropped() -> None:
    bad = {"type": "toolRequest", "toolCall": "not an object"}
    msg = Message.from_goose({"role": "assistant", "content": [bad]})
    assert isinstance(msg.content[0], UnknownContent)
    assert msg.to_goose()["content"] == [bad]


def test_unknown_top_level_and_metadata_keys_round_trip() -> None:
    d = _fixture()[3]
    out = Message.from_goose(d).to_goose()
    assert out["someFutureKey"] == 7
    assert out["metadata"]["operations"] == {"op": {"k": 1}}


def test_tool_request_and_response_shapes_are_read() -> None:
    req, bad_req = Message.from_goose(_fixture()[1]).tool_requests()
    assert (req.id, req.name, req.arguments) == ("call_1", "developer__shell",
                                                  {"command": "cargo test"})
    assert (bad_req.name, bad_req.tool_call.error) == (None, "invalid arguments")
    ok, legacy, failed = Message.from_goose(_fixture()[2]).tool_responses()
    assert ok.text() == "ok. 3 passed"
    assert (ok.tool_result.is_error, legacy.text(), failed.tool_result.is_error) == (
        False, "legacy shape", True)
    assert failed.text() == ""


def test_legacy_reasoning_becomes_thinking_with_an_empty_signature() -> None:
    msg = Message.from_goose({"role": "assistant", "content": [
        {"type": "reasoning", "text": "because"}, {"type": "reasoning"}]})
    assert [(type(c), c.thinking, c.signature) for c in msg.content] == [
        (ThinkingContent, "because", "")]


def test_unicode_tag_characters_are_stripped_from_text_on_load() -> None:
    hidden = "run\U000e0041\U000e0042 tests"
    msg = Message.from_goose({"role": "user", "content": [{"type": "text", "text": hidden}]})
    assert msg.concat_text() == "run tests"


def test_tool_arguments_that_are_not_an_object_are_wrapped_as_value() -> None:
    msg = Message.from_goose({"role": "assistant", "content": [{"type": "toolRequest", "id": "a",
        "toolCall": {"status": "success", "value": {"name": "t", "arguments": [1, 2]}}}]})
    assert msg.tool_requests()[0].arguments == {"value": [1, 2]}


def test_missing_visibility_flags_default_to_visible() -> None:
    msg = Message.from_goose({"role": "user", "content": [], "metadata": {}})
    assert (msg.is_user_visible, msg.is_agent_visible, msg.is_turn_context) == (True, True, False)
    assert msg.to_goose()["metadata"] == {}


def test_constructors_write_full_goose_json() -> None:
    msg = Message.user("hi", created=5).with_tool_response("c1", "out")
    assert msg.to_goose() == {
        "id": None, "role": "user", "created": 5,
        "content": [{"type": "text", "text": "hi"},
                    {"type": "toolResponse", "id": "c1", "toolResult": {
                        "status": "success",
                        "value": {"content": [{"type": "text", "text": "out"}],
                                  "isError": False}}}],
        "metadata": {"userVisible": True, "agentVisible": True},
    }
    assert Message.assistant("a").role == "assistant"


def test_concat_text_joins_only_text_items() -> None:
    msg = Message.from_goose(_fixture()[0])
    assert msg.concat_text() == "run the tests\nsecret for the user only"


def test_agent_projection_drops_user_only_text_and_tool_blocks() -> None:
    msg = Message.from_goose(_fixture()[0])
    assert msg.agent_projection().concat_text() == "run the tests"
    secret = Message.user().with_tool_response("c", "x")
    block = secret.content[0].tool_result.value.content[0]
    block.annotations = Annotations(audience=["user"])
    projected = Message.from_goose(secret.to_goose()).agent_projection()
    assert projected.tool_responses()[0].text() == ""


def test_agent_only_metadata_hides_from_the_user() -> None:
    meta = MessageMetadata.agent_only()
    assert meta.to_goose() == {"userVisible": False, "agentVisible": True}


def test_copy_with_is_a_separate_message_that_writes_the_same_shape():
    recorded = {"role": "user", "content": [{"type": "text", "text": "hi"}], "created": 5}
    original = Message.from_goose(recorded)
    copy = original.copy_with()
    assert copy is not original and copy.to_goose() == recorded == original.to_goose()
    copy.id = "changed"
    copy._shape["id"] = True  # the copy's shape is its own dict
    assert original.to_goose() == recorded
    assert copy.to_goose() == {"id": "changed", **recorded}
    renamed = original.copy_with(id="other", created=9)
    assert renamed.to_goose() == {"role": "user", "content": recorded["content"], "created": 9}
    assert original.created == 5 and original.id != "other"


_NESTED = {"s": "x", "n": 3, "f": 1.5, "b": True, "z": None, "l": [1, {"k": [None, "v"]}],
           "o": {"deep": {"deeper": []}}}


def test_the_json_typed_fields_take_every_json_shape_and_write_it_back() -> None:
    # arguments, actionRequired data, unknown items, structuredContent and top-level extras
    # are typed as JSON: every JSON shape, nested, validates and comes back unchanged.
    recorded = {"role": "assistant", "created": 1, "id": "m", "metadata": {}, "extraKey": _NESTED,
                "content": [
                    {"type": "toolRequest", "id": "c",
                     "toolCall": {"status": "success", "value": {"name": "t",
                                                                 "arguments": _NESTED}}},
                    {"type": "toolResponse", "id": "c", "toolResult": {"status": "success",
                     "value": {"content": [], "structuredContent": _NESTED}}},
                    {"type": "actionRequired", "data": _NESTED},
                    {"type": "somethingNew", "payload": _NESTED}]}
    msg = Message.from_goose(json.loads(json.dumps(recorded)))
    assert msg.tool_requests()[0].arguments == _NESTED
    assert msg.extra == {"extraKey": _NESTED}
    assert isinstance(msg.content[2], ActionRequired) and msg.content[2].data == _NESTED
    assert msg.to_goose() == recorded
