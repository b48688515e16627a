"""Importer registry and format auto-detection.

An importer is a function ``(path, errors, **select) -> list[Session]`` registered with
``@importer(name, detect=fn)``; ``detect(path, head)`` gets the first 64 KB of the file as text
and returns True when the file is in its format. Built-ins register through the same decorator.

A JSON document larger than 64 KB would show detectors only its first values, so where a key
sits would decide the format (a mini-swe-agent trajectory whose ``info.submission`` fills the
first 64 KB has none of its distinctive keys there). Such a file is parsed whole and detectors
see a condensed copy instead: every key, with long strings cut and long arrays shortened.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workbench._json_types import JSONValue
from workbench.errors import SessionFormatError
from workbench.sessions._session import Session

Errors = Literal["raise", "skip"]
HEAD_BYTES = 65536
UTF8_BOM = b"\xef\xbb\xbf"


ImportFn = Callable[..., list[Session]]
"""An importer: ``(path, errors="raise", **select) -> list[Session]``, where each format takes
keyword options of its own (``index``, ``session_id``, ``include_subagents``...)."""


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


MAX_CONDENSED_BYTES = 512 * 1024 * 1024
"""Largest JSON document parsed whole for detection; bigger files are judged by their head."""
_CONDENSED_STRING = 200
_CONDENSED_ITEMS = 3
_CONDENSED_DEPTH = 8


def check_regular_file(path: Path) -> None:
    """Raise `SessionFormatError` unless `path` is an existing regular file (or a link to one).

    Directories, FIFOs, sockets and devices are refused before anything opens them (opening a
    FIFO would wait forever for a writer).
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise SessionFormatError(str(path), None, "no such file") from None
    except OSError as exc:
        raise SessionFormatError(str(path), None, f"cannot read the file: {exc.strerror}") from exc
    if stat.S_ISDIR(mode):
        raise SessionFormatError(str(path), None, "is a directory; pass a session file")
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file")
        raise SessionFormatError(str(path), None,
                                 f"is {kind}, not a regular file; pass a session file")


def read_head(path: Path) -> str:
    """The first bytes of a file as text; raises `SessionFormatError` for empty/binary files."""
    check_regular_file(path)
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    if head.startswith(UTF8_BOM):  # accepted and stripped: detectors see the text itself
        head = head[len(UTF8_BOM):]
    if not head.strip():
        raise SessionFormatError(str(path), None, "the file is empty")
    if b"\x00" in head and not head.startswith(b"SQLite format 3\x00"):
        raise SessionFormatError(str(path), None, "the file is binary, not a session recording")
    return head.decode("utf-8", errors="replace")


def _condense(value: JSONValue, depth: int = 0) -> JSONValue:
    if isinstance(value, str):
        return value[:_CONDENSED_STRING]
    if depth >= _CONDENSED_DEPTH:
        return None
    if isinstance(value, dict):
        return {k: _condense(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_condense(v, depth + 1) for v in value[:_CONDENSED_ITEMS]]
    return value


def detection_head(path: Path) -> str:
    """What detectors see: the file's first 64 KB, or a condensed copy of a large JSON document.

    The condensed copy is the whole document re-serialised (``json.dumps``, one line) with
    strings cut to 200 characters, arrays to their first 3 items and nesting to 8 levels, so
    every key of the document is in view wherever it sits in the file.

    Raises:
        SessionFormatError: the file is not a regular file, is empty or is binary.
    """
    head = read_head(path)
    size = path.stat().st_size
    if (head.lstrip()[:1] not in ("{", "[") or size <= HEAD_BYTES or size > MAX_CONDENSED_BYTES
            or _first_line_is_json(head)):
        return head  # not JSON, small enough to be whole in the head, huge, or JSON lines
    try:
        data = json.loads(path.read_bytes().removeprefix(UTF8_BOM))
    except (ValueError, RecursionError):
        return head  # JSON lines, or a broken document: its importer reports the problem
    return json.dumps(_condense(data), ensure_ascii=False) + "\n"


def _first_line_is_json(head: str) -> bool:
    # A complete first line that is a JSON value on its own: JSON lines, not one document.
    first, newline, _ = head.lstrip().partition("\n")
    if not newline:
        return False
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        return False
    return True


def detect_in(path: Path, head: str) -> str | None:
    """The first registered importer whose detector accepts `head`, or None."""
    for imp in IMPORTERS.values():
        if imp.detect is not None and imp.detect(path, head):
            return imp.name
    return None


def detect_format(path: Path) -> str:
    """Name the importer for `path`, or raise `SessionFormatError` listing the known formats."""
    import workbench.sessions.importers  # noqa: F401  (registers the built-ins)

    name = detect_in(path, detection_head(path))
    if name is not None:
        return name
    known = ", ".join(sorted(IMPORTERS))
    raise SessionFormatError(
        str(path), None, "unknown session format; pass format= one of: " + known)
