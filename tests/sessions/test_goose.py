"""Goose importers: sessions.db (built here with Goose's schema), legacy JSONL and session JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.goose_db_helpers import build_goose_db
from workbench.errors import ConfigError, SessionFormatError
from workbench.messages import Message, MessageMetadata
from workbench.sessions import detect_format, load_session, load_sessions
from workbench.sessions.importers._goose_db import list_goose_sessions

HIDDEN = {"userVisible": True, "agentVisible": False}
AGENT_ONLY = {"userVisible": False, "agentVisible": True}
TEXT = lambda t: [{"type": "text", "text": t}]  # noqa: E731
CALL = [{"type": "toolRequest", "id": "c1", "toolCall": {"status": "success", "value": {
    "name": "developer__shell", "arguments": {"command": "cargo test"}}}}]
RESULT = [{"type": "toolResponse", "id": "c1", "toolResult": {"status": "success", "value": {
    "content": [{"type": "text", "text": "ok. 3 passed"}], "isError": False}}}]


@pytest.fixture
def compacted_db(tmp_path: Path) -> Path:
    rows = [
        ("user", TEXT("fix the parser"), 1000, HIDDEN),
        ("assistant", CALL, 1001, HIDDEN),
        ("user", RESULT, 1002, HIDDEN),
        ("user", TEXT("# Conversation Summary\n\n## User Intent\n- fix it"), 1003, AGENT_ONLY),
        ("assistant", TEXT("Your context was compacted. Continue."), 1004, AGENT_ONLY),
        ("user", TEXT("fix the parser"), 1004, AGENT_ONLY),
        ("system", TEXT("ignored"), 1005, None),
        ("assistant", TEXT("on it"), 1_772_000_006_000, "{not json"),
    ]
    ledger = [("20260301_1", 1001, "gpt-4o", 100, 10, 110, 5, 0, 0.01, "provider_reported", 0),
              ("20260301_1", 1003, "gpt-4o", 300, 30, 330, 0, 0, 0.02, "estimated", 1)]
    return build_goose_db(tmp_path / "sessions.db", {
        "20260301_1": rows, "20260301_2": [("user", TEXT("hello"), 2000, None)]}, ledger)


def test_sessions_db_is_detected_and_listed(compacted_db):
    assert detect_format(compacted_db) == "goose-db"
    assert list_goose_sessions(compacted_db) == [
        {"id": "20260301_1", "name": "session 20260301_1", "created": "2026-03-01 10:00:00",
         "messages": 8},
        {"id": "20260301_2", "name": "session 20260301_2", "created": "2026-03-02 10:00:00",
         "messages": 1}]


def test_sessions_db_loads_every_session_by_default_and_one_by_id(compacted_db):
    assert [s.id for s in load_sessions(compacted_db)] == ["20260301_1", "20260301_2"]
    s = load_session(compacted_db, session_id="20260301_2")
    assert (s.id, s.format, s.messages[0].concat_text()) == ("20260301_2", "goose-db", "hello")


def test_sessions_db_keeps_visibility_orders_by_time_and_records_the_compaction(compacted_db):
    s = load_session(compacted_db, session_id="20260301_1")
    # rows come in SQL order (created_timestamp, id); the system row is skipped
    assert [m.concat_text()[:14] for m in s.messages] == [
        "fix the parser", "", "", "# Conversation", "Your context w", "fix the parser", "on it"]
    assert s.messages[6].created == 1_772_000_006  # milliseconds above 1e10 are divided
    assert [m.is_agent_visible for m in s.messages] == [False] * 3 + [True] * 4
    assert s.messages[6].metadata.to_goose() == {"userVisible": True, "agentVisible": True}
    assert s.messages[0].id == "msg_20260301_1_0"
    assert s.meta["agent_invisible_messages"] == 3
    assert s.meta["compactions"] == [{"index": 3, "trigger": "auto", "pre_tokens": None}]
    assert s.meta["reference_summaries"][0]["text"].startswith("# Conversation Summary")
    assert (s.meta["skipped_roles"], s.meta["metadata_defaults"]) == (1, 1)
    assert s.meta["compaction_calls"] == 1
    assert s.meta["usage"]["input_tokens"] == 400 and s.meta["usage"]["cost"] == pytest.approx(0.03)
    assert s.meta["models"] == ["gpt-4o"]
    assert s.messages[1].tool_requests()[0].arguments == {"command": "cargo test"}


def test_sessions_db_bad_content_row_raises_or_is_skipped(tmp_path):
    db = build_goose_db(tmp_path / "sessions.db", {"s1": [
        ("user", TEXT("hi"), 1, None), ("assistant", "[oops", 2, None)]})
    with pytest.raises(SessionFormatError) as info:
        load_sessions(db)
    assert str(info.value) == (f"{db}#s1:messages row 2: invalid JSON: Expecting value: line 1 "
                               "column 2 (char 1) (expected a JSON array of Goose content items "
                               "in content_json)")
    with pytest.warns(UserWarning, match="skipped 1 bad record"):
        [s] = load_sessions(db, errors="skip")
    assert len(s.messages) == 1 and len(s.meta["warnings"]) == 1


def test_sessions_db_unknown_session_id_lists_the_known_ones(compacted_db):
    with pytest.raises(SessionFormatError, match="no session 'nope'; sessions in this file: "
                                                 "20260301_1, 20260301_2"):
        load_sessions(compacted_db, session_id="nope")
    with pytest.raises(ConfigError):
        load_sessions(compacted_db, index=0)


def _legacy_lines() -> list[dict]:
    meta = {"working_dir": "/w", "description": "parser fix", "message_count": 3,
            "total_tokens": 42}
    msgs = [Message.user("fix the parser", created=10, id="m1"),
            Message.assistant(created=11, id="m2").with_tool_request("c1", "shell", {"c": "ls"}),
            Message.user(created=12, id="m3").with_tool_response("c1", "a.txt")]
    return [meta] + [m.to_goose() for m in msgs]


def test_legacy_jsonl_reads_metadata_line_and_messages(tmp_path):
    path = tmp_path / "20250101_120000.jsonl"
    lines = _legacy_lines()
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert detect_format(path) == "goose-jsonl"
    s = load_session(path)
    assert s.id == "20250101_120000" and s.meta["name"] == "parser fix"
    assert [m.to_goose() for m in s.messages] == lines[1:]
    assert s.meta["goose_metadata"]["total_tokens"] == 42


def test_legacy_jsonl_bad_line_is_an_error_unlike_goose_or_a_counted_skip(tmp_path):
    path = tmp_path / "s.jsonl"
    lines = [json.dumps(x) for x in _legacy_lines()]
    lines.insert(2, '{"role": "system", "content": []}')
    lines.insert(3, "garbage")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="goose-jsonl")
    assert str(info.value) == (
        f"{path}:3: message role is 'system' (expected a Goose message object {{id, role: "
        "user|assistant, created, content: [items], metadata})")
    with pytest.warns(UserWarning, match="skipped 2 bad record"):
        s = load_session(path, format="goose-jsonl", errors="skip")
    assert len(s.messages) == 3
    assert s.meta["warnings"][1].startswith(f"{path}:4: invalid JSON: Expecting value")


def test_goose_json_reads_an_export_a_bare_list_and_its_own_output(tmp_path):
    msgs = [m for m in _legacy_lines()[1:]]
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"id": "20260301_1", "name": "n", "working_dir": "/w",
                                  "conversation": msgs}), encoding="utf-8")
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(msgs), encoding="utf-8")
    assert detect_format(export) == detect_format(bare) == "goose-json"
    a, b = load_session(export), load_session(bare)
    assert a.id == "20260301_1" and b.id == "bare"
    assert [m.to_goose() for m in a.messages] == [m.to_goose() for m in b.messages] == msgs
    assert a.meta["goose_session"] == {"id": "20260301_1", "name": "n", "working_dir": "/w"}
    again = load_session(a.write_goose_json(tmp_path / "again.json"))
    assert again.format == "goose-json"
    assert [m.to_goose() for m in again.messages] == msgs


def test_db_session_round_trips_through_goose_json(compacted_db, tmp_path):
    s = load_session(compacted_db)
    back = load_session(s.write_goose_json(tmp_path / "x.json"))
    assert [m.to_goose() for m in back.messages] == [m.to_goose() for m in s.messages]
    assert back.meta["compactions"] == s.meta["compactions"]
    assert not back.messages[0].is_agent_visible


def test_goose_json_without_a_conversation_says_what_it_expected(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"id": "a"}', encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="goose-json")
    assert str(info.value) == (
        f"{path}: no conversation list: found an object without them (expected a Goose session "
        "object with a 'conversation' (or 'messages') list of Goose messages, or a JSON list of "
        "Goose messages)")


def test_legacy_conversation_compacted_item_is_kept_and_marks_a_compaction(tmp_path):
    msgs = [Message.user("a", created=1).to_goose(),
            {"role": "assistant", "created": 2, "content": [
                {"type": "conversationCompacted", "msg": "compacted"}],
             "metadata": MessageMetadata().to_goose()}]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in msgs), encoding="utf-8")
    s = load_session(path)
    assert s.messages[1].unknown_items()[0].raw["type"] == "conversationCompacted"
    assert s.meta["compactions"] == [{"index": 1, "trigger": None, "pre_tokens": None,
                                      "marker": "conversationCompacted"}]
