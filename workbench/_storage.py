"""Files the workbench writes: atomically, and with errors that name the path and the fix.

Every file a run, a report, a tune, an export or a baseline writes goes through `write_atomic`:
the bytes go to a temporary sibling (same folder, so the rename cannot cross a file system),
then ``os.replace`` puts them in place. A reader (a resumed run, Goose, a notebook) sees the old
file or the new one, never half of one; a failed write leaves the old file as it was and
removes the temporary one. A full disk therefore leaves no half-written question set, summary or
report behind for the next run to trip on.

A fault of the file system or of SQLite becomes a `StorageError` (`storage_error`, or the
`storage_errors` context) naming the path, the cause and what to do: a full disk (``ENOSPC``,
``EDQUOT``, SQLite's "database or disk is full"), a folder that may not be written (``EROFS``,
``EACCES``, ``EPERM``, SQLite's read-only and cannot-open errors) and a damaged SQLite file
("database disk image is malformed", "file is not a database"). Other errors pass unchanged.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from workbench.errors import StorageError

__all__ = ["storage_error", "storage_errors", "write_atomic"]

_FULL = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG})
_DENIED = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_SQLITE_FULL = frozenset({"SQLITE_FULL"})
_SQLITE_DENIED = frozenset({"SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM",
                            "SQLITE_READONLY_DIRECTORY", "SQLITE_CANTOPEN_ISDIR"})
_SQLITE_DAMAGED = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})

FULL_FIX = ("free some space (or point --out at another disk) and run the same command again: "
            "it resumes, and finished cells are not run or billed again")
DENIED_FIX = ("make the folder writable, or pass --out to a writable folder, and run again: "
              "it resumes, and finished cells are not run or billed again")
DAMAGED_FIX = ("restore it from a copy, or move it aside (e.g. to {name}.damaged) and run "
               "again: its cells then run again, answered from the response cache where it "
               "recorded them")


def _kind(exc: BaseException) -> str | None:
    if isinstance(exc, OSError):
        if exc.errno in _FULL:
            return "full"
        if exc.errno in _DENIED:
            return "denied"
        return None
    if isinstance(exc, sqlite3.DatabaseError):
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = str(exc)
        if name in _SQLITE_FULL or "disk is full" in text:
            return "full"
        if name in _SQLITE_DAMAGED or "malformed" in text or "not a database" in text:
            return "damaged"
        if (name in _SQLITE_DENIED or name.startswith("SQLITE_READONLY")
                or "readonly database" in text or "unable to open database" in text):
            return "denied"
    return None


def storage_error(exc: BaseException, path: str | Path,
                  exact: bool = False) -> StorageError | None:
    """The `StorageError` a file-system or SQLite fault on `path` stands for, or None.

    Args:
        exc: The error raised.
        path: The file (or folder) being written or read.
        exact: Name `path` even when the ``OSError`` names another file (a temporary one).
    """
    kind = _kind(exc)
    if kind is None:
        return None
    where = Path(path if exact else (getattr(exc, "filename", None) or path))
    cause = (os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno
             else str(exc))
    if kind == "full":
        return StorageError(str(where), f"the disk is full ({cause}); {FULL_FIX}", kind)
    if kind == "denied":
        return StorageError(str(where), f"cannot write here ({cause}); {DENIED_FIX}", kind)
    return StorageError(str(where), f"the SQLite file is damaged ({cause}); "
                        + DAMAGED_FIX.format(name=where.name), kind)


@contextlib.contextmanager
def storage_errors(path: str | Path, exact: bool = False) -> Iterator[None]:
    """Raise the `StorageError` of a storage fault inside the block (from the original).

    Args:
        path: Named when the fault does not name a file itself (SQLite's never do).
        exact: Always name `path` (see `storage_error`).
    """
    try:
        yield
    except StorageError:
        raise
    except (OSError, sqlite3.DatabaseError) as exc:
        mapped = storage_error(exc, path, exact)
        if mapped is None:
            raise
        raise mapped from exc


def _tmp_path(path: str) -> str:
    """A temporary sibling of `path` (a normalised file path): ``.<name>.<pid>.<random>.tmp``."""
    if os.altsep:
        head, name = os.path.split(path)
        return os.path.join(head, f".{name}.{os.getpid()}.{os.urandom(3).hex()}.tmp")
    head, sep, name = path.rpartition(os.sep)
    return f"{head}{sep}.{name}.{os.getpid()}.{os.urandom(3).hex()}.tmp"


_ODD_ENDS = frozenset((os.sep, os.altsep or os.sep, "."))
"""A path's last characters that `pathlib` would drop or resolve ("folder/", "folder/.")."""


_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)


def write_atomic(path: str | Path, data: str | bytes, *, keep_mode: bool = False) -> None:
    """Replace `path` with `data` (text is written as UTF-8, as it is) through a temporary
    sibling and ``os.replace``: readers see the old file or the new one, never part of one.

    The path is handled as a string and a fault mapped by hand rather than by `storage_errors`:
    a run writes one summary file per cell this way, and the `pathlib` objects and the
    context manager cost as much CPU as the system calls themselves.

    Args:
        path: The file to write.
        data: Its new contents.
        keep_mode: Give the new file the old one's permission bits (a user's own file).

    Raises:
        StorageError: the disk is full or the folder may not be written (names the path).
        OSError: any other failure; the old file is left as it was either way.
    """
    target = os.fspath(path)
    if not target or target[-1] in _ODD_ENDS:  # written and named as pathlib names it
        target = str(Path(target))
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = _tmp_path(target)
    try:
        fd = os.open(tmp, _FLAGS, 0o666)
        try:
            written = os.write(fd, raw)
            if written < len(raw):  # a short write: the rest in as many more as it takes
                rest = memoryview(raw)[written:]
                while rest:
                    rest = rest[os.write(fd, rest):]
        finally:
            os.close(fd)
        if keep_mode and os.path.exists(target):
            os.chmod(tmp, os.stat(target).st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        mapped = storage_error(exc, Path(target), exact=True) \
            if isinstance(exc, OSError | sqlite3.DatabaseError) else None
        if mapped is None:
            raise
        raise mapped from exc
