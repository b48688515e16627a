"""SQLite helpers shared by the workbench's two stores (the results store, the response cache):
WAL mode set safely, and one implementation of named, append-only migrations."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache

__all__ = ["Migration", "applied", "enable_wal", "migrate", "new_store_schema", "transaction"]

Migration = Callable[[sqlite3.Connection], None]
"""One named schema change: a function ``mNNN_name(db)``."""


def enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
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


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error (DDL included, unlike ``with db``)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.in_transaction:  # SQLite has already rolled back after a full disk (SQLITE_FULL)
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def applied(db: sqlite3.Connection) -> list[str]:
    """Names of the migrations already applied, in order."""
    db.execute("CREATE TABLE IF NOT EXISTS _workbench_migrations "
               "(name TEXT PRIMARY KEY, applied_at TEXT)")
    return [r[0] for r in db.execute("SELECT name FROM _workbench_migrations ORDER BY rowid")]


def migrate(db: sqlite3.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply every pending migration of `migrations`, all in one transaction.

    One transaction is one commit (a new run folder's store opens in a fraction of the time
    a commit per migration took) and all or nothing: a migration that fails leaves the
    database as it was, with none of this call's migrations applied. Connections that
    migrate one new file at once apply each migration once: what is pending is read again
    under the write lock.

    Args:
        db: A connection in autocommit mode (``isolation_level=None``).
        migrations: The store's migrations, in order (append only).

    Returns:
        The names applied by this call.
    """
    done = set(applied(db))
    if all(m.__name__ in done for m in migrations):
        return []
    with transaction(db):
        # Again under the write lock: another connection may have migrated it meanwhile.
        done = set(applied(db))
        pending = [m for m in migrations if m.__name__ not in done]
        schema = new_store_schema(tuple(migrations)) if not done and _blank(db) else None
        for statement in schema or ():
            db.execute(statement)
        for migration in pending:
            if schema is None:
                migration(db)
            db.execute("INSERT INTO _workbench_migrations (name, applied_at) VALUES (?, ?)",
                       (migration.__name__, datetime.now(UTC).isoformat()))
    return [m.__name__ for m in pending]


def _blank(db: sqlite3.Connection) -> bool:
    """True when the database holds nothing but the (empty) migrations table."""
    return db.execute("SELECT count(*) FROM sqlite_master"
                      " WHERE tbl_name != '_workbench_migrations'").fetchone()[0] == 0


@lru_cache(maxsize=4)  # a process resource: SQL worked out from code (see workbench._memo)
def new_store_schema(migrations: tuple[Migration, ...]) -> tuple[str, ...] | None:
    """The schema `migrations` build on a blank database, as the statements that build it at
    once: worked out on an in-memory database (once per process), read back from its
    ``sqlite_master`` in creation order. A blank file then gets its tables in one step, not
    by the dozens of ``ALTER TABLE`` a new store otherwise replays (each one makes SQLite parse
    the whole schema again: 4 of a new store's 5 ms). None when a migration fails or leaves
    rows behind (then each migration runs on the file itself, as on an older store)."""
    mem = sqlite3.connect(":memory:", isolation_level=None)
    try:
        applied(mem)
        with transaction(mem):
            for migration in migrations:
                migration(mem)
        rows = mem.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
                           " AND tbl_name != '_workbench_migrations' ORDER BY rowid").fetchall()
        for kind, name, _ in rows:
            if kind == "table" and mem.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone():
                return None
        return tuple(sql for _, _, sql in rows)
    except sqlite3.Error:
        return None
    finally:
        mem.close()
