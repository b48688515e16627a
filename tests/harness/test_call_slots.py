"""The run's concurrency bounds model calls in flight: a slot is held only while a call is out,
so the next call goes out while the last cell parses its reply."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from workbench.compaction import _reuse, _summarize
from workbench.harness import Experiment, run_experiment
from workbench.testing import ScriptedModel

REPLY = '```json\n{"user_intent": ["finish the task"], "current_work": "benchmarking"}\n```'
PARSE_SECONDS = 0.3


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
    calls: list[float] = []
    parsed: list[tuple[float, float]] = []
    original = _summarize.apply_structured_summary

    def slow_parse(*args: Any) -> str:
        started = time.perf_counter()
        time.sleep(PARSE_SECONDS)
        outcome = original(*args)
        parsed.append((started, time.perf_counter()))
        return outcome

    def respond(system: str, messages: list) -> str:  # type: ignore[type-arg]
        calls.append(time.perf_counter())
        return REPLY

    monkeypatch.setattr(_summarize, "apply_structured_summary", slow_parse)
    _reuse.REPLIES.clear()  # a reply parsed and rendered before is applied without a thread
    _reuse.SUMMARIES.clear()
    results = run_experiment(_spec(1, 2), tmp_path / "run", progress=False,
                             model_factory=lambda cell: ScriptedModel(respond=respond))
    assert list(results.cells["status"]) == ["ok", "ok"]
    first_parse_end = min(end for _, end in parsed)
    # one slot, yet the second call came before the first reply's parse was over
    assert len(calls) == 2 and calls[1] < first_parse_end


def test_a_slot_is_given_back_when_the_call_fails() -> None:
    from workbench.harness.run.executors._call_slot import CallSlot

    class Failing:
        async def complete(self, system: str, messages: list) -> Any:  # type: ignore[type-arg]
            raise RuntimeError("provider down")

    async def main() -> int:
        slot = asyncio.Semaphore(1)
        model = CallSlot(Failing(), [slot])
        for _ in range(2):
            with pytest.raises(RuntimeError, match="provider down"):
                await model.complete("system", [])
        return slot._value

    assert asyncio.run(main()) == 1


def test_calls_woken_by_a_wave_of_replies_go_out_before_any_reply_is_processed() -> None:
    from workbench.harness.run.executors._call_slot import CallSlot

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
        model = CallSlot(inner, [asyncio.Semaphore(2)])

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
