"""OpenAI chat importer: JSON list, {"messages": [...]} and JSONL inputs."""

from __future__ import annotations

import json

import pytest

from workbench.errors import SessionFormatError
from workbench.messages import ImageContent, UnknownContent
from workbench.sessions import detect_format, load_session

CHAT = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": [{"type": "text", "text": "run the tests"},
                                 {"type": "image_url",
                                  "image_url": {"url": "data:image/png;base64,AAAA"}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function",
         "function": {"name": "shell", "arguments": "{\"cmd\": \"pytest\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "read", "arguments": "{bad"}}]},
    {"role": "tool", "tool_call_id": "call_a", "content": "3 passed"},
    {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "x = 1"}]},
    {"role": "assistant", "content": "All green."},
]


def test_json_list_maps_system_tools_and_parts(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT, indent=2), encoding="utf-8")
    assert detect_format(path) == "openai-chat"
    s = load_session(path)
    assert s.meta["system_prompt"] == "You are a coding agent."
    assert [m.role for m in s.messages] == ["user", "assistant", "user", "assistant"]
    assert isinstance(s.messages[0].content[1], ImageContent)
    a, b = s.messages[1].tool_requests()
    assert (a.id, a.name, a.arguments) == ("call_a", "shell", {"cmd": "pytest"})
    assert b.arguments == {"value": "{bad"}
    assert [(r.id, r.text()) for r in s.messages[2].tool_responses()] == [
        ("call_a", "3 passed"), ("call_b", "x = 1")]
    assert s.messages[3].concat_text() == "All green."


def test_messages_object_and_jsonl_give_the_same_conversation(tmp_path):
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"model": "gpt-4o", "messages": CHAT}), encoding="utf-8")
    lines = tmp_path / "chat.jsonl"
    lines.write_text("".join(json.dumps(m) + "\n" for m in CHAT), encoding="utf-8")
    assert detect_format(doc) == detect_format(lines) == "openai-chat"
    a, b = load_session(doc), load_session(lines)
    strip = lambda s: [{k: v for k, v in m.to_goose().items() if k != "created"}  # noqa: E731
                       for m in s.messages]
    assert strip(a) == strip(b)
    assert a.meta["models"] == ["gpt-4o"]


def test_unknown_parts_are_kept(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"role": "user", "content": [{"type": "input_audio", "x": 1}]}]),
                    encoding="utf-8")
    [msg] = load_session(path).messages
    assert msg.content == [UnknownContent(raw={"type": "input_audio", "x": 1})]


def test_bad_role_and_bad_json_name_where(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "robot", "content": "x"}\n',
                    encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="openai-chat")
    assert str(info.value) == (f"{path}:2: message has role 'robot' (expected an OpenAI chat "
                               "message {role, content, tool_calls?, tool_call_id?})")
    doc = tmp_path / "c.json"
    doc.write_text('[\n {"role": "user",\n  "content": }\n]', encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_session(doc, format="openai-chat")
    assert str(info.value) == (
        f"{doc}:3: invalid JSON: Expecting value: line 3 column 14 (char 33) (expected a JSON "
        'list of OpenAI chat messages, {"messages": [...]}, or one message per line)')


def test_skip_mode_drops_bad_messages_with_one_warning(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, 7, {"role": "x"}]),
                    encoding="utf-8")
    with pytest.warns(UserWarning, match=r"skipped 2 bad record\(s\)"):
        s = load_session(path, errors="skip")
    assert [m.concat_text() for m in s.messages] == ["hi"]
    assert s.meta["warnings"][0] == (f"{path}:messages[1]: message has a JSON int (expected an "
                                     "OpenAI chat message {role, content, tool_calls?, "
                                     "tool_call_id?})")


def test_chat_round_trips_through_goose_json(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT), encoding="utf-8")
    s = load_session(path)
    back = load_session(s.write_goose_json(tmp_path / "g.json"), format="goose-json")
    assert [m.to_goose() for m in back.messages] == [m.to_goose() for m in s.messages]
    assert back.meta == {**s.meta, "exported_from": {"format": "openai-chat", "path": str(path)}}
