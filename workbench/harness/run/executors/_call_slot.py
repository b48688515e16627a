"""`CallSlot`: a model whose every call holds the run's concurrency slots while it is out.

The local executor bounds *calls in flight*, not cells: a cell formats and renders its prompt
before it takes a slot, and gives the slot back the moment the reply is in, before it parses,
renders and scores. So the next cell's call goes out as soon as one returns, and no cell's CPU
work ever stands between a freed slot and the next call.

Calls first: a cell that gave its slots back lets the event loop go round twice before it goes
on. The first round runs every reply that came in with it (each gives its slots back); the
second runs the cells those slots woke, whose calls go out. Only then does any cell parse,
render and score, so when a wave of replies lands together the next wave leaves together,
instead of the last call waiting behind the others' post-reply work (on a 200 ms model at
concurrency 8 that wait was 1-6 ms per wave, and it added up across waves).
"""

from __future__ import annotations

import asyncio
from typing import Any

from workbench.messages import Message
from workbench.models._wrapper import ModelWrapper

CALLS_FIRST_ROUNDS = 2
"""Event-loop rounds a cell yields after giving its slots back (see the module docstring)."""


class CallSlot(ModelWrapper):
    """Wraps a model so each `complete` holds `slots` (acquired in order) for the call.

    Args:
        inner: The model (the runner's budgeted, shared wrapper chain).
        slots: Semaphores to hold during a call: the model's own limit first, then the
            global one, so a cell waiting for its model never holds a global slot.
    """

    def __init__(self, inner: Any, slots: list[asyncio.Semaphore]) -> None:
        self._wrap(inner)
        self.slots = slots

    async def complete(self, system: str, messages: list[Message]) -> Any:
        """Take the slots, call the inner model, give them back as soon as it answers, and
        let the calls they woke go out before returning (see the module docstring)."""
        held: list[asyncio.Semaphore] = []
        try:
            for slot in self.slots:
                await slot.acquire()
                held.append(slot)
            reply = await self.inner.complete(system, messages)
        finally:
            while held:
                held.pop().release()
        for _ in range(CALLS_FIRST_ROUNDS):
            await asyncio.sleep(0)
        return reply

    def __repr__(self) -> str:
        return f"CallSlot({self.inner!r})"
