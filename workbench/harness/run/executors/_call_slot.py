"""`CallSlot`: a model whose every call holds the run's concurrency slots while it is out.

The local executor bounds *calls in flight*, not cells: a cell formats and renders its prompt
before it takes a slot, and gives the slot back the moment the reply is in, before it parses,
renders and scores. So the next cell's call goes out as soon as one returns, and no cell's CPU
work ever stands between a freed slot and the next call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from workbench.messages import Message
from workbench.models._wrapper import ModelWrapper


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
        """Take the slots, call the inner model, give them back as soon as it answers."""
        held: list[asyncio.Semaphore] = []
        try:
            for slot in self.slots:
                await slot.acquire()
                held.append(slot)
            return await self.inner.complete(system, messages)
        finally:
            while held:
                held.pop().release()

    def __repr__(self) -> str:
        return f"CallSlot({self.inner!r})"
