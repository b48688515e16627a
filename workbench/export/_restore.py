"""Undo the last export: ``workbench export --restore``.

Each real export leaves ``.workbench-last-export.json`` in the destination folder: every file it
wrote, the sha256 of what it wrote, and the backup of the file it replaced (none when the file
was new). `restore_last_export` puts each backup back (or removes a file the export created) and
deletes the record, so a second restore says there is nothing to undo. A file changed since the
export is never overwritten: the restore stops and names it and its backup.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from workbench.compaction._templates import goose_config_dir
from workbench.errors import ConfigError

__all__ = ["LAST_EXPORT", "record_export", "restore_last_export"]

LAST_EXPORT = ".workbench-last-export.json"
"""The record of the last export, in the destination folder."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_export(result: Any) -> Path | None:
    """Write the record `restore_last_export` reads; None for a dry run or a no-op export."""
    if result.dry_run or not result.written:
        return None
    files = []
    for path in result.written:
        backup = next((b for b in result.backups if b.name.startswith(path.name + ".bak-")), None)
        files.append({"path": str(path), "sha256": _sha(path),
                      "backup": str(backup) if backup is not None else None})
    record = {"variant": result.variant, "date": dt.datetime.now(dt.UTC).isoformat(
        timespec="seconds"), "files": files}
    target = Path(result.dest) / LAST_EXPORT
    target.write_text(json.dumps(record, indent=2), encoding="utf-8")
    return target


def restore_last_export(dest: str | Path | None = None) -> list[str]:
    """Undo the last export into `dest` (default Goose's prompt folder).

    Returns:
        One line per file: ``restored <path> from <backup>`` or ``removed <path> (it was new)``.

    Raises:
        ConfigError: no export to undo, a backup is missing, or a file changed since the export.
    """
    folder = Path(dest) if dest is not None else goose_config_dir() / "prompts"
    record_path = folder / LAST_EXPORT
    if not record_path.is_file():
        raise ConfigError(f"nothing to restore: no export recorded in {folder} "
                          f"({LAST_EXPORT} is missing)")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    files = record.get("files", [])
    for entry in files:  # check everything before touching anything
        path, backup = Path(entry["path"]), entry.get("backup")
        if path.is_file() and _sha(path) != entry["sha256"]:
            hint = f"; its backup is {backup}" if backup else ""
            raise ConfigError(f"{path} changed since the export of {record.get('variant')!r}; "
                              f"not restoring over it{hint}")
        if backup and not Path(backup).is_file():
            raise ConfigError(f"backup {backup} of {path} is missing; cannot restore it")
    lines = []
    for entry in files:
        path, backup = Path(entry["path"]), entry.get("backup")
        if backup:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.restore")
            shutil.copy2(backup, tmp)
            os.replace(tmp, path)
            lines.append(f"restored {path} from {Path(backup).name}")
        else:
            path.unlink(missing_ok=True)
            lines.append(f"removed {path} (the export created it)")
    record_path.unlink()
    return lines
