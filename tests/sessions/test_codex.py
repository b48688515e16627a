"""Codex CLI rollout importer, on a small hand-written rollout in the 2025 envelope format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.errors import SessionFormatError
from workbench.messages import RedactedThinkingContent, ThinkingContent, UnknownContent
from workbench.sessions import detect_format, load_session

T = "2025-10-01T12:00:00.000Z"


def line(kind: str, payload: dict) -> dict:
    return {"timestamp": T, "type": kind, "payload": payload}


def item(payload: dict) -> dict:
    return line("response_item", payload)


def text_msg(role: str, text: str) -> dict:
    part = "output_text" if role == "assistant" else "input_text"
    return item({"type": "message", "role": role, "content": [{"type": part, "text": text}]})


def rollout() -> list[dict]:
    usage = {"input_tokens": 9000, "cached_input_tokens": 4000, "output_tokens": 700,
             "reasoning_output_tokens": 300, "total_tokens": 9700}
    return [
        line("session_meta", {"id": "0199a1b2-c3d4", "timestamp": T, "cwd": "/repo",
                              "originator": "codex_cli_rs", "cli_version": "0.44.0",
                              "instructions": None, "model_provider": "openai"}),
        text_msg("developer", "<permissions instructions>sandboxed</permissions instructions>"),
        text_msg("user", "<environment_context><cwd>/repo</cwd></environment_context>"),
        line("turn_context", {"cwd": "/repo", "approval_policy": "on-request",
                              "model": "gpt-5-codex", "effort": "medium"}),
        text_msg("user", "Fix the failing test in parser.py"),
        line("event_msg", {"type": "user_message", "message": "Fix the failing test in parser.py"}),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Run tests**"}],
              "encrypted_content": "gAAAA..."}),
        item({"type": "function_call", "name": "shell", "call_id": "call_1",
              "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"]})}),
        item({"type": "function_call", "name": "shell", "call_id": "call_2",
              "arguments": json.dumps({"command": ["bash", "-lc", "cat parser.py"]})}),
        item({"type": "function_call_output", "call_id": "call_1", "output": json.dumps(
            {"output": "1 failed", "metadata": {"exit_code": 1, "duration_seconds": 0.4}})}),
        item({"type": "function_call_output", "call_id": "call_2",
              "output": "Exit code: 0\nWall time: 0.1 seconds\nOutput:\ndef parse(): ..."}),
        line("event_msg", {"type": "token_count", "info": None}),
        item({"type": "reasoning", "summary": [], "encrypted_content": "gBBBB..."}),
        item({"type": "custom_tool_call", "call_id": "call_3", "name": "apply_patch",
              "input": "*** Begin Patch\n*** End Patch", "status": "completed"}),
        item({"type": "custom_tool_call_output", "call_id": "call_3", "output": "Done!"}),
        item({"type": "local_shell_call", "call_id": "call_4", "status": "completed",
              "action": {"type": "exec", "command": ["pytest"], "timeout_ms": 1000}}),
        item({"type": "function_call_output", "call_id": "call_4",
              "output": {"content": "boom", "success": False}}),
        line("compacted", {"message": "Summary: the parser test was fixed."}),
        text_msg("assistant", "Fixed: parse() now handles empty input."),
        item({"type": "web_search_call", "id": "ws_1", "status": "completed"}),
        line("event_msg", {"type": "agent_message", "message": "Fixed"}),
        line("event_msg", {"type": "token_count", "info": {
            "total_token_usage": usage, "last_token_usage": dict(usage, total_tokens=5000),
            "model_context_window": 272000}}),
    ]


def write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
                    encoding="utf-8")
    return path


def test_rollout_is_detected_and_grouped_into_goose_messages(tmp_path):
    path = write(tmp_path / "rollout-2025-10-01T12-00-00-0199a1b2.jsonl", rollout())
    assert detect_format(path) == "codex"
    s = load_session(path)
    assert s.id == "0199a1b2-c3d4" and s.format == "codex"
    assert s.meta["system_prompt"] == "<permissions instructions>sandboxed</permissions instructions>"
    shape = [(m.role, [type(c).__name__ for c in m.content]) for m in s.messages]
    assert shape == [
        ("user", ["TextContent"]),
        ("user", ["TextContent"]),
        ("assistant", ["ThinkingContent", "ToolRequest", "ToolRequest"]),
        ("user", ["ToolResponse", "ToolResponse"]),
        ("assistant", ["RedactedThinkingContent", "ToolRequest"]),
        ("user", ["ToolResponse"]),
        ("assistant", ["ToolRequest"]),
        ("user", ["ToolResponse"]),
        ("assistant", ["TextContent", "UnknownContent"]),
    ]
    thinking = s.messages[2].content[0]
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "**Run tests**"
    assert thinking.to_goose()["encryptedContent"] == "gAAAA..."
    assert isinstance(s.messages[4].content[0], RedactedThinkingContent)
    call = s.messages[2].tool_requests()[0]
    assert (call.id, call.name, call.arguments) == (
        "call_1", "shell", {"command": ["bash", "-lc", "pytest -q"]})
    assert s.messages[4].tool_requests()[0].arguments == {"input": "*** Begin Patch\n*** End Patch"}
    assert s.messages[6].tool_requests()[0].name == "local_shell"
    errors = [r.tool_result.is_error for m in s.messages for r in m.tool_responses()]
    assert errors == [True, False, False, True]
    assert s.messages[7].tool_responses()[0].text() == "boom"
    assert isinstance(s.messages[8].content[1], UnknownContent)


def test_rollout_meta_has_models_usage_and_the_compaction_point(tmp_path):
    s = load_session(write(tmp_path / "r.jsonl", rollout()))
    assert s.meta["models"] == ["gpt-5-codex"]
    assert s.meta["usage"] == {"model": "gpt-5-codex", "input_tokens": 9000, "output_tokens": 700,
                               "total_tokens": 9700, "cache_read_input_tokens": 4000,
                               "cache_write_input_tokens": None, "cost": None,
                               "extra": {"reasoning_output_tokens": 300}}
    assert s.meta["last_usage"]["total_tokens"] == 5000
    assert s.meta["context_window"] == 272000
    assert s.meta["compactions"] == [{"index": 8, "trigger": None, "pre_tokens": None}]
    assert s.meta["reference_summaries"] == [
        {"index": 8, "source": "compacted", "text": "Summary: the parser test was fixed."}]
    assert (s.meta["cwd"], s.meta["cli_version"]) == ("/repo", "0.44.0")


def test_rollout_round_trips_through_goose_json(tmp_path):
    s = load_session(write(tmp_path / "r.jsonl", rollout()))
    back = load_session(s.write_goose_json(tmp_path / "r.json"), format="goose-json")
    assert [m.to_goose() for m in back.messages] == [m.to_goose() for m in s.messages]


def test_rollout_malformed_line_and_wrong_shape_name_the_line(tmp_path):
    path = write(tmp_path / "r.jsonl", rollout()[:3] + ['{"type": "response_item", "payl'])
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="codex")
    assert str(info.value) == (
        f"{path}:4: invalid JSON: Invalid control character at: line 1 column 32 (char 31) "
        "(expected one Codex rollout line {timestamp, type, payload} per line)")
    path = write(tmp_path / "r2.jsonl", rollout()[:2] + [{"type": "response_item", "payload": 3}])
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="codex")
    assert str(info.value) == (f"{path}:3: line is not a {{type, payload}} object "
                               "(expected {timestamp, type, payload: {...}})")


def test_rollout_skip_mode_counts_bad_lines(tmp_path):
    path = write(tmp_path / "r.jsonl", rollout()[:5] + ["nope", "[]"])
    with pytest.warns(UserWarning, match=r"skipped 2 bad record\(s\)"):
        s = load_session(path, errors="skip")
    assert len(s.meta["warnings"]) == 2
    assert s.messages[-1].concat_text() == "Fix the failing test in parser.py"


def test_rollout_with_an_8_mb_tool_output_imports_whole(tmp_path):
    big = "y" * (8 * 1024 * 1024)
    path = write(tmp_path / "r.jsonl", rollout()[:1] + [
        item({"type": "function_call", "name": "shell", "call_id": "c", "arguments": "{}"}),
        item({"type": "function_call_output", "call_id": "c", "output": big})])
    s = load_session(path)
    assert len(s.messages[1].tool_responses()[0].text()) == len(big)
