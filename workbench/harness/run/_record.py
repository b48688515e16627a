"""The record step: what a cell's calls sent and got back, for its attempt rows.

The first step of the model pipeline (`workbench.models._pipeline`) a cell's summarizer calls
pass. It keeps, in call order: the hash of each prompt (one per attempt; it links an attempt to
its recording), the usage of each call that returned as the model reported it (before the
summarizer estimates what is missing), and the text of the last reply (the summary parser's
input, kept beside the cell).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from workbench.compaction import Attempt
from workbench.compaction._model import Usage
from workbench.harness.results._cell_result import AttemptResult
from workbench.models._billing import call_ref
from workbench.models._pipeline import Call, Proceed, Reply

__all__ = ["RecordStep", "attempt_results", "take_usage"]


class RecordStep:
    """The pipeline's record step (see the module docstring).

    Args:
        on_first_call: Called once, as the first call goes on through the pipeline (the
            cell then starts its session's count, which fills the wait for the reply).

    Attributes:
        prompt_hashes: sha256 of each prompt sent, in call order.
        raw_usages: Each returned call's usage, as the model reported it.
        last_text: The text of the last reply, or None before any.
    """

    kind: ClassVar[str] = "record"

    def __init__(self, on_first_call: Callable[[], None] | None = None) -> None:
        self._on_first_call = on_first_call
        self.prompt_hashes: list[str] = []
        self.raw_usages: list[Usage | None] = []
        self.last_text: str | None = None

    async def run(self, call: Call, proceed: Proceed) -> Reply:
        """Note the prompt, let the call through, note what came back."""
        self.prompt_hashes.append(call.prompt_hash())
        first, self._on_first_call = self._on_first_call, None
        if first is not None:
            first()
        reply, usage = await proceed(call)
        self.last_text = reply.concat_text()
        self.raw_usages.append(usage.copy() if usage is not None else None)
        return reply, usage


def attempt_results(records: list[Attempt], model: str,
                    prompt_hashes: list[str] | None = None) -> list[AttemptResult]:
    """One `AttemptResult` per summarizer attempt (`workbench.compaction.Attempt`), with its
    usage as the caller got it (flags included: `workbench.models._billing`)."""
    out = []
    hashes = list(prompt_hashes or [])
    for i, rec in enumerate(records):
        usage = rec.usage
        attempt = AttemptResult(
            attempt_no=rec.number, outcome=rec.outcome, removal_percent=rec.removal_percent,
            messages_removed=rec.messages_removed,
            tool_responses_removed=rec.tool_responses_removed,
            model=usage.model if usage is not None and usage.model else model,
            latency_ms=rec.latency_ms, error=rec.error,
            prompt_hash=hashes[i] if i < len(hashes) else None)
        out.append(take_usage(attempt, usage))
    return out


def take_usage(attempt: AttemptResult, usage: Usage | None) -> AttemptResult:
    """`attempt` with its call's usage written in: tokens, cost, and the flags
    `workbench.models._billing` set (recording hit, shared and from which call, its own id)."""
    if usage is None:
        return attempt
    extra = usage.extra or {}
    hit = extra.get("cache_hit")
    shared = bool(extra.get("shared"))
    attempt.input_tokens, attempt.output_tokens = usage.input_tokens, usage.output_tokens
    attempt.cache_read_tokens = usage.cache_read_input_tokens
    attempt.cache_write_tokens = usage.cache_write_input_tokens
    attempt.cost, attempt.shared = usage.cost, int(shared)
    attempt.cache_hit = None if hit is None else int(bool(hit))
    attempt.shared_from = call_ref(extra.get("shared_from"))
    if not shared and extra.get("call_id"):
        attempt.attempt_id = call_ref(extra["call_id"])  # what sharers' shared_from points at
    return attempt
