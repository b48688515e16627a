"""Primitives of the session generator: planted facts, the message writer, token shares.

`WriterBase` appends messages with deterministic ids and times, keeps running token counts
(all, and in tool results) and sizes generated text to a token budget; the narrative on top
of it lives in `workbench.sessions._generate`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass

from workbench._json_types import JSONObject
from workbench.messages import Message
from workbench.sessions import _generate_text as gt
from workbench.tokens import default_estimator

EPOCH = 1_735_689_600  # 2025-01-01T00:00:00Z; created times are offsets from it


@dataclass
class PlantedFact:
    """A fact planted in a generated session.

    Attributes:
        id: ``f01``, ``f02``...
        kind: ``path``, ``error``, ``identifier``, ``constraint`` or ``value``.
        text: The exact string planted; it occurs in the message at `message_index`.
        message_index: Index in ``session.messages`` where it first appears.
        stale: True when a later message replaced it (see `superseded_by`).
        superseded_by: The id of the fact that replaced it.
    """

    id: str
    kind: str
    text: str
    message_index: int
    stale: bool = False
    superseded_by: str | None = None

    def to_dict(self) -> JSONObject:
        """A JSON-ready dict."""
        return asdict(self)


class WriterBase:
    """Appends messages and planted facts; sizes generated text to token budgets."""

    def __init__(self, seed: int, target: int) -> None:
        self.rng = random.Random(seed)
        self.seed, self.target = seed, target
        self.est = default_estimator()
        self.messages: list[Message] = []
        self.facts: list[PlantedFact] = []
        self.tokens = 0
        self.tool_tokens = 0
        self.clock = EPOCH + self.rng.randint(0, 300 * 86400)
        self.project = gt.project_name(self.rng)
        self.files: dict[str, str] = {}
        self.corpus: list[str] = []  # message_text of every message so far

    # ---- primitives --------------------------------------------------------------------

    def add(self, msg: Message) -> int:
        self.clock += self.rng.randint(2, 75)
        msg.created = self.clock
        msg.id = f"msg-s{self.seed}-{len(self.messages):05d}"
        self.messages.append(msg)
        tokens = self.est.count_chat_tokens("", [msg])
        self.tokens += tokens
        self.tool_tokens += tokens if msg.has_tool_response() else 0
        self.corpus.append(message_text(msg))
        return len(self.messages) - 1

    def fact(self, kind: str, text: str, index: int) -> PlantedFact:
        assert text in message_text(self.messages[index]), (text, index)
        f = PlantedFact(f"f{len(self.facts) + 1:02d}", kind, text, index)
        self.facts.append(f)
        return f

    def supersede(self, old: PlantedFact, kind: str, text: str, index: int) -> PlantedFact:
        """A new fact at message `index` that replaces `old` (marked stale, superseded by it)."""
        new = self.fact(kind, text, index)
        old.stale, old.superseded_by = True, new.id
        return new

    def call(self, say: str, name: str, args: JSONObject, result: str,
             is_error: bool = False) -> tuple[int, int]:
        call_id = f"call_{gt.hex_id(self.rng, 12)}"
        ask = Message.assistant(say) if say else Message(role="assistant")
        first = self.add(ask.with_tool_request(call_id, name, args))
        second = self.add(Message(role="user").with_tool_response(call_id, result,
                                                                 is_error=is_error))
        return first, second

    def fit(self, build: Callable[[int], str], budget: int, per_unit: int,
            least: int = 2) -> str:
        """`build(n)` with `n` chosen so the text is about `budget` tokens (up to 3 tries)."""
        n = max(least, budget // per_unit)
        for _ in range(3):
            text = build(n)
            tokens = self.est.count_text_tokens(text)
            if 0.85 * budget <= tokens <= 1.15 * budget or (tokens > budget and n == least):
                break
            n = max(least, round(n * budget / max(tokens, 1)))
        return text

    def fresh(self, draw: Callable[[], str]) -> str:
        """A drawn name no earlier message contains: a planted fact first appears where planted."""
        while True:
            value = draw()
            if not any(value in text for text in self.corpus):
                return value

    def module(self, path: str, names: list[str], budget: int) -> str:
        rng = self.rng
        text = self.fit(lambda n: gt.python_module(rng, path, names, n), budget, 200)
        self.files[path] = text
        return text

    def edit(self, say: str, path: str, before: str, after: str, small: bool = False) -> int:
        context = self.rng.randint(1, 2) if small else self.rng.randint(3, 7)
        old, new, first = gt.edit_snippet(before, after, context)
        lines = after.splitlines()
        lo = max(0, first - 1 - self.rng.randint(6, 14))
        hi = first + len(new.splitlines()) + self.rng.randint(6, 14)
        shown = gt.numbered("\n".join(lines[lo:hi]), lo + 1)
        i, _ = self.call(say, "edit_file", {"path": path, "old_str": old, "new_str": new},
                         f"The file {path} has been edited. Here is the result of running "
                         f"`cat -n` on a snippet of the edited file:\n{shown}\nReview the "
                         "changes and make sure they are as expected.")
        return i


def message_text(msg: Message) -> str:
    """Every string a message carries: text, tool-call arguments (JSON) and tool results."""
    parts = [msg.concat_text()]
    parts += [json.dumps(r.arguments, ensure_ascii=False) for r in msg.tool_requests()]
    parts += [str(v) for r in msg.tool_requests() for v in (r.arguments or {}).values()]
    parts += [r.text() for r in msg.tool_responses()]
    return "\n".join(parts)


def tool_share(messages: list[Message]) -> float:
    """The share of a conversation's tokens that sit in tool-result messages.

    Tokens per tool-result message (``count_chat_tokens``) over the whole context
    (``count_context_tokens``), both with `default_estimator`.
    """
    est = default_estimator()
    tool = sum(est.count_chat_tokens("", [m]) for m in messages if m.has_tool_response())
    total = est.count_context_tokens(messages)
    return tool / total if total else 0.0
