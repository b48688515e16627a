"""SQLite helpers shared by the workbench's two stores (the results store, the response cache)."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

__all__ = ["enable_wal"]


def enable_wal(conn: Any, timeout: float) -> None:
    """Put `conn`'s database in write-ahead-log mode, waiting up to `timeout` seconds.

    SQLite does not call the busy handler while a database changes its journal mode, so
    connections that open a new file at the same moment (threads of one run, two processes
    sharing a cache) can get "database is locked" here even with a busy timeout set. The
    pragma is retried, backing off from 1 ms to 50 ms, until it succeeds or `timeout` has
    passed; then the last error is raised. Other errors are raised at once.

    Args:
        conn: An open ``sqlite3.Connection``.
        timeout: Seconds to keep retrying (the connection's busy timeout).

    Raises:
        sqlite3.OperationalError: the database stayed locked for `timeout` seconds, or any
            other error of the pragma.
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED") \
                or "database is locked" in str(exc)
            if not busy or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
