"""Builds real Goose ``sessions.db`` files (schema version 15, section 8.2) for tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    cache_read_tokens INTEGER, cache_write_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER, accumulated_cache_read_tokens INTEGER,
    accumulated_cache_write_tokens INTEGER, accumulated_cost REAL,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT,
    model_config_json TEXT, goose_mode TEXT DEFAULT 'auto', archived_at TIMESTAMP,
    project_id TEXT, parent_session_id TEXT, thread_id TEXT);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
CREATE TABLE usage_ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_timestamp INTEGER NOT NULL, model TEXT, input_tokens INTEGER, output_tokens INTEGER,
    total_tokens INTEGER, cache_read_tokens INTEGER, cache_write_tokens INTEGER, cost REAL,
    cost_source TEXT, is_compaction INTEGER DEFAULT 0);
CREATE INDEX idx_messages_session ON messages(session_id);
INSERT INTO schema_version (version) VALUES (15);
"""


def build_goose_db(path: Path, sessions: dict[str, list[tuple]], ledger=()) -> Path:
    """A real sessions.db: `sessions` maps id -> rows (role, content, created, metadata|str|None)."""
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    for n, (sid, rows) in enumerate(sessions.items()):
        conn.execute("INSERT INTO sessions (id, name, working_dir, created_at, provider_name, "
                     "model_config_json) VALUES (?, ?, '/tmp/w', ?, 'openai', ?)",
                     (sid, f"session {sid}", f"2026-03-0{n + 1} 10:00:00",
                      json.dumps({"model_name": "gpt-4o"})))
        for i, (role, content, created, meta) in enumerate(rows):
            meta_json = meta if isinstance(meta, str) or meta is None else json.dumps(meta)
            conn.execute("INSERT INTO messages (message_id, session_id, role, content_json, "
                         "created_timestamp, metadata_json) VALUES (?, ?, ?, ?, ?, ?)",
                         (f"msg_{sid}_{i}", sid, role,
                          content if isinstance(content, str) else json.dumps(content),
                          created, meta_json))
    for row in ledger:
        conn.execute("INSERT INTO usage_ledger (session_id, created_timestamp, model, input_tokens, "
                     "output_tokens, total_tokens, cache_read_tokens, cache_write_tokens, cost, "
                     "cost_source, is_compaction) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
    conn.commit()
    conn.close()
    return path
