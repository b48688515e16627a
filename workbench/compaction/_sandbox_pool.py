"""The render processes lent out one request at a time (`workbench.compaction._sandbox` asks
them): at most `WORKERS` for the event loop and the synchronous callers that find one free at
once (`POOL`), and one of its own for a synchronous caller that does not (`SYNC_POOL`), so a
render waited for on a loop thread never waits for a render the blocked loop would finish."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from workbench.compaction._sandbox_worker import Worker

__all__ = ["POOL", "SYNC_POOL", "WORKERS", "Pool"]

WORKERS = 1
"""Render processes kept at most (renders beyond wait for one to be free)."""

_Waiter = TypeVar("_Waiter", threading.Event, "asyncio.Future[None]")


class Pool:
    """The render processes, lent out one request at a time, in the order callers asked."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.started = 0
        self.idle: list[Worker] = []
        self.waiting: deque[threading.Event | asyncio.Future[None]] = deque()  # first come first
        self.lock = threading.Lock()

    def _claim(self) -> Worker | bool:
        """An idle worker, True when the caller may start one, else False (wait)."""
        if self.idle:
            return self.idle.pop()  # a dead one is found out when asked (and replaced)
        if self.started < self.size:
            self.started += 1
            return True
        return False

    def _start(self) -> Worker:
        try:
            return Worker()
        except BaseException:
            with self.lock:
                self.started -= 1
            raise

    def try_take(self) -> Worker | None:
        """A worker free at once (started when the pool may start one), else None."""
        with self.lock:
            got = self._claim()
        if isinstance(got, Worker):
            return got
        return self._start() if got else None

    def _take_or_queue(self, waiter: Callable[[], _Waiter]) -> Worker | _Waiter:
        """A worker (idle, or started now when the pool may start one), else a `waiter()`
        queued, first come first served, to be woken when one is given back."""
        with self.lock:
            got = self._claim()
            if got is False:
                ready = waiter()
                self.waiting.append(ready)
                return ready
        return got if isinstance(got, Worker) else self._start()

    def take(self) -> Worker:
        """A worker for this thread (waiting for one to be free)."""
        while not isinstance(got := self._take_or_queue(threading.Event), Worker):
            got.wait()
        return got

    async def take_async(self) -> Worker:
        """A worker for the running event loop (waiting for one to be free; the first render
        of the process pays for starting one)."""
        loop = asyncio.get_running_loop()
        while not isinstance(got := self._take_or_queue(loop.create_future), Worker):
            await got
        return got

    def give(self, worker: Worker | None) -> None:
        """Hand a worker back (None: it was killed; a fresh one may be started)."""
        with self.lock:
            if worker is not None:
                self.idle.append(worker)
            else:
                self.started -= 1
            waiter = self.waiting.popleft() if self.waiting else None
        if isinstance(waiter, threading.Event):
            waiter.set()
        elif waiter is not None:
            loop = waiter.get_loop()
            if _running_loop() is loop:  # the usual case: no wake-up through the loop's pipe
                _wake(waiter)
            else:
                loop.call_soon_threadsafe(_wake, waiter)

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
            self.started -= len(idle)
        for worker in idle:
            worker.kill()


POOL = Pool(WORKERS)
"""The render processes (`call_async` waits for one; `call` takes one only when it is free)."""
SYNC_POOL = Pool(1)
"""The render process `call` uses when none of `POOL` is free at once."""


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
