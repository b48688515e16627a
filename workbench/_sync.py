"""`run_sync`: the one way the workbench's synchronous wrappers run their async core."""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import threading
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import TypeVar

T = TypeVar("T")

KEPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Signals whose handlers a run leaves as it found them (Ray's ``init`` installs its own
SIGTERM handler and never removes it; a run must not change how Ctrl-C stops the caller)."""

_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


def run_sync(coro: Coroutine[object, None, T]) -> T:
    """Run `coro` to completion and return its result, even inside a running event loop.

    Outside a loop it is ``asyncio.run``; inside one (Jupyter) the coroutine gets its own loop
    on a worker thread, since the notebook's loop cannot be re-entered. Either way the process's
    SIGINT and SIGTERM handlers are the same objects afterwards as before (`KEPT_SIGNALS`).
    """
    before = [(sig, signal.getsignal(sig)) for sig in KEPT_SIGNALS]
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coro).result()
    finally:
        _restore(before)


def _restore(handlers: list[tuple[signal.Signals, _Handler]]) -> None:
    """Put back each handler a run replaced (only the main thread may set one; a handler
    installed outside Python, None here, cannot be put back from Python)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, handler in handlers:
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)
