"""`ResponseCache`: recorded model responses in a SQLite file.

A hit returns the recorded `Message` and the recorded `Usage` (the billed figures of the original
call, so a replay reproduces cost). Storage: one SQLite file in WAL mode (``synchronous=NORMAL``,
a busy timeout), each write its own short ``INSERT OR IGNORE`` transaction, so concurrent writers
and a killed process leave a readable file. A recording that may not be written (see
`is_read_only`) is opened read-only (``file:...?mode=ro``), never switched to WAL, and serves
replays only. Schema changes are named, append-only migrations recorded in
``_workbench_migrations`` (`workbench._sqlite.migrate`, as the results store's). Recordings are
meant to be committed: `ResponseCache.export` writes a standalone compacted copy,
`ResponseCache.vacuum` folds the WAL into the main file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypedDict

from workbench._paths import cache_path as default_cache_path
from workbench._redact import redactor
from workbench._sqlite import enable_wal
from workbench._sqlite import migrate as _migrate
from workbench.compaction._model import Usage
from workbench.errors import ConfigError
from workbench.messages import Message
from workbench.models._cache_keys import canonical_json
from workbench.models._recording_schema import MIGRATIONS

Row = dict[str, str | int | float | None]
"""A ``responses`` row: column -> SQLite value."""


class CacheStats(TypedDict):
    """`ResponseCache.stats`: what ``workbench cache list`` shows."""

    path: str
    entries: int
    hits: int
    bytes: int
    oldest: str | None
    newest: str | None
    models: dict[str, int]
    token_counts: int


__all__ = ["MIGRATIONS", "Refusal", "ResponseCache", "decode_response", "is_read_only",
           "refusal_row", "response_row"]

BUSY_TIMEOUT_MS = 30_000


class Refusal:
    """A recorded `ContextLengthExceeded` of the real model (its message)."""

    def __init__(self, message: str) -> None:
        self.message = message


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


RESPONSE_COLUMNS: tuple[str, ...] = (
    "key", "model", "prompt_hash", "text", "message_json", "usage_json", "cost", "latency_ms",
    "model_version", "created_at", "refusal")
"""The columns `response_row` and `refusal_row` fill (``hits`` starts at 0)."""


def response_row(key: str, *, model: str, prompt_sha256: str, message: Message, usage: Usage,
                 latency_ms: float | None = None) -> Row:
    """The ``responses`` row recording one reply, redacted as it will be stored."""
    usage_data = usage.to_dict()
    extra = {k: v for k, v in (usage.extra or {}).items() if k != "cache_hit"}
    usage_data["extra"] = extra
    found = extra.get("model_version") or usage.model or None
    version = str(found) if found else None
    clean = redactor()
    return {"key": key, "model": clean.text(model), "prompt_hash": prompt_sha256,
            "text": clean.text(message.concat_text()),
            "message_json": canonical_json(clean.obj(message.to_goose())),
            "usage_json": canonical_json(clean.obj(usage_data)), "cost": usage.cost,
            "latency_ms": latency_ms, "model_version": clean.text(version) if version else None,
            "created_at": _now(), "refusal": None}


def refusal_row(key: str, *, model: str, prompt_sha256: str, error: str) -> Row:
    """The ``responses`` row recording that the real model refused a prompt as too long."""
    clean = redactor()
    return {"key": key, "model": clean.text(model), "prompt_hash": prompt_sha256, "text": "",
            "message_json": "null", "usage_json": "null", "created_at": _now(),
            "refusal": clean.text(error)}


def decode_response(message_json: str, usage_json: str,
                    refusal: str | None) -> tuple[Message, Usage] | Refusal:
    """A stored row's answer: the reply and its recorded usage (fresh objects), or the
    `Refusal`."""
    if refusal is not None:
        return Refusal(refusal)
    return Message.from_goose(json.loads(message_json)), Usage.from_dict(json.loads(usage_json))


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply the recording's migrations not yet recorded (`workbench._sqlite.migrate`)."""
    return _migrate(conn, MIGRATIONS)


def _no_write_bits(path: Path) -> bool:
    try:
        return not path.stat().st_mode & 0o222
    except OSError:
        return False


def is_read_only(path: str | Path) -> bool:
    """True when the recording at `path` exists but it, or its folder, may not be written.

    Either the OS refuses writing (``os.access``: permissions, a read-only mount) or the file
    or folder has no write permission bit at all, which counts even for root: a recording
    someone made read-only (a committed fixture, a shared copy) is to be read, not upgraded.
    """
    file = Path(path)
    if not file.is_file():
        return False
    folder = file.parent
    return (not os.access(file, os.W_OK) or not os.access(folder, os.W_OK)
            or _no_write_bits(file) or _no_write_bits(folder))


def _connect_read_only(path: Path) -> sqlite3.Connection:
    uri = path.resolve().as_uri()
    wal = Path(f"{path}-wal")
    if not wal.exists() or wal.stat().st_size == 0:
        # Everything is in the main file: read it as unchanging, so SQLite creates no -shm or
        # -wal beside it (a WAL-mode file would otherwise get both, even when only read).
        query = "mode=ro&immutable=1"
    else:
        query = "mode=ro"  # un-checkpointed pages: they must be read through the WAL
    conn = sqlite3.connect(f"{uri}?{query}", uri=True, isolation_level=None,
                           check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        conn.close()
        raise ConfigError(f"cannot read the read-only response cache {path} ({exc}); its -wal "
                          "file needs a writable folder: copy the recording and its -wal file "
                          "somewhere writable and replay from there") from exc
    return conn


class ResponseCache:
    """A SQLite file of recorded model responses, shared by every `CachedModel` using it.

    One connection per instance, guarded by a lock, so threads may share an instance; other
    processes may open the same file at the same time.

    Args:
        path: The SQLite file; the user dir's ``cache/responses.db`` by default. Its folder is
            created when missing.
        read_only: Open an existing file read-only (no WAL switch, no migration, no writes):
            lookups work, recording raises. Default: `is_read_only` of the path.

    Raises:
        ConfigError: a read-only file that is not a recording, or one recorded by an older
            workbench (it would need a migration, which is a write).
    """

    def __init__(self, path: str | Path | None = None, *, read_only: bool | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.read_only = is_read_only(self.path) if read_only is None else read_only
        self._lock = threading.Lock()
        self.closed = False
        if self.read_only:
            self._conn = _connect_read_only(self.path)
            self._check_read_only_schema()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                     timeout=BUSY_TIMEOUT_MS / 1000)
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        enable_wal(self._conn, BUSY_TIMEOUT_MS / 1000)  # a new file opened at once elsewhere
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            migrate(self._conn)

    def _check_read_only_schema(self) -> None:
        try:
            done = {row[0] for row in self._conn.execute(
                "SELECT name FROM _workbench_migrations")}
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ConfigError(f"read-only response cache {self.path} is not a workbench "
                              f"recording ({exc})") from exc
        missing = [fn.__name__ for fn in MIGRATIONS if fn.__name__ not in done]
        if missing:
            self._conn.close()
            raise ConfigError(
                f"read-only response cache {self.path} was recorded by an older workbench "
                f"(missing migrations: {', '.join(missing)}); copy it somewhere writable and "
                "open it once to upgrade it")

    # -- calls --

    def get(self, key: str, *, count_hit: bool = True) -> tuple[Message, Usage] | Refusal | None:
        """The recorded reply and usage for `key`, a recorded `Refusal`, or None.

        Args:
            key: A `cache_key`.
            count_hit: Add one to the row's ``hits`` (a small write; replay mode skips it so a
                committed recording is never modified).
        """
        with self._lock:
            row = self._conn.execute(
                "SELECT message_json, usage_json, refusal FROM responses WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            if count_hit:
                self._conn.execute("UPDATE responses SET hits = hits + 1 WHERE key = ?", (key,))
        return decode_response(*row)

    def put(self, key: str, *, model: str, prompt_sha256: str, message: Message, usage: Usage,
            latency_ms: float | None = None) -> bool:
        """Store one response; an existing row for `key` is kept. Returns True when inserted."""
        return self.put_row(response_row(key, model=model, prompt_sha256=prompt_sha256,
                                         message=message, usage=usage, latency_ms=latency_ms))

    def put_refusal(self, key: str, *, model: str, prompt_sha256: str, error: str) -> bool:
        """Record that the real model refused this prompt as too long. Returns True when inserted."""
        return self.put_row(refusal_row(key, model=model, prompt_sha256=prompt_sha256,
                                        error=error))

    def put_row(self, row: Row) -> bool:
        """Store a row built by `response_row` or `refusal_row` (one made elsewhere, such as
        by a Ray run's coordinator); an existing row for its key is kept. Returns True when
        inserted."""
        names = [c for c in RESPONSE_COLUMNS if c in row]
        with self._lock:
            cur = self._conn.execute(
                f"INSERT OR IGNORE INTO responses ({', '.join(names)}) "
                f"VALUES ({', '.join('?' for _ in names)})", [row[c] for c in names])
        return cur.rowcount == 1

    def all_responses(self) -> dict[str, tuple[str, str, str | None]]:
        """Every recording by key, as (message_json, usage_json, refusal): what a Ray run ships
        to its coordinator in place of the file (`decode_response` reads one)."""
        with self._lock:
            return {k: (m, u, r) for k, m, u, r in self._conn.execute(
                "SELECT key, message_json, usage_json, refusal FROM responses")}

    def add_hits(self, hits: dict[str, int]) -> None:
        """Add lookups made elsewhere (a Ray run's coordinator) to the rows' ``hits``."""
        with self._lock:
            for key, count in hits.items():
                self._conn.execute("UPDATE responses SET hits = hits + ? WHERE key = ?",
                                   (count, key))

    # -- prompt sizes in a model's own tokenizer --

    def get_tokens(self, key: str) -> int | None:
        """The recorded token count for a `count_key`, or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT tokens FROM prompt_tokens WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row is not None else None

    def put_tokens(self, key: str, tokenizer: str, tokens: int) -> bool:
        """Record a prompt's token count; an existing row is kept. Returns True when inserted."""
        with self._lock:
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO prompt_tokens (key, tokenizer, tokens, created_at) "
                "VALUES (?, ?, ?, ?)", (key, tokenizer, int(tokens), _now()))
        return cur.rowcount == 1

    def all_tokens(self) -> dict[str, int]:
        """Every recorded token count by key (what a Ray worker gets in place of the file)."""
        with self._lock:
            return {k: int(n) for k, n in self._conn.execute(
                "SELECT key, tokens FROM prompt_tokens")}

    # -- maintenance (``workbench cache list|clear|prune``) --

    def stats(self) -> CacheStats:
        """Entries, hits, size, age range, per-model counts and recorded prompt sizes."""
        with self._lock:
            count, hits, oldest, newest = self._conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(hits), 0), MIN(created_at), MAX(created_at) "
                "FROM responses"
            ).fetchone()
            models = dict(self._conn.execute(
                "SELECT model, COUNT(*) FROM responses GROUP BY model ORDER BY model"
            ).fetchall())
            token_counts = self._conn.execute("SELECT COUNT(*) FROM prompt_tokens").fetchone()[0]
        size = sum(p.stat().st_size for p in self._files() if p.exists())
        return {"path": str(self.path), "entries": count, "hits": hits, "bytes": size,
                "oldest": oldest, "newest": newest, "models": models,
                "token_counts": token_counts}

    def clear(self) -> int:
        """Delete every recording; returns how many were deleted."""
        with self._lock:
            self._conn.execute("DELETE FROM prompt_tokens")
            return self._conn.execute("DELETE FROM responses").rowcount

    def prune(self, older_than_days: float) -> int:
        """Delete recordings created more than `older_than_days` days ago; returns the count."""
        if older_than_days < 0:
            raise ConfigError(f"older_than_days must be >= 0, got {older_than_days}")
        cutoff = (datetime.now(UTC) - timedelta(days=older_than_days)).isoformat(
            timespec="seconds")
        with self._lock:
            self._conn.execute("DELETE FROM prompt_tokens WHERE created_at < ?", (cutoff,))
            return self._conn.execute(
                "DELETE FROM responses WHERE created_at < ?", (cutoff,)).rowcount

    def vacuum(self) -> None:
        """Fold the WAL into the main file and compact it (before committing the file)."""
        with self._lock:
            # VACUUM itself goes through the WAL, so checkpoint after it.
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def export(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write a standalone, compacted copy (one file, no WAL) to `path`.

        Raises:
            ConfigError: `path` exists and `overwrite` is false.
        """
        target = Path(path)
        if target.exists():
            if not overwrite:
                raise ConfigError(f"{target} exists; pass overwrite=True to replace it")
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._conn.execute("VACUUM INTO ?", (str(target),))
        # A copy made from a WAL database is itself in WAL mode; switch it back so it is one file.
        conn = sqlite3.connect(target, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
        finally:
            conn.close()
        return target

    def close(self) -> None:
        """Close the connection (the instance is unusable afterwards)."""
        with self._lock:
            self._conn.close()
            self.closed = True

    def _files(self) -> list[Path]:
        return [self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")]

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"
