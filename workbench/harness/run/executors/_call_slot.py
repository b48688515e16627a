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
from workbench.models._identity import model_identity, model_label, model_name
from workbench.models._shared import find_window_check


class CallSlot:
    """Wraps a model so each `complete` holds `slots` (acquired in order) for the call.

    Args:
        inner: The model (the runner's budgeted, shared wrapper chain).
        slots: Semaphores to hold during a call: the model's own limit first, then the
            global one, so a cell waiting for its model never holds a global slot.
    """

    def __init__(self, inner: Any, slots: list[asyncio.Semaphore]) -> None:
        self.inner = inner
        self.slots = slots
        self._check = find_window_check(inner)
        self._identity = model_identity(inner)

    @property
    def model(self) -> str:
        """The inner model's id."""
        return model_name(self.inner)

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

    def check_window(self, system: str, messages: list[Message]) -> None:
        """The inner simulated window's check (none: every prompt fits)."""
        if self._check is not None:
            self._check(system, messages)

    def cache_identity(self) -> Any:
        """The inner model's identity (slots do not change answers)."""
        return self._identity

    def context_window(self) -> int | None:
        """The inner model's context window, when it reports one."""
        fn = getattr(self.inner, "context_window", None)
        return fn() if callable(fn) else None

    def describe(self) -> str:
        """The inner model's label."""
        return model_label(self.inner)

    def __repr__(self) -> str:
        return f"CallSlot({self.inner!r})"
