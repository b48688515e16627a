"""Next-action agreement: what the recorded agent did right after its compaction, and whether
an answerer's next turn does the same.

At a recorded compaction boundary (a Claude Code ``compact_boundary``, a Goose summary) the
session shows what the agent did next: its first assistant turn after the boundary. Between
the boundary and that turn sit the messages the agent also saw before acting (the user's
"continue", command output), minus the recorded summary itself. `next_action_case` collects
both; the answerer then produces a next turn from the compacted context plus those messages.

Two actions agree (`actions_match`) when they call the same tool (names compared
case-insensitively) on the same main argument (`main_argument`): the same file (either path a
trailing part of the other), the same command head (``git status``), the same pattern or
query; a turn that calls no tool agrees only with another that calls none. A reply names its
action either as a real tool call or as the line ``TOOL <name> <argument>`` (`parse_action`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench.messages import Message
from workbench.metrics._common import normalize_ws
from workbench.probes._normalize import (
    normalize_command,
    normalize_path,
    normalize_text,
    path_matches,
)
from workbench.probes._transcript import ToolAction, action_of
from workbench.sessions import Session

__all__ = ["NextActionCase", "actions_match", "next_action_case", "parse_action"]

_TOOL_LINE = re.compile(r"^[\s>*_`-]*(?:TOOL|ACTION)\s*[:=]?\s*`?([\w.:/-]+)`?\s*[:,-]?\s*(.*)$",
                        re.IGNORECASE | re.MULTILINE)
_NONE_LINE = re.compile(r"^[\s>*_`-]*(?:NONE|NO TOOL)\b", re.IGNORECASE | re.MULTILINE)


@dataclass
class NextActionCase:
    """What the recorded agent did right after a compaction boundary.

    Attributes:
        boundary: The boundary's message index (the compacted prefix is the messages before).
        lead_in: Agent-visible messages after the boundary and before the agent's next turn
            (the recorded summary left out): what the agent saw before acting.
        recorded: The recorded next action (`ToolAction`; ``tool`` None for a turn with no
            tool call).
        tools: Tool names the session used, in first-use order (for the answerer's prompt).
    """

    boundary: int
    lead_in: list[Message] = field(default_factory=list)
    recorded: ToolAction = field(default_factory=lambda: ToolAction(None))
    tools: list[str] = field(default_factory=list)


def _recorded_summaries(session: Session) -> set[str]:
    return {normalize_ws(str(r.get("text") or ""))
            for r in (getattr(session, "meta", None) or {}).get("reference_summaries") or []
            if isinstance(r, dict)}


def next_action_case(session: Session, boundary: int | None) -> NextActionCase | None:
    """The recorded next action after `boundary`, or None when there is none to compare
    (no boundary, or no assistant turn after it).

    Args:
        session: The whole recorded session.
        boundary: The compaction boundary's message index.
    """
    if boundary is None:
        return None
    messages: Sequence[Message] = session.messages
    tools = list(dict.fromkeys(r.name for m in messages for r in m.tool_requests() if r.name))
    summaries = _recorded_summaries(session)
    lead_in: list[Message] = []
    for message in messages[boundary:]:
        if not message.is_agent_visible:
            continue
        if message.role == "assistant":
            requests = message.tool_requests()
            if requests:
                recorded = action_of(requests[0].name or "", requests[0].arguments)
            elif message.concat_text().strip():
                recorded = ToolAction(None)
            else:
                continue  # a thinking-only record: the turn goes on
            return NextActionCase(boundary, lead_in, recorded, tools)
        if normalize_ws(message.concat_text()) in summaries:
            continue
        lead_in.append(message)
    return None


def parse_action(reply: Message | str) -> ToolAction:
    """The action a reply names: its first tool call, else a ``TOOL <name> <argument>`` line,
    else no tool call (``NONE``, or a reply naming nothing)."""
    if isinstance(reply, Message):
        requests = reply.tool_requests()
        if requests:
            return action_of(requests[0].name or "", requests[0].arguments)
        text = reply.concat_text()
    else:
        text = reply
    none = _NONE_LINE.search(text)
    found = _TOOL_LINE.search(text)
    if found is None or (none is not None and none.start() < found.start()):
        return ToolAction(None)
    argument = found.group(2).strip().strip("`'\"")
    return ToolAction(found.group(1).strip("`*"), "text", argument)


def _same_argument(given: ToolAction, reference: ToolAction) -> bool:
    kind = reference.kind
    if kind == "text":  # the reference is itself a parsed reply: read it the way it looks
        kind = "path" if "/" in reference.argument.split(" ", 1)[0] else "command"
    if kind == "":
        return True
    if kind == "path":
        a, b = normalize_path(given.argument), normalize_path(reference.argument)
        return bool(a) and (path_matches(a, b) or path_matches(b, a))
    if kind == "command":
        given_head = given.argument if given.kind == "command" else normalize_command(
            given.argument)
        reference_head = (reference.argument if reference.kind == "command"
                          else normalize_command(reference.argument))
        return bool(given_head) and given_head == reference_head
    return normalize_text(given.argument) == normalize_text(reference.argument)


def actions_match(given: ToolAction, reference: ToolAction) -> bool:
    """True when `given` does what `reference` did (see the module docstring)."""
    if given.tool is None or reference.tool is None:
        return given.tool is None and reference.tool is None
    if given.tool.casefold() != reference.tool.casefold():
        return False
    return _same_argument(given, reference)
