"""`run_sync`: the one way the workbench's synchronous wrappers run their async core."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[object, None, T]) -> T:
    """Run `coro` to completion and return its result, even inside a running event loop.

    Outside a loop it is ``asyncio.run``; inside one (Jupyter) the coroutine gets its own loop
    on a worker thread, since the notebook's loop cannot be re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
