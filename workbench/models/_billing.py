"""Who paid for a call, and what a cell was billed: usage attributed in one place.

A call's answer comes from one of three places: the model (this run paid for it), a recording
(`CacheStep`: paid when it was recorded), or another call of this run (`ShareStep`: paid by
that call). The pipeline's steps only say which (`workbench.models._pipeline.Call`); `attribute`
writes it into the usage the caller gets, as flags in ``usage.extra``:

- ``cache_hit``: True when a recording answered, False when the call was sent and recorded;
- ``call_id``: on a call that was sent, the id its sharers name;
- ``shared`` and ``shared_from``: on an answer shared from another call, which one.

A shared or recorded answer keeps the usage of the call that produced it, so a cell's billed
figures say what its summary cost whoever paid; `paid_in_run` says whether this run paid, and
the cell's ``spent_*`` columns and the run's budget count only what it did (`usage_columns`).
The cell-level sums live here too: billed and spent totals (`usage_columns`), tokens the
provider reported against those the workbench estimated (`billing_columns`), and gateway
retries (`http_retries`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from workbench._json_types import JSONValue
from workbench._ulid import new_ulid
from workbench.compaction._model import Usage

__all__ = ["NOT_BILLED_FLAGS", "SHARER_DROPS", "attribute", "billed", "billing_columns",
           "call_ref", "http_retries", "new_call_id", "paid_in_run", "shared", "usage_columns"]

NOT_BILLED_FLAGS = ("cache_hit", "shared")
"""Usage flags of an answer this run did not pay for."""
SHARER_DROPS = ("call_id", "cache_hit")
"""Usage extras of the sent call a sharer's copy does not inherit: its id, and whether it was
answered from a recording (the sharer was answered from the table)."""


class Findings(Protocol):
    """What the pipeline's steps found about a call (`workbench.models._pipeline.Call`)."""

    cache_hit: bool | None
    shared_from: str | None
    call_id: str | None


def new_call_id() -> str:
    """A fresh id for a sent call (`workbench._ulid.new_ulid`): the billed attempt's row uses
    it as its attempt_id, which the store sorts by time."""
    return new_ulid()


def billed(usage: Usage, call_id: str) -> Usage:
    """The usage of a sent call, naming it (``call_id``) for its sharers. A new extra dict: a
    model's usage objects may share theirs between calls."""
    return usage.copy(extra={**(usage.extra or {}), "call_id": call_id})


def shared(usage: Usage, call_id: str) -> Usage:
    """A sharer's copy of the usage of the call `call_id`: what the answer cost, flagged as
    shared from it."""
    extra = {k: v for k, v in (usage.extra or {}).items() if k not in SHARER_DROPS}
    return usage.copy(extra={**extra, "shared": True, "shared_from": call_id})


def attribute(call: Findings, usage: Usage) -> Usage:
    """The usage the caller of `call` gets: the steps' findings written as flags (see the
    module docstring)."""
    if call.shared_from is not None:
        return shared(usage, call.shared_from)
    if call.call_id is None and call.cache_hit is None:
        return usage
    extra = dict(usage.extra or {})
    if call.cache_hit is not None:
        extra["cache_hit"] = call.cache_hit
    if call.call_id is not None:
        extra["call_id"] = call.call_id
    return usage.copy(extra=extra)


def call_ref(value: JSONValue) -> str | None:
    """A call id read back from a usage's ``call_id`` or ``shared_from`` (written here as
    strings; absent: None)."""
    return None if value is None else str(value)


def paid_in_run(usage: object) -> bool:
    """True when this run paid for the call: not answered from a recording, not shared."""
    extra = getattr(usage, "extra", None) or {}
    return not any(extra.get(flag) for flag in NOT_BILLED_FLAGS)


def usage_columns(usages: Sequence[Usage], unknown_calls: int = 0) -> dict[str, int | float | None]:
    """A cell's billed columns (what its calls cost, whoever paid: a shared or recorded
    answer counts at the usage of the call that produced it) and its ``spent_*`` columns
    (what this run paid for them).

    Args:
        usages: The usage of every call that returned one.
        unknown_calls: Calls that reached a model and failed without usage (the cost is then
            unknown; no billed call at all costs 0).
    """
    def total(name: str, of: Sequence[Usage]) -> int:
        return sum(getattr(u, name) or 0 for u in of)

    def cost(of: Sequence[Usage]) -> float | None:
        costs = [u.cost for u in of]
        known = [c for c in costs if c is not None]
        return None if unknown_calls or len(known) < len(costs) else float(sum(known))

    paid = [u for u in usages if paid_in_run(u)]
    return {
        "billed_input_tokens": total("input_tokens", usages),
        "billed_output_tokens": total("output_tokens", usages),
        "cache_read_tokens": total("cache_read_input_tokens", usages),
        "cache_write_tokens": total("cache_write_input_tokens", usages),
        "cost": cost(usages),
        "spent_input_tokens": total("input_tokens", paid),
        "spent_output_tokens": total("output_tokens", paid),
        "spent_cost": cost(paid),
    }


def billing_columns(records: Sequence[object], raw_usages: Sequence[Usage | None]) -> dict[str, int]:
    """Billed tokens split into what the provider reported and what the workbench estimated.

    A call's input (or output) count is *reported* when the model returned it and did not mark
    its usage as an estimate (``usage.extra["estimated"]``, the extractive baseline); otherwise
    the count the summarizer filled in is *estimated*.

    Args:
        records: The cell's attempts (each with its final ``usage``, or None).
        raw_usages: The usage of each call as the model returned it, in call order.
    """
    finals: list[Usage] = [u for r in records if (u := getattr(r, "usage", None)) is not None]
    reported = estimated = 0
    for final, raw in zip(finals, raw_usages, strict=False):
        marked = raw is None or bool((raw.extra or {}).get("estimated"))
        for name in ("input_tokens", "output_tokens"):
            value = getattr(final, name) or 0
            if not marked and getattr(raw, name) is not None:
                reported += value
            else:
                estimated += value
    return {"reported_tokens": reported, "estimated_tokens": estimated}


def http_retries(raw_usages: Sequence[Usage | None], attempts: int | None = None) -> int:
    """Gateway retries (429, 5xx, timeouts) across a cell's calls, from the usages'
    ``retries_made`` and, for a call that gave up, its number of `attempts`."""
    total = sum(_retries((u.extra or {}).get("retries_made") or 0) for u in raw_usages
                if u is not None)
    if isinstance(attempts, int) and not isinstance(attempts, bool) and attempts > 1:
        total += attempts - 1
    return total


def _retries(value: JSONValue) -> int:
    # The gateway writes an int; a number in another JSON form is read as int() reads it.
    return int(value) if isinstance(value, (int, float, str)) else 0
