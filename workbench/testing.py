"""Test doubles that implement the public protocols (importable by users' own tests).

`ScriptedModel` is a `CompactionModel` that answers from a queue of scripted replies and
records every call, so tests can assert exactly what the summarizer sent and how often.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypedDict, Unpack

from workbench.compaction._model import Usage
from workbench.errors import ContextLengthExceeded
from workbench.messages import Message
from workbench.tokens import TokenEstimator, default_estimator

__all__ = ["ScriptedModel", "model_from_replies"]

Reply = str | Message | BaseException
Responder = Callable[[str, list[Message]], Reply]


class ScriptedModel:
    """A scripted `CompactionModel` for tests.

    Each call takes the next reply from the queue; when the queue runs out the last reply is
    repeated. A reply may be a string (becomes an assistant text message), a `Message`
    (returned as a copy) or an exception instance (raised).

    Args:
        replies: The scripted replies, in call order. Empty means every call answers "summary".
        raise_on: Exceptions to raise on given calls, keyed by 1-based call number (the first
            call is 1, matching `Attempt.number`). Checked before the reply queue, and such a
            call does not consume a reply.
        always_raise: An exception raised on every call (after the call is recorded).
        latency: Seconds to sleep before answering (simulates a slow provider).
        window: A simulated context window in tokens: a call whose
            ``count_chat_tokens(system, messages)`` exceeds it raises `ContextLengthExceeded`.
        usage: The usage reported with every reply. None reports a `Usage` with no token
            counts, which makes the summarizer estimate them.
        estimator: Token estimator for `window` (default: the process-wide tiktoken one).
        name: The model name put into usage and errors.
        respond: ``(system, messages) -> reply`` computing each reply from the prompt instead
            of taking it from the queue (an answerer that reads the question, say).

    Attributes:
        calls: Every call as ``(system, messages)``, including calls that raised.
    """

    def __init__(
        self,
        replies: Sequence[Reply] = (),
        *,
        raise_on: dict[int, BaseException] | None = None,
        always_raise: BaseException | None = None,
        latency: float = 0.0,
        window: int | None = None,
        usage: Usage | None = None,
        estimator: TokenEstimator | None = None,
        name: str = "scripted",
        respond: Responder | None = None,
    ) -> None:
        self.replies: list[Reply] = list(replies)
        self.raise_on = dict(raise_on or {})
        self.always_raise = always_raise
        self.latency = latency
        self.window = window
        self.usage = usage
        self.estimator = estimator
        self.name = name
        self.respond = respond
        self.calls: list[tuple[str, list[Message]]] = []
        self._next = 0

    @property
    def call_count(self) -> int:
        """How many calls were made (including calls that raised)."""
        return len(self.calls)

    async def complete(self, system: str, messages: list[Message]) -> tuple[Message, Usage]:
        """Record the call, then raise or answer as scripted."""
        self.calls.append((system, list(messages)))
        number = len(self.calls)
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.always_raise is not None:
            raise self.always_raise
        if number in self.raise_on:
            raise self.raise_on[number]
        if self.window is not None:
            tokens = self._estimator().count_chat_tokens(system, messages)
            if tokens > self.window:
                raise ContextLengthExceeded(
                    f"prompt has {tokens} tokens, over the simulated window of {self.window}",
                    self.name)
        reply = self.respond(system, list(messages)) if self.respond is not None else self._take()
        if isinstance(reply, BaseException):
            raise reply
        message = (Message.assistant(reply) if isinstance(reply, str)
                   else reply.model_copy(deep=True))
        usage = self.usage.copy() if self.usage is not None else Usage(model=self.name)
        return message, usage

    def _take(self) -> Reply:
        if not self.replies:
            return "summary"
        index = min(self._next, len(self.replies) - 1)
        self._next += 1
        return self.replies[index]

    def _estimator(self) -> TokenEstimator:
        if self.estimator is None:
            self.estimator = default_estimator()
        return self.estimator


class ScriptedOptions(TypedDict, total=False):
    """The `ScriptedModel` keyword arguments `model_from_replies` passes through."""

    raise_on: dict[int, BaseException] | None
    always_raise: BaseException | None
    latency: float
    window: int | None
    usage: Usage | None
    estimator: TokenEstimator | None
    name: str
    respond: Responder | None


def model_from_replies(*replies: Reply, **options: Unpack[ScriptedOptions]) -> ScriptedModel:
    """A `ScriptedModel` answering `replies` in order (``model_from_replies("a", "b")``).

    Slow or failing providers need no separate fakes: pass ``latency=``, ``raise_on=`` or
    ``always_raise=`` through `options` (the `ScriptedModel` keyword arguments).
    """
    return ScriptedModel(list(replies), **options)
