"""`SharedCalls`: one model call per distinct prompt for the length of a run.

Cells that send the same prompt to the same model (template variants that differ only in the
summary template, the same session at several simulated windows) need one answer, not one call
each. `SharedCalls` is a run-scoped table of calls keyed by the response-cache key (model identity
+ full prompt, see `cache_key`) plus an optional scope (the cell's repeat index, so repeats stay
independent samples):

- **single flight**: while a call is in flight, an identical one awaits it instead of sending;
- **memo**: a prompt already answered earlier in the run is answered from that reply.

The first caller's reply keeps its billed usage and gains ``usage.extra["call_id"]``; every
sharer gets a copy of the reply with zero usage, ``extra["shared"] = True`` and
``extra["shared_from"]`` naming the billed call, so billing is attributed once. Failed calls are
never shared: waiters of a failed call send their own. A simulated window (`WindowCap`) is checked
before the lookup, so a prompt too long for one window is refused there while the same prompt
is shared at a window it fits.

`SharedModel` is a plain `CompactionModel`: it composes with any other wrapper (budget
reservation, caches) in either order.
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
from workbench.models._identity import model_identity, model_label, model_name

__all__ = ["SharedCalls", "SharedModel", "find_window_check"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


@dataclass
class _Answer:
    message: Message
    usage: Usage
    call_id: str


def find_window_check(model: Any) -> Any:
    """The ``check_window`` of `model` or of the first wrapper under it that has one, or None."""
    seen = set()
    while model is not None and id(model) not in seen:
        seen.add(id(model))
        check = getattr(model, "check_window", None)
        if callable(check):
            return check
        model = getattr(model, "inner", None)
    return None


class SharedCalls:
    """The run's table of model calls (see the module docstring).

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
        self._answers: dict[str, _Answer] = {}
        self._in_flight: dict[str, asyncio.Future[_Answer]] = {}

    def wrap(self, model: CompactionModel, scope: Any = None) -> SharedModel:
        """`model` behind this table; calls with equal prompts and equal `scope` are shared."""
        return SharedModel(model, self, scope)

    def clear(self) -> None:
        """Forget every answer (calls in flight finish normally)."""
        self._answers.clear()

    @staticmethod
    def _new_call_id() -> str:
        # ULID shape (48-bit ms time + 80 random bits, Crockford base32): the billed attempt's
        # row uses it as its attempt_id, which the results store sorts by time.
        value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
        return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))

    async def call(self, model: CompactionModel, identity: Any, scope: Any, system: str,
                   messages: list[Message]) -> tuple[Message, Usage]:
        """Answer one call, sharing it when an equal one is in flight or done."""
        if not self.enabled:
            self.calls_made += 1
            return await model.complete(system, messages)
        key = cache_key({"model": identity, "scope": scope}, system, messages)
        while True:
            done = self._answers.get(key)
            if done is not None:
                return self._shared_copy(done)
            pending = self._in_flight.get(key)
            if pending is None:
                break
            try:
                answer = await asyncio.shield(pending)
            except Exception:  # the leader failed: try again (maybe as the new leader)
                continue
            return self._shared_copy(answer)
        future: asyncio.Future[_Answer] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            self.calls_made += 1
            message, usage = await model.complete(system, messages)
        except BaseException as exc:
            del self._in_flight[key]
            future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        call_id = self._new_call_id()
        # A new extra dict: the inner model's usage objects may share theirs between calls.
        usage = usage.copy(extra={**(usage.extra or {}), "call_id": call_id})
        answer = _Answer(message.model_copy(deep=True), usage, call_id)
        self._answers[key] = answer
        del self._in_flight[key]
        future.set_result(answer)
        return message, usage

    def _shared_copy(self, answer: _Answer) -> tuple[Message, Usage]:
        self.calls_shared += 1
        usage = Usage(model=answer.usage.model, input_tokens=0, output_tokens=0, total_tokens=0,
                      cache_read_input_tokens=0, cache_write_input_tokens=0, cost=0.0,
                      extra={"shared": True, "shared_from": answer.call_id})
        return answer.message.model_copy(deep=True), usage


class SharedModel:
    """A `CompactionModel` whose calls go through a `SharedCalls` table.

    Args:
        inner: The wrapped model.
        shared: The run's table.
        scope: Calls share only within an equal scope (the runner passes the repeat index).
    """

    def __init__(self, inner: CompactionModel, shared: SharedCalls, scope: Any = None) -> None:
        self.inner = inner
        self.shared = shared
        self.scope = scope
        self._identity = model_identity(inner)
        self._check = find_window_check(inner)

    @property
    def model(self) -> str:
        """The inner model's id."""
        return model_name(self.inner)

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        """Check the simulated window, then answer through the shared table."""
        if self._check is not None:
            self._check(system, messages)
        return await self.shared.call(self.inner, self._identity, self.scope, system, messages)

    def check_window(self, system: str, messages: list[Message]) -> None:
        """The inner simulated window's check (none: every prompt fits)."""
        if self._check is not None:
            self._check(system, messages)

    def cache_identity(self) -> Any:
        """The inner model's identity (sharing does not change answers)."""
        return self._identity

    def context_window(self) -> int | None:
        """The inner model's context window, when it reports one."""
        fn = getattr(self.inner, "context_window", None)
        return fn() if callable(fn) else None

    def describe(self) -> str:
        """The inner model's label."""
        return model_label(self.inner)

    def __repr__(self) -> str:
        return f"SharedModel({self.inner!r}, scope={self.scope!r})"
