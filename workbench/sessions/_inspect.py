"""`inspect_session`: what a loaded session holds, as one plain dict (for the CLI and notebooks)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from workbench.sessions._session import Session
from workbench.tokens import TokenEstimator, context_tokens


def inspect_session(session: Session, estimator: TokenEstimator | None = None) -> dict[str, Any]:
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
        from workbench.tokens import default_estimator

        estimator = default_estimator()
    messages = session.messages
    per_message = [estimator.count_chat_tokens("", [m]) for m in messages]
    largest: dict[str, Any] | None = None
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
        "compactions": list(meta.get("compactions") or []),
        "reference_summaries": len(meta.get("reference_summaries") or []),
        "unknown_items": sum(len(m.unknown_items()) for m in messages),
        "models": list(meta.get("models") or []),
        "usage": meta.get("usage"),
        "warnings": list(meta.get("warnings") or []),
    }


def format_inspection(info: dict[str, Any]) -> str:
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
        ("models", ", ".join(info["models"]) or "-"),
        ("unknown items", str(info["unknown_items"])),
        ("warnings", str(len(info["warnings"]))),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += [f"{''.ljust(width)}  ! {w}" for w in info["warnings"][:5]]
    return "\n".join(lines)


def _compactions(points: list[dict[str, Any]]) -> str:
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
