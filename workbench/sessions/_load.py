"""`load_session` / `load_sessions`: the one entry point to every importer.

Before an importer runs, the path must be a regular, non-empty, non-binary file, and a format
asked for explicitly must not contradict what detection sees (a Claude Code log read as
``openai-chat`` would otherwise import as a list of "unknown" messages). While it runs, invalid
UTF-8 is an error naming the byte offset unless ``encoding_errors="replace"``, and input nested
too deeply for Python is a `SessionFormatError` rather than a `RecursionError`.

Size limits (`workbench.sessions._limits`) are checked before and after: a file over
`MAX_FILE_BYTES` is refused before it is parsed (a database is judged by the content of the
sessions selected, by its importer), and the sessions returned may hold at most `MAX_MESSAGES`
messages of at most `MAX_RECORD_BYTES` characters each, so nothing oversized reaches the
tokenizer. An importer that fails on a value of the wrong type, or runs out of memory, gives a
`SessionFormatError` naming the file too: a file that cannot be read is never a raw error.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from workbench.errors import ConfigError, SessionFormatError
from workbench.messages import UnknownContent
from workbench.sessions._limits import MAX_RECORD_BYTES, check_file_size, check_messages
from workbench.sessions._registry import (
    IMPORTERS,
    Errors,
    check_regular_file,
    detect_in,
    detection_head,
)
from workbench.sessions._session import Session, meta_list
from workbench.sessions.importers._readers import decoding

ENCODING_ERRORS = ("strict", "replace")
"""Values of ``encoding_errors``: invalid UTF-8 is an error, or replaced by U+FFFD and counted."""

TOO_DEEP_MESSAGE = ("the recording is nested too deeply to import (Python's recursion limit); "
                    "a real session never nests like this, so the file is damaged or hostile")
SQLITE_MAGIC = b"SQLite format 3\x00"
# What an importer raises on a value of an unexpected type or shape it failed to check.
_IMPORTER_FAILURES = (TypeError, ValueError, KeyError, IndexError, AttributeError,
                      OverflowError, UnicodeError)


def _ensure_builtins() -> None:
    # Importing the package registers every built-in importer.
    import workbench.sessions.importers  # noqa: F401


def load_sessions(path: str | Path, format: str | None = None, errors: Errors = "raise",
                  encoding_errors: str = "strict", **select: object) -> list[Session]:
    """Load every session a file (or Goose ``sessions.db``) holds.

    Args:
        path: The recording.
        format: An importer name; auto-detected when None. A file that detection recognises
            as another format is refused.
        errors: ``"raise"`` (default) stops at the first bad record with `SessionFormatError`;
            ``"skip"`` skips bad records, counting them in ``meta["warnings"]`` and a warning.
        encoding_errors: ``"strict"`` (default): invalid UTF-8 is a `SessionFormatError` naming
            the byte offset; ``"replace"``: it becomes U+FFFD, and the number of replacements
            is stored in ``meta["encoding_replacements"]`` and warned about.
        **select: Importer-specific selection (``index=``, ``session_id=``, ``started=``...).

    Raises:
        SessionFormatError: unreadable, empty, binary, non-regular or unknown-format input, a
            file that is not in the requested format, invalid UTF-8, nesting too deep for
            Python, or a bad record.
        ConfigError: an unknown format or option, or an ``index`` past the file's sessions.
    """
    _ensure_builtins()
    p = Path(path)
    if errors not in ("raise", "skip"):
        raise ConfigError(f"errors must be 'raise' or 'skip', not {errors!r}")
    if encoding_errors not in ENCODING_ERRORS:
        raise ConfigError(f"encoding_errors must be 'strict' or 'replace', not {encoding_errors!r}")
    if format is not None and format not in IMPORTERS:
        raise ConfigError(f"unknown session format {format!r}; known: {', '.join(sorted(IMPORTERS))}")
    check_regular_file(p)
    sqlite = _is_sqlite(p)
    if not sqlite:
        check_file_size(p)
    head = detection_head(p)
    name = format or _detect(p, head)
    if format is not None:
        _check_requested(p, head, format)
    with decoding(encoding_errors) as replaced:
        sessions = _import(p, name, errors, select)
    for session in sessions:
        check_messages(p, session.messages, sizes=not sqlite and _larger_than_a_record(session))
    if "index" in select and not sessions:
        _index_out_of_range(p, name, select)
    if format is not None:
        _check_recognised(p, format, sessions)
    if replaced[0]:
        _note_replacements(p, sessions, replaced[0])
    return sessions


def _larger_than_a_record(session: Session) -> bool:
    # A message's text cannot be longer than the text file it came from: in a file within the
    # record limit no message needs measuring (a database's rows are measured as they are read).
    try:
        return Path(session.path).stat().st_size > MAX_RECORD_BYTES
    except OSError:
        return True


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def _import(path: Path, name: str, errors: Errors, select: dict[str, object]) -> list[Session]:
    try:
        return IMPORTERS[name].load(path, errors=errors, **select)
    except RecursionError:
        raise SessionFormatError(str(path), None, TOO_DEEP_MESSAGE) from None
    except MemoryError:
        raise SessionFormatError(str(path), None, f"the {name} importer ran out of memory "
                                 "reading it; the file is too large or hostile") from None
    except _IMPORTER_FAILURES as exc:
        # A value of a type or shape the importer did not expect: the file's problem.
        detail = " ".join(str(exc).split())[:300]
        raise SessionFormatError(str(path), None, f"the {name} importer could not read it: "
                                 f"{type(exc).__name__}: {detail}") from exc


def _detect(path: Path, head: str) -> str:
    name = detect_in(path, head)
    if name is None:
        known = ", ".join(sorted(IMPORTERS))
        raise SessionFormatError(
            str(path), None, "unknown session format; pass format= one of: " + known)
    return name


def _check_requested(path: Path, head: str, format: str) -> None:
    detect = IMPORTERS[format].detect
    if detect is None or detect(path, head):
        return
    other = detect_in(path, head)
    if other is not None:
        raise SessionFormatError(
            str(path), None, f"the file is not in the requested format {format!r}: it looks "
            f"like {other!r}; pass format={other!r} or leave format out to detect it")


def _check_recognised(path: Path, format: str, sessions: list[Session]) -> None:
    # Importers keep records they do not understand as UnknownContent; when that is *every*
    # record of the file, the file was simply not in this format.
    messages = [m for s in sessions for m in s.messages]
    if messages and all(m.content and all(isinstance(c, UnknownContent) for c in m.content)
                        for m in messages):
        raise SessionFormatError(
            str(path), None, f"none of its {len(messages)} record(s) is a {format!r} message; "
            "the file is in another format (leave format out to detect it)")


def _index_out_of_range(path: Path, name: str, select: dict[str, object]) -> None:
    rest = {k: v for k, v in select.items() if k != "index"}
    count = len(IMPORTERS[name].load(path, errors="skip", **rest))
    holds = f"index 0..{count - 1}" if count else "none"
    raise ConfigError(f"{path}: session index {select['index']} is out of range: the file holds "
                      f"{count} session(s) ({holds})")


def _note_replacements(path: Path, sessions: list[Session], count: int) -> None:
    note = (f"{path}: replaced {count} invalid UTF-8 sequence(s) with U+FFFD "
            "(encoding_errors='replace')")
    for session in sessions:
        session.meta["encoding_replacements"] = count
        session.meta["warnings"] = [*meta_list(session, "warnings"), note]
    warnings.warn(note, stacklevel=3)


def load_session(path: str | Path, format: str | None = None, errors: Errors = "raise",
                 encoding_errors: str = "strict", **select: object) -> Session:
    """Load one session; for multi-session files, `select` picks it (default: the first).

    See `load_sessions` for the arguments (``encoding_errors=`` included).
    """
    sessions = load_sessions(path, format=format, errors=errors,
                             encoding_errors=encoding_errors, **select)
    if not sessions:
        raise SessionFormatError(str(path), None, "no session matched the selection "
                                 f"{select or '(none)'}")
    return sessions[0]
