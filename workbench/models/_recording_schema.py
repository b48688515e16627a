"""The response recording's schema: named, append-only migrations (`workbench._sqlite`), one
function each, applied in order by `workbench.models.ResponseCache`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["MIGRATIONS"]


def m001_responses(conn: sqlite3.Connection) -> None:
    """The responses table."""
    conn.execute(
        """CREATE TABLE responses (
            key TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            prompt_hash TEXT NOT NULL,
            text TEXT NOT NULL,
            message_json TEXT NOT NULL,
            usage_json TEXT NOT NULL,
            cost REAL,
            latency_ms REAL,
            model_version TEXT,
            created_at TEXT NOT NULL,
            hits INTEGER NOT NULL DEFAULT 0
        )"""
    )


def m002_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for prune (by age) and for finding a recording by prompt hash."""
    conn.execute("CREATE INDEX responses_created_at ON responses(created_at)")
    conn.execute("CREATE INDEX responses_prompt_hash ON responses(prompt_hash)")


def m003_refusals(conn: sqlite3.Connection) -> None:
    """Context-window refusals of the real model, so a replay reproduces them exactly."""
    conn.execute("ALTER TABLE responses ADD COLUMN refusal TEXT")


def m004_prompt_tokens(conn: sqlite3.Connection) -> None:
    """Prompt sizes in a model's own tokenizer (`workbench.models.RecordedCounts`), so a machine
    without that tokenizer judges a simulated window exactly as the recording machine did."""
    conn.execute(
        """CREATE TABLE prompt_tokens (
            key TEXT PRIMARY KEY,
            tokenizer TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            created_at TEXT NOT NULL
        )"""
    )


# Append only: shipped migrations are never edited or reordered.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_responses, m002_indexes, m003_refusals, m004_prompt_tokens]
