"""Malformed recordings give a clear `SessionFormatError` naming the file and line or offset."""

from __future__ import annotations

import json
import os
import signal
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.goose_db_helpers import build_goose_db
from workbench.cli import cli
from workbench.errors import SessionFormatError
from workbench.harness import Experiment, run_experiment
from workbench.sessions import detect_format, load_session, load_sessions

DEEP = "[" * 100_000 + "]" * 100_000
TEXT = [{"type": "text", "text": "hi"}]
GOOSE_MESSAGE = {"id": "m1", "role": "user", "created": 0, "content": TEXT,
                 "metadata": {"userVisible": True, "agentVisible": True}}
# One valid first record per JSON-lines format (so detection picks the format), then a record
# nested 100,000 levels deep on line 2, then nothing else.
FIRST_LINES: dict[str, dict[str, Any]] = {
    "claude-code": {"type": "user", "sessionId": "s", "uuid": "u1", "parentUuid": None,
                    "timestamp": "2025-01-01T00:00:00Z",
                    "message": {"role": "user", "content": "hi"}},
    "codex": {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x"}},
    "goose-jsonl": GOOSE_MESSAGE,
    "openai-chat": {"role": "user", "content": "hi"},
}
EXPECTED_LINE = {
    "claude-code": "one Claude Code transcript record (a JSON object) per line",
    "codex": "one Codex rollout line {timestamp, type, payload} per line",
    "goose-jsonl": "line 1 session metadata, then one Goose message JSON object per line",
    "openai-chat": "an OpenAI chat message {role, content, tool_calls?, tool_call_id?}",
}
# Whole-document formats: a valid document with a deeply nested extra key, and the parser
# message each importer words its syntax errors with ({line}/{col}: where the nesting passes 200).
DOCUMENTS: dict[str, tuple[str, Any, str]] = {
    "goose-json": ("s.json", {"id": "s", "conversation": [GOOSE_MESSAGE], "extra": "DEEP"},
                   "invalid JSON: nested deeper than 200 levels (too deep to import): line {line} "
                   "column {col} (char {char})"),
    "mini-swe-agent": ("t.traj.json", {"info": {"mini_version": "1"}, "messages": [],
                                       "extra": "DEEP"},
                       "malformed JSON: nested deeper than 200 levels (too deep to import) at "
                       "column {col}"),
    "swe-agent": ("t.traj", {"environment": "x", "trajectory": [], "extra": "DEEP"},
                  "malformed JSON: nested deeper than 200 levels (too deep to import) at "
                  "column {col}"),
    "openhands": ("events.json", [{"id": 0, "source": "user", "action": "message", "extra": "DEEP"}],
                  "malformed JSON: nested deeper than 200 levels (too deep to import) at "
                  "column {col}"),
}
# The bracket that opens level 201 ('{' is level 1): the 200th '[', as a 1-based column.
DEEP_AT_COLUMN = len('{"x": ') + 200


def _deep_jsonl(tmp_path: Path, fmt: str) -> Path:
    path = tmp_path / f"{fmt}.jsonl"
    path.write_text(json.dumps(FIRST_LINES[fmt]) + '\n{"x": ' + DEEP + "}\n", encoding="utf-8")
    return path


def _document(tmp_path: Path, name: str, doc: Any) -> tuple[Path, int, int, int]:
    """Write `doc` indented; returns the path and where nesting passes 200 (line, column, char)."""
    path = tmp_path / name
    text = json.dumps(doc, indent=1).replace('"DEEP"', DEEP)
    start = text.index(DEEP)
    prefix = text[:start]  # no brackets inside its strings
    outer = prefix.count("{") + prefix.count("[") - prefix.count("}") - prefix.count("]")
    char = start + 200 - outer  # 0-based index of the bracket opening level 201
    line = text.count("\n", 0, char) + 1
    col = char - text.rfind("\n", 0, char)
    path.write_text(text, encoding="utf-8")
    return path, line, col, char


@pytest.mark.parametrize("fmt", sorted(FIRST_LINES))
def test_deep_nesting_in_json_lines_names_the_line_and_is_skippable(tmp_path: Path,
                                                                     fmt: str) -> None:
    path = _deep_jsonl(tmp_path, fmt)
    assert detect_format(path) == fmt
    message = (f"{path}:2: invalid JSON: nested deeper than 200 levels (too deep to import): "
               f"line 1 column {DEEP_AT_COLUMN} (char {DEEP_AT_COLUMN - 1}) "
               f"(expected {EXPECTED_LINE[fmt]})")
    with pytest.raises(SessionFormatError) as info:
        load_sessions(path)
    assert str(info.value) == message
    assert (info.value.file, info.value.line) == (str(path), 2)

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        sessions = load_sessions(path, errors="skip")
    assert sessions[0].format == fmt
    assert sessions[0].meta["warnings"] == [message]


@pytest.mark.parametrize("fmt", sorted(DOCUMENTS))
def test_deep_nesting_in_a_json_document_names_the_line_even_when_skipping(
        tmp_path: Path, fmt: str) -> None:
    name, doc, message = DOCUMENTS[fmt]
    path, line, col, char = _document(tmp_path, name, doc)
    assert detect_format(path) == fmt
    for errors in ("raise", "skip"):
        with pytest.raises(SessionFormatError) as info:
            load_sessions(path, errors=errors)  # type: ignore[arg-type]
        assert info.value.line == line, fmt
        expected = message.format(line=line, col=col, char=char)
        assert str(info.value).startswith(f"{path}:{line}: {expected} (expected "), str(info.value)


def test_deep_nesting_in_a_goose_database_row_names_the_row(tmp_path: Path) -> None:
    db = build_goose_db(tmp_path / "sessions.db", {"s1": [
        ("user", TEXT, 1, None), ("assistant", '[{"type": "text", "text": ' + DEEP + "}]", 2,
                                  None)]})
    with pytest.raises(SessionFormatError) as info:
        load_sessions(db)
    assert str(info.value).startswith(
        f"{db}#s1:messages row 2: invalid JSON: nested deeper than 200 levels (too deep to "
        "import): line 1 column 225 (char 224)")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        session = load_session(db, errors="skip")
    assert [m.role for m in session.messages] == ["user"]


def test_deep_nesting_through_run_is_an_error_row_naming_the_line_not_a_traceback(
        tmp_path: Path) -> None:
    _deep_jsonl(tmp_path, "claude-code")
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "deep"\nsessions = ["claude-code.jsonl"]\nmodels = ["extractive"]\n',
                    encoding="utf-8")
    results = run_experiment(Experiment.from_toml(spec), tmp_path / "run", progress=False)
    (row,) = results.cells.to_dict("records")
    assert (row["status"], row["error_type"]) == ("error", "SessionFormatError")
    assert row["session_id"] == "unreadable:claude-code.jsonl"
    assert "claude-code.jsonl:2: invalid JSON: nested deeper than 200 levels" in row["error_message"]
    result = CliRunner().invoke(cli, ["run", str(spec), "--out", str(tmp_path / "run2"),
                                      "--no-progress"])
    assert result.exit_code == 3
    assert "claude-code.jsonl:2: invalid JSON: nested deeper than 200 levels" in result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output


def test_a_corrupt_sessions_db_is_named_corrupt(tmp_path: Path) -> None:
    rows = [("user", [{"type": "text", "text": f"message {i} " + "x" * 400}], i, None)
            for i in range(200)]
    db = build_goose_db(tmp_path / "sessions.db", {"s1": rows})
    data = bytearray(db.read_bytes())
    page = 4096
    data[3 * page:] = b"\xa5" * (len(data) - 3 * page)  # pages 4.. are garbage, the header is fine
    db.write_bytes(bytes(data))
    assert detect_format(db) == "goose-db"
    with pytest.raises(SessionFormatError) as info:
        load_sessions(db)
    assert str(info.value) == (
        f"{db}: the SQLite database is corrupt (database disk image is malformed); restore it "
        f"from a backup or salvage it with: sqlite3 {db} .recover (expected a Goose sessions.db)")


def _claude_lines(tmp_path: Path, second: bytes) -> Path:
    path = tmp_path / "c.jsonl"
    first = json.dumps(FIRST_LINES["claude-code"]).encode() + b"\n"
    path.write_bytes(first + second + b"\n")
    return path


def test_invalid_utf8_is_an_error_naming_the_byte_offset(tmp_path: Path) -> None:
    record = dict(FIRST_LINES["claude-code"], uuid="u2", parentUuid="u1",
                  message={"role": "user", "content": "caf\u00e9"})
    good = json.dumps(record, ensure_ascii=False).encode()
    bad = good.replace("\u00e9".encode(), b"\xe9")  # a Latin-1 byte in a UTF-8 file
    path = _claude_lines(tmp_path, bad)
    offset = len(json.dumps(FIRST_LINES["claude-code"]).encode()) + 1 + bad.index(b"\xe9")
    with pytest.raises(SessionFormatError) as info:
        load_sessions(path)
    assert str(info.value) == (
        f"{path}:2: invalid UTF-8 at byte offset {offset} (invalid continuation byte); fix the "
        "file or load it with encoding_errors='replace' to substitute U+FFFD (expected one "
        "Claude Code transcript record (a JSON object) per line)")

    with pytest.warns(UserWarning, match=r"replaced 1 invalid UTF-8 sequence\(s\) with U\+FFFD"):
        session = load_session(path, encoding_errors="replace")
    assert session.meta["encoding_replacements"] == 1
    assert session.messages[-1].concat_text() == "caf\ufffd"


def test_invalid_utf8_in_a_whole_document_names_offset_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.traj.json"
    path.write_bytes(b'{"info": {"mini_version": "1"},\n"messages": [{"role": "user",\n'
                     b'"content": "ok \xff"}]}')
    with pytest.raises(SessionFormatError) as info:
        load_sessions(path)
    assert str(info.value) == (
        f"{path}:3: invalid UTF-8 at byte offset 77 (invalid start byte); fix the file or load "
        "it with encoding_errors='replace' to substitute U+FFFD")
    with pytest.warns(UserWarning):
        session = load_session(path, encoding_errors="replace")
    assert session.meta["encoding_replacements"] == 1


def test_an_aider_history_with_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_bytes(b"\n# aider chat started at 2024-01-01 10:00:00\n\n#### fix \xc3\x28 it\n")
    with pytest.raises(SessionFormatError) as info:
        load_sessions(path)
    assert str(info.value).startswith(f"{path}:4: invalid UTF-8 at byte offset 55 (invalid continuation byte)")


def test_an_empty_file_is_empty_even_with_an_explicit_format(tmp_path: Path) -> None:
    for fmt, name in (("claude-code", "e.jsonl"), ("goose-json", "e.json"),
                      ("goose-db", "sessions.db"), ("aider", "h.md")):
        path = tmp_path / name
        path.write_bytes(b"" if fmt == "goose-db" else b" \n\n")
        with pytest.raises(SessionFormatError) as info:
            load_sessions(path, format=fmt)
        assert str(info.value) == f"{path}: the file is empty", fmt


def test_a_file_in_another_format_is_refused_with_the_format_it_looks_like(
        tmp_path: Path) -> None:
    path = _deep_jsonl(tmp_path, "claude-code")
    path.write_text(json.dumps(FIRST_LINES["claude-code"]) + "\n", encoding="utf-8")
    for fmt in ("openai-chat", "goose-jsonl", "codex", "mini-swe-agent"):
        with pytest.raises(SessionFormatError) as info:
            load_sessions(path, format=fmt)
        assert str(info.value) == (
            f"{path}: the file is not in the requested format {fmt!r}: it looks like "
            "'claude-code'; pass format='claude-code' or leave format out to detect it")
    assert load_session(path, format="claude-code").format == "claude-code"


def test_records_an_importer_does_not_understand_at_all_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"note": 1}\n{"note": [1, 2]}\n',
                    encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_sessions(path, format="claude-code")
    assert str(info.value) == (f"{path}: none of its 2 record(s) is a 'claude-code' message; "
                               "the file is in another format (leave format out to detect it)")


def test_directories_and_fifos_are_refused_without_opening_them(tmp_path: Path) -> None:
    with pytest.raises(SessionFormatError) as info:
        load_sessions(tmp_path, format="claude-code")
    assert str(info.value) == f"{tmp_path}: is a directory; pass a session file"

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)

    def hung(*_: object) -> None:
        raise AssertionError("opened the FIFO and waited for a writer")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        for fmt in (None, "claude-code"):
            with pytest.raises(SessionFormatError) as info:
                load_sessions(fifo, format=fmt)
            assert str(info.value) == (f"{fifo}: is a FIFO (named pipe), not a regular file; "
                                       "pass a session file")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _mini_trajectory(submission: str) -> dict[str, Any]:
    # The key order mini-swe-agent writes: info (with the final diff) first, messages later.
    return {
        "info": {"exit_status": "Submitted", "submission": submission,
                 "model_stats": {"instance_cost": 0.1, "api_calls": 1},
                 "mini_version": "1.9.0",
                 "config": {"model": {"model_name": "gpt-x"}}},
        "messages": [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": "Fix the bug."},
                     {"role": "assistant", "content": "Done.\n```bash\necho hi\n```"}],
        "trajectory_format": "mini-swe-agent-1",
    }


def test_a_mini_swe_agent_trajectory_whose_submission_fills_the_head_is_detected(
        tmp_path: Path) -> None:
    diff = "diff --git a/x.py b/x.py\n" + "+    value = compute(value)  # tuned\n" * 3000
    path = tmp_path / "case.traj.json"
    path.write_text(json.dumps(_mini_trajectory(diff), indent=2), encoding="utf-8")
    head = path.read_bytes()[:65536]
    assert b'"mini_version"' not in head and b'"messages"' not in head  # nothing telling in view
    assert detect_format(path) == "mini-swe-agent"
    session = load_session(path)
    assert (session.format, session.meta["submission"]) == ("mini-swe-agent", diff)
    assert [m.role for m in session.messages] == ["user", "assistant"]


def test_detection_ignores_key_order_in_a_real_trajectory(tmp_path: Path,
                                                          shared_sessions: Path) -> None:
    source = next(shared_sessions.glob("mini-swe-agent/**/*.traj.json"))
    data = json.loads(source.read_text(encoding="utf-8"))
    info = dict(data["info"])
    info["submission"] = str(info.get("submission") or "") + "+pad\n" * 20_000
    reordered = {"info": {"submission": info.pop("submission"), **info},
                 **{k: v for k, v in data.items() if k != "info"}}
    path = tmp_path / source.name
    path.write_text(json.dumps(reordered), encoding="utf-8")
    assert detect_format(path) == "mini-swe-agent"
    assert len(load_session(path).messages) == len(load_session(source).messages)


def test_a_spec_can_opt_in_to_replacing_invalid_utf8(tmp_path: Path) -> None:
    record = dict(FIRST_LINES["claude-code"], uuid="u2", parentUuid="u1",
                  message={"role": "user", "content": "caf\u00e9 \u00e9"})
    _claude_lines(tmp_path, json.dumps(record, ensure_ascii=False).encode().replace(
        "\u00e9".encode(), b"\xe9"))
    strict = Experiment.from_dict({"name": "u", "sessions": ["c.jsonl"], "models": ["extractive"],
                                   "base_dir": str(tmp_path)})
    (row,) = run_experiment(strict, tmp_path / "strict", progress=False).cells.to_dict("records")
    assert row["status"] == "error"
    assert "c.jsonl:2: invalid UTF-8 at byte offset" in row["error_message"]
    lenient = Experiment.from_dict({
        "name": "u", "sessions": [{"path": "c.jsonl", "encoding_errors": "replace"}],
        "models": ["extractive"], "base_dir": str(tmp_path)})
    assert lenient.to_dict()["sessions"] == [{"path": "c.jsonl", "encoding_errors": "replace"}]
    with pytest.warns(UserWarning, match=r"replaced 2 invalid UTF-8 sequence\(s\)"):
        results = run_experiment(lenient, tmp_path / "run", progress=False)
    assert list(results.cells["status"]) == ["ok"]


def test_a_recursion_error_inside_any_importer_becomes_a_session_format_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.sessions import IMPORTERS
    from workbench.sessions._load import TOO_DEEP_MESSAGE
    from workbench.sessions._registry import Importer

    def endless(value: Any) -> Any:
        return endless([value])

    def load(path: Path, errors: str = "raise", **select: Any) -> list[Any]:
        return endless(path)

    monkeypatch.setitem(IMPORTERS, "recursive", Importer("recursive", load, None))
    path = tmp_path / "x.txt"
    path.write_text("anything\n", encoding="utf-8")
    for errors in ("raise", "skip"):
        with pytest.raises(SessionFormatError) as info:
            load_sessions(path, format="recursive", errors=errors)  # type: ignore[arg-type]
        assert str(info.value) == f"{path}: {TOO_DEEP_MESSAGE}"
