"""The render process: where every template is compiled and rendered, bounded in time and memory.

Templates are user files. Whatever one does (loop for hours in Python, hang in a C call such
as comparing self-referencing lists, allocate gigabytes), the run must go on: so no template
code runs in the workbench's own process. Every compile and render is sent to a render
process, a plain ``python`` child started on first use and reused for the life of this process,
one render each at a time, at most `WORKERS` of them. A render waited for synchronously takes
one only when it is free at once, and otherwise has one of its own: a synchronous render made
on a loop thread (a variant baked while a cell is scored) must never wait for a render that
the blocked loop would have to finish first. The workbench waits for its answer
until the render's time limit (`RenderLimits.time_limit`) and then kills it, wherever it is;
the next render starts a fresh one. Its address space is capped (`RENDER_MEMORY_LIMIT`), so a
template that allocates without bound fails with an error, not with the machine swapping.
Ctrl-C stops a render at once: the waiting caller is interrupted, and the render process is
killed on the way out. The size limits (`_limits`) are checked inside the render process, so a
template that asks for a huge value gets a message naming the operation and the limit.

Two front doors share the processes: `call` waits synchronously (library code, loading
variants, exports) and `call_async` awaits the answer on the event loop without a thread (the
pipe is watched by the loop), so a slow template never stalls the other cells' calls.

A request is ``(op, source, context, name, limits)`` with ``op`` one of ``render``, ``check``
(compile only) and ``variables`` (the names the template reads); the render process says
``("compiling",)`` when it compiles a source it has not compiled before (and ``("rendering",)``
once that is done), then answers ``("ok", value)`` or ``("error", detail)``. A `TemplateError` naming the template and the limit (or what went
wrong) is raised here from the detail.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import subprocess
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from workbench.compaction._limits import RenderLimits, render_memory_limit, time_limit_message
from workbench.errors import TemplateError

__all__ = ["WORKERS", "call", "call_async", "shutdown", "worker_cpu_seconds"]

WORKERS = 1
"""Render processes kept at most (renders beyond wait for one to be free)."""

SERVE = ("import sys; sys.path.insert(0, {root!r}); "
         "from workbench.compaction._sandbox_env import serve; "
         "serve({fd_in}, {fd_out}, {memory}, {parent})")
"""The render process's program (``python -c``)."""

DIED = "the render process stopped ({why}); simplify the template"
PRIVATE_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
"""Environment variables whose names hold these are kept from the render process."""
PHASES = ("compiling", "rendering")
"""What the render process says while it works (a stop then says which it was doing)."""


def _private(name: str) -> bool:
    """An environment variable the render process must not see: a credential, or a Ray
    cluster's setting (the render process belongs to no cluster)."""
    upper = name.upper()
    return upper.startswith("RAY_") or any(w in upper for w in PRIVATE_WORDS)


class _Worker:
    """One render process and its two pipes."""

    def __init__(self) -> None:
        req_read, req_write = os.pipe()
        resp_read, resp_write = os.pipe()
        env = {k: v for k, v in os.environ.items() if not _private(k)}
        root = str(Path(__file__).resolve().parents[2])  # this workbench, wherever it is
        program = SERVE.format(fd_in=req_read, fd_out=resp_write, memory=render_memory_limit(),
                               parent=os.getpid(), root=root)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", program], pass_fds=(req_read, resp_write), env=env,
                stdin=subprocess.DEVNULL, close_fds=True)
        finally:
            os.close(req_read)
            os.close(resp_write)
        self.requests = Connection(req_write, readable=False)
        self.replies = Connection(resp_read, writable=False)
        try:
            reply = self.replies.recv()  # ("ready",) once it has imported the sandbox
        except EOFError:
            self.kill()
            raise RuntimeError(f"the render process did not start (exit code "
                               f"{self.process.returncode}; its error is above)") from None
        if reply != ("ready",):  # pragma: no cover - the program above sends nothing else
            raise RuntimeError(f"render process said {reply!r}")

    def kill(self) -> None:
        """Stop it now (a render past its deadline, Ctrl-C) and reap it."""
        if self.process.poll() is None:
            self.process.kill()
        for end in (self.requests, self.replies):
            end.close()
        self.process.wait()


class _Pool:
    """The render processes, lent out one request at a time, in the order callers asked."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.started = 0
        self.idle: list[_Worker] = []
        self.waiting: deque[Any] = deque()  # threading.Event or asyncio.Future, first come first
        self.lock = threading.Lock()

    def _claim(self) -> _Worker | bool:
        """An idle worker, True when the caller may start one, else False (wait)."""
        if self.idle:
            return self.idle.pop()  # a dead one is found out when asked (and replaced)
        if self.started < self.size:
            self.started += 1
            return True
        return False

    def _start(self) -> _Worker:
        try:
            return _Worker()
        except BaseException:
            with self.lock:
                self.started -= 1
            raise

    def try_take(self) -> _Worker | None:
        """A worker free at once (started when the pool may start one), else None."""
        with self.lock:
            got = self._claim()
        if got is True:
            return self._start()
        return got or None  # type: ignore[return-value]

    def take(self) -> _Worker:
        """A worker for this thread (waiting for one to be free)."""
        while True:
            with self.lock:
                got = self._claim()
                if got is False:
                    ready = threading.Event()
                    self.waiting.append(ready)
            if got is True:
                return self._start()
            if got is not False:
                return got  # type: ignore[return-value]
            ready.wait()

    async def take_async(self) -> _Worker:
        """A worker for the running event loop (waiting for one to be free)."""
        loop = asyncio.get_running_loop()
        while True:
            with self.lock:
                got = self._claim()
                if got is False:
                    ready = loop.create_future()
                    self.waiting.append(ready)
            if got is True:
                return self._start()  # once per process: the first render pays for it
            if got is not False:
                return got  # type: ignore[return-value]
            await ready

    def give(self, worker: _Worker | None) -> None:
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


_POOL = _Pool(WORKERS)
"""The render processes (`call_async` waits for one; `call` takes one only when it is free)."""
_SYNC_POOL = _Pool(1)
"""The render process `call` uses when none of `_POOL` is free at once."""


def _stopped(name: str, limits: RenderLimits, compiling: bool) -> TemplateError:
    return TemplateError(name, f"stopped: {time_limit_message(limits.time_limit, compiling)}; "
                               "simplify the template")


def _answer(reply: tuple[Any, ...], name: str) -> Any:
    if reply[0] == "ok":
        return reply[1]
    raise TemplateError(name, reply[1])


class _Stale(Exception):
    """The render process died before it answered (it had stopped while idle)."""


class _Expired(Exception):
    """The render passed its time limit (``compiling`` says during which phase)."""

    def __init__(self, compiling: bool) -> None:
        super().__init__()
        self.compiling = compiling


def _reply(worker: _Worker) -> tuple[Any, ...]:
    try:
        return tuple(worker.replies.recv())
    except EOFError:
        raise _Stale() from None


def call(op: str, source: str, context: dict[str, Any] | None, name: str,
         limits: RenderLimits) -> Any:
    """Run one request in a render process and wait for its answer (see the module docstring).

    Raises:
        TemplateError: the template failed, crossed a limit, or ran past the time limit.
    """
    for attempt in (1, 2):
        pool = _POOL
        worker: _Worker | None = _POOL.try_take()
        if worker is None:
            pool, worker = _SYNC_POOL, _SYNC_POOL.take()
        assert worker is not None
        try:
            _send(worker, (op, source, context, name, limits))
            compiling, deadline = op != "render", time.monotonic() + limits.time_limit
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not worker.replies.poll(left):
                    raise _Expired(compiling)
                reply = _reply(worker)
                if reply[0] not in PHASES:
                    return _answer(reply, name)
                compiling = reply[0] == "compiling"
        except TemplateError:
            raise  # the template's own failure: the process is fine
        except BaseException as exc:
            worker.kill()  # stale, past its time, interrupted: never handed out again
            worker = None
            _give_up(exc, name, limits, attempt)
        finally:
            pool.give(worker)
    raise AssertionError("unreachable")  # pragma: no cover


async def call_async(op: str, source: str, context: dict[str, Any] | None, name: str,
                     limits: RenderLimits) -> Any:
    """`call` on the event loop: the loop watches the render process's pipe (no thread).

    Raises:
        TemplateError: as `call`.
    """
    loop = asyncio.get_running_loop()
    for attempt in (1, 2):
        worker: _Worker | None = await _POOL.take_async()
        assert worker is not None
        try:
            _send(worker, (op, source, context, name, limits))
            compiling, deadline = op != "render", time.monotonic() + limits.time_limit
            while True:
                if not await _arrived(loop, worker, deadline):
                    raise _Expired(compiling)
                reply = _reply(worker)
                if reply[0] not in PHASES:
                    return _answer(reply, name)
                compiling = reply[0] == "compiling"
        except TemplateError:
            raise  # the template's own failure: the process is fine
        except BaseException as exc:
            worker.kill()  # stale, past its time, cancelled (Ctrl-C): never handed out again
            worker = None
            _give_up(exc, name, limits, attempt)
        finally:
            _POOL.give(worker)
    raise AssertionError("unreachable")  # pragma: no cover


def _send(worker: _Worker, request: tuple[Any, ...]) -> None:
    try:
        worker.requests.send(request)
    except OSError:
        raise _Stale() from None


def _give_up(exc: BaseException, name: str, limits: RenderLimits, attempt: int) -> None:
    """After the render process was killed: return to try once more with a fresh one (it had
    died while idle), else raise what the caller should see."""
    if isinstance(exc, _Stale):
        if attempt == 1:
            return
        raise TemplateError(name, DIED.format(why="it exited")) from None
    if isinstance(exc, _Expired):
        raise _stopped(name, limits, exc.compiling) from None
    if isinstance(exc, (EOFError, OSError)):
        raise TemplateError(name, DIED.format(why=type(exc).__name__)) from exc
    raise exc


async def _arrived(loop: asyncio.AbstractEventLoop, worker: _Worker, deadline: float) -> bool:
    """True once the render process has written, False when `deadline` passes first."""
    fd = worker.replies.fileno()
    waiting: asyncio.Future[bool] = loop.create_future()
    loop.add_reader(fd, _settle, waiting, True)
    timer = loop.call_later(max(deadline - time.monotonic(), 0.0), _settle, waiting, False)
    try:
        return await waiting
    finally:
        timer.cancel()
        loop.remove_reader(fd)


def _settle(waiting: asyncio.Future[bool], value: bool) -> None:
    if not waiting.done():
        waiting.set_result(value)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def worker_cpu_seconds() -> float:
    """CPU seconds the live render processes have used (benchmarks add it to their own)."""
    total = 0.0
    for worker in [*_POOL.idle, *_SYNC_POOL.idle]:
        try:
            fields = Path(f"/proc/{worker.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue
    return total


def shutdown() -> None:
    """Stop the idle render processes (the next render starts a fresh one)."""
    _POOL.close()
    _SYNC_POOL.close()


# At exit the render processes are stopped and reaped here: left to the interpreter, each one
# still running is a ResourceWarning at the end of every session that rendered.
atexit.register(shutdown)
