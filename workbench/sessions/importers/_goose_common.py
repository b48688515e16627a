"""What the three Goose importers share: reading one message, visibility facts, compaction points.

Goose keeps the whole history after a compaction: the originals turn agent-invisible, then come
the summary (a user message, agent-only), the continuation (assistant, agent-only) and the
preserved prompt. The importers keep every message with its flags (the harness decides what to
replay) and record in ``meta`` how many messages the agent no longer sees and where each summary
sits.
"""

from __future__ import annotations

from workbench._json_types import JSONObject, JSONValue
from workbench.messages import Message, UnknownContent
from workbench.sessions.importers._readers import Problems

EXPECTED_MESSAGE = "a Goose message object {id, role: user|assistant, created, content: [items], metadata}"
SUMMARY_PREFIXES = ("# Conversation Summary", "Here is a summary of the conversation",
                    "## Conversation Summary")
CONTINUATION_MARKERS = ("context was compacted", "previous message contains a summary")
MANUAL_MARKER = "at the user's request"
LEGACY_COMPACTED = "conversationCompacted"
GOOSE_ONLY_ITEMS = frozenset({"toolRequest", "toolResponse", "thinking", "redactedThinking",
                              "toolConfirmationRequest", "actionRequired", "frontendToolRequest",
                              "systemNotification", "conversationCompacted"})


def looks_like_goose_message(d: JSONValue) -> bool:
    """True for a dict shaped like a Goose message (role user/assistant, content items, created)."""
    if not isinstance(d, dict) or d.get("role") not in ("user", "assistant"):
        return False
    content = d.get("content")
    if not isinstance(content, list):
        return False
    if "created" in d or isinstance(d.get("metadata"), dict):
        return True
    return any(isinstance(c, dict) and c.get("type") in GOOSE_ONLY_ITEMS for c in content)


def read_goose_message(raw: JSONValue, where: int | str, problems: Problems) -> Message | None:
    """Parse one Goose message dict; a bad one goes to `problems` and gives None.

    Legacy ``conversationCompacted`` items are kept as unknown content (Goose drops them on load;
    here they also mark where an old Goose compacted).
    """
    if not isinstance(raw, dict):
        problems.bad(where, f"record is a JSON {type(raw).__name__}, not an object",
                     expected=EXPECTED_MESSAGE)
        return None
    role = raw.get("role")
    if role not in ("user", "assistant"):
        problems.bad(where, f"message role is {role!r}", expected=EXPECTED_MESSAGE)
        return None
    if not isinstance(raw.get("content", []), list):
        problems.bad(where, "message content is not a list", expected=EXPECTED_MESSAGE)
        return None
    try:
        return Message.from_goose(raw)
    except (ValueError, TypeError, KeyError) as exc:
        problems.bad(where, f"not a Goose message: {exc}", expected=EXPECTED_MESSAGE)
        return None


def _is_continuation(msg: Message | None) -> bool:
    if msg is None or msg.role != "assistant" or msg.is_user_visible:
        return False
    text = msg.concat_text().lower()
    return any(marker in text for marker in CONTINUATION_MARKERS)


def visibility_meta(messages: list[Message]) -> JSONObject:
    """Counts of hidden messages plus the recorded compaction points and their summaries.

    A compaction point is an agent-only user message that starts like a Goose summary or is
    followed by an agent-only continuation message, or a legacy ``conversationCompacted`` item.
    Its ``trigger`` is ``manual`` or ``auto`` when the continuation text tells, else None.
    """
    compactions: list[JSONValue] = []
    summaries: list[JSONValue] = []
    for i, msg in enumerate(messages):
        if any(isinstance(c, UnknownContent) and c.type == LEGACY_COMPACTED for c in msg.content):
            compactions.append({"index": i, "trigger": None, "pre_tokens": None,
                                "marker": LEGACY_COMPACTED})
            continue
        if msg.role != "user" or msg.is_user_visible or not msg.is_agent_visible \
                or msg.is_turn_context:
            continue
        text = msg.concat_text()
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        continued = _is_continuation(nxt)
        if not (text.lstrip().startswith(SUMMARY_PREFIXES) or continued):
            continue
        trigger = None
        if continued and nxt is not None:
            trigger = "manual" if MANUAL_MARKER in nxt.concat_text() else "auto"
        compactions.append({"index": i, "trigger": trigger, "pre_tokens": None})
        summaries.append({"index": i, "source": "goose", "text": text})
    return {
        "agent_invisible_messages": sum(1 for m in messages if not m.is_agent_visible),
        "user_invisible_messages": sum(1 for m in messages if not m.is_user_visible),
        "compactions": compactions,
        "reference_summaries": summaries,
    }
