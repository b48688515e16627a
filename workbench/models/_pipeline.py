"""One model pipeline: every step a call passes, in one order, composed in one place.

A model call meets everything around it here, as inspect_ai's ``Model.generate`` is one place:

1. **record** (the run's cell): what was sent and what came back, per attempt;
2. **window** (`WindowStep`): a simulated context window refuses a prompt that does not fit,
   before anything could answer it: a shared or recorded answer made at a larger window must
   never reach a prompt too long for this one (so the window comes before share and cache);
3. **share** (`ShareStep`): one call per distinct prompt in a run; an equal call in flight or
   done answers it (a cell whose calls no other cell's can equal has none:
   `SharedCalls.step_for`);
4. **cache** (`CacheStep`): the response cache answers from a recording, or records;
5. **slot** (the local executor's `SlotStep`): holds the run's concurrency slots while the call
   is out; a shared or recorded answer never waits for one;
6. **budget** (the run's `BudgetStep`): reserves the call's estimated cost, settles its real
   usage. Only a call holding its slot, about to be sent, reserves: the calls ahead of it
   have settled or are out, so a budget stop overshoots by at most the calls in flight, as
   the budget promises;
7. **call**: the model itself.

`compose` puts them in that order, whoever supplies them; each step is a small class with one
method, ``run(call, proceed)``, and knows nothing of the others. A step that answers without
calling (share, cache) says so on the `Call`; the pipeline then writes, in one place
(`workbench.models._billing.attribute`), what that means for the usage the caller gets:
answered from a recording, from another call, or by a call this run paid for.

A pipeline is itself a `CompactionModel`; composing one with a pipeline merges their steps
(in the order above) around the innermost model, so the window is checked once however the
parts were supplied (``load_model`` gives window and cache; the runner adds share, budget and
record; the executor adds slot).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

from workbench.compaction._model import CompactionModel, Usage
from workbench.messages import Message
from workbench.models._billing import attribute
from workbench.models._cache_keys import prompt_hash
from workbench.models._identity import format_window, model_identity, model_label, model_name

__all__ = ["ORDER", "Call", "ModelPipeline", "Proceed", "Step", "compose", "inner_model"]

ORDER = ("record", "window", "share", "cache", "slot", "budget")
"""The steps of a call, outermost first; the model's own call comes after the last."""

CACHE_PREFIX = {"rw": "cached:", "replay": "replay:"}
"""How a label names the cache mode (as model strings do)."""

Reply = tuple[Message, Usage]
Proceed = Callable[["Call"], Awaitable[Reply]]


@dataclass
class Call:
    """One call on its way through the pipeline, and what the steps learned about it.

    Attributes:
        system: The system prompt.
        messages: The request messages.
        model: The model's id (for messages and recordings).
        identity: What identifies the model's answers, secrets stripped (keys calls).
        tokens: The prompt's size as the window judged it (None without a window step).
        cache_hit: True when a recording answered, False when the cache step recorded a new
            answer, None when no cache step saw the call.
        shared_from: The id of the call whose answer this one shares, or None.
        call_id: The id a shared call's sharers name (set for the call that was sent).
    """

    system: str
    messages: list[Message]
    model: str = ""
    identity: object = None
    tokens: int | None = None
    cache_hit: bool | None = None
    shared_from: str | None = None
    call_id: str | None = None
    _prompt_hash: str | None = field(default=None, repr=False)

    def prompt_hash(self) -> str:
        """The prompt's `prompt_hash`, worked out by the first step that asks (record, share,
        cache each need it) and kept on the call for the others: a call's prompt is fixed."""
        found = self._prompt_hash
        if found is None:
            found = self._prompt_hash = prompt_hash(self.system, self.messages)
        return found


class Step(Protocol):
    """One step of the pipeline: one method, and the kind that places it in `ORDER`."""

    kind: ClassVar[str]

    async def run(self, call: Call, proceed: Proceed) -> Reply:
        """Do this step's part; ``await proceed(call)`` hands the call to the next step."""
        ...


@runtime_checkable
class _Windowed(Protocol):
    """A window step, as the pipeline reads it (its window, for the label and the limit)."""

    window: int


@runtime_checkable
class _Moded(Protocol):
    """A cache step, as the pipeline reads it (its mode, for the label)."""

    mode: str


class ModelPipeline:
    """A model behind an ordered list of steps: itself a `CompactionModel`.

    Args:
        inner: The model (a pipeline's steps join these, around its own model).
        steps: The steps, in any order: they run in `ORDER`.

    Attributes:
        inner: The model the last step calls.
        steps: The steps, in the order they run.
    """

    def __init__(self, inner: CompactionModel, steps: Sequence[Step] = ()) -> None:
        if isinstance(inner, ModelPipeline):
            steps = [*inner.steps, *steps]
            inner = inner.inner
        self.inner: CompactionModel = inner
        self.steps: list[Step] = sorted(steps, key=lambda s: ORDER.index(s.kind))
        self._name = model_name(inner)
        self._identity = model_identity(inner) if self.steps else None
        # The chain ends in the model, not in this pipeline: a pipeline holding a chain that
        # holds the pipeline would be a reference cycle, garbage only the collector frees.
        proceed: Proceed = _call(inner)
        for step in reversed(self.steps):
            proceed = _bind(step, proceed)
        self._first = proceed

    async def complete(self, system: str, messages: list[Message]) -> Reply:
        """Send the call through every step, then attribute its usage (`attribute`)."""
        call = Call(system, messages, self._name, self._identity)
        message, usage = await self._first(call)
        return message, attribute(call, usage)

    def step(self, kind: str) -> Step | None:
        """The first step of `kind`, or None."""
        return next((s for s in self.steps if s.kind == kind), None)

    @property
    def model(self) -> str:
        """The inner model's id."""
        return self._name

    def cache_identity(self) -> object:
        """The inner model's identity: no step changes what the model answers."""
        return self._identity if self._identity is not None else model_identity(self.inner)

    def context_window(self) -> int | None:
        """The smallest of the simulated windows and the model's own, when known."""
        found = [s.window for s in self.steps if s.kind == "window" and isinstance(s, _Windowed)]
        own = _own_window(self.inner)
        found += [own] if own is not None else []
        return min(found) if found else None

    def describe(self) -> str:
        """Label for tables: the cache mode, the model's label and its windows
        (``cached:openai/gpt-4o-mini@8k``)."""
        label = model_label(self.inner)
        label += "".join(f"@{format_window(s.window)}" for s in self.steps
                         if s.kind == "window" and isinstance(s, _Windowed))
        cache = self.step("cache")
        mode = cache.mode if isinstance(cache, _Moded) else None
        return (CACHE_PREFIX.get(mode, "") if mode is not None else "") + label

    def __getattr__(self, name: str) -> object:
        # What the pipeline does not answer is the model's (a test fake's counters...).
        if name.startswith("__") or name in ("inner", "steps", "_name", "_identity", "_first"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        kinds = ", ".join(s.kind for s in self.steps)
        return f"{type(self).__name__}({self.inner!r}, [{kinds}])"


def _call(model: CompactionModel) -> Proceed:
    async def call_model(call: Call) -> Reply:
        reply: Reply = await model.complete(call.system, call.messages)
        return reply
    return call_model


def _bind(step: Step, proceed: Proceed) -> Proceed:
    async def run(call: Call) -> Reply:
        return await step.run(call, proceed)
    return run


def _own_window(model: object) -> int | None:
    fn = getattr(model, "context_window", None)
    if not callable(fn):
        return None
    try:
        value = fn()
    except Exception:  # an unknown window is not an error here
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def compose(model: CompactionModel, *, record: Step | None = None, window: Step | None = None,
            share: Step | None = None, cache: Step | None = None, budget: Step | None = None,
            slot: Step | None = None) -> ModelPipeline:
    """The one function that assembles a call's path: `model` behind the steps given, in the
    order record, window, share, cache, slot, budget (see the module docstring); `model` may
    be a pipeline already, whose steps join these.

    Returns:
        A `ModelPipeline`.
    """
    given = [record, window, share, cache, slot, budget]
    return ModelPipeline(model, [s for s in given if s is not None])


def inner_model(model: CompactionModel) -> CompactionModel:
    """The model a pipeline calls (`model` itself when it is not a pipeline)."""
    return model.inner if isinstance(model, ModelPipeline) else model
