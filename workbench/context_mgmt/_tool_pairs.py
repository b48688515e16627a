"""Goose's tool-pair summarization (``context_mgmt/mod.rs``: ``summarize_tool_call`` and
``maybe_summarize_tool_pairs``).

Long tool loops pile up request/response pairs. Once more than ``cutoff + 10`` calls are
eligible, Goose replaces the oldest 10 calls with short agent-only notes, one model call per
request/response message pair. An assistant message can hold several parallel calls answered by
one user message; the pair is formatted whole, so all its calls share one summary request.

Grouping rule (the newest Goose): for each id `tool_ids_to_summarize` returns, oldest first,
take the agent-visible messages holding that id's request or response. The id is skipped when
that is not exactly one request message plus one response message, or when the two messages'
request ids and response ids differ (a sibling call answered elsewhere). Ids whose message pair
was already seen join that pair's group. Seven messages with two parallel calls each and cutoff
2 give 14 eligible calls (> 12), the oldest 10 ids cover the first five pairs: five summaries.

Difference from Goose: pairs are keyed by their positions in the conversation instead of their
persisted message ids, so messages without ids (other recorders) still group; Goose skips them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from workbench.compaction._format import TranscriptStyle, format_message_for_compacting
from workbench.compaction._model import CompactionModel
from workbench.context_mgmt._threshold_config import tool_ids_to_summarize
from workbench.errors import CompactionError, ModelCallError
from workbench.messages import Message, MessageMetadata, ToolRequest, ToolResponse

__all__ = [
    "NO_AGENT_VISIBLE_PAIR_ERROR",
    "TOOL_PAIR_SUMMARY_PROMPT",
    "maybe_summarize_tool_pairs",
    "summarize_tool_pair",
    "tool_pair_groups",
]

logger = logging.getLogger(__name__)

TOOL_PAIR_SUMMARY_PROMPT = (
    "You will see one tool call made by an AI agent and the result it got back. Replace the "
    "pair with a short note so it takes fewer tokens in the agent's context.\n\n"
    "Answer with one brief message that says what was done and what came of it: which tool "
    "was used, for what, and the key facts in the result (paths, names, numbers, errors). "
    "Leave out raw output the agent will not need again. For example: \"Listed the src/ "
    "folder: it holds main.rs and parser.rs.\""
)
"""System prompt of a tool-pair summary request (our wording of Goose's instruction)."""

NO_AGENT_VISIBLE_PAIR_ERROR = "No agent-visible tool pair to summarize"
"""Start of the `CompactionError` text when a pair is hidden from the agent."""


def _agent_view(message: Message) -> Message | None:
    if not message.is_agent_visible:
        return None
    projected = message.agent_projection()
    return projected if projected.content else None


def _ids(view: Message | None, kind: type[ToolRequest] | type[ToolResponse]) -> set[str]:
    return set() if view is None else {c.id for c in view.content if isinstance(c, kind)}


def _pair_error(detail: str) -> CompactionError:
    return CompactionError(
        f"{NO_AGENT_VISIBLE_PAIR_ERROR}: {detail}. Pass an agent-visible assistant message "
        "with tool requests and the agent-visible user message that answers them.")


async def summarize_tool_pair(model: CompactionModel, request_msg: Message,
                              response_msg: Message, *,
                              style: TranscriptStyle = "goose") -> Message:
    """Summarize one tool request/response message pair with one model call.

    Both messages are projected to what the agent sees first (tool-result blocks meant only for
    the user are removed), then formatted like the compaction transcript and sent as one user
    message under `TOOL_PAIR_SUMMARY_PROMPT`. A response whose every block is user-only still
    formats (as non-text content), without the hidden text.

    Args:
        model: The summarizer.
        request_msg: The assistant message holding the tool request(s).
        response_msg: The user message holding the matching tool response(s).
        style: Transcript style for the formatted pair (``"goose"`` as in Goose).

    Returns:
        The model's reply as an agent-only user message, with a new id and ``created`` equal to
        the response's (the pair's last message). The summarization usage is not kept, as in
        Goose.

    Raises:
        CompactionError: the request or the response is not visible to the agent, or they share
            no tool-call id; the text starts with `NO_AGENT_VISIBLE_PAIR_ERROR`.
        ModelCallError: the model call failed.
    """
    request = _agent_view(request_msg)
    response = _agent_view(response_msg)
    request_ids = _ids(request, ToolRequest)
    response_ids = _ids(response, ToolResponse)
    if request is None or not request_ids:
        raise _pair_error("the request message has no tool request the agent can see")
    if response is None or not response_ids:
        raise _pair_error("the response message has no tool response the agent can see")
    if not request_ids & response_ids:
        raise _pair_error(f"the response answers none of the calls {sorted(request_ids)}")
    formatted = "\n".join(format_message_for_compacting(m, style) for m in (request, response))
    reply, _usage = await model.complete(TOOL_PAIR_SUMMARY_PROMPT, [Message.user(formatted)])
    return reply.copy_with(role="user", created=response_msg.created,
                           metadata=MessageMetadata.agent_only(), id=f"msg_{uuid.uuid4()}")


def _pair_for(conversation: Sequence[Message], tool_id: str) -> tuple[int, int] | None:
    holders = []
    for index, m in enumerate(conversation):
        view = _agent_view(m)
        if view is None:
            continue
        if any(isinstance(c, (ToolRequest, ToolResponse)) and c.id == tool_id
               for c in view.content):
            holders.append((index, view))
    if len(holders) != 2:
        return None
    (i, first), (j, second) = holders
    requests = {c.id for m in (first, second) for c in m.content if isinstance(c, ToolRequest)}
    responses = {c.id for m in (first, second) for c in m.content if isinstance(c, ToolResponse)}
    if requests != responses or not first.tool_requests() or not second.tool_responses():
        return None
    return i, j


def tool_pair_groups(conversation: Sequence[Message], cutoff: int,
                     protect_last_n: int = 0) -> list[tuple[int, int]]:
    """The message pairs tool-pair summarization would summarize, oldest first.

    Args:
        conversation: The session's messages.
        cutoff: From `compute_tool_call_cutoff`.
        protect_last_n: How many of the newest tool calls must not be touched.

    Returns:
        ``(request index, response index)`` per group, one per summary request; empty below the
        trigger. Ids that do not form a clean pair (see the module docstring) are left out.
    """
    groups: list[tuple[int, int]] = []
    for tool_id in tool_ids_to_summarize(conversation, cutoff, protect_last_n):
        pair = _pair_for(conversation, tool_id)
        if pair is None:
            logger.warning("tool call %s is not one clean request/response pair; not summarized",
                           tool_id)
        elif pair not in groups:
            groups.append(pair)
    return groups


async def maybe_summarize_tool_pairs(model: CompactionModel, conversation: Sequence[Message],
                                     cutoff: int, protect_last_n: int = 0) -> list[Message]:
    """Summarize the oldest tool pairs once enough have piled up (one model call per group).

    Goose runs this in the background and skips it when the provider manages its own context
    or ``GOOSE_TOOL_PAIR_SUMMARIZATION`` is off; those checks are the caller's.

    Args:
        model: The summarizer.
        conversation: The session's messages.
        cutoff: From `compute_tool_call_cutoff`.
        protect_last_n: How many of the newest tool calls must not be touched.

    Returns:
        The summaries, oldest group first (see `summarize_tool_pair`). A group whose model call
        or pair check fails is logged and left out, as in Goose.
    """
    summaries: list[Message] = []
    for i, j in tool_pair_groups(conversation, cutoff, protect_last_n):
        try:
            summaries.append(await summarize_tool_pair(model, conversation[i], conversation[j]))
        except (CompactionError, ModelCallError) as exc:
            logger.warning("tool pair at messages %d/%d was not summarized: %s", i, j, exc)
    return summaries
