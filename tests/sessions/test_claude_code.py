"""Claude Code importer: real transcripts checked against plain JSON facts, plus synthetic edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.errors import SessionFormatError
from workbench.messages import ImageContent, ThinkingContent, ToolRequest, UnknownContent
from workbench.sessions import load_session, load_sessions

MAIN = {"4d5611e5-241a-462a-8d15-5122611a9569": ("auto", 170251),
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04": ("manual", 142431)}


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _blocks(records: list[dict], kind: str) -> list[dict]:
    out = []
    for r in records:
        content = (r.get("message") or {}).get("content")
        if isinstance(content, list):
            out += [b for b in content if b.get("type") == kind]
    return out


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _asst(mid: str, block: dict, uuid: str, usage: dict | None = None) -> dict:
    message = {"id": mid, "model": "claude-opus-4-6", "role": "assistant", "content": [block],
               "usage": usage or {"input_tokens": 1, "output_tokens": 5,
                                  "cache_read_input_tokens": 10, "cache_creation_input_tokens": 2}}
    return {"type": "assistant", "uuid": uuid, "sessionId": "s1",
            "timestamp": "2026-02-12T16:00:00.000Z", "message": message}


def _user(content, uuid: str, **flags) -> dict:
    return {"type": "user", "uuid": uuid, "sessionId": "s1", "parentUuid": None,
            "timestamp": "2026-02-12T16:00:01.000Z",
            "message": {"role": "user", "content": content}, **flags}


def _result(tool_id: str, content, uuid: str, is_error: bool = False) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error:
        block["is_error"] = True
    return _user([block], uuid)


@pytest.fixture
def transcripts(shared_sessions: Path) -> Path:
    return shared_sessions / "claude-code" / "test" / "fixtures" / "transcripts"


@pytest.mark.parametrize("stem", sorted(MAIN))
def test_real_transcript_keeps_every_tool_call_paired_with_its_result(transcripts, stem):
    path = transcripts / f"{stem}.jsonl"
    records = _records(path)
    uses = {b["id"] for b in _blocks(records, "tool_use")}
    results = _blocks(records, "tool_result")
    session = load_session(path)
    requests = [r for m in session.messages for r in m.tool_requests()]
    responses = {r.id: r for m in session.messages for r in m.tool_responses()}
    assert len(requests) == len(uses)
    assert {r.id for r in requests} == uses
    assert set(responses) == uses
    assert sum(r.tool_result.is_error for r in responses.values()) == sum(
        bool(b.get("is_error")) for b in results)
    assert session.format == "claude-code" and session.id == stem


@pytest.mark.parametrize("stem", sorted(MAIN))
def test_real_transcript_merges_split_assistant_records_by_message_id(transcripts, stem):
    path = transcripts / f"{stem}.jsonl"
    records = _records(path)
    ids = list(dict.fromkeys(r["message"]["id"] for r in records if r["type"] == "assistant"))
    users = [r for r in records if r["type"] == "user"]
    session = load_session(path)
    assert [m.id for m in session.messages if m.role == "assistant"] == ids
    assert sum(m.role == "user" for m in session.messages) == len(users)
    # every tool request comes before its response
    seen: set[str] = set()
    for m in session.messages:
        for resp in m.tool_responses():
            assert resp.id in seen, resp.id
        seen |= {r.id for r in m.tool_requests()}


@pytest.mark.parametrize("stem", sorted(MAIN))
def test_real_transcript_records_its_one_compaction_and_two_reference_summaries(transcripts, stem):
    path = transcripts / f"{stem}.jsonl"
    records = _records(path)
    boundaries = [r for r in records if r.get("subtype") == "compact_boundary"]
    acompact = next((transcripts / stem / "subagents").glob("agent-acompact-*.jsonl"))
    answer = [r for r in _records(acompact) if r["type"] == "assistant"][-1]
    answer_text = "".join(b["text"] for b in answer["message"]["content"] if b["type"] == "text")
    session = load_session(path)
    trigger, pre = MAIN[stem]
    assert len(boundaries) == 1
    [point] = session.meta["compactions"]
    assert (point["trigger"], point["pre_tokens"]) == (trigger, pre)
    summary_msg = session.messages[point["index"]]
    assert summary_msg.metadata.model_extra == {"compactSummary": True}
    assert summary_msg.concat_text().startswith("This session is being continued from a previous")
    refs = session.meta["reference_summaries"]
    assert [r["source"] for r in refs] == ["compact_summary", acompact.name]
    assert refs[1]["text"] == answer_text and refs[1]["index"] == point["index"]
    assert "<analysis>" in refs[1]["text"]


def test_real_transcript_first_human_request_models_and_usage(transcripts):
    path = transcripts / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
    records = _records(path)
    last_usage = {r["message"]["id"]: r["message"]["usage"] for r in records
                  if r["type"] == "assistant"}
    session = load_session(path)
    first = next(m for m in session.messages if m.role == "user" and m.concat_text())
    assert first.concat_text() == ("Work on bead spotter-4te. Run bd show spotter-4te to see the "
                                   "issue details and bd ready to find available subtasks. Start "
                                   "with the first ready task.")
    assert session.meta["models"] == ["claude-opus-4-6", "claude-haiku-4-5-20251001"]
    assert session.meta["usage"]["output_tokens"] == sum(
        u["output_tokens"] for u in last_usage.values())
    assert session.meta["usage"]["cache_read_input_tokens"] == sum(
        u["cache_read_input_tokens"] for u in last_usage.values())
    flagged = [m for m in session.messages if (m.metadata.model_extra or {}).get("isMeta")]
    assert len(flagged) == sum(1 for r in records if r.get("isMeta")) == 2


def test_include_subagents_returns_the_parent_then_its_sub_agents(transcripts):
    sessions = load_sessions(transcripts / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
                             include_subagents=True)
    assert [s.id for s in sessions] == ["4d5611e5-241a-462a-8d15-5122611a9569",
                                        "4d5611e5-241a-462a-8d15-5122611a9569/agent-a2898e3"]
    sub = sessions[1]
    assert sub.meta["parent_session"] == sessions[0].id
    assert sub.meta["models"] == ["claude-sonnet-4-5-20250929"]
    records = _records(Path(sub.path))
    assert sum(len(m.tool_requests()) for m in sub.messages) == len(_blocks(records, "tool_use"))


def test_real_transcript_round_trips_through_goose_json(transcripts, tmp_path):
    session = load_session(transcripts / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")
    out = session.write_goose_json(tmp_path / "export.json")
    back = load_session(out, format="goose-json")
    assert back.id == session.id
    assert [m.to_goose() for m in back.messages] == [m.to_goose() for m in session.messages]
    assert {k: v for k, v in back.meta.items() if k != "exported_from"} == json.loads(
        json.dumps(session.meta))
    assert back.meta["exported_from"] == {"format": "claude-code", "path": session.path}


def test_interleaved_parallel_tool_calls_make_one_assistant_message(tmp_path):
    path = _write(tmp_path / "s.jsonl", [
        _user("list files", "u0"),
        _asst("msg_1", {"type": "thinking", "thinking": "plan", "signature": "sig"}, "a1"),
        _asst("msg_1", {"type": "tool_use", "id": "t1", "name": "Bash",
                        "input": {"command": "ls"}}, "a2"),
        _result("t1", "a.txt", "u1"),
        _asst("msg_1", {"type": "tool_use", "id": "t2", "name": "Read",
                        "input": {"file_path": "a.txt"}}, "a3",
              usage={"input_tokens": 1, "output_tokens": 9, "cache_read_input_tokens": 10,
                     "cache_creation_input_tokens": 2}),
        _result("t2", [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}], "u2",
                is_error=True),
        _asst("msg_2", {"type": "text", "text": "done"}, "a4"),
    ])
    s = load_session(path)
    assert [(m.role, m.id) for m in s.messages] == [
        ("user", "u0"), ("assistant", "msg_1"), ("user", "u1"), ("user", "u2"),
        ("assistant", "msg_2")]
    thinking, call1, call2 = s.messages[1].content
    assert isinstance(thinking, ThinkingContent) and thinking.signature == "sig"
    assert isinstance(call1, ToolRequest) and (call1.id, call1.name) == ("t1", "Bash")
    assert call2.arguments == {"file_path": "a.txt"}
    [bad] = s.messages[3].tool_responses()
    assert bad.text() == "one\ntwo"
    assert bad.to_goose()["toolResult"]["value"]["isError"] is True
    assert s.messages[2].tool_responses()[0].tool_result.is_error is False
    # usage counts each response once, with its last record's numbers
    assert s.meta["usage"]["output_tokens"] == 9 + 5
    assert s.meta["usage"]["input_tokens"] == 2 * (1 + 10 + 2)


def test_unknown_blocks_and_records_are_kept_and_ui_records_are_counted(tmp_path):
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "AAAA"}}
    odd = {"type": "server_tool_use", "id": "x", "name": "web_search"}
    path = _write(tmp_path / "s.jsonl", [
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        _user([{"type": "text", "text": "look"}, image], "u0"),
        {"type": "progress", "uuid": "p", "sessionId": "s1", "data": {"type": "hook_progress"}},
        _asst("msg_1", odd, "a1"),
        {"type": "brand-new", "uuid": "n1", "sessionId": "s1", "payload": 1},
    ])
    s = load_session(path)
    assert isinstance(s.messages[0].content[1], ImageContent)
    assert s.messages[1].content == [UnknownContent(raw=odd)]
    assert s.messages[2].unknown_items()[0].raw["type"] == "brand-new"
    assert s.meta["skipped_records"] == {"file-history-snapshot": 1, "progress": 1}


def test_a_malformed_line_names_file_line_and_parser_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_user("hi", "u0")) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="claude-code")
    assert str(info.value) == (
        f"{path}:2: invalid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1) (expected one Claude Code transcript record (a JSON object) "
        "per line)")
    assert (info.value.file, info.value.line) == (str(path), 2)


def test_a_record_of_the_wrong_shape_names_the_record_and_what_was_expected(tmp_path):
    path = _write(tmp_path / "bad.jsonl", [{"type": "assistant", "uuid": "a9", "sessionId": "s"}])
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    assert str(info.value) == (f"{path}:1: assistant record a9 has no message content "
                               "(expected message: {role, content: string or list of blocks})")


def test_skip_mode_counts_bad_lines_and_warns_once(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([json.dumps(_user("hi", "u0")), "{", "[1]", ""]), encoding="utf-8")
    with pytest.warns(UserWarning, match=r"skipped 2 bad record\(s\)") as caught:
        s = load_session(path, errors="skip")
    assert len(caught) == 1
    assert len(s.meta["warnings"]) == 2 and s.meta["warnings"][1].startswith(f"{path}:3: ")
    assert [m.concat_text() for m in s.messages] == ["hi"]


def test_an_8_mb_tool_output_imports_whole(tmp_path):
    big = "x" * (8 * 1024 * 1024)
    path = _write(tmp_path / "big.jsonl", [
        _asst("msg_1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}, "a1"),
        _result("t1", big, "u1"),
    ])
    s = load_session(path)
    assert len(s.messages[1].tool_responses()[0].text()) == 8 * 1024 * 1024
