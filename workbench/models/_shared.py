"""`SharedCalls`: one model call per distinct prompt for the length of a run.

Cells that send the same prompt to the same model (template variants that differ only in the
summary template, the same session at several simulated windows) need one answer, not one call
each. `SharedCalls` is a run-scoped table of calls keyed by the response-cache key (model identity
+ full prompt, see `cache_key`) plus an optional scope (the cell's repeat index, so repeats stay
independent samples):

- **single flight**: while a call is in flight, an identical one awaits it instead of sending;
- **memo**: a prompt already answered earlier in the run is answered from that reply.

The first caller's reply keeps its billed usage and gains ``usage.extra["call_id"]``; every
sharer gets a copy of the reply and of that usage (what the answer cost), flagged
``extra["shared"] = True``, with ``extra["shared_from"]`` naming the billed call: a cell's
billed figures say what its summary cost whichever cell sent the call, and the flag says
who paid (the budget and the cells' ``spent_*`` columns count a shared answer as zero).
Failed calls are never shared: waiters of a failed call send their own. A simulated window
(`WindowCap`) is checked before the lookup, so a prompt too long for one window is refused
there while the same prompt is shared at a window it fits.

`SharedModel` is a plain `CompactionModel`: it composes with any other wrapper (budget
reservation, caches) in either order. The Ray executor's coordinator keeps one `SharedCalls`
for the whole cluster and drives it step by step (`claim`, then `settle` or `abandon`) while
its workers send the calls; the key (`share_key`) and the sharer's copy (`shared_reply`) are
the same functions, so both executors share, and bill, the same way.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

from workbench.compaction._model import CompactionModel, Usage
from workbench.messages import Message
from workbench.models._cache import cache_key
from workbench.models._wrapper import ModelWrapper, find_window_check

__all__ = ["SharedAnswer", "SharedCalls", "SharedModel", "billed_answer", "find_window_check",
           "new_call_id", "share_key", "shared_reply"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


@dataclass
class SharedAnswer:
    """A finished call in the table: the reply, its billed usage and the id sharers point at."""

    message: Message
    usage: Usage
    call_id: str


def share_key(identity: Any, scope: Any, system: str, messages: list[Message]) -> str:
    """The table's key of a call: the response-cache key of (model identity, scope) + prompt."""
    return cache_key({"model": identity, "scope": scope}, system, messages)


def new_call_id() -> str:
    """A fresh id for a billed call, ULID-shaped (48-bit ms time + 80 random bits, Crockford
    base32): the billed attempt's row uses it as its attempt_id, which the store sorts by time."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def billed_answer(message: Message, usage: Usage,
                  call_id: str | None = None) -> tuple[SharedAnswer, Usage]:
    """The table entry of a call that was just answered, and the usage its caller keeps: the
    reply's own, plus ``extra["call_id"]`` (a new id unless `call_id` is given)."""
    call_id = call_id or new_call_id()
    # A new extra dict: the inner model's usage objects may share theirs between calls.
    usage = usage.copy(extra={**(usage.extra or {}), "call_id": call_id})
    return SharedAnswer(message.model_copy(deep=True), usage, call_id), usage


SHARER_DROPS = ("call_id", "cache_hit")
"""Usage extras of the billed call a sharer's copy does not inherit: its id, and whether it
was answered from a recording (the sharer was answered from the table)."""


def shared_reply(answer: SharedAnswer) -> tuple[Message, Usage]:
    """What a sharer of `answer` gets: a copy of the reply and of its usage, flagged as shared.

    The usage is what the answer cost (the billed call's tokens and cost), so a cell's billed
    figures do not depend on which cell happened to send the call; ``extra["shared"]`` says
    this cell did not pay for it (budgets and ``spent_*`` count it as zero) and
    ``extra["shared_from"]`` names the call that did.
    """
    extra = {k: v for k, v in (answer.usage.extra or {}).items() if k not in SHARER_DROPS}
    usage = answer.usage.copy(extra={**extra, "shared": True, "shared_from": answer.call_id})
    return answer.message.model_copy(deep=True), usage


class SharedCalls:
    """The run's table of model calls (see the module docstring).

    `call` does everything for a model in this process. A table whose calls are sent elsewhere
    (the Ray coordinator's: workers send them) uses its steps: `claim` a key, and after the
    call `settle` or `abandon` it.

    Args:
        enabled: False makes every wrapped model pass calls straight through (for comparisons).

    Attributes:
        calls_made: Calls actually sent to the wrapped models.
        calls_shared: Calls answered from another call (in flight or finished).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.calls_made = 0
        self.calls_shared = 0
        self._answers: dict[str, SharedAnswer] = {}
        self._in_flight: dict[str, asyncio.Future[SharedAnswer]] = {}

    def wrap(self, model: CompactionModel, scope: Any = None) -> SharedModel:
        """`model` behind this table; calls with equal prompts and equal `scope` are shared."""
        return SharedModel(model, self, scope)

    def clear(self) -> None:
        """Forget every answer (calls in flight finish normally)."""
        self._answers.clear()

    def answers(self) -> dict[str, SharedAnswer]:
        """A copy of the finished calls, by key (to seed another process's table)."""
        return dict(self._answers)

    def absorb(self, answers: dict[str, SharedAnswer], calls_made: int = 0,
               calls_shared: int = 0) -> None:
        """Take in another table's finished calls and add its counts to this one's.

        Args:
            answers: Key -> answer, from `answers` of the other table.
            calls_made: Calls the other table sent.
            calls_shared: Calls the other table answered from another.
        """
        for key, answer in answers.items():
            self._answers.setdefault(key, answer)
        self.calls_made += calls_made
        self.calls_shared += calls_shared

    async def call(self, model: CompactionModel, identity: Any, scope: Any, system: str,
                   messages: list[Message]) -> tuple[Message, Usage]:
        """Answer one call, sharing it when an equal one is in flight or done."""
        if not self.enabled:
            self.calls_made += 1
            return await model.complete(system, messages)
        key = share_key(identity, scope, system, messages)
        answer = await self.claim(key)
        if answer is not None:
            return self.share(answer)
        try:
            message, usage = await model.complete(system, messages)
        except BaseException as exc:
            self.abandon(key, exc)
            raise
        return self.settle(key, message, usage)

    async def claim(self, key: str) -> SharedAnswer | None:
        """The answer to share for `key` (waiting for an equal call in flight), or None: the
        caller sends the call itself, is counted in `calls_made`, and must end it with
        `settle` or `abandon`. When the call waited for fails, the waiter claims again."""
        while True:
            done = self._answers.get(key)
            if done is not None:
                return done
            pending = self._in_flight.get(key)
            if pending is None:
                break
            try:
                return await asyncio.shield(pending)
            except Exception:  # the leader failed: try again (maybe as the new leader)
                continue
        self._in_flight[key] = asyncio.get_running_loop().create_future()
        self.calls_made += 1
        return None

    def settle(self, key: str, message: Message, usage: Usage,
               call_id: str | None = None) -> tuple[Message, Usage]:
        """Record the claimed call's reply for its waiters and later callers; return the
        caller's (message, usage), the usage carrying ``extra["call_id"]``."""
        answer, usage = billed_answer(message, usage, call_id)
        self._answers[key] = answer
        future = self._in_flight.pop(key, None)
        if future is not None and not future.done():
            future.set_result(answer)
        return message, usage

    def abandon(self, key: str, exc: BaseException | None = None) -> None:
        """The claimed call failed (or its caller is gone): its waiters send their own."""
        future = self._in_flight.pop(key, None)
        if future is None or future.done():
            return
        error = exc if isinstance(exc, Exception) else RuntimeError(str(exc or "abandoned"))
        future.set_exception(error)
        future.exception()  # retrieved: no "never retrieved" warning without waiters

    def share(self, answer: SharedAnswer) -> tuple[Message, Usage]:
        """Count one shared call and return the sharer's copy (`shared_reply`)."""
        self.calls_shared += 1
        return shared_reply(answer)


class SharedModel(ModelWrapper):
    """A `CompactionModel` whose calls go through a `SharedCalls` table.

    Args:
        inner: The wrapped model.
        shared: The run's table.
        scope: Calls share only within an equal scope (the runner passes the repeat index).
    """

    def __init__(self, inner: CompactionModel, shared: SharedCalls, scope: Any = None) -> None:
        self._wrap(inner)
        self.shared = shared
        self.scope = scope

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        """Check the simulated window, then answer through the shared table."""
        if self._check is not None:
            self._check(system, messages)
        return await self.shared.call(self.inner, self._identity, self.scope, system, messages)

    def __repr__(self) -> str:
        return f"SharedModel({self.inner!r}, scope={self.scope!r})"
