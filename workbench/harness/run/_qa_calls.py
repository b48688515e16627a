"""The QA step's model calls, kept like a cell's summary calls: one attempt row each, and the
sums that join the cell's billed tokens and cost (and its own ``qa_*`` columns).

`QACalls.call` sends one call through the model the runner built for the role (cache, shared
calls, budget, executor routing already wrapped around it) and records it, whatever happens:
its purpose (``answer``, ``answer_full``, ``next_action``, ``next_action_full``, ``judge``,
``judge_exact`` (a calibration sample),
``author``), the question it was for, usage, latency, outcome, prompt hash. A provider that
reports no usage is estimated with the workbench's estimator, and counted as estimated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from workbench.compaction._model import CompactionModel, Usage
from workbench.errors import ContextLengthExceeded
from workbench.harness.results._cell_result import AttemptResult
from workbench.harness.run._record import take_usage
from workbench.messages import Message
from workbench.models._billing import http_retries
from workbench.models._cache_keys import prompt_hash
from workbench.tokens import default_estimator

__all__ = ["QACall", "QACalls", "QACount", "QASums"]

QACount = Literal["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                  "reported_tokens", "estimated_tokens", "calls_made", "calls_shared",
                  "http_retries", "calls"]
"""The whole-number sums of `QASums`."""


class QASums(TypedDict):
    """What a cell's QA calls add to it (`QACalls.sums`)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float | None
    reported_tokens: int
    estimated_tokens: int
    calls_made: int
    calls_shared: int
    http_retries: int
    calls: int


@dataclass
class QACall:
    """One recorded QA call.

    Attributes:
        purpose: What it was for (see the module docstring).
        question: The question id, or "" (next action, author).
        model: The model string.
        usage: Its usage (None when the call failed before any answer).
        estimated: True when the workbench estimated the usage's token counts.
        outcome: ``ok``, ``context_length_exceeded`` or ``error``.
        latency_ms: Wall time of the call.
        prompt_hash: sha256 of the prompt (links the response-cache recording).
        error: The error text, for a failed call.
    """

    purpose: str
    question: str
    model: str
    usage: Usage | None = None
    estimated: bool = False
    outcome: str = "ok"
    latency_ms: float = 0.0
    prompt_hash: str = ""
    error: str | None = None


@dataclass
class QACalls:
    """Every QA call of one cell, in the order they were made."""

    calls: list[QACall] = field(default_factory=list)

    async def call(self, model: CompactionModel, model_string: str, purpose: str, system: str,
                   messages: list[Message], question: str = "") -> Message:
        """Send one call and record it; re-raises the model's error after recording it."""
        record = QACall(purpose, question, model_string, prompt_hash=prompt_hash(system, messages))
        self.calls.append(record)
        started = time.perf_counter()
        try:
            reply, usage = await model.complete(system, messages)
        except ContextLengthExceeded as exc:
            record.outcome, record.error = "context_length_exceeded", str(exc)
            raise
        except BaseException as exc:
            record.outcome, record.error = "error", str(exc)
            raise
        finally:
            record.latency_ms = (time.perf_counter() - started) * 1000
        record.usage, record.estimated = _filled(usage, system, messages, reply, model_string)
        return reply

    def sums(self) -> QASums:
        """Billed sums of the calls: input, output, cache tokens, cost (None when any answered
        call has no known price), reported vs estimated tokens, calls made and shared,
        gateway retries."""
        used = [(c, c.usage) for c in self.calls if c.usage is not None]
        extras = [u.extra or {} for _, u in used]

        def total(name: str) -> int:
            return sum(getattr(u, name) or 0 for _, u in used)

        tokens = [(c, (u.input_tokens or 0) + (u.output_tokens or 0)) for c, u in used]
        costs = [u.cost for _, u in used]
        known = [c for c in costs if c is not None]
        return {
            "input_tokens": total("input_tokens"), "output_tokens": total("output_tokens"),
            "cache_read_tokens": total("cache_read_input_tokens"),
            "cache_write_tokens": total("cache_write_input_tokens"),
            "cost": None if len(known) < len(costs) else float(sum(known)),
            "reported_tokens": sum(n for c, n in tokens if not c.estimated),
            "estimated_tokens": sum(n for c, n in tokens if c.estimated),
            "calls_made": sum(1 for e in extras if not e.get("shared")),
            "calls_shared": sum(1 for e in extras if e.get("shared")),
            "http_retries": http_retries([u for _, u in used]),
            "calls": len(self.calls),
        }

    def attempt_results(self, first_number: int = 1) -> list[AttemptResult]:
        """One `AttemptResult` per call, numbered from `first_number`."""
        out = []
        for n, call in enumerate(self.calls, first_number):
            usage = call.usage
            attempt = AttemptResult(
                attempt_no=n, outcome=call.outcome, purpose=call.purpose,
                question_id=call.question or None,
                model=usage.model if usage is not None and usage.model else call.model,
                latency_ms=call.latency_ms, error=call.error, prompt_hash=call.prompt_hash)
            out.append(take_usage(attempt, usage))
        return out


def _filled(usage: Usage | None, system: str, messages: list[Message], reply: Message,
            model_string: str) -> tuple[Usage, bool]:
    """`usage` with token counts the provider left out estimated (and whether it was)."""
    if usage is None:
        usage = Usage(model=model_string)
    if usage.input_tokens is not None and usage.output_tokens is not None:
        return usage, bool((usage.extra or {}).get("estimated"))
    estimator = default_estimator()
    filled = usage.copy(
        input_tokens=usage.input_tokens if usage.input_tokens is not None
        else estimator.count_chat_tokens(system, messages),
        output_tokens=usage.output_tokens if usage.output_tokens is not None
        else estimator.count_text_tokens(reply.concat_text()))
    return filled, True
