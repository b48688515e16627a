"""Hand-built conversations and a character-counting estimator for the policy tests: every
figure a policy compares is then a length the test can state."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from workbench.messages import Message, TextContent
from workbench.sessions import Session
from workbench.strategies import CompactionRequest


def size(message: Message) -> int:
    """Characters of a message: its texts, tool outputs and call arguments (JSON)."""
    return (sum(len(c.text) for c in message.content if isinstance(c, TextContent))
            + sum(len(r.text()) for r in message.tool_responses())
            + sum(len(json.dumps(r.arguments or {})) for r in message.tool_requests()))


class Chars:
    """One token per character (`size`); counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def count_chat_tokens(self, system: str, messages: Sequence[Message],
                          tools: object = None) -> int:
        self.calls += 1
        return len(system) + sum(size(m) for m in messages)

    def count_text_tokens(self, text: str) -> int:
        return len(text)

    def count_context_tokens(self, messages: Sequence[Message]) -> int:
        return sum(size(m) for m in messages if m.is_agent_visible)


def call(call_id: str, name: str, args: dict[str, Any], output: str,
         say: str = "") -> list[Message]:
    """An assistant tool call and the user message carrying its output."""
    ask = Message.assistant(say) if say else Message(role="assistant")
    return [ask.with_tool_request(call_id, name, args),
            Message(role="user").with_tool_response(call_id, output)]


def request(messages: list[Message], model: Any = None, window: int | None = 1000,
            **kw: Any) -> CompactionRequest:
    """A compaction request over `messages` with the character estimator."""
    return CompactionRequest(messages=messages, model=model, window=window, estimator=Chars(),
                             **kw)


def session(messages: list[Message], sid: str = "hand-built", **meta: Any) -> Session:
    """A session of `messages` (``meta`` as given)."""
    return Session(id=sid, format="test", path="-", messages=messages, meta=dict(meta))


def texts(messages: Sequence[Message]) -> list[str]:
    """Each message as ``role: text | outputs``, for exact comparisons."""
    out = []
    for m in messages:
        parts = [m.concat_text()] + [r.text() for r in m.tool_responses()]
        parts += [f"{r.name}{json.dumps(r.arguments or {})}" for r in m.tool_requests()]
        out.append(f"{m.role}: " + " | ".join(p for p in parts if p))
    return out
