"""Importer registry and format auto-detection.

An importer is a function ``(path, errors, **select) -> list[Session]`` registered with
``@importer(name, detect=fn)``; ``detect(path, head)`` gets the first 64 KB of the file as text
and returns True when the file is in its format. Built-ins register through the same decorator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from workbench.errors import SessionFormatError
from workbench.sessions._session import Session

Errors = Literal["raise", "skip"]
HEAD_BYTES = 65536


class ImportFn(Protocol):
    def __call__(self, path: Path, errors: Errors = "raise", **select: Any) -> list[Session]: ...


@dataclass
class Importer:
    """A registered session format."""

    name: str
    load: ImportFn
    detect: Callable[[Path, str], bool] | None
    description: str = ""


IMPORTERS: dict[str, Importer] = {}


def importer(name: str, detect: Callable[[Path, str], bool] | None = None,
             description: str = "") -> Callable[[ImportFn], ImportFn]:
    """Register an importer under `name` (decorator)."""
    def register(fn: ImportFn) -> ImportFn:
        IMPORTERS[name] = Importer(name, fn, detect, description or (fn.__doc__ or "").strip())
        return fn
    return register


def read_head(path: Path) -> str:
    """The first bytes of a file as text; raises `SessionFormatError` for empty/binary files."""
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    if not head.strip():
        raise SessionFormatError(str(path), None, "the file is empty")
    if b"\x00" in head and not head.startswith(b"SQLite format 3\x00"):
        raise SessionFormatError(str(path), None, "the file is binary, not a session recording")
    return head.decode("utf-8", errors="replace")


def detect_format(path: Path) -> str:
    """Name the importer for `path`, or raise `SessionFormatError` listing the known formats."""
    import workbench.sessions.importers  # noqa: F401  (registers the built-ins)

    head = read_head(path)
    for imp in IMPORTERS.values():
        if imp.detect is not None and imp.detect(path, head):
            return imp.name
    known = ", ".join(sorted(IMPORTERS))
    raise SessionFormatError(
        str(path), None, "unknown session format; pass format= one of: " + known)
