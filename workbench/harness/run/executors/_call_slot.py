"""`SlotStep`: the local executor's step in the model pipeline, holding the run's concurrency
slots while a call is out.

The local executor bounds *calls in flight*, not cells: a cell formats and renders its prompt
before it takes a slot, and gives the slot back the moment the reply is in, before it parses,
renders and scores. The step comes after the share and cache steps, so an answer shared from
another call or read from a recording never waits for a slot: only a call about to be sent
does (and reserves its budget once it holds one).

Calls first: a cell that gave its slots back lets the event loop go round twice before it goes
on. The first round runs every reply that came in with it (each gives its slots back); the
second runs the cells those slots woke, whose calls go out. Only then does any cell parse,
render and score, so when a wave of replies lands together the next wave leaves together,
instead of the last call waiting behind the others' post-reply work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ClassVar

from workbench.models._pipeline import Call, Proceed, Reply

__all__ = ["CALLS_FIRST_ROUNDS", "SlotStep"]

CALLS_FIRST_ROUNDS = 2
"""Event-loop rounds a cell yields after giving its slots back (see the module docstring)."""


class SlotStep:
    """Hold `slots` (acquired in order) for the call.

    Args:
        slots: Semaphores to hold during a call: the model's own limit first, then the
            global one, so a cell waiting for its model never holds a global slot.
        holding: Called once the slots are held, just before the call goes out (the local
            executor admits its lookahead cells once the first wave holds every slot).
    """

    kind: ClassVar[str] = "slot"

    def __init__(self, slots: list[asyncio.Semaphore],
                 holding: Callable[[], None] | None = None) -> None:
        self.slots = slots
        self.holding = holding

    async def run(self, call: Call, proceed: Proceed) -> Reply:
        """Take the slots, send the call, give them back as soon as it is answered, and let
        the calls they woke go out before returning (see the module docstring)."""
        held: list[asyncio.Semaphore] = []
        try:
            for slot in self.slots:
                await slot.acquire()
                held.append(slot)
            if self.holding is not None:
                self.holding()
            reply = await proceed(call)
        finally:
            while held:
                held.pop().release()
        for _ in range(CALLS_FIRST_ROUNDS):
            await asyncio.sleep(0)
        return reply
