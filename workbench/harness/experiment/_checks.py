"""Bounds and checks every experiment spec passes, kept apart from the fields they guard.

A spec is a user file, so each number that multiplies work has a ceiling (a typo such as
``repeats = 1000000000`` must fail at once, not hang ``--dry-run``), booleans are booleans
(``manual_compact = "yes"`` is an error, not true), one model is listed once, and the
response cache lives in a file the user owns. Each check raises a pydantic error that the spec
turns into a `ConfigError` naming the key and the bound.
"""

from __future__ import annotations

import os
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticCustomError

from workbench._redact import short_secret_message, short_secrets

MAX_REPEATS = 1000
"""Most repeats of each cell."""
MAX_CONCURRENCY = 512
"""Most model calls (local executor) or cells (Ray) in flight at once, globally and per model."""
MAX_CELLS = 250_000
"""Most cells one experiment may expand to (sessions x strategies x models x templates x
windows x repeats)."""
MAX_EXECUTOR_RETRIES = 100
"""Most times a Ray cell whose worker died is run again."""

_V = TypeVar("_V")


class _Labelled(Protocol):
    """A model entry as `distinct_models` reads it: its label, compared whole."""

    @property
    def label(self) -> str: ...
MAX_CPUS_PER_CELL = 1024.0
"""Most CPUs a Ray cell task may reserve."""

SYSTEM_DIRS: tuple[str, ...] = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run",
    "/sbin", "/sys", "/usr", "/var/lib", "/var/log", "/var/run", "/private/etc", "/System",
) if os.name != "nt" else (os.environ.get("SystemRoot", r"C:\Windows"),)
"""Folders a response cache may never be written in (or be): the operating system's own."""


def _is_bool_annotation(annotation: object) -> bool:
    if annotation is bool:
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args == [bool]
    return False


def strict_boolean(model: type[BaseModel], field: str | None, value: _V) -> _V:
    """`value` unchanged, unless `field` of `model` is a boolean and `value` is not one.

    Pydantic reads ``"yes"``, ``"on"``, ``1`` as true; a spec means exactly ``true`` or
    ``false``.

    Raises:
        PydanticCustomError: a boolean field given another value.
    """
    info = model.model_fields.get(field) if field else None
    if info is None or value is None or isinstance(value, bool):
        return value
    if _is_bool_annotation(info.annotation):
        raise PydanticCustomError("strict_bool", "expected true or false, not {value}",
                                  {"value": repr(value)})
    return value


def strict_settings(settings_model: type[BaseModel], settings: dict[str, object]) -> None:
    """Refuse a non-boolean value for any boolean field of a strategy's settings.

    Raises:
        PydanticCustomError: naming the setting.
    """
    for key, value in settings.items():
        try:
            strict_boolean(settings_model, key, value)
        except PydanticCustomError:
            raise PydanticCustomError("strict_bool", "{key}: expected true or false, not {value}",
                                      {"key": key, "value": repr(value)}) from None


def distinct_models(entries: Sequence[_Labelled]) -> None:
    """Refuse two entries with one label: different models would share cells, and the same
    model listed twice is a copy-paste slip whose second entry would silently never run.

    Raises:
        PydanticCustomError: naming both positions and the label.
    """
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        first = seen.setdefault(entry.label, i)
        if first == i:
            continue
        if entries[first] == entry:
            raise PydanticCustomError(
                "duplicate_model", "models[{a}] and models[{b}] are the same model {label}; "
                "list it once", {"a": first, "b": i, "label": repr(entry.label)})
        raise PydanticCustomError(
            "duplicate_model", "models[{a}] and models[{b}] are both named {label} (the "
            "cache prefix and api_key are not part of a name); give one a distinct "
            "name = \"...\"", {"a": first, "b": i, "label": repr(entry.label)})


def _inside(path: Path, folder: str) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def check_cache_file(path: Path) -> None:
    """Refuse a response-cache path that is a folder, not a regular file, or a system path.

    The path is judged after resolving links, so a link into ``/etc`` is refused too.

    Raises:
        PydanticCustomError: naming the path and what to write instead.
    """
    resolved = Path(os.path.realpath(path))
    for folder in SYSTEM_DIRS:
        if _inside(resolved, folder):
            raise PydanticCustomError(
                "cache_path", "{path} is inside the system folder {folder}; keep recordings "
                "in a folder of your own (e.g. cache/responses.db beside the spec)",
                {"path": str(path), "folder": folder})
    if resolved.is_dir():
        raise PydanticCustomError(
            "cache_path", "{path} is a folder; name the recording file in it, e.g. "
            "{example}", {"path": str(path), "example": str(Path(path) / "responses.db")})
    if resolved.exists() and not resolved.is_file():
        raise PydanticCustomError(
            "cache_path", "{path} is not a regular file; name a recording file",
            {"path": str(path)})


def maskable_secrets(params: Mapping[str, Mapping[str, object]]) -> None:
    """Refuse model secrets too short to mask in free text (``allow_short_secrets`` is false).

    Args:
        params: Where each model's parameters sit (``models[0].params``, ``qa.judge.params``)
            -> those parameters.

    Raises:
        PydanticCustomError: naming where each short secret sits (never its value) and why.
    """
    places = [place for where, values in params.items()
              for place in short_secrets(values, where)]
    if places:
        raise PydanticCustomError("short_secret", "{message}",
                                  {"message": short_secret_message(places)})
