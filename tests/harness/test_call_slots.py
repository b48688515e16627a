"""The run's concurrency bounds model calls in flight: a slot is held only while a call is out
(the pipeline's slot step), so the next call goes out before the last cell parses its reply.
Orders of events, never timings, say so."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from workbench.compaction import _summarize
from workbench.harness import Experiment, run_experiment
from workbench.harness.run.executors._call_slot import SlotStep
from workbench.models import ModelPipeline
from workbench.testing import ScriptedModel

REPLY = '```json\n{"user_intent": ["finish the task"], "current_work": "benchmarking"}\n```'


def _spec(concurrency: int, repeats: int, model_limit: int | None = None) -> Experiment:
    model: dict[str, Any] = {"model": "extractive"}
    if model_limit:
        model["concurrency"] = model_limit
    return Experiment.from_dict({"name": "slots", "sessions": ["gen-005k-s1"], "models": [model],
                                 "repeats": repeats, "concurrency": concurrency})


class _Counting(ScriptedModel):
    def __init__(self, tally: dict[str, int], **kwargs: Any) -> None:
        super().__init__([REPLY], latency=0.05, **kwargs)
        self.tally = tally

    async def complete(self, system: str, messages: list) -> Any:  # type: ignore[type-arg]
        self.tally["now"] += 1
        self.tally["most"] = max(self.tally["most"], self.tally["now"])
        try:
            return await super().complete(system, messages)
        finally:
            self.tally["now"] -= 1


@pytest.mark.parametrize(("concurrency", "own", "expected"), [(3, None, 3), (8, 2, 2)])
def test_calls_in_flight_never_exceed_the_limits(tmp_path: Path, concurrency: int,
                                                 own: int | None, expected: int) -> None:
    tally = {"now": 0, "most": 0}
    results = run_experiment(_spec(concurrency, 12, own), tmp_path / "run", progress=False,
                             model_factory=lambda cell: _Counting(tally))
    assert list(results.cells["status"]) == ["ok"] * 12
    assert tally["most"] == expected


def test_the_next_call_goes_out_while_the_last_reply_is_parsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    second_call = asyncio.Event()
    original = _summarize.apply_structured_summary_async

    async def parse(*args: Any) -> str:
        # The first reply's parse waits for the second call: with the one slot held until
        # the parse ended, that call could never go out and this would time out.
        await asyncio.wait_for(second_call.wait(), 30)
        return await original(*args)

    def respond(system: str, messages: list) -> str:  # type: ignore[type-arg]
        calls.append(len(calls))
        if len(calls) == 2:
            second_call.set()
        return REPLY

    monkeypatch.setattr(_summarize, "apply_structured_summary_async", parse)
    results = run_experiment(_spec(1, 2), tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel(respond=respond))
    assert list(results.cells["status"]) == ["ok", "ok"] and calls == [0, 1]


def _slotted(inner: Any, slots: list[asyncio.Semaphore]) -> ModelPipeline:
    return ModelPipeline(inner, [SlotStep(slots)])


def test_a_slot_is_given_back_when_the_call_fails() -> None:
    class Failing:
        async def complete(self, system: str, messages: list) -> Any:  # type: ignore[type-arg]
            raise RuntimeError("provider down")

    async def main() -> int:
        slot = asyncio.Semaphore(1)
        model = _slotted(Failing(), [slot])
        for _ in range(2):
            with pytest.raises(RuntimeError, match="provider down"):
                await model.complete("system", [])
        return slot._value

    assert asyncio.run(main()) == 1


def test_calls_woken_by_a_wave_of_replies_go_out_before_any_reply_is_processed() -> None:
    log: list[str] = []

    class Gated:
        def __init__(self) -> None:
            self.answer = asyncio.Event()

        async def complete(self, system: str, messages: list) -> Any:  # type: ignore[type-arg]
            log.append(f"{system} call")
            if system in ("a", "b"):  # the first wave lands together
                await self.answer.wait()
            return system, None

    async def main() -> None:
        inner = Gated()
        model = _slotted(inner, [asyncio.Semaphore(2)])

        async def cell(name: str) -> None:
            await model.complete(name, [])
            log.append(f"{name} post")  # the cell's post-reply work

        tasks = [asyncio.create_task(cell(n)) for n in "abcd"]
        while len(log) < 2:
            await asyncio.sleep(0)
        inner.answer.set()
        await asyncio.gather(*tasks)

    asyncio.run(main())
    assert log[:2] == ["a call", "b call"]
    # both freed slots carry the next calls out before either reply is processed
    assert log[2:4] == ["c call", "d call"]
    assert sorted(log[4:]) == ["a post", "b post", "c post", "d post"]


def test_a_shared_or_recorded_answer_never_waits_for_a_slot() -> None:
    from workbench.models import SharedCalls

    async def main() -> list[str]:
        slot = asyncio.Semaphore(1)
        table = SharedCalls()
        answered: list[str] = []
        model = ModelPipeline(ScriptedModel([REPLY] * 3), [table.step(), SlotStep([slot])])
        await model.complete("same prompt", [])
        await slot.acquire()  # every slot taken: only an answer that needs no call gets through
        await asyncio.wait_for(model.complete("same prompt", []), 1)
        answered.append("shared")
        return answered

    assert asyncio.run(main()) == ["shared"]
