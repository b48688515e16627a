"""Where the workbench keeps user state: the user dir and the default response-cache file.

Everything the workbench writes on its own (response recordings, default run folders) lives
under `user_dir()`, which ``WORKBENCH_USER_PATH`` overrides (tests point it at a temp dir).
"""

from __future__ import annotations

import os
from pathlib import Path

USER_PATH_ENV = "WORKBENCH_USER_PATH"
DEFAULT_USER_DIR = Path("~/.local/share/compaction-workbench")
CACHE_FILE = "responses.db"


def user_dir() -> Path:
    """The workbench's user directory, created if missing.

    Returns:
        ``$WORKBENCH_USER_PATH`` when set, else ``~/.local/share/compaction-workbench``.
    """
    override = os.environ.get(USER_PATH_ENV)
    path = Path(override).expanduser() if override else DEFAULT_USER_DIR.expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_path() -> Path:
    """The default response-cache file: ``<user_dir>/cache/responses.db`` (folder created)."""
    folder = user_dir() / "cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / CACHE_FILE
