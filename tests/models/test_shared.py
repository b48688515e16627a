"""SharedCalls: identical prompts in flight are sent once, answered prompts are reused, billing once."""

from __future__ import annotations

import asyncio

import pytest

from workbench.compaction import Usage
from workbench.errors import ContextLengthExceeded, ModelCallError
from workbench.messages import Message
from workbench.models import SharedCalls, ShareStep, WindowCap
from workbench.testing import ScriptedModel

USAGE = Usage(model="scripted", input_tokens=100, output_tokens=20, cost=0.01)
REQUEST = [Message.user("summarize")]


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_identical_prompts_in_flight_are_sent_once_and_the_sharers_carry_the_calls_usage_flagged(
        ) -> None:
    inner = ScriptedModel(["the summary"], usage=USAGE, latency=0.05)
    shared = SharedCalls()

    async def main():  # type: ignore[no-untyped-def]
        return await asyncio.gather(*(shared.wrap(inner).complete("same prompt", REQUEST)
                                      for _ in range(5)))

    answers = run(main())

    assert inner.call_count == 1
    assert (shared.calls_made, shared.calls_shared) == (1, 4)
    assert [m.concat_text() for m, _ in answers] == ["the summary"] * 5
    billed = [u for _, u in answers if not u.extra.get("shared")]
    sharers = [u for _, u in answers if u.extra.get("shared")]
    assert len(billed) == 1 and billed[0].cost == 0.01 and billed[0].input_tokens == 100
    call_id = billed[0].extra["call_id"]
    assert len(call_id) == 26
    # What the answer cost, marked as paid by another call (budgets count it as zero).
    assert [(u.input_tokens, u.output_tokens, u.cost, u.extra) for u in sharers] \
        == [(100, 20, 0.01, {"shared": True, "shared_from": call_id})] * 4


def test_a_prompt_answered_earlier_in_the_run_is_answered_from_that_reply() -> None:
    inner = ScriptedModel(["first", "second"], usage=USAGE)
    shared = SharedCalls()
    model = shared.wrap(inner)

    first = run(model.complete("p", REQUEST))
    again = run(model.complete("p", REQUEST))
    other = run(model.complete("another prompt", REQUEST))

    assert inner.call_count == 2
    assert again[0].concat_text() == first[0].concat_text() == "first"
    assert again[1].extra == {"shared": True, "shared_from": first[1].extra["call_id"]}
    assert other[0].concat_text() == "second"


def test_different_scopes_and_different_models_never_share() -> None:
    a, b = ScriptedModel(usage=USAGE, name="a"), ScriptedModel(usage=USAGE, name="b")
    shared = SharedCalls()

    run(shared.wrap(a, scope=0).complete("p", REQUEST))
    run(shared.wrap(a, scope=1).complete("p", REQUEST))
    run(shared.wrap(b, scope=0).complete("p", REQUEST))

    assert (a.call_count, b.call_count, shared.calls_shared) == (2, 1, 0)


def test_a_failed_call_is_not_shared_and_its_waiter_sends_its_own() -> None:
    inner = ScriptedModel(["ok"], usage=USAGE, latency=0.02,
                          raise_on={1: ModelCallError("boom", model="scripted")})
    shared = SharedCalls()

    async def main():  # type: ignore[no-untyped-def]
        return await asyncio.gather(*(shared.wrap(inner).complete("p", REQUEST)
                                      for _ in range(2)), return_exceptions=True)

    first, second = run(main())

    assert isinstance(first, ModelCallError) and str(first) == "boom"
    assert second[0].concat_text() == "ok" and not second[1].extra.get("shared")
    assert inner.call_count == 2


def test_a_window_too_small_refuses_before_sharing_while_a_larger_window_shares() -> None:
    inner = ScriptedModel(["fits"], usage=USAGE)
    shared = SharedCalls()
    prompt = "word " * 400
    run(shared.wrap(WindowCap(inner, 32_768)).complete(prompt, REQUEST))

    with pytest.raises(ContextLengthExceeded, match="exceeds the simulated window of 100"):
        run(shared.wrap(WindowCap(inner, 100)).complete(prompt, REQUEST))
    reply, usage = run(shared.wrap(WindowCap(inner, 8192)).complete(prompt, REQUEST))

    assert inner.call_count == 1
    assert reply.concat_text() == "fits" and usage.extra["shared"] is True


def test_sharing_disabled_passes_every_call_through() -> None:
    inner = ScriptedModel(usage=USAGE)
    shared = SharedCalls(enabled=False)

    for _ in range(3):
        run(shared.wrap(inner).complete("p", REQUEST))

    assert (inner.call_count, shared.calls_made, shared.calls_shared) == (3, 3, 0)


def test_a_runs_own_table_gives_no_step_to_a_scope_only_one_cell_has() -> None:
    shared = SharedCalls(scopes=[0, 1, 1])

    assert shared.step_for(0) is None  # no other cell's call can equal this cell's
    assert isinstance(shared.step_for(1), ShareStep)
    assert isinstance(shared.step_for(7), ShareStep)  # a scope it was not told of
    assert isinstance(SharedCalls().step_for(0), ShareStep)  # no plan (a tune's table)
    assert isinstance(shared.step(0), ShareStep)  # asked for the step itself
