"""The sessions an experiment names: shipped datasets (their manifests), files and globs, loaded once.

A session file that cannot be read need not stop a run: `load_experiment_sessions` can collect
it as an `UnreadableSession` instead, with a placeholder session (no messages, an id starting
with `UNREADABLE_PREFIX`) standing in its place, so its cells exist and become error rows that
name the file's error.
"""

from __future__ import annotations

import glob as globlib
import json
from dataclasses import dataclass, replace
from pathlib import Path

from workbench._resources import shipped
from workbench._suggest import did_you_mean
from workbench.errors import ConfigError, SessionFormatError
from workbench.harness.experiment._spec import Experiment, SessionSource
from workbench.sessions import Session, load_sessions

__all__ = ["ALL_DATASETS", "DATASET_PREFIX", "MANIFEST", "SessionCache", "UNREADABLE_PREFIX",
           "UnreadableSession", "load_experiment_sessions", "read_manifest", "read_manifest_file",
           "resolve_source"]

MANIFEST = "datasets/manifest.json"
"""The shipped datasets' manifest, in the package data."""
ALL_DATASETS = "dataset:all"
DATASET_PREFIX = "dataset:"
"""``dataset:all`` is the shipped set; ``dataset:NAME`` every session of the set in
``datasets/NAME/`` (its own manifest, never part of ``dataset:all``: ``dataset:memory``)."""
UNREADABLE_PREFIX = "unreadable:"
"""Session ids of the placeholders standing for session files that could not be read."""


def read_manifest(root: Path | None = None) -> dict[str, tuple[Path, str | None]]:
    """Shipped dataset names -> (file, format), from ``datasets/manifest.json``.

    Reads the ``sessions`` (or ``datasets``) list of ``{name, file|path, format}`` objects; a
    missing file name means ``<name>.json`` beside the manifest.

    Args:
        root: A folder holding ``datasets/manifest.json``; default: the shipped data.
    """
    return read_manifest_file((root / MANIFEST) if root is not None
                              else shipped(*MANIFEST.split("/")))


def read_manifest_file(base: Path) -> dict[str, tuple[Path, str | None]]:
    """Dataset names -> (file, format) of one manifest file (empty when it is missing)."""
    if not base.is_file():
        return {}
    # Parsed once per content: a spec names many datasets, and the manifest (with every
    # session's ground truth) takes milliseconds to parse but a fraction of one to read.
    raw = base.read_bytes()
    cached = _MANIFESTS.get(base)
    if cached is None or cached[0] != raw:
        cached = _MANIFESTS[base] = (raw, _parse_manifest(base, raw))
    return dict(cached[1])


# A process resource, listed in workbench._memo: the shipped manifests, parsed once per content.
_MANIFESTS: dict[Path, tuple[bytes, dict[str, tuple[Path, str | None]]]] = {}


def _parse_manifest(base: Path, raw: bytes) -> dict[str, tuple[Path, str | None]]:
    data = json.loads(raw.decode("utf-8"))
    if isinstance(data, dict):
        data = data.get("sessions", data.get("datasets", []))
    out: dict[str, tuple[Path, str | None]] = {}
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and "name" in entry:
            name = str(entry["name"])
            rel = entry.get("file") or entry.get("path") or f"{name}.json"
            out[name] = ((base.parent / rel).resolve(), entry.get("format"))
    return out


def resolve_source(source: SessionSource,
                   experiment: Experiment) -> list[tuple[Path, str | None]]:
    """The files (with a known format, if any) one ``sessions`` entry stands for, in order.

    Raises:
        ConfigError: the entry matches nothing; the message lists the shipped dataset names.
    """
    text = source.path
    manifest = read_manifest()
    if text == ALL_DATASETS:
        if not manifest:
            raise ConfigError(f"sessions: {ALL_DATASETS!r} needs the shipped {MANIFEST}, which "
                              "is missing from the installed workbench; reinstall the package")
        return [manifest[name] for name in sorted(manifest)]
    if text.startswith(DATASET_PREFIX):
        name = text[len(DATASET_PREFIX):]
        named = read_manifest_file(shipped("datasets", name, "manifest.json"))
        if not named:
            sets = sorted(p.parent.name for p in shipped("datasets").glob("*/manifest.json"))
            raise ConfigError(f"sessions: {text!r} names no shipped dataset set (no "
                              f"datasets/{name}/manifest.json); known: {ALL_DATASETS}"
                              + "".join(f", {DATASET_PREFIX}{n}" for n in sets))
        return [named[n] for n in sorted(named)]
    if text in manifest:
        return [manifest[text]]
    path = experiment.resolve_path(text)
    if any(ch in text for ch in "*?["):
        found = sorted(Path(p) for p in globlib.glob(str(path), recursive=True))
        files: list[tuple[Path, str | None]] = [(p, None) for p in found if p.is_file()]
        if not files:
            raise ConfigError(f"sessions: glob {text!r} matched no files (looked in {path.parent})")
        return files
    if not path.exists():
        known = ", ".join(sorted(manifest)) or "none shipped"
        raise ConfigError(f"sessions: {text!r} is neither a file ({path}) nor a dataset name"
                          f"{did_you_mean(text, manifest)} (known: {known}, or "
                          f"{ALL_DATASETS!r})")
    return [(path, None)]


class SessionCache:
    """Loads each (file, format, selection) once per run (a file's read error is kept too)."""

    def __init__(self) -> None:
        self._loaded: dict[tuple[str, str | None, str], list[Session] | SessionFormatError] = {}

    def load(self, path: Path, source: SessionSource, format: str | None = None) -> list[Session]:
        """Sessions of `path` selected by `source` (cached); `source.format` wins over `format`.

        Raises:
            SessionFormatError: the file cannot be read (the same error on every call).
        """
        select = source.selection()
        fmt = source.format or format
        key = (str(path), fmt, json.dumps(select, sort_keys=True, default=str))
        if key not in self._loaded:
            try:
                # the source's own field, not the copy in `select` (the cache key's)
                picks = {k: v for k, v in select.items() if k != "encoding_errors"}
                self._loaded[key] = load_sessions(path, format=fmt, errors="raise",
                                                  encoding_errors=source.encoding_errors, **picks)
            except SessionFormatError as exc:
                self._loaded[key] = exc
        loaded = self._loaded[key]
        if isinstance(loaded, SessionFormatError):
            raise loaded
        return loaded


@dataclass(frozen=True)
class UnreadableSession:
    """A session file of the experiment that could not be read.

    Attributes:
        path: The file.
        error: Why it could not be read (names the file and line).
        session: The placeholder standing in its place: no messages, the id
            ``unreadable:<path>`` (plus the selection, if any), so its cells exist.
    """

    path: Path
    error: SessionFormatError
    session: Session


def _shown(path: Path, experiment: Experiment) -> str:
    """`path` relative to the experiment's folder (POSIX separators), else as given."""
    base = Path(experiment.base_dir or ".").resolve()
    try:
        return path.resolve().relative_to(base).as_posix()
    except ValueError:
        return str(path)


def _placeholder(path: Path, source: SessionSource, fmt: str | None, error: SessionFormatError,
                 experiment: Experiment) -> Session:
    shown = _shown(path, experiment)
    select = source.selection()
    if select:
        shown += "[" + ",".join(f"{k}={v}" for k, v in sorted(select.items())) + "]"
    return Session(id=UNREADABLE_PREFIX + shown, format=source.format or fmt or "unknown",
                   path=str(path), messages=[], meta={"unreadable": str(error)})


def load_experiment_sessions(experiment: Experiment, cache: SessionCache | None = None,
                             unreadable: list[UnreadableSession] | None = None) -> list[Session]:
    """Every session the experiment names, in spec order, each once (a file named twice is read
    once); sessions of different files that share an id are kept apart as ``<id>@<file>``.

    Args:
        experiment: The spec.
        cache: Loaded files, shared with other callers in the same run.
        unreadable: When given, a file that cannot be read (`SessionFormatError`) is appended
            here and its placeholder session takes its place in the returned list, instead of
            the error being raised.

    Raises:
        SessionFormatError: a file cannot be read and `unreadable` is None.
        ConfigError: an entry matches no file, or a selection the file cannot satisfy.
    """
    cache = cache or SessionCache()
    found: list[Session] = []
    for source in experiment.sessions:
        for path, fmt in resolve_source(source, experiment):
            try:
                loaded = cache.load(path, source, fmt)
            except SessionFormatError as exc:
                if unreadable is None:
                    raise
                placeholder = _placeholder(path, source, fmt, exc, experiment)
                unreadable.append(UnreadableSession(path, exc, placeholder))
                loaded = [placeholder]
            found.extend(loaded)
    return _kept_apart(found, experiment)


def _kept_apart(found: list[Session], experiment: Experiment) -> list[Session]:
    """`found` with each id once; an id that sessions from different files share becomes
    ``<id>@<file>`` for each of them (the recorded id kept in ``meta["recorded_id"]``), so
    none is dropped and each says where it came from."""
    files: dict[str, set[Path]] = {}
    for session in found:
        files.setdefault(session.id, set()).add(Path(session.path).resolve())
    seen: set[str] = set()
    out: list[Session] = []
    for session in found:
        if len(files[session.id]) > 1:
            session = replace(session, id=f"{session.id}@{_shown(Path(session.path), experiment)}",
                              meta={**session.meta, "recorded_id": session.id})
        if session.id not in seen:
            seen.add(session.id)
            out.append(session)
    return out
