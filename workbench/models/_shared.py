"""`SharedCalls`: one model call per distinct prompt for the length of a run.

Cells that send the same prompt to the same model (template variants that differ only in the
summary template, the same session at several simulated windows) need one answer, not one call
each. `SharedCalls` is a run-scoped table of calls keyed by the model identity, the full prompt
and an optional scope (the cell's repeat index, so repeats stay independent samples):

- **single flight**: while a call is in flight, an identical one awaits it instead of sending;
- **memo**: a prompt already answered earlier in the run is answered from that reply.

`ShareStep` is the table's step in the model pipeline (`workbench.models._pipeline`): it comes
after the simulated window, so a prompt too long for one window is refused there while the
same prompt is shared at a window it fits. The call that was sent keeps its billed usage and
gains ``usage.extra["call_id"]``; every sharer gets a copy of the reply and of that usage
(what the answer cost), flagged ``extra["shared"] = True``, with ``extra["shared_from"]``
naming the sent call (`workbench.models._billing` writes these flags): a cell's billed figures
say what its summary cost whichever cell sent the call, and the flag says who paid. Failed
calls are never shared: waiters of a failed call send their own.

The Ray executor's coordinator keeps one `SharedCalls` for the whole cluster and drives it step
by step (`claim`, then `settle` or `abandon`) while its workers send the calls; the key
(`share_key`) and the sharer's copy (`shared_reply`) are the same functions, so both executors
share, and bill, the same way.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from workbench.compaction._model import CompactionModel, Usage
from workbench.messages import Message
from workbench.models._billing import billed, new_call_id, shared
from workbench.models._cache_keys import canonical_json, prompt_hash
from workbench.models._pipeline import Call, ModelPipeline, Proceed, Reply

__all__ = ["ShareStep", "SharedAnswer", "SharedCalls", "SharedModel", "billed_answer",
           "new_call_id", "share_key", "shared_reply"]


@dataclass
class SharedAnswer:
    """A finished call in the table: the reply, its billed usage and the id sharers point at."""

    message: Message
    usage: Usage
    call_id: str


def share_key(identity: object, scope: object, system: str, messages: list[Message],
              digest: str | None = None) -> str:
    """The table's key of a call: sha256 of the model identity and scope and the prompt's
    own hash (`prompt_hash`, computed once per rendered prompt; `digest` when the caller has
    it already: a pipeline's `Call.prompt_hash`)."""
    head = canonical_json({"model": identity, "scope": scope})
    digest = digest if digest is not None else prompt_hash(system, messages)
    return hashlib.sha256(f"{head}\n{digest}".encode()).hexdigest()


def billed_answer(message: Message, usage: Usage,
                  call_id: str | None = None) -> tuple[SharedAnswer, Usage]:
    """The table entry of a call that was just answered, and the usage its caller keeps: the
    reply's own, plus ``extra["call_id"]`` (a new id unless `call_id` is given)."""
    call_id = call_id or new_call_id()
    usage = billed(usage, call_id)
    return SharedAnswer(message.model_copy(deep=True), usage, call_id), usage


def shared_reply(answer: SharedAnswer) -> tuple[Message, Usage]:
    """What a sharer of `answer` gets: a copy of the reply and of its usage, flagged as shared
    (`workbench.models._billing.shared`)."""
    return answer.message.model_copy(deep=True), shared(answer.usage, answer.call_id)


class SharedCalls:
    """The run's table of model calls (see the module docstring).

    `call` does everything for a model in this process. A table whose calls are sent elsewhere
    (the Ray coordinator's: workers send them) uses its steps: `claim` a key, and after the
    call `settle` or `abandon` it.

    Args:
        enabled: False makes every wrapped model pass calls straight through (for comparisons).
        scopes: The scope of each cell a run's own table serves, when the run knows them all
            (see `step_for`).

    Attributes:
        calls_made: Calls actually sent to the wrapped models.
        calls_shared: Calls answered from another call (in flight or finished).
    """

    def __init__(self, enabled: bool = True, scopes: Iterable[object] | None = None) -> None:
        self.enabled = enabled
        self.calls_made = 0
        self.calls_shared = 0
        counts = Counter(scopes if scopes is not None else ())
        self._alone = frozenset(scope for scope, n in counts.items() if n == 1)
        self._answers: dict[str, SharedAnswer] = {}
        self._in_flight: dict[str, asyncio.Future[SharedAnswer]] = {}

    def wrap(self, model: CompactionModel, scope: object = None) -> SharedModel:
        """`model` behind this table; calls with equal prompts and equal `scope` are shared."""
        return SharedModel(model, self, scope)

    def step(self, scope: object = None) -> ShareStep:
        """This table's pipeline step; calls with equal prompts and equal `scope` are shared."""
        return ShareStep(self, scope)

    def step_for(self, scope: object) -> ShareStep | None:
        """The step for one cell's summarizer calls, or None where the table knows that no
        other cell has the cell's `scope` (the `scopes` it was made with): no call of another
        cell can then equal one of its calls, and its own attempts send different prompts (a
        failed call is never shared), so the step could only cost time (about 20 us a call:
        the key, the single-flight entry and the copy of the reply kept for sharers). The
        call's attempt row then gets an id of its own instead of the call's."""
        return None if scope in self._alone else ShareStep(self, scope)

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


class ShareStep:
    """The pipeline's share step: an equal call in flight or done answers this one.

    Args:
        table: The run's `SharedCalls`.
        scope: Calls share only within an equal scope (the runner passes the repeat index).
    """

    kind: ClassVar[str] = "share"

    def __init__(self, table: SharedCalls, scope: object = None) -> None:
        self.table = table
        self.scope = scope

    async def run(self, call: Call, proceed: Proceed) -> Reply:
        """Answer from the table, or send the call and settle it for those who wait."""
        table = self.table
        if not table.enabled:
            table.calls_made += 1
            return await proceed(call)
        key = share_key(call.identity, self.scope, call.system, call.messages, call.prompt_hash())
        answer = await table.claim(key)
        if answer is not None:
            table.calls_shared += 1
            call.shared_from = answer.call_id
            return answer.message.model_copy(deep=True), answer.usage
        try:
            message, usage = await proceed(call)
        except BaseException as exc:
            table.abandon(key, exc)
            raise
        message, usage = table.settle(key, message, usage)
        call.call_id = str(usage.extra["call_id"])  # a str: `with_call_id` sets it
        return message, usage


class SharedModel(ModelPipeline):
    """A `CompactionModel` whose calls go through a `SharedCalls` table (a pipeline of one
    step, merged into any pipeline it is composed with).

    Args:
        inner: The wrapped model.
        shared: The run's table.
        scope: Calls share only within an equal scope (the runner passes the repeat index).
    """

    def __init__(self, inner: CompactionModel, shared: SharedCalls, scope: object = None) -> None:
        super().__init__(inner, [ShareStep(shared, scope)])
        self.shared = shared
        self.scope = scope
