"""OpenHands event-stream import: the real run, pairing by cause, skipped noise, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.errors import SessionFormatError
from workbench.messages import UnknownContent
from workbench.sessions import detect_format, load_session


def test_the_real_run_loads_with_its_tool_call_arguments(shared_sessions: Path) -> None:
    path = shared_sessions / "openhands/tests/runtime/trajs/basic.json"
    events = json.loads(path.read_text())
    session = load_session(path)
    assert detect_format(path) == "openhands"
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert session.messages[0].concat_text() == events[0]["args"]["content"]
    [request] = session.messages[1].tool_requests()
    edit = events[1]["tool_call_metadata"]
    call = edit["model_response"]["choices"][0]["message"]["tool_calls"][0]
    assert request.id == edit["tool_call_id"]
    assert request.name == "str_replace_editor"
    assert request.arguments == json.loads(call["function"]["arguments"])
    [response] = session.messages[2].tool_responses()
    assert response.id == request.id and response.text() == events[2]["content"]
    assert not response.tool_result.is_error
    assert session.messages[3].concat_text() == events[3]["message"]
    responses = {e["tool_call_metadata"]["model_response"]["id"]:
                 e["tool_call_metadata"]["model_response"]["usage"]
                 for e in events if e.get("tool_call_metadata")}
    assert session.meta["usage"]["input_tokens"] == sum(
        u["prompt_tokens"] for u in responses.values()) == 8132
    assert session.meta["models"] == ["claude-3-5-sonnet-20241022"]


def _events(tmp_path: Path, events: list) -> Path:
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    return path


def _run(eid: int, command: str) -> dict:
    return {"id": eid, "source": "agent", "action": "run",
            "args": {"command": command, "thought": ""}}


def _obs(eid: int, cause: int, code: int, content: str) -> dict:
    return {"id": eid, "source": "agent", "observation": "run", "cause": cause,
            "content": content, "extras": {"metadata": {"exit_code": code}}}


def test_pairing_by_cause_errors_noise_and_unknown_events(tmp_path: Path) -> None:
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
        {"id": 1, "source": "environment", "observation": "agent_state_changed",
         "extras": {"agent_state": "running"}},
        _run(2, "make"), _obs(3, 2, 2, "make: *** No rule"),
        _run(4, "ls"), _obs(5, 4, 0, "a.py"),
        {"id": 6, "source": "agent", "action": "change_agent_state", "args": {}},
        {"id": 7, "source": "agent", "action": "frobnicate", "args": {}},
        _obs(8, 99, 0, "orphan"),
        {"id": 9, "source": "agent", "observation": "error", "cause": 4, "content": "late"},
    ]
    session = load_session(_events(tmp_path, events))
    responses = [r for m in session.messages for r in m.tool_responses()]
    assert [(r.id, r.tool_result.is_error, r.text()) for r in responses] == [
        ("event_2", True, "make: *** No rule"), ("event_4", False, "a.py")]
    assert [r.arguments for m in session.messages for r in m.tool_requests()] == [
        {"command": "make"}, {"command": "ls"}]
    unknown = [c.raw["id"] for m in session.messages for c in m.content
               if isinstance(c, UnknownContent)]
    assert unknown == [7, 8, 9]  # the unknown action, the orphan and the repeated answer


def test_bad_input_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text('[{"id": 0, "source": "user", "action": "message"\n')
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    assert str(info.value) == (
        f"{path}:2: malformed JSON: Expecting ',' delimiter at column 1 (expected an "
        "OpenHands event stream: a JSON array of event objects)")
    path.write_text('{"source": "user", "action": "message"}')
    with pytest.raises(SessionFormatError) as info:
        load_session(path, format="openhands")
    assert str(info.value) == (f"{path}: the top level is a JSON object, not an array "
                               "(expected an OpenHands event stream: a JSON array of event "
                               "objects)")
    path = _events(tmp_path, [{"id": 0, "source": "user", "action": "message",
                               "args": {"content": "hi"}}, "junk"])
    with pytest.warns(UserWarning):
        session = load_session(path, errors="skip")
    assert session.meta["warnings"] == [
        f"{path}:event[1]: an event that is neither an action nor an observation "
        '(expected an object with "action" or "observation")']
