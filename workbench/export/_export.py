"""Export a template variant to Goose's prompt override folder, with backups.

Goose reads ``<config dir>/prompts/compaction.md`` and ``compaction_summary.md`` instead of its
built-in templates when they exist (see `Templates.goose_overrides`). Exporting copies a
variant's pair there so the live agent compacts the way the winning variant did. Both templates
are rendered in the workbench's sandbox before anything is written, an existing file is copied
to ``<name>.bak-<UTC timestamp>`` before it is replaced, identical files are left alone, and
the export is added to the destination's history (`workbench.export._restore`).

The pair is written as one change (`_files`): both files go to temporary siblings first, then
are renamed into place; if anything fails, files already renamed are put back as they were. A
target that is a symlink (dotfile managers) is written through to the file it points to, and
backed up there.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from workbench.compaction._format import format_transcript
from workbench.compaction._structured import FileActivity, StructuredSummary
from workbench.compaction._templates import (
    COMPACTION_SUMMARY_TEMPLATE,
    COMPACTION_TEMPLATE,
    builtin_template,
    goose_config_dir,
    render,
)
from workbench.errors import ConfigError
from workbench.export._files import atomic_write, write_pair
from workbench.export._restore import record_export
from workbench.messages import Message

__all__ = ["BACKUP_MARK", "ExportResult", "export_template", "restore_backup", "template_hash"]

BACKUP_MARK = ".bak-"
"""Separates the original file name from the timestamp in a backup's name."""
_STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
_BACKUP_NAME = re.compile(r"^(?P<name>.+)\.bak-\d{8}T\d{6}Z(?:-\d+)?$")
_TEMPLATE_FILES = (COMPACTION_TEMPLATE, COMPACTION_SUMMARY_TEMPLATE)

# Variant options Goose's own compaction cannot follow: option -> (Goose's value, what happens).
_GOOSE_ONLY = {
    "transcript_style": ("goose", "Goose's baseline transcript format will be used"),
    "removal": ("drop", "Goose will drop tool responses rather than elide them"),
    "order": ("goose", "Goose will remove tool responses in its own order"),
}
_SAMPLE_TOKEN = "SAMPLE-TRANSCRIPT-7f3a"
BUILTIN_VARIANT = "default"
NOT_A_VARIANT = ("{folder} holds neither compaction.md nor compaction_summary.md, so it is not a "
                 "template variant; pass a folder with at least one of them, or 'default' for "
                 "the built-in templates")


@dataclass
class ExportResult:
    """What `export_template` did (or, with ``dry_run``, would do).

    Attributes:
        variant: The variant name as given.
        dest: The folder the templates went to.
        written: Files written (new or replaced).
        unchanged: Files that already held the same content (not touched).
        backups: Backups made of replaced files (in the order of `written`).
        warnings: Parts of the variant Goose cannot reproduce, and other caveats.
        dry_run: True when nothing was actually written.
        template_hash: sha256 of the pair exported (`template_hash`).
    """

    variant: str
    dest: Path
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    template_hash: str = ""

    @property
    def changed(self) -> bool:
        """True when at least one file was (or would be) written."""
        return bool(self.written)

    def lines(self) -> list[str]:
        """Human-readable lines, one per file plus one per warning (what the CLI prints)."""
        verb = "would write" if self.dry_run else "wrote"
        backup_verb = "would back up" if self.dry_run else "backed up"
        out: list[str] = []
        backups = {b.name.split(BACKUP_MARK)[0]: b for b in self.backups}
        for path in self.written:
            line = f"{verb} {path}"
            real = _real(path)
            if real != path:
                line += f" (through the symlink, to {real})"
            if real.name in backups:
                line += f" ({backup_verb} the old file to {backups[real.name].name})"
            out.append(line)
        out.extend(f"unchanged {path}" for path in self.unchanged)
        out.extend(f"warning: {w}" for w in self.warnings)
        return out

    def __str__(self) -> str:
        head = f"export {self.variant!r} -> {self.dest}" + (" (dry run)" if self.dry_run else "")
        return "\n".join([head, *(f"  {line}" for line in self.lines())])


def template_hash(compaction: str, summary: str) -> str:
    """sha256 (hex) of a variant's two templates, each length-prefixed so no other pair of
    texts gives the same digest."""
    digest = hashlib.sha256()
    for text in (compaction, summary):
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def _utc_stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime(_STAMP_FORMAT)


def _resolve_variant(variant: str | Path) -> tuple[str, Path | None, dict[str, object]]:
    """(name, folder or None for the built-in, variant.toml options)."""
    # the experiment layer (~180 modules: strategies, probes) only when a variant is resolved;
    # `import workbench.export` (--history, --restore) does without it
    from workbench.harness.experiment._variants import read_variant_options, variant_folder

    name = Path(variant).resolve().name if isinstance(variant, Path) else variant
    folder = variant_folder(str(variant))
    if folder is None:
        return name, None, {}
    if not any((folder / f).is_file() for f in _TEMPLATE_FILES):
        if str(variant) == BUILTIN_VARIANT:
            return name, None, {}  # prompts/default documents the built-ins; it has no files
        raise ConfigError(NOT_A_VARIANT.format(folder=folder))
    return name, folder, read_variant_options(folder)


def _sources(folder: Path | None) -> dict[str, tuple[str, str]]:
    """file name -> (source text, where it came from for messages)."""
    out: dict[str, tuple[str, str]] = {}
    for file_name in _TEMPLATE_FILES:
        candidate = folder / file_name if folder is not None else None
        if candidate is not None and candidate.is_file():
            try:
                text = candidate.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"cannot read template {candidate}: {exc}; fix the file "
                                  f"or delete it to export the built-in") from exc
            out[file_name] = (text, str(candidate))
        else:
            builtin = builtin_template(file_name)
            if builtin is None:
                raise ConfigError(f"built-in template {file_name!r} is missing; "
                                  "reinstall the workbench")
            out[file_name] = (builtin, f"built-in {file_name}")
    return out


def _sample_summary() -> StructuredSummary:
    return StructuredSummary(
        user_intent=["Fix the failing login test", "Keep the public API unchanged"],
        technical_concepts=["pytest fixtures", "JWT expiry"],
        files=[FileActivity("src/auth.py", "Moved the expiry check", "def check(t):\n    ...")],
        errors_and_fixes=["AssertionError: token expired -> compare in UTC"],
        problem_solving=["Chose UTC timestamps over local time"],
        user_messages=["please fix the login test"],
        pending_tasks=["Update the changelog"],
        current_work="Running the test suite",
        next_step="Commit the fix",
    )


def _validate(sources: dict[str, tuple[str, str]]) -> list[str]:
    """Render both templates on sample data; returns warnings, raises TemplateError."""
    warnings: list[str] = []
    transcript = format_transcript(
        [Message.user(f"please fix the login test {_SAMPLE_TOKEN}"),
         Message.assistant("Looking at src/auth.py now.")], "goose")
    prompt_src, prompt_origin = sources[COMPACTION_TEMPLATE]
    prompt = render(prompt_src, {"messages": transcript}, name=prompt_origin)
    if _SAMPLE_TOKEN not in prompt:
        warnings.append(f"{prompt_origin} never shows the conversation "
                        "({{ messages }}), so Goose's summarizer would not see the history")
    summary_src, summary_origin = sources[COMPACTION_SUMMARY_TEMPLATE]
    rendered = _sample_summary().render(summary_src, name=summary_origin)
    if not rendered:
        warnings.append(f"{summary_origin} renders an empty summary for a full sample; "
                        "the agent would resume with no context")
    return warnings


def _option_warnings(options: dict[str, object]) -> list[str]:
    warnings = []
    for key, (goose_value, consequence) in _GOOSE_ONLY.items():
        value = options.get(key)
        if value is not None and value != goose_value:
            warnings.append(f"{key} = {value!r} cannot be expressed in Goose's templates "
                            f"alone: {consequence}")
    return warnings


def _free_backup_path(path: Path, stamp: str) -> Path:
    candidate = path.with_name(f"{path.name}{BACKUP_MARK}{stamp}")
    n = 1
    while candidate.exists():  # never overwrite an earlier backup made in the same second
        candidate = path.with_name(f"{path.name}{BACKUP_MARK}{stamp}-{n}")
        n += 1
    return candidate


def _real(path: Path) -> Path:
    """Where writing `path` should go: the final target of a symlink, else `path` itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def export_template(variant: str | Path, *, dest: Path | None = None,
                    dry_run: bool = False, history_hash: str | None = None) -> ExportResult:
    """Install a variant's templates as Goose's compaction prompt overrides.

    Both ``compaction.md`` and ``compaction_summary.md`` are written (a file the variant lacks
    is exported as the built-in, so the pair Goose uses is exactly the variant's). A file
    already holding the same bytes is left alone; a different one is first copied to
    ``<name>.bak-<UTC timestamp>`` beside it.

    Args:
        variant: A variant name under the project's ``prompts/``, ``"default"`` for the
            built-in templates, or a path to a variant folder.
        dest: The folder to write to; default ``goose_config_dir() / "prompts"``.
        dry_run: Validate and report what would happen, but write nothing.
        history_hash: The template hash the destination's export history records for this
            export (default: `ExportResult.template_hash`, the exported pair's).

    Returns:
        The `ExportResult`.

    Raises:
        ConfigError: The variant does not exist, its files or ``variant.toml`` cannot be read,
            or the destination cannot be written.
        TemplateError: A template does not compile or render (named by its file); nothing is
            written in that case.
    """
    name, folder, options = _resolve_variant(variant)
    sources = _sources(folder)
    warnings = _option_warnings(options) + _validate(sources)
    target = Path(dest) if dest is not None else goose_config_dir() / "prompts"
    result = ExportResult(name, target, warnings=warnings, dry_run=dry_run,
                          template_hash=template_hash(sources[COMPACTION_TEMPLATE][0],
                                                      sources[COMPACTION_SUMMARY_TEMPLATE][0]))
    if target.exists() and not target.is_dir():
        raise ConfigError(f"export destination {target} is a file; pass --dest a folder")

    stamp = _utc_stamp()
    plan: list[tuple[Path, bytes, Path | None]] = []  # (real target, new bytes, backup)
    for file_name in _TEMPLATE_FILES:
        path = target / file_name
        real = _real(path)
        data = sources[file_name][0].encode("utf-8")
        backup = None
        if real.is_file():
            if real.read_bytes() == data:
                result.unchanged.append(path)
                continue
            backup = _free_backup_path(real, stamp)
            result.backups.append(backup)
        elif real.exists():
            raise ConfigError(f"export target {path} is not a regular file; move it away first")
        result.written.append(path)
        plan.append((real, data, backup))
    if dry_run or not plan:
        return result
    try:
        target.mkdir(parents=True, exist_ok=True)
        write_pair(plan)
    except OSError as exc:
        raise ConfigError(f"cannot write to {target}: {exc}; check the folder's permissions "
                          "or pass --dest") from exc
    record_export(result, history_hash)  # every export is kept in the destination's history
    return result


def restore_backup(path: str | Path) -> Path:
    """Put a backup made by `export_template` back in place of the file it was taken from.

    The current file, when it differs from the backup, is itself backed up first, so a restore
    can be undone. The backup is kept.

    Args:
        path: A ``<name>.bak-<timestamp>`` file.

    Returns:
        The restored file's path.

    Raises:
        ConfigError: `path` is not an existing backup file, or it cannot be copied.
    """
    backup = Path(path)
    match = _BACKUP_NAME.match(backup.name)
    if match is None:
        raise ConfigError(f"{backup} is not a backup made by `workbench export` "
                          f"(expected <name>{BACKUP_MARK}YYYYMMDDTHHMMSSZ)")
    if not backup.is_file():
        raise ConfigError(f"backup {backup} does not exist")
    original = backup.with_name(match["name"])
    data = backup.read_bytes()
    try:
        if original.is_file():
            if original.read_bytes() == data:
                return original
            shutil.copy2(original, _free_backup_path(original, _utc_stamp()))
        atomic_write(original, data)
    except OSError as exc:
        raise ConfigError(f"cannot restore {original} from {backup}: {exc}") from exc
    return original
