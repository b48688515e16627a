"""Whole-file problems reported by `load_session` / `detect_format` before any importer runs."""

from __future__ import annotations

import sqlite3

import pytest

from workbench.errors import ConfigError, SessionFormatError
from workbench.sessions import IMPORTERS, load_session


def test_an_empty_file_is_named_as_empty(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("  \n\n", encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    assert str(info.value) == f"{path}: the file is empty"
    assert (info.value.file, info.value.line) == (str(path), None)


def test_a_binary_file_is_not_a_recording(tmp_path):
    path = tmp_path / "b.bin"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    assert str(info.value) == f"{path}: the file is binary, not a session recording"


def test_an_unknown_format_lists_the_known_ones(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n", encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    known = ", ".join(sorted(IMPORTERS))
    assert str(info.value) == f"{path}: unknown session format; pass format= one of: {known}"
    for name in ("claude-code", "codex", "goose-db", "goose-json", "goose-jsonl", "openai-chat"):
        assert name in IMPORTERS


def test_missing_file_directory_and_unknown_format_name(tmp_path):
    with pytest.raises(SessionFormatError, match="no such file"):
        load_session(tmp_path / "nope.jsonl")
    with pytest.raises(SessionFormatError, match="is a directory; pass a session file"):
        load_session(tmp_path)
    path = tmp_path / "x.json"
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown session format 'nope'; known: "):
        load_session(path, format="nope")
    with pytest.raises(ConfigError, match="errors must be 'raise' or 'skip', not 'ignore'"):
        load_session(path, format="goose-json", errors="ignore")


def test_a_database_with_no_sessions_says_nothing_matched(tmp_path):
    path = tmp_path / "sessions.db"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT, created_at TEXT);"
                       "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT);")
    conn.close()
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    assert str(info.value) == f"{path}: no session matched the selection (none)"
