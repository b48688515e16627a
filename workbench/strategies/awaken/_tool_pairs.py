"""Keeping tool calls and their results together: the split adjustment and the dangling-call patch.

Mirrors ``adjust_split_for_tool_pairs`` (``context/transform/truncation.rs``) and
``patch_dangling_tool_calls`` (``awaken-runtime-contract/src/contract/transform.rs``).
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.messages import Message, new_message_id
from workbench.strategies.awaken._view import call_ids, has_tool_calls, is_tool, result_ids

INTERRUPTED_TOOL_RESULT_TEXT = "[The tool call was interrupted before it returned a result]"
"""The text of a synthetic result inserted for a call that never got one."""


def adjust_split_for_tool_pairs(history: Sequence[Message], split: int) -> int:
    """Move a split so that it never separates an assistant's calls from their results.

    ``history[split:]`` is what is kept. First, while the first kept message is a Tool message,
    the split moves back (keeping more) until it lands on a non-tool message, normally the assistant
    that issued the calls. Then, if the last dropped message is an assistant with calls, the split
    moves forward past any Tool messages. A split of 0 or at/after the end is returned unchanged.

    Args:
        history: The history (the messages after the system prefix).
        split: The candidate split index.

    Returns:
        The adjusted split.
    """
    if split == 0 or split >= len(history):
        return split
    while split > 0 and is_tool(history[split]):
        split -= 1
    if split > 0 and history[split - 1].role == "assistant" and has_tool_calls(history[split - 1]):
        while split < len(history) and is_tool(history[split]):
            split += 1
    return split


def interrupted_result(call_id: str) -> Message:
    """A synthetic Tool message answering `call_id` with the "interrupted" notice."""
    return Message.user(id=new_message_id()).with_tool_response(
        call_id, INTERRUPTED_TOOL_RESULT_TEXT)


def patch_dangling_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """Give every unanswered tool call a synthetic "interrupted" result.

    The set of answered ids is taken from Tool messages anywhere in the list. For an assistant
    with unanswered calls, one synthetic Tool message per missing id (in call order) is inserted
    right after the assistant and after any Tool messages that already follow it.

    Args:
        messages: The request messages.

    Returns:
        A new list; the input is not modified.
    """
    answered = {cid for m in messages for cid in result_ids(m)}
    insertions: list[tuple[int, list[Message]]] = []
    for i, msg in enumerate(messages):
        if msg.role != "assistant":
            continue
        missing = [cid for cid in call_ids(msg) if cid not in answered]
        if not missing:
            continue
        at = i + 1
        while at < len(messages) and is_tool(messages[at]):
            at += 1
        insertions.append((at, [interrupted_result(cid) for cid in missing]))
    out = list(messages)
    for at, synthetic in reversed(insertions):
        out[at:at] = synthetic
    return out
