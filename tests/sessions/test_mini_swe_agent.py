"""mini-swe-agent trajectory import: fenced bash calls, return codes, usage, report, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.errors import SessionFormatError
from workbench.messages import ThinkingContent, UnknownContent
from workbench.sessions import detect_format, load_session


def _trajs(root: Path) -> list[Path]:
    return sorted((root / "mini-swe-agent").rglob("*.traj.json"))


def test_every_real_trajectory_loads_with_paired_calls_and_error_flags(
        shared_sessions: Path) -> None:
    files = _trajs(shared_sessions)
    assert len(files) == 5
    for path in files:
        data = json.loads(path.read_text())
        records = data["messages"]
        single = [r for r in records if r["role"] == "assistant"
                  and len(re.findall(r"```bash\s*\n.*?\n```", r["content"], re.S)) == 1]
        failed = [r for r in records if r["role"] == "user"
                  and (m := re.match(r"<returncode>(\d+)</returncode>", r["content"]))
                  and m.group(1) != "0"]
        session = load_session(path)
        assert detect_format(path) == "mini-swe-agent", path
        requests = [r for m in session.messages for r in m.tool_requests()]
        responses = {r.id: r for m in session.messages for r in m.tool_responses()}
        assert len(requests) == len(single), path
        assert [r.arguments["command"] for r in requests] == [
            re.search(r"```bash\s*\n(.*?)\n```", r["content"], re.S).group(1) for r in single]
        assert all(r.id in responses for r in requests), path
        assert sum(r.tool_result.is_error for r in responses.values()) == len(failed), path
        assert session.messages[0].concat_text() == records[1]["content"], path
        assert session.meta["system_prompt"] == records[0]["content"], path
        # the last user message (raw git diff) answers the submit command
        assert responses[requests[-1].id].text() == records[-1]["content"], path
        usages = [r["extra"]["response"]["usage"] for r in records if r.get("extra")]
        assert session.meta["usage"]["input_tokens"] == sum(u["prompt_tokens"] for u in usages)
        assert session.meta["usage"]["output_tokens"] == sum(
            u["completion_tokens"] for u in usages)
        assert session.meta["usage"]["cost"] == pytest.approx(sum(u["cost"] for u in usages))
        report = path.parents[2] / "logs" / data["instance_id"] / "report.json"
        assert session.meta["report"] == json.loads(report.read_text()), path


def test_the_largest_run_counts_25_failed_commands_and_keeps_reasoning(
        shared_sessions: Path) -> None:
    path = next(p for p in _trajs(shared_sessions) if "pytest-dev__pytest-6197" in p.name)
    session = load_session(path)
    responses = [r for m in session.messages for r in m.tool_responses()]
    assert sum(r.tool_result.is_error for r in responses) == 25
    assert len(responses) == 91
    first = next(m for m in session.messages if m.role == "assistant")
    assert isinstance(first.content[0], ThinkingContent)
    assert first.content[0].thinking.startswith("**Considering the Bug's Core**")
    assert first.concat_text() == ("THOUGHT: I will start by listing the files in the current "
                                   "directory to understand the project structure.")
    # the reply with two bash blocks ran nothing: it and the format error stay text
    fmt = next(m for m in session.messages if m.concat_text().startswith(
        "Please always provide EXACTLY ONE action"))
    assert fmt.role == "user" and not fmt.has_tool_response()
    assert session.meta["models"] == ["google/gemini-3-pro-preview"]


def _traj(tmp_path: Path, payload: str) -> Path:
    path = tmp_path / "x.traj.json"
    path.write_text(payload)
    return path


def test_timeouts_and_nonzero_return_codes_are_errors(tmp_path: Path) -> None:
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
            {"role": "assistant", "content": "THOUGHT: a\n\n```bash\nsleep 99\n```"},
            {"role": "user", "content": "The last command <command>sleep 99</command> timed out"},
            {"role": "assistant", "content": "THOUGHT: b\n\n```bash\nfalse\n```"},
            {"role": "user", "content": "<returncode>1</returncode>\n<output>\n</output>"},
            {"role": "assistant", "content": "THOUGHT: c\n\n```bash\ntrue\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
            {"role": "wizard", "content": "?"}]
    path = _traj(tmp_path, json.dumps({"info": {"mini_version": "1"}, "messages": msgs}))
    session = load_session(path)
    flags = [r.tool_result.is_error for m in session.messages for r in m.tool_responses()]
    assert flags == [True, True, False]
    assert [r.id for m in session.messages for r in m.tool_requests()] == [
        "call_1", "call_2", "call_3"]
    assert isinstance(session.messages[-1].content[0], UnknownContent)
    assert "report" not in session.meta


def test_bad_input_names_the_problem(tmp_path: Path) -> None:
    path = _traj(tmp_path, '{"messages": [1,}')
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="mini-swe-agent")
    assert str(info.value) == (
        f"{path}:1: malformed JSON: Expecting value at column 17 (expected a mini-swe-agent "
        'trajectory JSON object with "messages")')
    path = _traj(tmp_path, "[]")
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="mini-swe-agent")
    assert str(info.value) == (f"{path}: the top level is a JSON array, not an object "
                               '(expected a mini-swe-agent trajectory JSON object with "messages")')
    path = _traj(tmp_path, json.dumps({"mini_version": "1", "messages": [
        {"role": "user", "content": "task"}, {"role": "user", "content": ["not", "text"]}]}))
    with pytest.warns(UserWarning):
        session = load_session(path, errors="skip")
    assert session.meta["warnings"] == [
        f"{path}:messages[1]: a message without string content "
        "(expected an object with role and content (a string))"]
    assert len(session.messages) == 1
