"""`load_session` / `load_sessions`: the one entry point to every importer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, SessionFormatError
from workbench.sessions._registry import IMPORTERS, Errors, detect_format
from workbench.sessions._session import Session


def _ensure_builtins() -> None:
    # Importing the package registers every built-in importer.
    import workbench.sessions.importers  # noqa: F401


def load_sessions(path: str | Path, format: str | None = None, errors: Errors = "raise",
                  **select: Any) -> list[Session]:
    """Load every session a file (or Goose ``sessions.db``) holds.

    Args:
        path: The recording.
        format: An importer name; auto-detected when None.
        errors: ``"raise"`` (default) stops at the first bad record with `SessionFormatError`;
            ``"skip"`` skips bad records, counting them in ``meta["warnings"]`` and a warning.
        **select: Importer-specific selection (``index=``, ``session_id=``, ``started=``...).

    Raises:
        SessionFormatError: unreadable, empty, binary or unknown-format input, or a bad record.
    """
    _ensure_builtins()
    p = Path(path)
    if not p.exists():
        raise SessionFormatError(str(p), None, "no such file")
    if p.is_dir():
        raise SessionFormatError(str(p), None, "is a directory; pass a session file")
    name = format or detect_format(p)
    imp = IMPORTERS.get(name)
    if imp is None:
        raise ConfigError(f"unknown session format {name!r}; known: {', '.join(sorted(IMPORTERS))}")
    if errors not in ("raise", "skip"):
        raise ConfigError(f"errors must be 'raise' or 'skip', not {errors!r}")
    return imp.load(p, errors=errors, **select)


def load_session(path: str | Path, format: str | None = None, errors: Errors = "raise",
                 **select: Any) -> Session:
    """Load one session; for multi-session files, `select` picks it (default: the first).

    See `load_sessions` for the arguments.
    """
    sessions = load_sessions(path, format=format, errors=errors, **select)
    if not sessions:
        raise SessionFormatError(str(path), None, "no session matched the selection "
                                 f"{select or '(none)'}")
    return sessions[0]
