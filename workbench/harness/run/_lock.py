"""One writer per run folder: `RunLock`, a lock file held for the whole run.

The lock file (``<run folder>/run.lock``) holds JSON naming its holder: pid, host and start
time. Where ``fcntl`` exists the file is also ``flock``-ed: the kernel drops that lock when its
process dies, however it dies, so a lock left by a killed run is simply taken over (its holder
text is kept as `RunLock.previous`). Without ``fcntl`` (Windows) the file is created with
``O_EXCL``; a file whose pid is dead on this host is renamed away first, and only one process can
win that rename.

A second run on a locked folder fails at once with `RunFolderLocked` naming the holder.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import socket
from pathlib import Path

from workbench._json_types import JSONObject
from workbench.errors import RunFolderLocked
from workbench.harness.results._store import utc_now

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "LOCKED_MESSAGE", "RunLock", "pid_alive"]

LOCK_FILE = "run.lock"
LOCKED_MESSAGE = ("run folder {folder} is in use by pid {pid} on host {host} since {started_at} "
                  "(lock file {path}); wait for that run to finish or stop it, or pass another "
                  "--out")
_ATTEMPTS = 5


def pid_alive(pid: int) -> bool:
    """True when a process with this id exists on this host (it may belong to another user)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:  # pragma: no cover - e.g. Windows without that pid
        return False
    return True


def _parse(text: str) -> JSONObject:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class RunLock:
    """The run folder's lock; use as a context manager around the whole run.

    Args:
        folder: The run folder (created when missing).

    Attributes:
        path: The lock file.
        previous: The holder text found in a stale lock file that was taken over, else None.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_FILE
        self.previous: JSONObject | None = None
        self._fd: int | None = None

    def holder_info(self) -> dict[str, int | str]:
        """What this process writes into the lock file."""
        return {"pid": os.getpid(), "host": socket.gethostname(), "started_at": utc_now()}

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> RunLock:
        """Take the lock or fail at once.

        Raises:
            RunFolderLocked: another live process holds it (the message names pid, host and
                start time).
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        for _ in range(_ATTEMPTS):
            taken = self._try_flock() if fcntl is not None else self._try_exclusive()
            if taken:
                return self
        raise RunFolderLocked(f"could not take the lock {self.path}: it kept changing under us")

    def _refuse(self, holder: JSONObject) -> RunFolderLocked:
        return RunFolderLocked(LOCKED_MESSAGE.format(
            folder=self.folder, path=self.path, pid=holder.get("pid", "?"),
            host=holder.get("host", "?"), started_at=holder.get("started_at", "?")), holder)

    def _try_flock(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _parse(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
            os.close(fd)
            raise self._refuse(holder) from None
        except OSError:
            # A file system without flock (some network mounts): use the O_EXCL protocol,
            # removing the empty file our open just created.
            empty = os.fstat(fd).st_size == 0
            os.close(fd)
            if empty:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
            return self._try_exclusive()
        except BaseException:
            os.close(fd)
            raise
        # The file may have been unlinked by a holder releasing between our open and flock:
        # then we locked an orphan; start again on the current file.
        try:
            same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            return False
        old = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        self.previous = _parse(old) if old else None
        self._write(fd)
        return True

    def _try_exclusive(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                holder = _parse(self.path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                return False
            same_host = holder.get("host") == socket.gethostname()
            pid = holder.get("pid")
            if not (same_host and isinstance(pid, int) and not pid_alive(pid)):
                raise self._refuse(holder) from None
            # Stale: move it aside under a unique name; of several racers only one rename wins.
            aside = self.path.with_name(f"{LOCK_FILE}.stale-{os.getpid()}")
            try:
                os.replace(self.path, aside)
            except FileNotFoundError:
                return False
            with contextlib.suppress(OSError):
                aside.unlink()
            self.previous = holder
            return self._claim_after_takeover()
        self._write(fd)
        return True

    def _claim_after_takeover(self) -> bool:
        previous = self.previous
        taken = self._try_exclusive()
        self.previous = previous
        return taken

    def _write(self, fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(self.holder_info()).encode("utf-8"), 0)
        self._fd = fd

    def hand_over(self) -> RunLock:
        """Hand the lock to a new `RunLock` object, which releases it: this one then holds
        nothing, and its ``with`` block ends without letting go (a run whose store is written
        after it returns: `close_store`)."""
        other = copy.copy(self)
        self._fd = None
        return other

    def release(self) -> None:
        """Give the lock up and remove the lock file (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # Unlink while still holding the lock, so nobody can lock this file after we let go.
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
