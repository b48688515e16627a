"""The budget reserves each call's estimate before dispatch: a stop overshoots by at most one
call, and its message states the real spend."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from workbench.compaction import Usage
from workbench.errors import BudgetReached
from workbench.harness import Cell, Experiment, run_experiment
from workbench.harness.run._budget import BudgetedModel, RunBudget
from workbench.harness.run._estimate import OUTPUT_TOKENS_ESTIMATE, cell_cost
from workbench.messages import Message
from workbench.sessions import Session
from workbench.testing import ScriptedModel
from workbench.tokens import default_estimator

REPLY = ('<analysis>checked</analysis>\n```json\n{"user_intent": ["fix the bug in app.py"], '
         '"current_work": "editing app.py"}\n```')
USAGE = Usage(model="scripted", input_tokens=100, output_tokens=50, cost=0.01)


def write_sessions(folder: Path, count: int) -> None:
    for i in range(count):
        sid = f"s{i:02d}"
        messages = [Message.user(f"fix the bug in app.py ({sid})"), Message.assistant("fixed it")]
        Session(sid, "goose-json", str(folder / f"{sid}.json"), messages).write_goose_json(
            folder / f"{sid}.json")


def experiment(folder: Path, **over: Any) -> Experiment:
    data: dict[str, Any] = {"name": "t", "sessions": ["s*.json"], "base_dir": str(folder)}
    data.update(over)
    return Experiment.from_dict(data)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings the runner logged (the budget stop is said once, as a warning)."""
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]


def test_eight_cells_in_flight_stop_one_call_past_max_cost_and_state_the_real_spend(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_sessions(tmp_path, 10)
    model = ScriptedModel([REPLY], usage=USAGE, latency=0.05)

    def factory(cell: Cell) -> ScriptedModel:
        return model

    # An unpriced model: one call in flight until its first real cost is known, then that cost
    # is its estimate. Without reservations all 8 cells in flight would each be billed.
    spec = experiment(tmp_path, models=["openai/unpriced-hardening-model"], concurrency=8,
                      budget={"max_cost": 0.035})
    results = run_experiment(spec, tmp_path / "run", model_factory=factory, progress=False)

    assert model.call_count == 4  # 3 fit; the 4th is admitted alone and overshoots by 0.005
    assert len(results.cells) == 4
    assert results.status == "budget_reached"
    assert round(float(results.cells["cost"].sum()), 6) == 0.04
    assert ("budget reached (cost $0.0400 >= max_cost $0.035); 6 cell(s) not run. Raise [budget] "
            "in the spec and run again to continue. Spent in this run folder: $0.0400 and 600 "
            "billed tokens (400 input, 200 output).") in warnings(caplog)


def test_a_budget_stopped_folder_runs_the_rest_once_the_budget_is_raised(
        tmp_path: Path) -> None:
    write_sessions(tmp_path, 4)
    model = ScriptedModel([REPLY], usage=USAGE)

    def factory(cell: Cell) -> ScriptedModel:
        return model

    out = tmp_path / "run"
    first = run_experiment(experiment(tmp_path, models=["openai/unpriced-hardening-model"],
                                      budget={"max_cost": 0.015}),
                           out, model_factory=factory, progress=False)
    assert (len(first.cells), model.call_count) == (2, 2)
    second = run_experiment(experiment(tmp_path, models=["openai/unpriced-hardening-model"],
                                       budget={"max_cost": 1.0}),
                            out, model_factory=factory, progress=False)
    assert (len(second.cells), model.call_count) == (4, 4)
    assert list(second.runs["status"]) == ["budget_reached", "finished"]


def test_the_stop_message_counts_the_spend_of_earlier_runs_of_the_folder(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_sessions(tmp_path, 3)
    model = ScriptedModel([REPLY], usage=USAGE)

    def factory(cell: Cell) -> ScriptedModel:
        return model

    out = tmp_path / "run"
    spec = {"models": ["openai/unpriced-hardening-model"]}
    # The first run stops after one cell (a run folder keeps its cells: only budget and
    # concurrency change between the two runs).
    run_experiment(experiment(tmp_path, budget={"max_tokens": 150}, concurrency=1, **spec), out,
                   model_factory=factory, progress=False)
    caplog.clear()
    run_experiment(experiment(tmp_path, budget={"max_tokens": 250}, **spec), out,
                   model_factory=factory, progress=False)
    assert model.call_count == 2
    assert warnings(caplog)[-1] == (
        "budget reached (300 billed tokens >= max_tokens 250); 1 cell(s) not run. Raise [budget] "
        "in the spec and run again to continue. Spent in this run folder: $0.0200 and 300 billed "
        "tokens (200 input, 100 output).")


def test_the_estimate_is_the_prompt_priced_by_litellms_bundled_map() -> None:
    budget = RunBudget(max_cost=1.0)
    wrapper = BudgetedModel(ScriptedModel(), budget, "cached:openai/gpt-4o-mini@8k",
                            output_tokens=OUTPUT_TOKENS_ESTIMATE)
    messages = [Message.user("Summarize the conversation above.")]
    prompt = default_estimator().count_chat_tokens("You summarize.", messages)
    tokens, cost = wrapper.estimate("You summarize.", messages)
    assert tokens == prompt + OUTPUT_TOKENS_ESTIMATE
    assert cost == cell_cost("openai/gpt-4o-mini", prompt, OUTPUT_TOKENS_ESTIMATE)
    assert cost is not None and cost > 0


async def test_a_call_is_refused_without_reaching_the_model_once_the_settled_spend_is_at_max(
        ) -> None:
    budget = RunBudget(max_tokens=100, input_tokens=60, output_tokens=40)
    inner = ScriptedModel([REPLY], usage=USAGE)
    wrapper = BudgetedModel(inner, budget, "openai/x", output_tokens=10)
    with pytest.raises(BudgetReached, match=r"^budget reached \(100 billed tokens >= max_tokens "
                                            r"100\); the call to openai/x was not sent$"):
        await wrapper.complete("s", [Message.user("u")])
    assert inner.call_count == 0 and wrapper.refused
    assert (budget.reserved_tokens, budget.in_flight, budget.refused) == (0, 0, 1)


async def test_a_reservation_that_does_not_fit_waits_for_calls_in_flight_to_settle() -> None:
    budget = RunBudget(max_cost=0.05)
    order: list[str] = []
    first = await budget.reserve("m", 10, 0.03)
    order.append("first reserved")

    async def second() -> None:
        ticket = await budget.reserve("m", 10, 0.03)  # 0.03 + 0.03 > 0.05: must wait
        order.append("second reserved")
        await budget.settle(ticket, Usage(input_tokens=5, output_tokens=5, cost=0.01))

    task = asyncio.create_task(second())
    await asyncio.sleep(0.01)
    assert order == ["first reserved"] and budget.in_flight == 1
    await budget.settle(first, Usage(input_tokens=5, output_tokens=5, cost=0.01))
    await task
    assert order == ["first reserved", "second reserved"]
    assert (round(budget.cost, 6), budget.tokens, budget.in_flight) == (0.02, 20, 0)


async def test_answers_from_a_recording_or_a_shared_call_are_not_billed_again() -> None:
    budget = RunBudget(max_cost=1.0)
    for flag in ("cache_hit", "shared"):
        ticket = await budget.reserve("m", 10, 0.5)
        await budget.settle(ticket, Usage(input_tokens=100, output_tokens=50, cost=0.5,
                                          extra={flag: True}))
    ticket = await budget.reserve("m", 10, 0.5)
    await budget.settle(ticket, None)  # a failed call
    assert (budget.cost, budget.tokens, budget.reserved_cost, budget.in_flight) == (0.0, 0, 0.0, 0)


def test_the_wrapper_forwards_what_other_wrappers_ask_of_the_inner_model() -> None:
    inner = ScriptedModel(name="inner-name")
    wrapper = BudgetedModel(inner, RunBudget(max_cost=1.0), "openai/x", output_tokens=1)
    assert wrapper.name == "inner-name" and wrapper.calls is inner.calls
