"""A render process dies with the workbench that started it, even a workbench killed outright.

A render stuck in one C call (comparing lists that hold themselves) holds the interpreter lock,
so no Python code in the render process can notice that its parent is gone: killed with
SIGKILL, a workbench would leave it running on as an orphan that holds the pipes and terminal
of whoever started the workbench. On Linux the kernel kills it instead: the render process asks
for a parent-death signal (``prctl(PR_SET_PDEATHSIG)``, `die_with_parent`).

That signal follows the *thread* that started the process, not the process: a render process
started from a passing thread (a notebook's run thread, a pool's thread) would be killed when
that thread ends, perhaps in the middle of another caller's render. So every render process is
started from one thread that lives as long as the workbench (`spawn`).

Where ``prctl`` is missing (not Linux) an idle render process still leaves once its parent is
gone (`workbench.compaction._sandbox_env.serve` checks every second), as before.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["die_with_parent", "spawn"]

PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal this process gets when the thread that started it exits."""

T = TypeVar("T")

_spawner: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def die_with_parent(parent: int) -> None:
    """In the render process: have the kernel kill it (SIGKILL) when its parent goes, and
    leave at once when the process `parent` is already gone (it died before the request)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - not Linux: the idle check alone
        return
    prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent and os.getppid() != parent:
        os._exit(0)


def spawn(start: Callable[[], T]) -> T:
    """`start()` (which starts a render process) run on the workbench's one spawning thread,
    which lives as long as this process (see the module docstring)."""
    global _spawner
    with _lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(1, thread_name_prefix="workbench-render-spawner")
        pool = _spawner
    try:
        future = pool.submit(start)
    except RuntimeError:  # the interpreter is shutting down: no new thread, start it here
        return start()
    try:
        return future.result()
    except BaseException:
        future.cancel()  # interrupted before the spawner took it: never started
        raise


def _forget_spawner() -> None:
    """In a forked child: the parent's spawning thread (and whoever held the lock) is not
    there; it starts its own."""
    global _spawner, _lock
    _spawner, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_spawner)
