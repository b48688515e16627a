"""Export history on the destination: ``workbench export --history``, ``--restore [--all]``.

Every real export appends a record to ``.workbench-export-history.json`` in the destination
folder: the variant, the date, the template hash, and per file written the sha256 of what it
wrote and the backup of what it replaced (``<name>.bak-<stamp>``, kept beside it; none when the
file was new). So:

- `restore_last_export` steps back one export: the files of the last record get their backups
  back (a file that export created is removed), and the record is dropped;
- `restore_all_exports` returns the folder to its state before the first recorded export: each
  file the history touched gets the backup its earliest record kept (or is removed when that
  export created it), byte for byte, and the history is emptied;
- `export_history` lists the records, oldest first.

Restoring never leaves a mix: every file is checked before any is touched (a file changed
since the export it came from is never overwritten: the restore stops and names it), and the
files are then written as one change (temporary siblings renamed into place, undone on a
failure). A record left by an older workbench (``.workbench-last-export.json``, one export) is
read as a history of one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Protocol, TypedDict

from workbench._storage import write_atomic
from workbench.compaction._templates import goose_config_dir
from workbench.errors import ConfigError
from workbench.export._files import write_pair

__all__ = ["EXPORT_HISTORY", "LAST_EXPORT", "export_history", "history_lines",
           "record_export", "restore_all_exports", "restore_last_export"]

EXPORT_HISTORY = ".workbench-export-history.json"
"""The export history, in the destination folder."""
LAST_EXPORT = ".workbench-last-export.json"
"""The single-export record older workbenches left (read as a history of one)."""


class ExportedFile(TypedDict):
    """One file an export wrote, as its history entry records it."""

    path: str
    sha256: str
    backup: str | None


class ExportRecord(TypedDict, total=False):
    """One export in the history file (older files may lack a key)."""

    variant: str
    hash: str | None
    date: str
    files: list[ExportedFile]


class _FileToRestore(ExportedFile):
    variant: str | None


class Export(Protocol):
    """What the history records of an export (`workbench.export.ExportResult`, which imports
    this module, so it is named by its shape here)."""

    variant: str
    dest: Path
    written: list[Path]
    backups: list[Path]
    dry_run: bool
    template_hash: str


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _folder(dest: str | Path | None) -> Path:
    return Path(dest) if dest is not None else goose_config_dir() / "prompts"


def export_history(dest: str | Path | None = None) -> list[ExportRecord]:
    """The exports recorded in `dest` (default Goose's prompt folder), oldest first."""
    folder = _folder(dest)
    path = folder / EXPORT_HISTORY
    try:
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            return list(data.get("exports", []))
        legacy = folder / LAST_EXPORT
        if legacy.is_file():
            return [json.loads(legacy.read_text(encoding="utf-8"))]
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the export history ({exc}); move it away to "
                          "start a new one") from exc
    return []


def _save(folder: Path, exports: list[ExportRecord]) -> None:
    path = folder / EXPORT_HISTORY
    (folder / LAST_EXPORT).unlink(missing_ok=True)
    if not exports:
        path.unlink(missing_ok=True)
        return
    write_atomic(path, json.dumps({"exports": exports}, indent=2))


def record_export(result: Export, template_hash: str | None = None) -> Path | None:
    """Append `result` to its destination's history (with `template_hash`, default the
    result's own); None for a dry run or a no-op export."""
    if result.dry_run or not result.written:
        return None
    files: list[ExportedFile] = []
    for path in result.written:
        backup = next((b for b in result.backups if b.name.startswith(path.name + ".bak-")), None)
        files.append({"path": str(path), "sha256": _sha(path),
                      "backup": str(backup) if backup is not None else None})
    folder = Path(result.dest)
    exports = export_history(folder)
    exports.append({"variant": result.variant,
                    "hash": template_hash or getattr(result, "template_hash", None),
                    "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    "files": files})
    _save(folder, exports)
    return folder / EXPORT_HISTORY


def history_lines(dest: str | Path | None = None) -> list[str]:
    """``workbench export --history``: one line per export, oldest first."""
    folder = _folder(dest)
    exports = export_history(folder)
    if not exports:
        return [f"no exports recorded in {folder}"]
    lines = [f"exports into {folder}, oldest first ({len(exports)}):"]
    for number, entry in enumerate(exports, 1):
        names = ", ".join(f"{Path(f['path']).name} ({'replaced' if f.get('backup') else 'new'})"
                          for f in entry.get("files", []))
        digest = f", template hash {sha[:12]}" if (sha := entry.get("hash")) else ""
        lines.append(f"  {number}. {entry.get('date', '?')}  {entry.get('variant')!r}{digest}: "
                     f"{names}")
    return lines


def _check_current(entry: _FileToRestore, path: Path) -> None:
    if path.is_file() and _sha(path) != entry["sha256"]:
        raise ConfigError(f"{path} changed since the export of {entry['variant']!r}; not "
                          f"restoring over it; its backup is {entry.get('backup')}"
                          if entry.get("backup") else
                          f"{path} changed since the export of {entry['variant']!r}; not "
                          "restoring over it (that export created it)")


def _restore(files: list[tuple[Path, str | None]]) -> list[str]:
    """Put each file back from its backup (None: remove it), all or none."""
    for path, backup in files:
        if backup and not Path(backup).is_file():
            raise ConfigError(f"backup {backup} of {path} is missing; cannot restore it")
    writes = [(path, Path(backup).read_bytes(), None) for path, backup in files if backup]
    write_pair([(p, data, b) for p, data, b in writes if not p.is_file()
                 or p.read_bytes() != data])
    lines = []
    for path, backup in files:
        if backup:
            lines.append(f"restored {path} from {Path(backup).name}")
        else:
            path.unlink(missing_ok=True)
            lines.append(f"removed {path} (the export created it)")
    return lines


def restore_last_export(dest: str | Path | None = None) -> list[str]:
    """Undo the last export into `dest` (default Goose's prompt folder), one step back.

    Returns:
        One line per file: ``restored <path> from <backup>`` or ``removed <path> (...)``.

    Raises:
        ConfigError: no export to undo, a backup is missing, or a file changed since.
    """
    folder = _folder(dest)
    exports = export_history(folder)
    if not exports:
        raise ConfigError(f"nothing to restore: no export recorded in {folder} "
                          f"({EXPORT_HISTORY} is missing)")
    last = exports[-1]
    entries: list[_FileToRestore] = [{**f, "variant": last.get("variant")}
                                     for f in last.get("files", [])]
    for entry in entries:  # check everything before touching anything
        _check_current(entry, Path(entry["path"]))
    lines = _restore([(Path(e["path"]), e.get("backup")) for e in entries])
    _save(folder, exports[:-1])
    left = len(exports) - 1
    lines.append(f"undid the export of {last.get('variant')!r} ({left} earlier export"
                 f"{'' if left == 1 else 's'} left; --restore --all goes back before the first)")
    return lines


def restore_all_exports(dest: str | Path | None = None) -> list[str]:
    """Return `dest` to its state before the first recorded export, byte for byte.

    Raises:
        ConfigError: no export to undo, a backup is missing, or a file changed since the last
            export that wrote it.
    """
    folder = _folder(dest)
    exports = export_history(folder)
    if not exports:
        raise ConfigError(f"nothing to restore: no export recorded in {folder} "
                          f"({EXPORT_HISTORY} is missing)")
    first: dict[str, _FileToRestore] = {}
    last: dict[str, _FileToRestore] = {}
    for export in exports:
        for f in export.get("files", []):
            entry: _FileToRestore = {**f, "variant": export.get("variant")}
            first.setdefault(f["path"], entry)
            last[f["path"]] = entry
    for path, entry in last.items():
        _check_current(entry, Path(path))
    lines = _restore([(Path(p), e.get("backup")) for p, e in first.items()])
    _save(folder, [])
    lines.append(f"undid all {len(exports)} export(s): {folder} is as it was before the first")
    return lines
