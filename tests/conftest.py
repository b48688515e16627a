"""Shared fixtures: user state in a temp dir, the shared sessions folder, opt-in slow tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared"))
SESSIONS = SHARED / "sessions"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: pass --runslow to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _user_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own user dir, cache dir and Goose config root."""
    base = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("WORKBENCH_USER_PATH", str(base / "workbench"))
    monkeypatch.delenv("GOOSE_PATH_ROOT", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "xdg"))
    monkeypatch.delenv("GOOSE_AUTO_COMPACT_THRESHOLD", raising=False)
    return base


@pytest.fixture
def shared_sessions() -> Path:
    """The shared real sessions folder; skips when ../shared is absent."""
    if not SESSIONS.is_dir():
        pytest.skip(f"needs the shared sessions at {SESSIONS} (../shared beside the repo)")
    return SESSIONS
