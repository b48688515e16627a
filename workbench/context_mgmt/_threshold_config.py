"""When Goose decides to auto-compact (``context_mgmt/mod.rs``: threshold and tool-call cutoff).

The threshold comes from ``GOOSE_AUTO_COMPACT_THRESHOLD`` parsed the way Goose's config parses
environment values, so ``"80"`` means 80.0 (auto-compaction off), not 80 %.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from typing import NoReturn

from workbench._json_types import JSONValue
from workbench.compaction._threshold import DEFAULT_COMPACTION_THRESHOLD
from workbench.messages import Message
from workbench.tokens import TokenEstimator, default_estimator

__all__ = [
    "THRESHOLD_ENV",
    "check_if_compaction_needed",
    "compute_tool_call_cutoff",
    "threshold_from_env",
    "tool_ids_to_summarize",
]

THRESHOLD_ENV = "GOOSE_AUTO_COMPACT_THRESHOLD"
TOOL_PAIR_BATCH = 10
"""Tool pairs summarized per round once the cutoff is passed by more than this many."""

# Rust's integer and float grammars for `str::parse` (no whitespace, no underscores).
_I64 = re.compile(r"[+-]?\d+\Z")
_F64 = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)\Z")
_F64_SPECIAL = re.compile(r"[+-]?(inf|infinity|nan)\Z", re.IGNORECASE)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _reject_constant(name: str) -> NoReturn:
    # serde_json has no NaN/Infinity literals; Python's json module does.
    raise ValueError(name)


def _parse_env_value(raw: str) -> JSONValue:
    """Goose's env value parsing: JSON, then true/false, then i64, then finite f64, else the string."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
        if not (isinstance(value, float) and not math.isfinite(value)):
            return value
    except ValueError:
        pass
    if raw in ("true", "false"):
        return raw == "true"
    if _I64.match(raw) and _I64_MIN <= int(raw) <= _I64_MAX:
        return int(raw)
    if _F64.match(raw) or _F64_SPECIAL.match(raw):
        number = float(raw)
        if math.isfinite(number):
            return number
    return raw


def threshold_from_env(value: str | None) -> float:
    """The auto-compact threshold Goose reads from an environment value.

    Args:
        value: The raw ``GOOSE_AUTO_COMPACT_THRESHOLD`` text, or None when unset.

    Returns:
        The value as a float when it parses to a finite number (``"0.6"`` -> 0.6,
        ``"80"`` -> 80.0, which disables auto-compaction), else `DEFAULT_COMPACTION_THRESHOLD`
        (unset, words, ``"true"``, quoted strings, ``"nan"``, ``"inf"``).
    """
    if value is None:
        return DEFAULT_COMPACTION_THRESHOLD
    parsed = _parse_env_value(value)
    if isinstance(parsed, bool) or not isinstance(parsed, (int, float)):
        return DEFAULT_COMPACTION_THRESHOLD
    number = float(parsed)
    return number if math.isfinite(number) else DEFAULT_COMPACTION_THRESHOLD


def _estimate_tokens(conversation: Sequence[Message], estimator: TokenEstimator | None) -> int:
    if estimator is None:
        estimator = default_estimator()
    return sum(estimator.count_chat_tokens("", [m]) for m in conversation if m.is_agent_visible)


def check_if_compaction_needed(
    conversation: Sequence[Message],
    context_limit: int,
    *,
    threshold: float | None = None,
    session_total_tokens: int | None = None,
    manages_own_context: bool = False,
    estimator: TokenEstimator | None = None,
) -> bool:
    """Whether Goose would auto-compact this conversation before the next turn.

    Args:
        conversation: The session's messages.
        context_limit: The model's context window in tokens.
        threshold: Override; default is `threshold_from_env` of ``GOOSE_AUTO_COMPACT_THRESHOLD``.
        session_total_tokens: The last provider-reported total; when None the agent-visible
            messages are estimated one by one (``count_chat_tokens("", [m])`` each).
        manages_own_context: True for providers that compact themselves (never compact then).
        estimator: `TokenEstimator` for the fallback estimate (default: tiktoken o200k).

    Returns:
        False when the provider manages its context or the threshold is off (``<= 0`` or
        ``>= 1``); else ``tokens / context_limit > threshold`` (strictly greater).
    """
    if manages_own_context:
        return False
    if threshold is None:
        threshold = threshold_from_env(os.environ.get(THRESHOLD_ENV))
    if threshold <= 0.0 or threshold >= 1.0:
        return False
    if session_total_tokens is not None:
        tokens = session_total_tokens
    else:
        tokens = _estimate_tokens(conversation, estimator)
    if context_limit == 0:
        # f64 division in Goose: x/0 is +inf (compact) unless x is 0 (NaN, never compact).
        return tokens > 0
    return tokens / context_limit > threshold


def compute_tool_call_cutoff(context_limit: int, threshold: float) -> int:
    """How many tool pairs may pile up before tool-pair summarization starts.

    ``clamp(3 * floor(context_limit * t) // 20000, 10, 500)``, where ``t`` is `threshold` when
    ``0 < threshold <= 1`` (1.0 counts as valid here) and 0.8 otherwise.

    Args:
        context_limit: The model's context window in tokens.
        threshold: The auto-compact threshold.

    Returns:
        The cutoff, between 10 and 500.
    """
    t = threshold if 0.0 < threshold <= 1.0 else DEFAULT_COMPACTION_THRESHOLD
    cutoff = (3 * math.floor(context_limit * t)) // 20000
    return max(10, min(500, cutoff))


def tool_ids_to_summarize(conversation: Sequence[Message], cutoff: int,
                          protect_last: int = 0) -> list[str]:
    """The oldest tool-call ids to summarize as pairs, or none yet.

    Eligible calls are tool requests in agent-visible messages, oldest first, minus the newest
    `protect_last` (the current turn). When more than ``cutoff + 10`` are eligible, the oldest
    10 are returned.

    Args:
        conversation: The session's messages.
        cutoff: From `compute_tool_call_cutoff`.
        protect_last: How many of the newest tool calls must not be touched.

    Returns:
        Up to 10 tool-request ids, oldest first; empty below the trigger.
    """
    ids = [r.id for m in conversation if m.is_agent_visible for r in m.tool_requests()]
    eligible = ids[: max(0, len(ids) - protect_last)]
    if len(eligible) <= cutoff + TOOL_PAIR_BATCH:
        return []
    return eligible[:TOOL_PAIR_BATCH]
