"""Hostile recordings: each one is a clear `SessionFormatError` naming file and line, or is kept
(as unknown content, counted and warned about), never a raw error and never silently wrong."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import SessionFormatError
from workbench.messages import UnknownContent
from workbench.sessions import load_session, load_sessions

BOM = b"\xef\xbb\xbf"
TEXT = [{"type": "text", "text": "fix the bug"}]
GOOSE = {"id": "m1", "role": "user", "created": 1700000000, "content": TEXT,
         "metadata": {"userVisible": True, "agentVisible": True}}
GOOSE_REPLY = {**GOOSE, "id": "m2", "role": "assistant", "created": 1700000001,
               "content": [{"type": "text", "text": "done"}]}


def _lines(*rows: Any) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


# format -> (file name, a valid recording of one user request and one reply, messages read).
# Every number in the JSON ones is where a hostile 5,000-digit integer goes.
SAMPLES: dict[str, tuple[str, str, int]] = {
    "claude-code": ("c.jsonl", _lines(
        {"type": "user", "sessionId": "s", "uuid": "u1", "parentUuid": None,
         "timestamp": "2025-01-01T00:00:00Z", "message": {"role": "user", "content": "fix it"}},
        {"type": "assistant", "sessionId": "s", "uuid": "u2", "parentUuid": "u1",
         "timestamp": "2025-01-01T00:00:01Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude", "content": [
             {"type": "text", "text": "done"}], "usage": {"input_tokens": 10,
                                                         "output_tokens": 5}}}), 2),
    "codex": ("rollout.jsonl", _lines(
        {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x"}},
        {"timestamp": "2025-01-01T00:00:01Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text",
                                                            "text": "fix it"}]}},
        {"timestamp": "2025-01-01T00:00:02Z", "type": "event_msg", "payload": {
            "type": "token_count", "info": {"total_token_usage": {"input_tokens": 10}}}},
        {"timestamp": "2025-01-01T00:00:03Z", "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                 "text": "done"}]}}), 2),
    "goose-jsonl": ("g.jsonl", _lines({"id": "s", "description": "d", "created": 1700000000},
                                      GOOSE, GOOSE_REPLY), 2),
    "goose-json": ("g.json", json.dumps({"id": "s", "conversation": [GOOSE, GOOSE_REPLY]}), 2),
    "openai-chat": ("o.jsonl", _lines({"role": "user", "content": "fix it"},
                                      {"role": "assistant", "content": "done", "n": 1}), 2),
    "mini-swe-agent": ("t.traj.json", json.dumps({
        "info": {"mini_version": "1", "model_stats": {"instance_cost": 0.1, "api_calls": 1}},
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "fix it"},
                     {"role": "assistant", "content": "THOUGHT: x\n```bash\necho hi\n```"}],
        "trajectory_format": "mini-swe-agent-1"}), 2),
    "swe-agent": ("t.traj", json.dumps({
        "environment": "x", "trajectory": [],
        "history": [{"role": "system", "content": "sys"}, {"role": "user", "content": "fix it"},
                    {"role": "assistant", "content": "ok", "thought": "t", "action": "ls"},
                    {"role": "user", "content": "file.py"}],
        "info": {"model_stats": {"tokens_sent": 10, "tokens_received": 5}}}), 3),
    "openhands": ("events.json", json.dumps([
        {"id": 0, "source": "user", "action": "message", "args": {"content": "fix it"}},
        {"id": 1, "source": "agent", "action": "message", "args": {"content": "done"}}]), 2),
    "aider": ("x.aider.chat.history.md", "\n# aider chat started at 2024-01-01 10:00:00\n\n"
              "#### fix it  \n\ndone\n\n> Tokens: 10 sent, 5 received.\n", 2),
}
JSON_FORMATS = sorted(f for f in SAMPLES if f != "aider")
BIG = "9" * 5000


def _write(folder: Path, fmt: str, text: str | bytes) -> Path:
    path = folder / SAMPLES[fmt][0]
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def _shape(sessions: list[Any]) -> list[list[tuple[str, str]]]:
    return [[(m.role, m.concat_text()) for m in s.messages] for s in sessions]


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_a_byte_order_mark_is_accepted_and_stripped_in_every_text_format(
        tmp_path: Path, fmt: str) -> None:
    name, text, count = SAMPLES[fmt]
    plain = load_sessions(_write(tmp_path, fmt, text))
    with_bom = load_sessions(_write(tmp_path, fmt, BOM + text.encode()))
    assert [s.format for s in with_bom] == [fmt]
    assert len(with_bom[0].messages) == count
    assert _shape(with_bom) == _shape(plain)


@pytest.mark.parametrize("fmt", JSON_FORMATS)
def test_an_integer_past_pythons_digit_limit_names_file_and_line(tmp_path: Path,
                                                                 fmt: str) -> None:
    _, text, _ = SAMPLES[fmt]
    # The last number of the recording becomes 5,000 digits long (not on the first line, which
    # detection reads: the format is still recognised).
    numbers = list(re.finditer(r"(?<=[:\s\[])\d+(?=[,}\]])", text))
    if not numbers:
        text = text.rstrip("\n")[:-1] + f', "n": {BIG}' + "}\n"
    else:
        last = numbers[-1]
        text = text[:last.start()] + BIG + text[last.end():]
    path = _write(tmp_path, fmt, text)
    line = text.count("\n", 0, text.index(BIG)) + 1
    with pytest.raises(SessionFormatError) as info:
        load_sessions(path, format=fmt)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert "a number of 5,000 digits (Python converts at most 4,300" in message, message
    assert info.value.line == line
    if text.count("\n") > 1:  # JSON lines: skippable, and counted
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            sessions = load_sessions(path, format=fmt, errors="skip")
        assert len(sessions[0].meta["warnings"]) == 1


def test_a_codex_message_with_a_numeric_role_is_kept_as_unknown_with_a_warning(
        tmp_path: Path) -> None:
    rows = [json.loads(line) for line in SAMPLES["codex"][1].splitlines()]
    rows[1]["payload"]["role"] = 7
    rows[3]["payload"]["role"] = ["assistant"]
    path = _write(tmp_path, "codex", _lines(*rows))
    with pytest.warns(UserWarning, match=r"2 message\(s\) with an unknown role kept"):
        session = load_session(path)
    assert [m.role for m in session.messages] == ["user", "user"]
    assert all(isinstance(c, UnknownContent) for m in session.messages for c in m.content)
    assert session.messages[0].content[0].raw["role"] == 7  # kept whole, not read as the user
    assert session.meta["unknown_roles"] == 2
    assert session.meta["warnings"] == [
        f"{path}:2: a message with role 7 (not user, assistant, developer or system) kept as "
        "unknown content",
        f"{path}:4: a message with role ['assistant'] (not user, assistant, developer or system) "
        "kept as unknown content"]


def test_an_openhands_message_with_a_numeric_source_is_kept_as_unknown_with_a_warning(
        tmp_path: Path) -> None:
    events = json.loads(SAMPLES["openhands"][1])
    events.insert(1, {"id": 5, "source": 3, "action": "message", "args": {"content": "who?"}})
    path = _write(tmp_path, "openhands", json.dumps(events))
    with pytest.warns(UserWarning, match=r"1 message\(s\) from an unknown source kept"):
        session = load_session(path)
    assert [(m.role, m.concat_text()) for m in session.messages] == [
        ("user", "fix it"), ("user", ""), ("assistant", "done")]
    assert session.messages[1].content[0].raw["source"] == 3  # not read as the assistant
    assert session.meta["warnings"] == [
        f"{path}:event[1]: a message from source 3 (not user or agent) kept as unknown content"]


def test_swe_agent_content_parts_that_are_not_text_are_kept_and_counted(tmp_path: Path) -> None:
    data = json.loads(SAMPLES["swe-agent"][1])
    data["history"][1]["content"] = [{"type": "text", "text": "fix it"},
                                     {"type": "image", "image_url": "shot.png"}, 42]
    data["history"][3]["content"] = [{"type": "text", "text": "file.py"}, {"type": "audio"}]
    path = _write(tmp_path, "swe-agent", json.dumps(data))
    session = load_session(path)
    assert [[c.type for c in m.content] for m in session.messages] == [
        ["text", "image", ""], ["text", "toolRequest"], ["toolResponse", "audio"]]
    assert session.messages[0].concat_text() == "fix it"
    assert session.meta["unknown_items"] == 3
    assert session.meta["warnings"] == [
        f"{path}:history[1]: 2 content item(s) that are not text (image, value) kept as unknown "
        "content",
        f"{path}:history[3]: 1 content item(s) that are not text (audio) kept as unknown content"]


def test_twenty_thousand_bare_aider_headers_are_an_error_naming_the_first_header(
        tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("\n" + "# aider chat started at 2024-01-01 10:00:00\n\n" * 20_000,
                    encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_sessions(path)
    assert str(info.value) == (
        f"{path}:2: 20,000 session header(s) but no input line ('#### ...') under any of them: "
        "not an aider chat history, or one whose sessions were all cut (expected an aider chat "
        'history: "# aider chat started at ..." headers and "#### " input lines)')


def test_empty_aider_sessions_beside_real_ones_are_kept_flagged_and_keep_their_index(
        tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("# aider chat started at 2024-01-01 10:00:00\n\n"
                    "# aider chat started at 2024-01-01 11:00:00\n\n#### fix it  \n\ndone\n",
                    encoding="utf-8")
    empty, real = load_sessions(path)
    assert (empty.messages, empty.meta["empty"]) == ([], True)
    assert empty.meta["warnings"] == [
        f"{path}:1: a session header with nothing under it (kept, with 0 messages)"]
    assert [m.role for m in real.messages] == ["user", "assistant"]
    assert load_session(path, index=1).id == real.id


def test_an_aider_usage_line_with_absurd_numbers_stays_text_instead_of_overflowing(
        tmp_path: Path) -> None:
    path = _write(tmp_path, "aider", SAMPLES["aider"][1].replace("10 sent", BIG + " sent"))
    session = load_session(path)
    assert "usage" not in session.meta
    assert session.meta["index"] == 0


REAL = {"claude-code": "claude-code/**/*.jsonl", "mini-swe-agent": "mini-swe-agent/**/*.traj.json",
        "swe-agent": "swe-agent/**/*.traj", "openhands": "openhands/**/*.json",
        "aider": "aider/**/*.md"}


@pytest.mark.parametrize("fmt", sorted(REAL))
def test_a_real_recording_saved_with_a_byte_order_mark_reads_the_same(
        tmp_path: Path, shared_sessions: Path, fmt: str) -> None:
    source = next(p for p in sorted(shared_sessions.glob(REAL[fmt])) if p.is_file()
                  and not p.name.startswith("report"))
    copy = tmp_path / source.name
    shutil.copyfile(source, copy)
    copy.write_bytes(BOM + source.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        original, marked = load_sessions(source), load_sessions(copy)
    assert [s.format for s in marked] == [fmt] * len(original)
    assert _shape(marked) == _shape(original)
