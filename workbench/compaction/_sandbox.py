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
(compile only), ``check and read`` (compile, and answer what ``variables`` and ``printed
whole`` would: a run asks both of every prompt template it renders, and loading a variant
checks it anyway), ``variables`` (the names the template reads), ``printed whole`` (the names it
only prints as they are) and ``render with stand-ins`` (the context is the variables and the
characters of the values their stand-ins stand for: `workbench.compaction._stand_in`); the
render process says
``("compiling",)`` when it compiles a source it has not compiled before (and ``("rendering",)``
once that is done), then answers ``("ok", value)`` or ``("error", detail)``. A `TemplateError`
naming the template and the limit (or what went wrong) is raised here from the detail.

`render_each` sends one template with several sets of variables in one request (``renders``:
the context is the shared variables and the list of sets each updates them with): the render
process answers each render as it finishes, and each answer has the time limit of one render
from the answer before it. A tune's points render one reply with one template and their own
parameters: one request for all of them, the shared variables sent and read once.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, overload

from workbench.compaction._limits import RenderLimits, time_limit_message
from workbench.compaction._sandbox_pool import POOL, SYNC_POOL, WORKERS, Pool
from workbench.compaction._sandbox_worker import Worker
from workbench.errors import TemplateError

__all__ = ["WORKERS", "Delivery", "call", "call_async", "render_each", "shutdown",
           "worker_cpu_seconds"]

DIED = "the render process stopped ({why}); simplify the template"
PHASES = ("compiling", "rendering")
"""What the render process says while it works (a stop then says which it was doing)."""


def _stopped(name: str, limits: RenderLimits, compiling: bool) -> TemplateError:
    return TemplateError(name, f"stopped: {time_limit_message(limits.time_limit, compiling)}; "
                               "simplify the template")


def _answer(reply: tuple[object, ...], name: str) -> object:
    if reply[0] == "ok":
        return reply[1]
    raise TemplateError(name, str(reply[1]))


class _Stale(Exception):
    """The render process died before it answered (it had stopped while idle)."""


class _Expired(Exception):
    """The render passed its time limit (``compiling`` says during which phase)."""

    def __init__(self, compiling: bool) -> None:
        super().__init__()
        self.compiling = compiling


def _reply(worker: Worker) -> tuple[object, ...]:
    try:
        return tuple(worker.replies.recv())
    except EOFError:
        raise _Stale() from None


Request = tuple[str, str, object, str, RenderLimits]
"""``(op, source, context, name, limits)``: what the render process is asked (the context of
``renders`` is the shared variables and the list of sets, see `render_each`)."""


def _exchange(worker: Worker, request: Request) -> Generator[float, bool, object]:
    """One request and its answer, written once for both front doors: it yields each deadline
    it waits until and is sent whether the render process wrote before it (`call` polls the
    pipe, `call_async` lets the loop watch it), and returns the answer.

    Raises:
        TemplateError: the template's own failure.
        _Expired: the deadline passed first.
        _Stale: the render process had died.
    """
    op, _, _, name, limits = request
    _send(worker, request)
    compiling, deadline = op != "render", time.monotonic() + limits.time_limit
    while True:
        if not (yield deadline):
            raise _Expired(compiling)
        reply = _reply(worker)
        if reply[0] not in PHASES:
            return _answer(reply, name)
        compiling = reply[0] == "compiling"


class _Lease:
    """A worker lent for one attempt: given back when the attempt ends, or killed when it
    did not end with an answer (stale, past its time, interrupted or cancelled: never handed
    out again). Leaving the block quietly means: try once more with a fresh process."""

    def __init__(self, pool: Pool, worker: Worker, name: str, limits: RenderLimits,
                 attempt: int) -> None:
        self.pool, self.worker = pool, worker
        self.name, self.limits, self.attempt = name, limits, attempt
        self.answered = 0  # renders of a `render_each` answered so far

    def __enter__(self) -> Worker:
        return self.worker

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if exc is None or isinstance(exc, TemplateError):
            self.pool.give(self.worker)  # the template's own failure: the process is fine
            return False
        self.worker.kill()
        self.pool.give(None)
        if self.answered and isinstance(exc, (_Expired, _Stale, EOFError, OSError)):
            return True  # the renders answered stand; the rest were not made
        return _give_up(exc, self.name, self.limits, self.attempt)


@overload
def call(op: Literal["render"], source: str, context: Mapping[str, object] | None, name: str,
         limits: RenderLimits) -> str: ...
@overload
def call(op: Literal["variables"], source: str, context: Mapping[str, object] | None,
         name: str, limits: RenderLimits) -> frozenset[str]: ...
@overload
def call(op: Literal["check"], source: str, context: Mapping[str, object] | None, name: str,
         limits: RenderLimits) -> None: ...
@overload
def call(op: Literal["check and read"], source: str, context: Mapping[str, object] | None,
         name: str, limits: RenderLimits) -> tuple[frozenset[str], frozenset[str]]: ...
def call(op: str, source: str, context: Mapping[str, object] | None, name: str,
         limits: RenderLimits) -> object:
    """Run one request in a render process and wait for its answer (see the module docstring).

    Returns:
        The rendered text (``render``), None (``check``), the names read and the names only
        printed whole (``check and read``), or the names read (``variables``).

    Raises:
        TemplateError: the template failed, crossed a limit, or ran past the time limit.
    """
    for attempt in (1, 2):
        pool, worker = POOL, POOL.try_take()
        if worker is None:
            pool, worker = SYNC_POOL, SYNC_POOL.take()
        with _Lease(pool, worker, name, limits, attempt):
            exchange = _exchange(worker, (op, source, context, name, limits))
            try:
                deadline = next(exchange)
                while True:
                    left = deadline - time.monotonic()
                    deadline = exchange.send(left > 0 and worker.replies.poll(left))
            except StopIteration as done:
                return done.value
    raise AssertionError("unreachable")  # pragma: no cover


@overload
async def call_async(op: Literal["render"], source: str, context: Mapping[str, object] | None,
                     name: str, limits: RenderLimits) -> str: ...
@overload
async def call_async(op: Literal["variables", "printed whole"], source: str,
                     context: Mapping[str, object] | None, name: str,
                     limits: RenderLimits) -> frozenset[str]: ...
@overload
async def call_async(op: Literal["render with stand-ins"], source: str,
                     context: tuple[Mapping[str, object], Mapping[str, int]], name: str,
                     limits: RenderLimits) -> str: ...
async def call_async(op: str, source: str,
                     context: Mapping[str, object] | tuple[object, ...] | None, name: str,
                     limits: RenderLimits) -> object:
    """`call` on the event loop: the loop watches the render process's pipe (no thread).

    Raises:
        TemplateError: as `call`.
    """
    loop = asyncio.get_running_loop()
    for attempt in (1, 2):
        worker = await POOL.take_async()
        with _Lease(POOL, worker, name, limits, attempt):
            exchange = _exchange(worker, (op, source, context, name, limits))
            try:
                deadline = next(exchange)
                while True:
                    deadline = exchange.send(await _arrived(loop, worker, deadline))
            except StopIteration as done:
                return done.value
    raise AssertionError("unreachable")  # pragma: no cover


Delivery = Callable[[int, "str | TemplateError"], None]
"""Where `render_each` hands each answer: ``deliver(index, text or the render's error)``."""


async def render_each(source: str, context: Mapping[str, object],
                      each: Sequence[Mapping[str, object]], name: str, limits: RenderLimits,
                      deliver: Delivery) -> int:
    """Render `source` once for each set of variables in `each` (`context` updated by it) in
    one request, handing each answer to `deliver` as it arrives, in order (see the module
    docstring). Each render has the time limit of one render.

    Returns:
        How many renders were delivered: all of them, unless the render process stopped
        (died, or a render ran past its time limit and was killed) after the first had been
        delivered; the ones after it were not made.

    Raises:
        TemplateError: the first render ran past its time limit, or the process died before
            it answered (as `call_async`).
    """
    if not each:
        return 0
    loop = asyncio.get_running_loop()
    request: Request = ("renders", source, (dict(context), [dict(v) for v in each]), name,
                        limits)
    for attempt in (1, 2):
        worker = await POOL.take_async()
        lease = _Lease(POOL, worker, name, limits, attempt)
        with lease:
            _send(worker, request)
            compiling, deadline = False, time.monotonic() + limits.time_limit
            while lease.answered < len(each):
                # Answers that are in already are read without waking the loop for each.
                if not worker.replies.poll() and not await _arrived(loop, worker, deadline):
                    raise _Expired(compiling)
                reply = _reply(worker)
                if reply[0] in PHASES:
                    compiling = reply[0] == "compiling"
                    continue
                deliver(lease.answered, str(reply[1]) if reply[0] == "ok"
                        else TemplateError(name, str(reply[1])))
                lease.answered += 1
                deadline = time.monotonic() + limits.time_limit
            return lease.answered
        if lease.answered:
            return lease.answered
    raise AssertionError("unreachable")  # pragma: no cover


def _send(worker: Worker, request: Request) -> None:
    try:
        worker.requests.send(request)
    except OSError:
        raise _Stale() from None


def _give_up(exc: BaseException, name: str, limits: RenderLimits, attempt: int) -> bool:
    """After the render process was killed: True to try once more with a fresh one (it had
    died while idle), False to let `exc` through (Ctrl-C, a cancelled task), else raise what
    the caller should see."""
    if isinstance(exc, _Stale):
        if attempt == 1:
            return True
        raise TemplateError(name, DIED.format(why="it exited")) from None
    if isinstance(exc, _Expired):
        raise _stopped(name, limits, exc.compiling) from None
    if isinstance(exc, (EOFError, OSError)):
        raise TemplateError(name, DIED.format(why=type(exc).__name__)) from exc
    return False


async def _arrived(loop: asyncio.AbstractEventLoop, worker: Worker, deadline: float) -> bool:
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


def worker_cpu_seconds() -> float:
    """CPU seconds the live render processes have used (benchmarks add it to their own)."""
    total = 0.0
    for worker in [*POOL.idle, *SYNC_POOL.idle]:
        try:
            fields = Path(f"/proc/{worker.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue
    return total


def shutdown() -> None:
    """Stop the idle render processes (the next render starts a fresh one)."""
    POOL.close()
    SYNC_POOL.close()


# At exit the render processes are stopped and reaped here: left to the interpreter, each one
# still running is a ResourceWarning at the end of every session that rendered.
atexit.register(shutdown)
