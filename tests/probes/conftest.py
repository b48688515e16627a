"""The real recorded sessions the shipped ``experiments/shared-sessions.toml`` runs on, loaded
once for the probes' tests (skipped where ``../shared`` is absent)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import ROOT
from workbench.sessions import Session

SPEC = ROOT / "experiments" / "shared-sessions.toml"
SPEC_SESSIONS = ROOT.parent / "shared" / "sessions"
"""Where the shipped spec's relative paths lead."""


@pytest.fixture(scope="session")
def real_sessions() -> list[Session]:
    """Every session of the shipped spec, in its order."""
    if not SPEC_SESSIONS.is_dir():
        pytest.skip(f"needs the shared sessions at {SPEC_SESSIONS} (../shared beside the repo)")
    from workbench.harness.experiment._cells import load_experiment_sessions
    from workbench.harness.experiment._spec import Experiment

    return load_experiment_sessions(Experiment.from_toml(SPEC))


@pytest.fixture(scope="session")
def real(real_sessions: list[Session]) -> Callable[[str], Session]:
    """The real session with the given id, else the one whose id starts with it."""
    def find(prefix: str) -> Session:
        (found,) = ([s for s in real_sessions if s.id == prefix]
                    or [s for s in real_sessions if s.id.startswith(prefix)])
        return found
    return find
