"""`inspect_session`: what a loaded session holds, as one plain dict (for the CLI and notebooks)."""

from __future__ import annotations

from collections import Counter
from typing import NotRequired, TypedDict

from workbench._json_types import JSONObject, JSONValue
from workbench.sessions._session import Session, meta_list, meta_records
from workbench.tokens import TokenEstimator, context_tokens, default_estimator


class LargestMessage(TypedDict):
    """The session's largest message: its index, role and token count."""

    index: int
    role: str
    tokens: int


class SessionInspection(TypedDict):
    """What `inspect_session` returns (its keys are described there)."""

    format: str
    id: str
    path: str
    messages: int
    by_role: dict[str, int]
    agent_invisible: int
    tool_calls: int
    tool_errors: int
    unanswered_tool_calls: int
    tokens: int
    tokens_all_messages: int
    largest_message: LargestMessage | None
    compactions: list[JSONObject]
    reference_summaries: int
    unknown_items: int
    models: list[JSONValue]
    usage: JSONValue
    warnings: list[JSONValue]
    questions: NotRequired[JSONObject]
    """The session's question set, when the CLI is asked for it."""


def inspect_session(session: Session, estimator: TokenEstimator | None = None) -> SessionInspection:
    """Summarize a session: sizes, tool use, token counts, recorded compactions, problems.

    Args:
        session: A loaded session.
        estimator: Token counter; defaults to Goose's o200k estimator.

    Returns:
        A JSON-ready dict: ``format``, ``id``, ``path``, ``messages``, ``by_role``,
        ``agent_invisible``, ``tool_calls``, ``tool_errors``, ``unanswered_tool_calls``,
        ``tokens`` (Goose's ``count_context_tokens``: agent-visible messages),
        ``tokens_all_messages`` (every message, hidden ones too), ``largest_message``
        (``index``, ``role``, ``tokens``), ``compactions``, ``reference_summaries`` (count),
        ``unknown_items``, ``models``, ``usage`` and ``warnings``.
    """
    if estimator is None:
        estimator = default_estimator()
    messages = session.messages
    per_message = [estimator.count_chat_tokens("", [m]) for m in messages]
    largest: LargestMessage | None = None
    if messages:
        index = max(range(len(messages)), key=per_message.__getitem__)
        largest = {"index": index, "role": messages[index].role, "tokens": per_message[index]}
    requests = [r for m in messages for r in m.tool_requests()]
    responses = [r for m in messages for r in m.tool_responses()]
    answered = {r.id for r in responses}
    meta = session.meta
    return {
        "format": session.format,
        "id": session.id,
        "path": session.path,
        "messages": len(messages),
        "by_role": dict(Counter(m.role for m in messages)),
        "agent_invisible": sum(1 for m in messages if not m.is_agent_visible),
        "tool_calls": len(requests),
        "tool_errors": sum(1 for r in responses if r.tool_result.is_error),
        "unanswered_tool_calls": sum(1 for r in requests if r.id not in answered),
        "tokens": context_tokens(messages, estimator),
        "tokens_all_messages": sum(per_message),
        "largest_message": largest,
        "compactions": meta_records(session, "compactions"),
        "reference_summaries": len(meta_list(session, "reference_summaries")),
        "unknown_items": sum(len(m.unknown_items()) for m in messages),
        "models": list(meta_list(session, "models")),
        "usage": meta.get("usage"),
        "warnings": list(meta_list(session, "warnings")),
    }


def format_inspection(info: SessionInspection) -> str:
    """Render one `inspect_session` result as an aligned text block."""
    roles = ", ".join(f"{k} {v}" for k, v in sorted(info["by_role"].items())) or "none"
    largest = info["largest_message"]
    rows = [
        ("session", f"{info['id']}  ({info['format']})"),
        ("path", info["path"]),
        ("messages", f"{info['messages']}  ({roles}; {info['agent_invisible']} hidden from agent)"),
        ("tool calls", f"{info['tool_calls']}  ({info['tool_errors']} errors, "
                       f"{info['unanswered_tool_calls']} unanswered)"),
        ("tokens (o200k)", f"{info['tokens']:,} agent-visible, "
                           f"{info['tokens_all_messages']:,} all messages"),
        ("largest message", "-" if largest is None else
         f"#{largest['index']} {largest['role']}, {largest['tokens']:,} tokens"),
        ("compactions", _compactions(info["compactions"])),
        ("ref. summaries", str(info["reference_summaries"])),
        ("models", ", ".join(str(m) for m in info["models"]) or "-"),
        ("unknown items", str(info["unknown_items"])),
        ("warnings", str(len(info["warnings"]))),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += [f"{''.ljust(width)}  ! {w}" for w in info["warnings"][:5]]
    return "\n".join(lines)


def _compactions(points: list[JSONObject]) -> str:
    if not points:
        return "0"
    parts = []
    for p in points:
        text = f"at #{p.get('index')}"
        if p.get("trigger"):
            text += f" {p['trigger']}"
        if p.get("pre_tokens"):
            text += f" ({p['pre_tokens']:,} tokens before)"
        parts.append(text)
    return f"{len(points)}: " + "; ".join(parts)
