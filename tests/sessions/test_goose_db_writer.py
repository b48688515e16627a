"""write_goose_db_session: Goose's replace_conversation into a real sessions.db."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.goose_db_helpers import build_goose_db
from workbench.errors import SessionFormatError
from workbench.messages import Message, MessageMetadata
from workbench.sessions import load_session
from workbench.sessions.importers._goose_db import write_goose_db_session

SID = "20260301_1"


def two_session_db(tmp_path: Path) -> Path:
    old = [("user", [{"type": "text", "text": "old"}], 5, None)]
    return build_goose_db(tmp_path / "sessions.db", {SID: old, "20260301_2": old})


def test_written_session_round_trips_through_the_goose_db_reader(tmp_path: Path) -> None:
    db = two_session_db(tmp_path)
    messages = [
        Message.user("fix the parser", created=1000, id="msg_a",
                     metadata=MessageMetadata.user_only()),
        Message.assistant(created=1001, id="msg_b").with_tool_request(
            "c1", "developer__shell", {"command": "cargo test"}),
        Message.user(created=1002, id="msg_c").with_tool_response("c1", "ok. 3 passed"),
        Message.user("<turn-context>cwd</turn-context>", created=1002,
                     metadata=MessageMetadata(user_visible=False, turn_context=True)),
    ]
    assert write_goose_db_session(db, SID, messages) == 4
    loaded = load_session(db, format="goose-db", session_id=SID).messages
    assert [m.to_goose() for m in loaded[:3]] == [m.to_goose() for m in messages[:3]]
    assert loaded[3].id.startswith(f"msg_{SID}_")
    assert loaded[3].to_goose() == {**messages[3].to_goose(), "id": loaded[3].id}
    other = load_session(db, format="goose-db", session_id="20260301_2").messages
    assert [m.concat_text() for m in other] == ["old"]


def test_written_rows_use_goose_column_layout(tmp_path: Path) -> None:
    db = two_session_db(tmp_path)
    write_goose_db_session(db, SID, [Message.user("hi", created=7, id="msg_x")])
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, message_id, session_id, role, content_json, "
                            "created_timestamp, metadata_json FROM messages "
                            "WHERE session_id = ?", (SID,)).fetchall()
    assert len(rows) == 1
    _, message_id, session_id, role, content, created, metadata = rows[0]
    assert (message_id, session_id, role, created) == ("msg_x", SID, "user", 7)
    assert json.loads(content) == [{"type": "text", "text": "hi"}]
    assert json.loads(metadata) == {"userVisible": True, "agentVisible": True}


def test_writing_needs_an_existing_goose_session(tmp_path: Path) -> None:
    db = two_session_db(tmp_path)
    with pytest.raises(SessionFormatError, match="no session 'nope'; create its sessions row"):
        write_goose_db_session(db, "nope", [])
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).close()
    with pytest.raises(SessionFormatError, match="no sessions/messages tables"):
        write_goose_db_session(plain, SID, [])
