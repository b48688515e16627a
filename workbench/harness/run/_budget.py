"""The run budget: reserve a call's estimated cost and tokens before dispatch, settle after.

`RunBudget` keeps what the run folder has really been billed (settled) and what calls in flight
are expected to cost (reserved). `BudgetStep` is its step in the model pipeline
(`workbench.models._pipeline`): before each call it reserves an estimate (prompt tokens counted
with the workbench's estimator, priced with litellm's bundled price map as in ``--dry-run``);
after it, the reservation is replaced by the usage the provider reported. It is the last step,
after the concurrency slot: only a call about to be sent reserves. A call whose estimate does not fit waits while other calls are in
flight (their real usage may leave room) and is refused with `BudgetReached` once the settled
spend alone reaches a limit; with nothing in flight one call is admitted, so a stop overshoots
by at most one call. A model with no known price gets one call in flight until its first
real cost is known, then that cost as its estimate.

A usage flagged as answered from a recording or shared with another cell settles at zero
(`workbench.models._billing.paid_in_run`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import ClassVar

from workbench.compaction._model import CompactionModel, Usage
from workbench.errors import BudgetReached
from workbench.harness.results._cell_result import CellResult
from workbench.harness.run._estimate import cell_cost
from workbench.messages import Message
from workbench.models._billing import paid_in_run
from workbench.models._pipeline import Call, ModelPipeline, Proceed, Reply
from workbench.tokens import TokenEstimator, default_estimator

__all__ = ["BUDGET_STOPPED", "BudgetStep", "BudgetedModel", "RunBudget", "SPENT_MESSAGE"]

BUDGET_STOPPED = "BudgetReached"
"""``error_type`` of a cell the budget stopped after it was billed; such cells run again."""

SPENT_MESSAGE = "Spent in this run folder: ${cost:.4f} and {tokens} billed tokens ({input} input, {output} output)."
"""States the real spend after a budget stop."""
REFUSED_MESSAGE = "budget reached ({what}); the call to {model} was not sent"
_unpriced: set[str] = set()  # model strings litellm has no price for (asking again is slow)


@dataclass
class _Ticket:
    key: str
    tokens: int
    cost: float
    unknown_cost: bool


class RunBudget:
    """Spend limits of one run, shared by every cell's `BudgetedModel`.

    Args:
        max_cost: US dollars, or None.
        max_tokens: Billed input + output tokens, or None.
        cost: Already spent (earlier runs of the folder).
        input_tokens: Input tokens already billed.
        output_tokens: Output tokens already billed.
    """

    def __init__(self, max_cost: float | None = None, max_tokens: int | None = None,
                 cost: float = 0.0, input_tokens: int = 0, output_tokens: int = 0) -> None:
        self.max_cost, self.max_tokens = max_cost, max_tokens
        self.cost = float(cost)
        self.input_tokens, self.output_tokens = int(input_tokens), int(output_tokens)
        self.tokens = self.input_tokens + self.output_tokens
        self.reserved_cost, self.reserved_tokens = 0.0, 0
        self.in_flight = 0
        self.refused = 0
        self._unknown_in_flight: dict[str, int] = {}
        self._mean_cost: dict[str, tuple[float, int]] = {}
        self._cond: asyncio.Condition | None = None

    @property
    def active(self) -> bool:
        """True when a limit is set (otherwise no call needs wrapping)."""
        return self.max_cost is not None or self.max_tokens is not None

    def reached(self) -> str | None:
        """Why the settled spend alone has reached a limit, or None."""
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"cost ${self.cost:.4f} >= max_cost ${self.max_cost:g}"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"{self.tokens} billed tokens >= max_tokens {self.max_tokens}"
        return None

    def charge(self, result: CellResult) -> None:
        """Add what a finished cell paid (a `CellResult`'s ``spent_*`` columns; for cells
        whose calls ran elsewhere, not through this run's budget step)."""
        self._add(int(result.spent_input_tokens or 0), int(result.spent_output_tokens or 0),
                  float(result.spent_cost or 0.0))

    def _add(self, tokens_in: int, tokens_out: int, cost: float) -> None:
        self.input_tokens += tokens_in
        self.output_tokens += tokens_out
        self.tokens += tokens_in + tokens_out
        self.cost += cost

    def spent_line(self) -> str:
        """The real spend so far, as one sentence."""
        return SPENT_MESSAGE.format(cost=self.cost, tokens=self.tokens, input=self.input_tokens,
                                    output=self.output_tokens)

    def _over(self, tokens: int, cost: float) -> bool:
        if self.max_cost is not None and self.cost + self.reserved_cost + cost > self.max_cost:
            return True
        return (self.max_tokens is not None
                and self.tokens + self.reserved_tokens + tokens > self.max_tokens)

    def estimated_cost(self, key: str, cost: float | None) -> float | None:
        """`cost` when known, else the mean real cost of `key`'s calls so far, else None."""
        if cost is not None:
            return cost
        total, count = self._mean_cost.get(key, (0.0, 0))
        return total / count if count else None

    async def reserve(self, key: str, tokens: int, cost: float | None) -> _Ticket:
        """Reserve room for one call of model `key`; waits while calls in flight may free room.

        Raises:
            BudgetReached: the settled spend has reached a limit.
        """
        if self._cond is None:
            self._cond = asyncio.Condition()
        async with self._cond:
            while True:
                reason = self.reached()
                if reason is not None:
                    self.refused += 1
                    raise BudgetReached(REFUSED_MESSAGE.format(what=reason, model=key))
                estimate = self.estimated_cost(key, cost)
                unknown = estimate is None
                if unknown and self._unknown_in_flight.get(key):
                    await self._cond.wait()
                    continue
                if self.in_flight and self._over(tokens, estimate or 0.0):
                    await self._cond.wait()
                    continue
                break
            ticket = _Ticket(key, tokens, estimate or 0.0, unknown)
            self.reserved_tokens += ticket.tokens
            self.reserved_cost += ticket.cost
            self.in_flight += 1
            if unknown:
                self._unknown_in_flight[key] = self._unknown_in_flight.get(key, 0) + 1
            return ticket

    async def settle(self, ticket: _Ticket, usage: Usage | None = None) -> None:
        """Replace a reservation by the call's real usage (None: the call billed nothing)."""
        assert self._cond is not None
        async with self._cond:
            self.reserved_tokens -= ticket.tokens
            self.reserved_cost -= ticket.cost
            self.in_flight -= 1
            if ticket.unknown_cost:
                self._unknown_in_flight[ticket.key] -= 1
            if usage is not None and paid_in_run(usage):
                self._add(usage.input_tokens or 0, usage.output_tokens or 0,
                          float(usage.cost) if usage.cost is not None else 0.0)
                if usage.cost is not None:
                    total, count = self._mean_cost.get(ticket.key, (0.0, 0))
                    self._mean_cost[ticket.key] = (total + float(usage.cost), count + 1)
            self._cond.notify_all()


class BudgetStep:
    """The pipeline's budget step: reserve before the call, settle after.

    Args:
        budget: The run's `RunBudget`.
        model_string: The model string (prices the estimate; names the model in refusals).
        output_tokens: Output tokens assumed per call.
        estimator: A `TokenEstimator` for the prompt (default: the process-wide one).

    Attributes:
        refused: True once a call of this step was refused by the budget.
    """

    kind: ClassVar[str] = "budget"

    def __init__(self, budget: RunBudget, model_string: str, *, output_tokens: int,
                 estimator: TokenEstimator | None = None) -> None:
        self.budget = budget
        self.model_string = model_string
        self.output_tokens = output_tokens
        self.estimator = estimator
        self.refused = False

    async def run(self, call: Call, proceed: Proceed) -> Reply:
        """Reserve, let the call through, settle with its real usage.

        Raises:
            BudgetReached: no room left; the call was not sent.
        """
        tokens, cost = estimate(self, call.system, call.messages)
        try:
            ticket = await self.budget.reserve(self.model_string, tokens, cost)
        except BudgetReached:
            self.refused = True
            raise
        try:
            reply, usage = await proceed(call)
        except BaseException:
            await self.budget.settle(ticket, None)
            raise
        await self.budget.settle(ticket, usage)
        return reply, usage


def estimate(step: BudgetStep, system: str, messages: list[Message]) -> tuple[int, float | None]:
    """(input + output tokens, dollars or None when the price is unknown) of one call."""
    estimator = step.estimator or default_estimator()
    tokens_in = estimator.count_chat_tokens(system, messages)
    if step.model_string in _unpriced:
        return tokens_in + step.output_tokens, None
    cost = cell_cost(step.model_string, tokens_in, step.output_tokens)
    if cost is None:
        _unpriced.add(step.model_string)
    return tokens_in + step.output_tokens, cost


class BudgetedModel(ModelPipeline):
    """A model whose calls reserve budget first (a pipeline of one budget step, merged into
    any pipeline it is composed with).

    Args:
        inner: The model the cell would otherwise see.
        budget: The run's `RunBudget`.
        model_string: The model string (prices the estimate; names the model in refusals).
        output_tokens: Output tokens assumed per call.
        estimator: A `TokenEstimator` for the prompt (default: the process-wide one).
    """

    def __init__(self, inner: CompactionModel, budget: RunBudget, model_string: str, *,
                 output_tokens: int, estimator: TokenEstimator | None = None) -> None:
        self.budget_step = BudgetStep(budget, model_string, output_tokens=output_tokens,
                                      estimator=estimator)
        super().__init__(inner, [self.budget_step])

    @property
    def refused(self) -> bool:
        """True once a call was refused by the budget."""
        return self.budget_step.refused

    def estimate(self, system: str, messages: list[Message]) -> tuple[int, float | None]:
        """(input + output tokens, dollars or None when the price is unknown) of one call."""
        return estimate(self.budget_step, system, messages)
