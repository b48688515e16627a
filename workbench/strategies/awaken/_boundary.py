"""The "safe frontier": the last index a compaction pass may summarize through.

Mirrors ``find_compaction_boundary`` in ``context/compaction.rs``.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.messages import Message
from workbench.strategies.awaken._view import call_ids, is_tool, result_ids


def abandoned_call_ids(messages: Sequence[Message]) -> set[str]:
    """Calls that never got a result and that the conversation has moved past.

    A call is abandoned when no Tool message anywhere answers it and a non-tool message follows
    its assistant (after any Tool messages that answer its siblings): results arrive right after
    the call, so it can no longer be answered.
    """
    answered = {cid for m in messages for cid in result_ids(m)}
    out: set[str] = set()
    for i, msg in enumerate(messages):
        missing = [cid for cid in call_ids(msg) if cid not in answered]
        if not missing:
            continue
        j = i + 1
        while j < len(messages) and is_tool(messages[j]):
            j += 1
        if j < len(messages):
            out.update(missing)
    return out


def find_compaction_boundary(messages: Sequence[Message], start: int, end: int, *,
                             skip_abandoned_calls: bool = False) -> int | None:
    """The last index in ``[start, end)`` after which no tool round is open.

    The scan keeps a set of open call ids: an assistant's calls are added, a Tool message's
    answers removed. Index ``i`` is safe when, after message ``i``, the set is empty and message
    ``i + 1`` (looked up past `end`, so a cut never separates calls from results kept raw) is not
    a Tool message. A call that never gets a result keeps the set non-empty for good, which
    freezes the frontier just before it for the rest of the list (awaken's quirk).

    Args:
        messages: The full message list.
        start: First index scanned.
        end: One past the last index scanned.
        skip_abandoned_calls: The fix for the frozen frontier: calls in `abandoned_call_ids` never
            open a round. False reproduces awaken.

    Returns:
        The last safe index, or None when the range holds none.
    """
    if end <= start:
        return None
    ignored = abandoned_call_ids(messages) if skip_abandoned_calls else set()
    open_calls: set[str] = set()
    best: int | None = None
    for idx in range(start, min(end, len(messages))):
        msg = messages[idx]
        open_calls.update(cid for cid in call_ids(msg) if cid not in ignored)
        for cid in result_ids(msg):
            open_calls.discard(cid)
        next_is_tool = idx + 1 < len(messages) and is_tool(messages[idx + 1])
        if not open_calls and not next_is_tool:
            best = idx
    return best
