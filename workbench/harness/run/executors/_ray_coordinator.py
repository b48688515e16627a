"""The Ray executor's coordinator: one actor for the whole cluster, placed on the head node.

It is the only place where limits, in-flight deduplication and the response cache meet. It
opens no file: it lives on the head (the one node a cluster cannot lose and go on), while the
run folder and the recordings stay on the driver's machine, which under Ray Client is not a
node at all.

- **Cell slots.** `Coordinator.begin_cell` takes the per-model slot, then the global one (the local
  executor's order), before a cell starts on any worker; the driver gives them back with `end_cell`
  once it has recorded the cell, after telling the coordinator (`stop`) whether the budget is now
  reached. So, as locally, a cell starts only if the budget was not reached when it got its slot. A
  slot belongs to a *cell id*, not to a worker: when a worker dies holding one, the cell's retry
  inherits it, so a crash never leaks a slot and two tries never hold two.
- **Response cache.** The driver ships each recording in (``_ray_recording``); a cached call asks
  `call_begin`, which answers from it (a hit, or a recorded refusal), says "miss" in replay mode,
  or grants the call; the worker reports the answer with `call_end`, the coordinator keeps it for
  later lookups, and `end_cell` hands what was recorded back to the driver, which writes its file.
- **Shared calls.** The run's `SharedCalls` table lives here, one for the whole cluster, and works
  as the local runner's: a prompt sent to the same model in the same repeat is sent once (the
  others wait for it, or reuse it later in the run); the first caller keeps the billed usage, the
  others get a zero-usage copy naming it (``shared_from``). The worker computes the key with the
  same `share_key`; `call_begin` claims it and `call_end` settles it. ``share_calls=False`` turns
  this off, as locally. The driver seeds the table with what earlier runs of the same `SharedCalls`
  answered (the tuner's rungs) and takes back what this run answered (`shared_state`).
- **Identical cached prompts in flight.** Beyond sharing (other repeats; sharing off), while
  one cell's call for a cache key is out, another cell asking for the same key waits for that
  call and is then served its recording, exactly as a later cache hit would be: no two
  workers pay for one prompt.
- **Provider rate limits.** A call that ends rate-limited (the model's own retries spent)
  pauses every new call to that model, on every worker, for the provider's retry-after.
- **The ledger.** Every granted call is noted with the cell's try number (and the node each try
  ran on), so when a retried cell finishes, `lost_calls` tells the driver what the killed tries
  spent (see `lost_calls`).

The class is plain Python (async methods); the executor turns it into an async Ray actor.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from workbench.compaction._model import Usage
from workbench.harness.run.executors._ray_messages import Answer, CallEnd, Decision, LostCall
from workbench.harness.run.executors._ray_recording import Batch, Recording, Row
from workbench.models._cache import Refusal
from workbench.models._shared import SharedAnswer, SharedCalls

STARTED, PAID, HIT, REFUSED, FAILED, SHARED = ("started", "paid", "hit", "refused", "failed",
                                               "shared")

RATE_LIMIT_PAUSE = 5.0
"""Seconds every worker holds off a model after a call to it ended rate-limited (HTTP 429,
retries spent) and the provider named no retry-after."""


@dataclass
class _Call:
    cell_id: str
    try_no: int
    seq: int
    key: str | None
    model: str | None = None
    prompt_hash: str | None = None
    state: str = STARTED
    usage: Usage | None = None
    share: str | None = None
    share_id: str | None = None


class Coordinator:
    """Cluster-wide limits, cache gateway and call ledger (see the module docstring).

    Args:
        global_limit: At most this many cells in flight across the cluster.
        model_limits: Model index -> at most this many of its cells in flight.
        share_calls: Share identical calls across cells (the runner's ``share_calls``).
        answers: Calls an earlier run of the driver's `SharedCalls` answered (reused here).
        recordings: Recording file -> its answers, as the driver read them
            (`_ray_recording.snapshot`); a file not given starts empty.
    """

    def __init__(self, global_limit: int, model_limits: dict[int, int],
                 share_calls: bool = False,
                 answers: dict[str, SharedAnswer] | None = None,
                 recordings: dict[str, dict[str, Row]] | None = None) -> None:
        self._global_limit = global_limit
        self._model_limits = dict(model_limits)
        self._sems: dict[str | tuple[str, int], asyncio.Semaphore] = {}
        self._slots: dict[str, int] = {}
        self._tries: dict[str, int] = {}
        self._ledger: dict[str, list[_Call]] = {}
        self._calls: dict[int, _Call] = {}
        self._inflight: dict[str, tuple[int, asyncio.Future[bool]]] = {}
        self._recordings = {path: Recording(rows) for path, rows in (recordings or {}).items()}
        self._nodes: dict[tuple[str, int], str | None] = {}  # (cell id, try) -> its node
        self._ids = itertools.count(1)
        self._stopped: str | None = None
        self._paused_until: dict[str, float] = {}
        self._shared = SharedCalls(enabled=share_calls)
        self._shared.absorb(answers or {})
        self._seeded = set(answers or {})
        self._leads: dict[str, tuple[str, int]] = {}  # share key -> (cell id, try) sending it
        self._ended: set[str] = set()
        self.counts = {"paid": 0, "hits": 0, "deduplicated": 0, "refused": 0, "failed": 0,
                       "shared": 0}
        self.clock = time.monotonic  # how a rate-limit pause is timed (a test sets its own)
        self.sleep = asyncio.sleep

    # -- cells ------------------------------------------------------------------------------

    def _sem(self, key: str | tuple[str, int], limit: int) -> asyncio.Semaphore:
        # Created on first use so they bind to the actor's own event loop.
        if key not in self._sems:
            self._sems[key] = asyncio.Semaphore(limit)
        return self._sems[key]

    async def begin_cell(self, cell_id: str, model_index: int, node_id: str | None = None) -> int:
        """Wait for the cell's slots (unless an earlier try left them held); return its try
        number (0 for the first), or -1 when the budget stopped new cells meanwhile.
        `node_id` names the node this try runs on (for the ledger)."""
        try_no = self._tries.get(cell_id, -1) + 1
        self._tries[cell_id] = try_no
        self._nodes[(cell_id, try_no)] = node_id
        self._abandon_earlier(cell_id, try_no)
        if cell_id in self._slots:  # a retry: the cell had started before any stop
            return try_no
        if self._stopped is not None:
            return -1
        limit = self._model_limits.get(model_index)
        if limit:
            await self._sem(("model", model_index), limit).acquire()
        await self._sem("global", self._global_limit).acquire()
        if cell_id in self._slots:  # a dead try's waiter got there first: keep one slot
            self._release(model_index)
        elif self._stopped is not None:
            self._release(model_index)
            return -1
        else:
            self._slots[cell_id] = model_index
        return try_no

    def stop(self, reason: str) -> None:
        """No new cell starts from now on (the budget is reached)."""
        self._stopped = self._stopped or reason

    def end_cell(self, cell_id: str) -> dict[str, Batch]:
        """Give the cell's slots back (idempotent); the driver has recorded the cell, so its
        ledger is dropped too. Returns what the run recorded meanwhile (see `drain`)."""
        if cell_id in self._slots:
            self._release(self._slots.pop(cell_id))
        self._ledger.pop(cell_id, None)
        for try_no in range(self._tries.get(cell_id, -1) + 1):
            self._nodes.pop((cell_id, try_no), None)
        self._ended.add(cell_id)
        self._abandon_shares(lambda c, t: c == cell_id)
        return self.drain()

    def drain(self) -> dict[str, Batch]:
        """Recording file -> the answers recorded and lookups counted since the last drain, for
        the driver to write to its file."""
        batches = {path: rec.drain() for path, rec in self._recordings.items()}
        return {path: batch for path, batch in batches.items() if batch is not None}

    def _release(self, model_index: int) -> None:
        self._sem("global", self._global_limit).release()
        limit = self._model_limits.get(model_index)
        if limit:
            self._sem(("model", model_index), limit).release()

    def _abandon_earlier(self, cell_id: str, try_no: int) -> None:
        # Calls of an earlier try of this cell are gone with its worker: free their waiters.
        for key, (call_id, future) in list(self._inflight.items()):
            call = self._calls[call_id]
            if call.cell_id == cell_id and call.try_no < try_no:
                del self._inflight[key]
                if not future.done():
                    future.set_result(False)
        self._abandon_shares(lambda c, t: c == cell_id and t < try_no)

    def _abandon_shares(self, whose: Callable[[str, int], bool]) -> None:
        # Shared calls a gone try was sending: whoever waits for them sends its own.
        for share, (cell_id, try_no) in list(self._leads.items()):
            if whose(cell_id, try_no):
                del self._leads[share]
                self._shared.abandon(share)

    def _current(self, cell_id: str, try_no: int) -> bool:
        return self._tries.get(cell_id, try_no) == try_no and cell_id not in self._ended

    # -- calls ------------------------------------------------------------------------------

    def _recording(self, path: str) -> Recording:
        return self._recordings.setdefault(path, Recording())

    def _note(self, cell_id: str, try_no: int, key: str | None, state: str,
              usage: Usage | None = None, model: str | None = None,
              prompt_sha256: str | None = None, share: str | None = None) -> _Call:
        calls = self._ledger.setdefault(cell_id, [])
        seq = 1 + sum(1 for c in calls if c.try_no == try_no)
        call = _Call(cell_id, try_no, seq, key, model, prompt_sha256, state=state, usage=usage,
                     share=share)
        calls.append(call)
        return call

    def _end_share(self, share: str | None,
                   reply: Answer | None) -> Answer | None:
        """Settle the claimed shared call `share` with `reply` and return the leader's copy
        (its usage carries the call id), or abandon it when `reply` is None (its waiters send
        their own). None when this try does not lead `share`."""
        if share is None or self._leads.pop(share, None) is None:
            return None
        if reply is None:
            self._shared.abandon(share)
            return None
        return self._shared.settle(share, *reply)

    async def call_begin(self, cell_id: str, try_no: int, key: str | None, mode: str,
                         cache_path: str | None, model: str = "",
                         prompt_sha256: str | None = None,
                         share: str | None = None) -> Decision:
        """Decide one model call of a cell.

        Args:
            cell_id: The calling cell.
            try_no: Its try number (from `begin_cell`).
            key: The response-cache key, or None for an uncached model.
            mode: ``"rw"``, ``"replay"`` or ``"off"``.
            cache_path: The recording file, on the driver's machine (for ``rw``/``replay``).
            model: The model id (for recordings and the ledger).
            prompt_sha256: The prompt's hash (likewise).
            share: The call's `share_key` when calls are shared, else None.

        Returns:
            ``("shared", message, usage)`` (an equal call's zero-usage copy), ``("hit",
            message, usage)``, ``("refusal", text)``, ``("miss",)`` (replay only),
            ``("gone",)`` (this try was superseded while it waited) or ``("call",
            call_id)``: the worker calls the model and reports with `call_end`.
        """
        if not self._shared.enabled:
            self._shared.calls_made += 1  # counted as the local runner counts unshared calls
        elif share is not None:
            answer = await self._shared.claim(share)
            if answer is not None:
                self.counts["shared"] += 1
                self._note(cell_id, try_no, key, SHARED, model=model,
                           prompt_sha256=prompt_sha256, share=share)
                return ("shared", *self._shared.share(answer))
            if not self._current(cell_id, try_no):  # its worker died while it waited
                self._shared.abandon(share)
                return ("gone",)
            self._leads[share] = (cell_id, try_no)
        try:
            decision = await self._cache_or_call(cell_id, try_no, key, mode, cache_path, model,
                                                 prompt_sha256, share)
        except BaseException:
            self._end_share(share, None)
            raise
        if decision[0] == "hit":
            settled = self._end_share(share, (decision[1], decision[2]))
            if settled is not None:  # the leader keeps the billed usage, now with its call id
                return ("hit", *settled)
        elif decision[0] != "call":
            self._end_share(share, None)  # a refusal or a miss is never shared
        return decision

    async def _cache_or_call(self, cell_id: str, try_no: int, key: str | None, mode: str,
                             cache_path: str | None, model: str, prompt_sha256: str | None,
                             share: str | None) -> Decision:
        waited = False
        cached = key is not None and mode != "off" and cache_path is not None
        while True:
            if cached and key is not None and cache_path is not None:
                found = self._recording(cache_path).get(key, count_hit=mode == "rw")
                if found is not None:
                    self.counts["deduplicated" if waited else "hits"] += 1
                    if isinstance(found, Refusal):
                        self._note(cell_id, try_no, key, HIT)
                        return ("refusal", found.message)
                    message, usage = found
                    self._note(cell_id, try_no, key, HIT, usage)
                    return ("hit", message, usage)
                if mode == "replay":
                    return ("miss",)
                owner = self._inflight.get(key)
                if owner is not None:
                    waited = True
                    await asyncio.shield(owner[1])  # then look again: recorded, or free to call
                    continue
            pause = self._paused_until.get(model, 0.0) - self.clock()
            if pause <= 0:
                break
            await self.sleep(pause)  # the provider said 429: nobody calls it meanwhile
        call = self._note(cell_id, try_no, key, STARTED, model=model,
                          prompt_sha256=prompt_sha256, share=share)
        call_id = next(self._ids)
        self._calls[call_id] = call
        if key is not None and mode == "rw":
            self._inflight[key] = (call_id, asyncio.get_running_loop().create_future())
        return ("call", call_id)

    def call_end(self, call_id: int, outcome: str, payload: CallEnd = None, mode: str = "off",
                 cache_path: str | None = None) -> str | None:
        """Record how a granted call ended and wake whoever waits for the same prompt.

        Args:
            call_id: From `call_begin`.
            outcome: ``"ok"`` (payload = (message, usage, latency_ms)), ``"refusal"`` (payload =
                the error text), ``"rate_limited"`` (payload = the provider's retry-after in
                seconds, or None: every worker's next call to this model waits that long, or
                `RATE_LIMIT_PAUSE`) or ``"error"``.
            payload: See `outcome`.
            mode: The cache mode of the call.
            cache_path: The recording file.

        Returns:
            When the call was a shared one that ended "ok": the id its sharers' ``shared_from``
            names (the worker adds it to the caller's ``usage.extra["call_id"]``); else None.
        """
        call = self._calls.pop(call_id)
        ok = payload if outcome == "ok" and isinstance(payload, tuple) else None  # always a tuple
        settled = self._end_share(call.share, ok[:2] if ok is not None else None)
        if settled is not None:
            call.share_id = str(settled[1].extra["call_id"])  # a str: `with_call_id` sets it
        model, prompt_sha256, key = call.model or "", call.prompt_hash or "", call.key
        cache = (self._recording(cache_path) if mode == "rw" and cache_path is not None
                 and key is not None else None)
        if ok is not None:
            message, usage, latency_ms = ok
            call.state, call.usage = PAID, usage
            self.counts["paid"] += 1
            if cache is not None and key is not None:
                cache.put(key, model=model, prompt_sha256=prompt_sha256, message=message,
                          usage=usage, latency_ms=latency_ms)
        elif outcome == "refusal":
            call.state = REFUSED
            self.counts["refused"] += 1
            if cache is not None and key is not None:
                cache.put_refusal(key, model=model, prompt_sha256=prompt_sha256, error=str(payload))
        else:
            call.state = FAILED
            self.counts["failed"] += 1
            if outcome == "rate_limited":
                pause = payload if isinstance(payload, (int, float)) else RATE_LIMIT_PAUSE
                until = self.clock() + pause
                self._paused_until[model] = max(self._paused_until.get(model, 0.0), until)
        owner = self._inflight.get(key) if key is not None else None
        if key is not None and owner is not None and owner[0] == call_id:
            del self._inflight[key]
            if not owner[1].done():
                owner[1].set_result(outcome in ("ok", "refusal"))
        return call.share_id

    # -- the ledger -----------------------------------------------------------------------

    def lost_calls(self, cell_id: str, final_try: int | None) -> list[LostCall]:
        """What earlier tries of a cell spent that the try kept in the store does not show.

        A call of a killed try is *lost* when it was paid and the kept try did not reuse its
        recording (an uncached call, or a cached one the kept try never hit), or when it was
        granted and never reported (the worker died mid-call: the provider may have billed it,
        so its usage is unknown). A paid call whose recording the kept try hit is already in
        the kept try's rows; counting it again would bill it twice.

        Args:
            cell_id: The cell.
            final_try: The try whose outcome is stored, or None when every try died.

        Returns:
            One dict per lost call: try_no, seq, model, prompt_hash, usage (a `Usage` or None),
            call_id (the id cells that shared the call name in ``shared_from``, or None),
            node_id (the node the try ran on, when it said).
        """
        calls = self._ledger.get(cell_id, [])
        kept = final_try if final_try is not None else self._tries.get(cell_id, -1) + 1
        reused = {c.key for c in calls if c.try_no == kept and c.state == HIT}
        lost: list[LostCall] = []
        for c in calls:
            if c.try_no >= kept:
                continue
            if c.state == STARTED or (c.state == PAID and (c.key is None or c.key not in reused)):
                lost.append({"try_no": c.try_no, "seq": c.seq, "model": c.model,
                             "prompt_hash": c.prompt_hash,
                             "usage": c.usage if c.state == PAID else None,
                             "call_id": c.share_id,
                             "node_id": self._nodes.get((cell_id, c.try_no))})
        return lost

    def stats(self) -> dict[str, int]:
        """Counts of paid, hit, deduplicated, refused, failed and shared calls so far."""
        return dict(self.counts)

    def shared_state(self) -> tuple[dict[str, SharedAnswer], int, int]:
        """What this run's shared calls add to the driver's `SharedCalls` (see `absorb`): the
        calls answered here (not the seeded ones), calls made and calls shared."""
        answers = {k: a for k, a in self._shared.answers().items() if k not in self._seeded}
        return answers, self._shared.calls_made, self._shared.calls_shared
