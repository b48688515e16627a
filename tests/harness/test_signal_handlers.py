"""A run leaves the process's signal handlers as it found them: library use in a notebook or a
test must not change how Ctrl-C (or a SIGTERM) stops the caller afterwards."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from tests.hardening._sessions import write_session
from workbench._sync import run_sync
from workbench.harness import Experiment, run_experiment


def _caller_handler(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _experiment(folder: Path) -> Experiment:
    for sid in ("s0", "s1"):
        write_session(folder, sid)
    return Experiment.from_dict({"name": "signals", "sessions": ["s*.json"],
                                 "models": ["extractive"], "base_dir": str(folder)})


def test_a_run_keeps_the_callers_sigint_and_sigterm_handlers(tmp_path: Path) -> None:
    previous = signal.signal(signal.SIGINT, _caller_handler)
    try:
        before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        run_experiment(_experiment(tmp_path), tmp_path / "run", progress=False)
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
        assert signal.getsignal(signal.SIGINT) is _caller_handler
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """SIGINT as Python sets it for a process started from a terminal (a suite started as a
    background job inherits it ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("default_sigint")
def test_a_handler_installed_during_a_run_is_taken_back_when_it_ends() -> None:
    """What Ray's ``init`` does to SIGTERM (and a library may do to SIGINT) is undone."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    async def installs_its_own() -> str:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        await asyncio.sleep(0)
        return "done"

    assert run_sync(installs_its_own()) == "done"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_run_on_its_own_ray_instance_leaves_the_handlers_as_they_were(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray", reason="needs the ray extra: pip install "
                                            "\"compaction-workbench[ray]\"")
    if ray.is_initialized():
        pytest.skip("Ray is already started in this process: the run would not start its own")
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    results = run_experiment(_experiment(tmp_path), tmp_path / "run", progress=False,
                             executor="ray")
    assert set(results.cells["status"]) == {"ok"}
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
