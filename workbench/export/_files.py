"""Writing a pair of template files as one change (export and restore share it).

Both files go to temporary siblings first, then are renamed into place; if anything fails,
files already renamed get their old bytes back (or are removed when they were new), and the
temporary files and the backups made are deleted. A single file is replaced through a sibling
temp file and ``os.replace``, so Goose never reads a half-written template.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from workbench._storage import write_atomic

__all__ = ["atomic_write", "write_pair"]


def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_pair(plan: list[tuple[Path, bytes, Path | None]]) -> None:
    """Write every ``(real target, bytes, backup or None)`` or none of them (the backup, when
    given, receives the target's old bytes first).

    Stages all temporary files, makes the backups, then renames; on any failure the renamed
    targets get their old bytes back (or are removed when they are new), and the temporary
    files and this call's backups are deleted.
    """
    staged: list[tuple[Path, Path, Path | None, bytes | None]] = []  # (target, tmp, backup, old)
    renamed: list[tuple[Path, bytes | None]] = []
    made_backups: list[Path] = []
    try:
        for path, data, backup in plan:
            tmp = _tmp_path(path)
            old = path.read_bytes() if path.is_file() else None
            staged.append((path, tmp, backup, old))
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if path.exists():
                shutil.copymode(path, tmp)
        for path, _tmp, backup, _old in staged:
            if backup is not None:
                shutil.copy2(path, backup)
                made_backups.append(backup)
        for path, tmp, _backup, old in staged:
            os.replace(tmp, path)
            renamed.append((path, old))
    except BaseException:
        for path, old in reversed(renamed):
            with contextlib.suppress(OSError):
                if old is None:
                    path.unlink()
                else:
                    atomic_write(path, old)
        for _path, tmp, _backup, _old in staged:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        for backup in made_backups:
            with contextlib.suppress(OSError):
                backup.unlink()
        raise


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` through a sibling temp file and ``os.replace``, keeping the
    old file's permission bits (`workbench._storage.write_atomic`)."""
    write_atomic(path, data, keep_mode=True)


