"""Checks of a spec's names, lists and files, made before anything runs.

A spec is a user file, and several of its values become something else: a name becomes a table
label, a cell key or a folder; a list multiplies the work; a path is read and its text sent to a
model. So, before any session is read or any cell built:

- **Names** (the experiment's, a model's ``name``, a strategy's ``label``, template variants,
  the tune's ``variant``, ``baseline`` and ``winner_name``) are NFC-normalised, hold printable
  characters only (no control character, no trailing newline) and no zero-width character, and
  two names of one list may not become one after normalisation: names that look alike are alike.
  ``winner_name`` is also a plain folder name (it becomes ``prompts/<name>/``).
- **Lists**: every list of the spec holds at most `MAX_LIST_ITEMS` items, checked on the raw
  TOML values before any item is validated; products that multiply work have their own bounds,
  checked before anything is expanded (cells: ``MAX_CELLS`` in ``_checks``; a tune's grid:
  ``MAX_POINTS`` in ``_params``, its ``sample`` too; replays: `MAX_REPLAYS`).
- **Files**: a response cache may not be a run's results store (``results.sqlite``), which
  opening it as a cache would migrate; a template variant found under a folder resolves inside
  that folder, and its files inside it too, so a link to ``/`` or to a system file is refused
  instead of running the built-ins or sending the file's text to a model.

Each check raises a pydantic error (the spec names the file and key) or a `ConfigError` that
names the path and what to do.
"""

from __future__ import annotations

import os
import sqlite3
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic_core import PydanticCustomError

from workbench.errors import ConfigError

__all__ = [
    "MAX_LIST_ITEMS",
    "MAX_NAME_CHARS",
    "MAX_REPLAYS",
    "Labelled",
    "check_list_bounds",
    "check_not_results_store",
    "check_replay_count",
    "check_spec",
    "check_variant_files",
    "check_variant_inside",
    "clean_name",
    "clean_names",
    "counted",
    "folder_name",
]

MAX_LIST_ITEMS = 10_000
"""Most items of any one list of a spec (sessions, models, templates, windows, thresholds, a
tune's values of one parameter, a model's session subset...)."""
MAX_REPLAYS = 100_000
"""Most whole-session replays one spec may ask for (sessions x strategies x windows x
thresholds); checked before sessions are read (without them) and again with them."""
MAX_NAME_CHARS = 100
"""Longest ``winner_name`` (a folder name), in characters; also at most 255 bytes of UTF-8."""

ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e\u00ad\u034f\u115f\u1160\u3164")
"""Characters that show nothing: two names differing by one of them look the same."""
_KINDS = {"C": "a control or format character", "Z": "a separator"}
_RESULTS_TABLES = frozenset({"runs", "cells"})
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _error(message: str, **values: object) -> PydanticCustomError:
    return PydanticCustomError("spec_check", message, values)


def clean_name(value: str, what: str = "the name") -> str:
    """`value` NFC-normalised, once it holds printable characters only and none of zero width.

    Raises:
        PydanticCustomError: naming the character (code point and position) and the fix.
    """
    name = unicodedata.normalize("NFC", value)
    for position, ch in enumerate(name, 1):
        if ch in ZERO_WIDTH:
            raise _error("{what} {name} holds the zero-width character {code} at position "
                         "{pos}: names that look the same must be the same; remove it",
                         what=what, name=repr(name), code=f"U+{ord(ch):04X}", pos=position)
        if not ch.isprintable():
            label = unicodedata.name(ch, "") or _KINDS.get(unicodedata.category(ch)[0],
                                                             "unassigned")
            raise _error("{what} {name} holds the non-printing character {code} ({label}) at "
                         "position {pos}; use printable characters only",
                         what=what, name=repr(name), code=f"U+{ord(ch):04X}", label=label,
                         pos=position)
    return name


def clean_names(values: list[str], what: str = "entry") -> list[str]:
    """Each of `values` through `clean_name`; two that differ as written but are one name
    after normalisation are refused (an exact repeat is left to the caller).

    Raises:
        PydanticCustomError: naming both positions.
    """
    out: list[str] = []
    first: dict[str, int] = {}
    for i, value in enumerate(values):
        name = clean_name(value, f"{what} {i}")
        j = first.setdefault(name, i)
        if j != i and values[j] != value:
            raise _error("entries {a} and {b} ({x} and {y}) are one name after Unicode "
                         "normalisation (NFC); list it once", a=j, b=i, x=ascii(values[j]),
                         y=ascii(value))
        out.append(name)
    return out


def folder_name(value: str, what: str = "the name") -> str:
    """`value` as `clean_name`, and also a plain folder name: no path separator, not starting
    with a dot, no braces (a variant point), at most `MAX_NAME_CHARS` characters and 255 bytes.

    Raises:
        PydanticCustomError: naming the problem and an example.
    """
    name = clean_name(value, what)
    size = len(name.encode("utf-8"))
    if not name or len(name) > MAX_NAME_CHARS or size > 255:
        raise _error("{what} has {n} characters ({b} bytes); a folder name takes 1 to {limit} "
                     "characters and at most 255 bytes", what=what, n=len(name), b=size,
                     limit=MAX_NAME_CHARS)
    if any(ch in name for ch in "/\\{}") or name.startswith("."):
        raise _error("{what} {name} is not a plain folder name (no / or \\, no braces, not "
                     "starting with a dot); use a name such as lean-tuned", what=what,
                     name=repr(name))
    return name


def check_list_bounds(data: object, path: str = "") -> None:
    """Refuse any list in the raw spec `data` longer than `MAX_LIST_ITEMS`, before any of its
    items is validated.

    Raises:
        PydanticCustomError: naming the key path, the length and the bound.
    """
    stack: list[tuple[str, object]] = [(path, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
        elif isinstance(value, list | tuple):
            if len(value) > MAX_LIST_ITEMS:
                raise _error("{where} has {n} items; a list of a spec holds at most {limit}: "
                             "split the experiment into several", where=where or "a list",
                             n=f"{len(value):,}", limit=f"{MAX_LIST_ITEMS:,}")
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))


def check_not_results_store(path: Path) -> None:
    """Refuse a response-cache file that is a run's results store.

    Opening a store as a cache would migrate it in place and mix two kinds of rows; the run
    whose store it is could not be read the same way again.

    Raises:
        PydanticCustomError: naming the path and what to name instead.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError:
        return  # missing or unreadable: nothing of another run's is there
    if head != _SQLITE_MAGIC:
        return
    # Immutable first: nothing is created beside the file (a read-only recording stays
    # untouched); a write-ahead log beside it may hold the schema, so it is read then.
    uri = Path(path).resolve().as_uri()
    tables: set[str] = set()
    for mode in ("?mode=ro&immutable=1", "?mode=ro"):
        if mode == "?mode=ro" and (_RESULTS_TABLES <= tables
                                   or not Path(f"{path}-wal").exists()):
            break
        try:
            db = sqlite3.connect(uri + mode, uri=True)
            try:
                tables = {row[0] for row in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                db.close()
        except sqlite3.DatabaseError:
            return  # the cache reports a damaged file when it opens it
    if _RESULTS_TABLES <= tables:
        raise _error("{path} is a run's results store, not a response cache; recording into it "
                     "would change that run: name a file of its own, e.g. "
                     "cache/responses.db beside the spec", path=str(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_variant_inside(name: str, found: Path) -> None:
    """Refuse a variant folder found as ``<root>/<name>`` that resolves outside ``<root>``
    (a link out, or ``..`` climbing out). An absolute `name` names its folder itself.

    Raises:
        ConfigError: naming the folder, where it leads and what to do.
    """
    if Path(name).expanduser().is_absolute():
        return
    root = found
    for _ in Path(name).parts:
        root = root.parent
    real, real_root = Path(os.path.realpath(found)), Path(os.path.realpath(root))
    if not _inside(real, real_root) or real == real_root:
        raise ConfigError(f"templates: variant {name!r}: {found} leads to {real}, outside "
                          f"{real_root}; keep variant folders inside the project folder (copy "
                          "the folder in instead of linking it)")


def check_variant_files(folder: Path, files: Iterable[str], root: Path | None = None) -> None:
    """Refuse a file of a variant folder that resolves outside the folder (or `root`): a link
    to a system file would send its text to the model endpoint.

    Raises:
        ConfigError: naming the file, where it leads and what to do.
    """
    real_root = Path(os.path.realpath(root if root is not None else folder))
    for file in files:
        path = folder / file
        if not os.path.lexists(path):
            continue
        real = Path(os.path.realpath(path))
        if not _inside(real, real_root):
            raise ConfigError(f"{path}: leads to {real}, outside the variant folder "
                              f"{real_root}; a template is sent to the model, so it must be a "
                              "file of the project: copy it in instead of linking it")


class Labelled(Protocol):
    """A spec entry named in tables by its ``display`` label (a strategy entry)."""

    @property
    def display(self) -> str:
        """The label."""
        ...


def check_spec(strategies: Sequence[Labelled], caches: dict[str, Path], sample: int | None,
               replay: tuple[int, int, int] | None) -> None:
    """The checks of a whole spec once its fields are valid, before anything is read.

    Args:
        strategies: The strategy entries: no two different ones under one label.
        caches: Key (``models[1].cache_path``) -> the response-cache file it names.
        sample: The tune's ``sample``, if any.
        replay: The replay table's strategies, windows and thresholds counts, if any.

    Raises:
        PydanticCustomError: naming the key and the fix.
    """
    # Lazy: _checks and _params pull the template sandbox in, which the light start avoids.
    from workbench.harness.experiment._checks import check_cache_file
    from workbench.harness.experiment._params import MAX_POINTS  # lazy, as above

    seen: dict[str, int] = {}
    for i, entry in enumerate(strategies):
        j = seen.setdefault(entry.display, i)
        if j != i and strategies[j] != entry:
            raise _error("strategies[{a}] and strategies[{b}] are both named {label}; its cells "
                         "would be one strategy's: give one a distinct label = \"...\"",
                         a=j, b=i, label=repr(entry.display))
    for where, path in caches.items():
        try:
            if where != "cache.path":  # the spec checks its own [cache] path first
                check_cache_file(path)
            check_not_results_store(path)
        except PydanticCustomError as exc:
            raise _error("{where}: {why}", where=where, why=exc.message()) from None
    if sample is not None and sample > MAX_POINTS:
        raise _error("tune.sample: {n} points; a tune draws at most {limit}",
                     n=f"{sample:,}", limit=f"{MAX_POINTS:,}")
    if replay is not None:
        try:
            check_replay_count(1, *replay)
        except ConfigError as exc:
            raise _error("{why}", why=str(exc)) from None


def counted(factors: dict[str, int]) -> tuple[int, str]:
    """The product of `factors` and its reading (``2 sessions x 3 windows``)."""
    total = 1
    for value in factors.values():
        total *= value
    return total, " x ".join(f"{v:,} {k}" for k, v in factors.items())


def check_replay_count(sessions: int, strategies: int, windows: int, thresholds: int) -> int:
    """The most replays a ``[replay]`` table asks for: the product of its factors.

    Raises:
        ConfigError: over `MAX_REPLAYS`, naming every factor.
    """
    total, product = counted({"sessions": sessions, "strategies": strategies,
                              "windows": windows, "thresholds": thresholds})
    if total > MAX_REPLAYS:
        raise ConfigError(f"replay: {total:,} replays ({product}); the limit is "
                          f"{MAX_REPLAYS:,}: list fewer windows or thresholds, or split the "
                          "experiment")
    return total
