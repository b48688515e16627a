"""Sessions that cannot be read become their own error rows, never the run's end; sessions read
once each, apart from each other, within documented limits and bounded memory.

Each test is a real ``workbench run`` subprocess (started by a wrapper that reports its peak
resident memory), with a byte scan of every written file and of the captured output.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import ROOT
from tests.goose_db_helpers import build_goose_db
from tests.hardening._forms import all_bytes
from tests.hardening._sessions import write_session
from workbench.sessions import MAX_FILE_BYTES, MAX_MESSAGES, MAX_RECORD_BYTES

TEXT = [{"type": "text", "text": "fix the bug in app.py"}]
REPLY = [{"type": "text", "text": "fixed it"}]
BLOB = 999_000_000
"""A zero-filled blob just under SQLite's 1e9-byte limit: nearly 1 GB each time it is fetched."""
MAX_RESIDENT_KB = 800 * 1024
WRAPPER = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""
RAW_ERRORS = (b"TypeError", b"MemoryError", b"OverflowError", b"KeyError", b"DataError")
"""Raw exceptions a session must never end in (an error row keeps its own traceback)."""


def _run(spec: Path, out: Path, timeout: float = 600) -> tuple[subprocess.CompletedProcess[bytes],
                                                                int, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", WRAPPER, sys.executable, "-m", "workbench",
                           "run", str(spec), "--out", str(out), "--no-progress"], cwd=ROOT,
                          env=env, capture_output=True, timeout=timeout)
    peak = int(done.stderr.decode().rsplit("MAXRSS_KB", 1)[1].split()[0])
    return done, peak, time.monotonic() - started


def _rows(out: Path) -> dict[str, tuple[str, str | None, str | None]]:
    db = sqlite3.connect(out / "results.sqlite")
    rows = db.execute("SELECT session_id, status, error_type, error_message FROM cells")
    return {sid: (status, kind, message) for sid, status, kind, message in rows}


def _scan(out: Path, run: subprocess.CompletedProcess[bytes]) -> None:
    """No raw exception in any written file or in the output, no traceback printed, and no
    file holding a blob."""
    files = all_bytes(out)
    for where, data in [*((str(p), b) for p, b in files.items()),
                        ("stdout", run.stdout), ("stderr", run.stderr)]:
        for raw in RAW_ERRORS:
            assert raw not in data, f"{raw!r} in {where}"
    assert b"Traceback" not in run.stdout + run.stderr
    assert max(len(b) for b in files.values()) < 5_000_000, "a file holds a blob"


def _claude_record(n: int, sid: str, role: str, text: str, **extra: Any) -> str:
    message: dict[str, Any] = {"role": role, "content": text}
    if role == "assistant":
        message = {"id": f"msg_{sid}_{n}", "role": role, "model": "claude",
                   "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": role, "sessionId": sid, "uuid": f"{sid}-u{n}",
                       "parentUuid": f"{sid}-u{n - 1}" if n else None,
                       "timestamp": f"2025-01-01T00:00:{n:02d}Z", "message": message,
                       **extra}) + "\n"


def _spec(folder: Path, *sessions: str) -> Path:
    """A spec running the extractive model over a good session and `sessions` (TOML values)."""
    write_session(folder, "good")
    spec = folder / "spec.toml"
    spec.write_text('name = "sessions"\nmodels = ["extractive"]\nsessions = ["good.json", '
                    + ", ".join(sessions) + "]\n", encoding="utf-8")
    return spec


def _errors(tmp_path: Path, *sessions: str, expected: dict[str, str],
            timeout: float = 600) -> dict[str, str]:
    """Run the spec; every session of `expected` has its status; returns the error messages.

    The run ends with exit code 3 (error rows), within `MAX_RESIDENT_KB`, with no raw error or
    printed traceback and no blob in any file."""
    out = tmp_path / "run"
    run, peak, _ = _run(_spec(tmp_path, *sessions), out, timeout)
    assert run.returncode == 3, run.stderr.decode()[-3000:]
    assert peak < MAX_RESIDENT_KB, f"peak resident memory {peak / 1024:.0f} MB"
    rows = _rows(out)
    assert {sid: status for sid, (status, _, _) in rows.items()} == {"good": "ok", **expected}
    assert {kind for status, kind, _ in rows.values() if status == "error"} == {
        "SessionFormatError"}
    _scan(out, run)
    errors = sum(1 for status in expected.values() if status == "error")
    assert (f"{errors} x unreadable session (error): a session file could not be read"
            in run.stdout.decode())
    return {sid: message or "" for sid, (status, _, message) in rows.items() if status == "error"}


def test_text_where_a_goose_timestamp_belongs_is_that_sessions_error_rows(tmp_path: Path) -> None:
    build_goose_db(tmp_path / "typed.db", {"typed": [("user", TEXT, 1700000000, None),
                                                     ("assistant", REPLY, "yesterday", None)]})
    said = _errors(tmp_path, '"typed.db"', expected={"unreadable:typed.db": "error"})
    assert said["unreadable:typed.db"] == (
        f"{tmp_path / 'typed.db'}#typed:messages row 2: created_timestamp is text "
        "('yesterday'), not a whole number (expected Unix seconds, or milliseconds above 1e10)")


def test_a_generated_column_holding_a_huge_blob_is_never_fetched(tmp_path: Path) -> None:
    # Beside the real columns: ignored, the session reads as it is.
    padded = build_goose_db(tmp_path / "padded.db", {"padded": [
        ("user", TEXT, 1700000000, None), ("assistant", REPLY, 1700000001, None)]})
    with sqlite3.connect(padded) as conn:
        conn.execute(f"ALTER TABLE messages ADD COLUMN pad BLOB GENERATED ALWAYS AS "
                     f"(zeroblob({BLOB})) VIRTUAL")
    # As content_json itself: a bad record, refused before it is fetched.
    fat = tmp_path / "fat.db"
    with sqlite3.connect(fat) as conn:
        conn.executescript(f"""
            CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT, working_dir TEXT,
                                   created_at TIMESTAMP);
            CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT,
                                   role TEXT, created_timestamp INTEGER, metadata_json TEXT,
                                   content_json BLOB GENERATED ALWAYS AS (zeroblob({BLOB})));
            INSERT INTO sessions VALUES ('fat', 'fat', '/w', '2026-01-01');
            INSERT INTO messages (session_id, role, created_timestamp) VALUES ('fat', 'user', 1);
            """)
    said = _errors(tmp_path, '"padded.db"', '"fat.db"',
                   expected={"padded": "ok", "unreadable:fat.db": "error"})
    assert said["unreadable:fat.db"] == (
        f"{fat}#fat:messages row 1: content_json holds {BLOB:,} bytes; the limit is "
        f"{MAX_RECORD_BYTES:,} per record (expected a JSON array of Goose content items in "
        "content_json)")


def test_a_record_or_file_over_its_limit_is_an_error_before_anything_is_tokenized(
        tmp_path: Path) -> None:
    # One JSON-lines record over the record limit: one word the tokenizer would choke on.
    huge = tmp_path / "huge.jsonl"
    record = _claude_record(1, "huge", "assistant", "a" * (MAX_RECORD_BYTES + 10))
    huge.write_text(_claude_record(0, "huge", "user", "fix it") + record, encoding="utf-8")
    # A file over the file limit (sparse: its first 64 KB are records, then zeros).
    sparse = tmp_path / "sparse.jsonl"
    with open(sparse, "w", encoding="utf-8") as fh:
        for n in range(400):
            fh.write(_claude_record(n, "sparse", "user", f"line {n} " + "x" * 200))
        fh.truncate(MAX_FILE_BYTES + 1)
    # One message of a JSON document over the record limit (the document is within its own).
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"id": "big", "conversation": [
        {"id": "m1", "role": "user", "created": 1700000000, "metadata": {},
         "content": [{"type": "text", "text": "b" * (MAX_RECORD_BYTES + 1)}]}]}),
        encoding="utf-8")
    said = _errors(tmp_path, '"huge.jsonl"', '"sparse.jsonl"', '"big.json"', expected={
        "unreadable:huge.jsonl": "error", "unreadable:sparse.jsonl": "error",
        "unreadable:big.json": "error"})
    assert said["unreadable:big.json"] == (
        f"{big}: message 0 (user) holds more than {MAX_RECORD_BYTES:,} characters of text, the "
        "limit per message")
    assert said["unreadable:huge.jsonl"] == (
        f"{huge}:2: the record is {len(record) - 1:,} bytes long; the limit is "
        f"{MAX_RECORD_BYTES:,} bytes per record (expected one Claude Code transcript record (a "
        "JSON object) per line)")
    assert said["unreadable:sparse.jsonl"] == (
        f"{sparse}: the file is {MAX_FILE_BYTES + 1:,} bytes; the limit is {MAX_FILE_BYTES:,} "
        "bytes per session file (split the recording, or select fewer sessions)")


def test_a_database_of_a_million_messages_is_refused_at_once_in_bounded_memory(
        tmp_path: Path) -> None:
    millions = build_goose_db(tmp_path / "millions.db", {"small": [
        ("user", TEXT, 1700000000, None), ("assistant", REPLY, 1700000001, None)]})
    with sqlite3.connect(millions) as conn:
        conn.execute("INSERT INTO sessions (id, name, working_dir) VALUES ('big', 'big', '/w')")
        conn.executemany(
            "INSERT INTO messages (message_id, session_id, role, content_json, "
            "created_timestamp) VALUES (?, 'big', 'user', '[]', ?)",
            ((f"m{i}", 1700000000 + i) for i in range(1_000_000)))
    started = time.monotonic()
    said = _errors(tmp_path, '"millions.db"', '{ path = "millions.db", session_id = "small" }',
                   expected={"small": "ok", "unreadable:millions.db": "error"}, timeout=300)
    assert time.monotonic() - started < 120  # minutes and gigabytes before
    assert said["unreadable:millions.db"] == (
        f"{millions}: the sessions selected hold 1,000,002 messages; the limit is "
        f"{MAX_MESSAGES:,} per session file (select fewer sessions with session_id)")


def _ok(tmp_path: Path, *sessions: str) -> dict[str, str]:
    """Run the spec; it ends well, with no raw error; returns session id -> status."""
    out = tmp_path / "run"
    run, _, _ = _run(_spec(tmp_path, *sessions), out)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    _scan(out, run)
    return {sid: status for sid, (status, _, _) in _rows(out).items()}


def test_duplicate_records_are_read_once_and_reported_in_the_warnings(tmp_path: Path) -> None:
    # 47 distinct Goose messages, the first 26 of them written twice: 73 lines of messages.
    rows = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
             "created": 1700000000 + i, "content": [{"type": "text", "text": f"step {i}"}],
             "metadata": {"userVisible": True, "agentVisible": True}} for i in range(47)]
    lines = [json.dumps({"working_dir": "/w", "description": "dupes"})]
    for i, row in enumerate(rows):
        lines += [json.dumps(row)] * (2 if i < 26 else 1)
    dupes = tmp_path / "dupes.jsonl"
    dupes.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(lines) - 1 == 73
    # A Claude Code transcript with every record written twice (a resumed session's copy).
    twice = tmp_path / "twice.jsonl"
    records = [_claude_record(n, "twice", "user" if n % 2 == 0 else "assistant", f"turn {n}")
               for n in range(6)]
    twice.write_text("".join(r + r for r in records), encoding="utf-8")
    assert _ok(tmp_path, '"dupes.jsonl"', '"twice.jsonl"') == {"good": "ok", "dupes": "ok",
                                                                "twice": "ok"}

    inspect = subprocess.run([sys.executable, "-m", "workbench", "sessions", "inspect", "--json",
                              str(dupes), str(twice)], cwd=ROOT, capture_output=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert inspect.returncode == 0, inspect.stderr.decode()
    goose, claude = json.loads(inspect.stdout)
    assert (goose["messages"], len(goose["warnings"])) == (47, 26)
    assert goose["warnings"][:2] == [f"{dupes}:3: a duplicate of line 2 (id 'm0'); read once",
                                     f"{dupes}:5: a duplicate of line 4 (id 'm1'); read once"]
    assert (claude["messages"], len(claude["warnings"])) == (6, 6)
    assert claude["warnings"][-1] == (f"{twice}:12: a duplicate of line 11 (id 'twice-u5'); "
                                      "read once")
    assert b"read 26 duplicate record(s) once" in inspect.stderr


def test_sessions_sharing_an_id_are_kept_apart_each_named_after_its_file(tmp_path: Path) -> None:
    # Three exported sessions sharing one id, in three files.
    for name in ("a.json", "b.json", "sub/c.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        write_session(tmp_path, "same", name)
    # A Claude Code session and two sub-agent transcripts carrying the parent's session id.
    parent = tmp_path / "cc" / "s-1.jsonl"
    agents = parent.parent / "s-1" / "subagents"
    agents.mkdir(parents=True)
    parent.write_text(_claude_record(0, "s-1", "user", "fix it")
                      + _claude_record(1, "s-1", "assistant", "done"), encoding="utf-8")
    for agent in ("a77", "acompact-e5"):
        (agents / f"agent-{agent}.jsonl").write_text(
            _claude_record(0, "s-1", "user", f"explore ({agent})", agentId=agent,
                           isSidechain=True)
            + _claude_record(1, "s-1", "assistant", "explored", agentId=agent,
                             isSidechain=True), encoding="utf-8")
    assert _ok(tmp_path, '"a.json"', '"b.json"', '"sub/c.json"', '"cc/**/*.jsonl"') == {
        "good": "ok", "same@a.json": "ok", "same@b.json": "ok", "same@sub/c.json": "ok",
        "s-1": "ok", "s-1/agent-a77": "ok", "s-1/agent-acompact-e5": "ok"}
