"""SWE-agent .traj import: real v0/v1 files, error heuristics, the demonstration, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.errors import SessionFormatError
from workbench.messages import UnknownContent
from workbench.sessions import detect_format, load_session

ERRORS = re.compile(r"Traceback \(most recent call last\)|SyntaxError|"
                    r"Your proposed edit has introduced new syntax error|command not found|"
                    r"EXECUTION TIMED OUT")


def _trajs(root: Path) -> list[Path]:
    return sorted((root / "swe-agent").rglob("*.traj"))


def _pairs(session):
    requests = [r for m in session.messages for r in m.tool_requests()]
    responses = {r.id: r for m in session.messages for r in m.tool_responses()}
    return requests, responses


def test_every_real_traj_loads_with_one_response_per_tool_call(shared_sessions: Path) -> None:
    files = _trajs(shared_sessions)
    assert len(files) == 3
    for path in files:
        data = json.loads(path.read_text())
        history = data["history"]
        expected_calls = sum(len(h["tool_calls"]) if h.get("tool_calls") else
                             int(bool(h.get("action", "").strip()))
                             for h in history if h["role"] == "assistant")
        session = load_session(path)
        assert detect_format(path) == "swe-agent", path
        requests, responses = _pairs(session)
        assert len(requests) == expected_calls, path
        assert len({r.id for r in requests}) == len(requests), path
        assert all(r.id in responses for r in requests), path
        first_task = next(h["content"] for h in history
                          if h["role"] == "user" and not h.get("is_demo"))
        first_user = next(m for m in session.messages
                          if m.role == "user" and not m.metadata.model_extra.get("isDemo"))
        assert first_user.concat_text() == first_task, path
        assert session.meta["system_prompt"] == history[0]["content"], path
        assert session.meta["submission"] == data["info"]["submission"], path


def test_v0_actions_are_named_by_their_first_word_and_errors_are_flagged(
        shared_sessions: Path) -> None:
    path = next(p for p in _trajs(shared_sessions) if p.name == "pydicom__pydicom-1458.traj")
    data = json.loads(path.read_text())
    session = load_session(path)
    requests, responses = _pairs(session)
    actions = [h["action"] for h in data["history"] if h.get("action")]
    assert [r.name for r in requests] == [a.split()[0] for a in actions]
    assert requests[0].arguments == {"command": "create reproduce_bug.py\n"}
    observations = [h["content"] for h in data["history"][3:] if h["role"] == "user"]
    assert sum(r.tool_result.is_error for r in responses.values()) == \
        sum(bool(ERRORS.search(o)) for o in observations) == 4
    # the submit observation exists only in `trajectory`
    assert responses[requests[-1].id].text() == data["trajectory"][-1]["observation"]
    assert session.meta["format_version"] == "v0"
    assert session.meta["usage"]["input_tokens"] == 122612
    assert session.meta["usage"]["output_tokens"] == 1369


def test_the_demonstration_is_kept_marked_and_listed(shared_sessions: Path) -> None:
    path = next(p for p in _trajs(shared_sessions) if p.name == "pydicom__pydicom-1458.traj")
    session = load_session(path)
    assert session.meta["demonstration_messages"] == [0]
    demo = session.messages[0]
    assert demo.metadata.model_extra == {"isDemo": True}
    assert demo.is_agent_visible
    assert "--- DEMONSTRATION ---" in demo.concat_text()


def test_v1_function_calls_keep_parsed_arguments_and_unique_ids(shared_sessions: Path) -> None:
    path = next(p for p in _trajs(shared_sessions) if "marshmallow" in p.name)
    data = json.loads(path.read_text())
    session = load_session(path)
    requests, responses = _pairs(session)
    calls = [c for h in data["history"] for c in h.get("tool_calls") or []]
    assert [r.name for r in requests] == [c["function"]["name"] for c in calls]
    assert [r.arguments for r in requests] == [json.loads(c["function"]["arguments"])
                                               for c in calls]
    # the replay reuses call ids; reused ones get a suffix so Goose can pair them
    assert len(set(c["id"] for c in calls)) == 9
    assert requests[6].id == "call_5iDdbOYybq7L19vqXmR0DPaU#7"
    assert len(responses) == 13
    assert session.meta["format_version"] == "v1"


def _write(tmp_path: Path, payload: str, name: str = "bad.traj") -> Path:
    path = tmp_path / name
    path.write_text(payload)
    return path


def test_malformed_json_names_file_line_and_expected_shape(tmp_path: Path) -> None:
    path = _write(tmp_path, '{\n "history": [\n')
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    assert str(info.value) == (
        f"{path}:3: malformed JSON: Expecting value at column 1 (expected a SWE-agent .traj "
        'JSON object with "history" and "trajectory")')
    assert info.value.line == 3


def test_a_traj_without_history_names_the_missing_key(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"trajectory": [], "environment": "x"}')
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    assert str(info.value) == (f'{path}: missing key "history" (expected a SWE-agent .traj '
                               'JSON object with "history" and "trajectory")')


def test_skip_counts_bad_entries_and_unknown_roles_are_kept(tmp_path: Path) -> None:
    history = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
               42, {"role": "critic", "content": "hmm"}]
    path = _write(tmp_path, json.dumps({"history": history, "trajectory": []}))
    with pytest.raises(SessionFormatError, match=r"bad.traj:history\[2\]: a history entry "
                       r"without a role \(expected an object with role and content\)"):
        load_session(path)
    with pytest.warns(UserWarning, match="skipped a bad record"):
        session = load_session(path, errors="skip")
    assert session.meta["warnings"] == [
        f"{path}:history[2]: a history entry without a role "
        "(expected an object with role and content)"]
    assert isinstance(session.messages[-1].content[0], UnknownContent)
    assert session.messages[-1].content[0].raw == {"role": "critic", "content": "hmm"}
