"""SQLite helpers shared by the workbench's two stores (the results store, the response cache):
WAL mode set safely, one implementation of named, append-only migrations, and a new store's
file written whole from a migrated image."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

__all__ = ["Migration", "applied", "create_store", "enable_wal", "migrate", "new_store_image",
           "new_store_schema", "transaction"]

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
                       (migration.__name__, _now_text()))
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
    mem = _migrated_in_memory(migrations)
    if mem is None:
        return None
    try:
        rows = mem.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL"
                           " AND tbl_name != '_workbench_migrations' ORDER BY rowid").fetchall()
        return tuple(sql for sql, in rows)
    except sqlite3.Error:
        return None
    finally:
        mem.close()


def _migrated_in_memory(migrations: tuple[Migration, ...]) -> sqlite3.Connection | None:
    """A new in-memory database with every one of `migrations` applied (the caller closes
    it), or None when one fails or leaves rows behind in a table: such a schema is not what
    a blank file would get, so the callers leave a new store to the migrations themselves."""
    mem = sqlite3.connect(":memory:", isolation_level=None)
    try:
        applied(mem)
        with transaction(mem):
            for migration in migrations:
                migration(mem)
        tables = mem.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        if not any(mem.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone()
                   for name, in tables):
            return mem
    except sqlite3.Error:
        pass
    mem.close()
    return None


_WAL_HEADER = b"\x02\x02"
"""The file format's read and write versions (header bytes 18 and 19) of a database in WAL
mode: what ``PRAGMA journal_mode=WAL`` writes into a file's header, and keeps there."""
_ROLLBACK_HEADER = b"\x01\x01"
"""The same two bytes of a database without a write-ahead log (as one in memory must be)."""


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)
_datasync = getattr(os, "fdatasync", os.fsync)  # macOS and Windows have only fsync


def create_store(path: str | Path, migrations: Sequence[Migration]) -> bool:
    """Make a new database file at `path`, migrated and in WAL mode, in a few system calls:
    the image of `new_store_image` with this moment in its migration rows (its placeholder
    times replaced), written as a new file (`write_new_file`). What SQLite would do on a blank
    file (set WAL mode, create the tables in a transaction, commit) costs a new run folder's
    store about 1 ms of CPU more, on the thread that writes the first cells.

    Returns:
        True when the file was made; False when `path` exists, is not a plain file path, or
        the image cannot be made or linked (a file system without hard links): then a
        connection makes and migrates it as before. A fault (a full disk) is left to that
        connection to meet and report.
    """
    target = str(path)
    if target == ":memory:" or target.startswith("file:") or os.path.lexists(target):
        return False
    data = _new_store_bytes(migrations)
    if data is None:
        return False
    try:
        write_new_file(target, data)
    except OSError:
        return False
    return True


def open_in_memory(migrations: Sequence[Migration]) -> sqlite3.Connection | None:
    """A new store's database in memory: what `create_store` would write, with this moment in
    its migration rows, for a writer that has every row at hand to fill it and then write it
    to its file in one piece (`write_whole`). None where the image cannot be made."""
    data = _new_store_bytes(migrations)
    if data is None:
        return None
    data[18:20] = _ROLLBACK_HEADER  # a database in memory keeps no write-ahead log
    db = sqlite3.connect(":memory:", isolation_level=None)
    try:
        db.deserialize(data)
    except sqlite3.Error:
        db.close()
        return None
    return db


def write_whole(db: sqlite3.Connection, path: str | Path) -> None:
    """Write the database `db` (from `open_in_memory`) as a new file at `path`, in WAL mode as
    `create_store` makes one: written aside, synced, and put in place whole.

    Raises:
        FileExistsError: a file is at `path` already (it is left as it is).
        OSError: the file could not be written (a full disk); nothing is left at `path`.
    """
    data = bytearray(db.serialize())
    data[18:20] = _WAL_HEADER
    write_new_file(str(path), data, or_rename=True)


def _new_store_bytes(migrations: Sequence[Migration]) -> bytearray | None:
    """`new_store_image` with this moment in place of its placeholder times, or None."""
    image = new_store_image(tuple(migrations))
    now = _now_text().encode("ascii")
    if image is None or len(now) != len(_APPLIED_PLACEHOLDER):
        return None
    return bytearray(image.replace(_APPLIED_PLACEHOLDER, now))


def write_new_file(target: str, data: bytes | bytearray, *, or_rename: bool = False) -> None:
    """Write `data` as a new file at `target`: to a temporary sibling, synced, and linked into
    place (never over a file that is there: a link fails where a file exists, and no reader
    ever sees half a file), then the folder synced, as SQLite syncs a new file's first page and
    the folder of its name. Where the file system has no hard links, `or_rename` renames the
    sibling into place instead (over nothing: `target` is checked first).

    Raises:
        FileExistsError: a file is at `target`.
        OSError: the file could not be written or put in place (the sibling is removed).
    """
    folder = os.path.dirname(target) or "."
    tmp = os.path.join(folder, f".{os.path.basename(target)}.{os.getpid()}"
                               f".{os.urandom(3).hex()}.tmp")
    try:
        fd = os.open(tmp, _NEW_FILE, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            _datasync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise
        except OSError:
            if not or_rename or os.path.lexists(target):
                raise
            os.rename(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


_APPLIED_PLACEHOLDER = b"0000-00-00T00:00:00.000000+00:00"
"""The ``applied_at`` a new store's image holds in each migration row, replaced by the
moment the store is made: as long as `_now_text`, so that only those bytes change."""


def _now_text() -> str:
    """This moment as a migration row's ``applied_at`` (always with microseconds)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@lru_cache(maxsize=4)  # a process resource: a database worked out from code (see workbench._memo)
def new_store_image(migrations: tuple[Migration, ...]) -> bytes | None:
    """The database `migrations` build, in WAL mode, with a row per migration applied at
    `_APPLIED_PLACEHOLDER`, as the bytes of its file (`sqlite3.Connection.serialize`): made in
    memory once per process, so that a new store is this with the placeholder replaced by its
    moment, and one write (`create_store`). SQLite stores a text of the same length in the same
    bytes, and no index or checksum covers them: one replace of bytes, where a new store took
    an in-memory database, a transaction and a copy of it (0.3 ms on the thread that writes
    the first cells). None where it cannot be made as `new_store_schema` cannot (a migration
    fails or leaves rows behind), where this SQLite cannot serialize, or where the placeholder
    shows up anywhere but in those rows."""
    if not hasattr(sqlite3.Connection, "serialize"):
        return None
    mem = _migrated_in_memory(migrations)
    if mem is None:
        return None
    try:
        with transaction(mem):
            mem.executemany("INSERT INTO _workbench_migrations (name, applied_at) VALUES (?, ?)",
                            [(m.__name__, _APPLIED_PLACEHOLDER.decode()) for m in migrations])
        data = bytearray(mem.serialize())
    except sqlite3.Error:
        return None
    finally:
        mem.close()
    if data.count(_APPLIED_PLACEHOLDER) != len(migrations):
        return None
    data[18:20] = _WAL_HEADER
    return bytes(data)
