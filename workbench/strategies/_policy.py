"""What the agents' policies share: token amounts, their prompts, the summariser call, and the
message surgery they do (tool outputs cleared or cut, human requests found).

Each policy (``claude-code``, ``codex``, ``gemini-cli``...) lives in a file of its own; this
module holds only what two or more of them use.

Token amounts. A policy's published parameters are token counts for the windows its product
runs at (Claude Code's 13,000-token buffer of a 200k window). A `TokenAmount` setting takes
either a count (an int) or a share of the window (a float up to 1): the defaults are the
published counts, and an experiment at a small window can state the same share instead
(``buffer = 0.065``).

Prompts. A policy that summarises has its own prompt, `workbench/prompts/policies/<name>.md`
(package data, read with `importlib.resources`). The summariser is sent that prompt as the
system prompt and one user message: the policy's request, then the conversation as a
transcript (Goose's ``[role]: ...`` lines). Whatever the prompt asks to think
through first (``<analysis>``, a scratchpad) is removed from the summary the agent keeps.
"""

from __future__ import annotations

import importlib.resources
import re
import time
from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from workbench.compaction import Attempt, CompactionModel, Usage
from workbench.compaction._format import format_transcript
from workbench.errors import CompactionError, ContextLengthExceeded
from workbench.messages import Message, ToolResponse
from workbench.strategies._base import CompactionRequest, StrategyResult, scored_view

__all__ = ["Calls", "PolicySettings", "TokenAmount", "approx_tokens", "human_text", "load_prompt",
           "policy_result", "replace_outputs", "strip_thinking", "tokens_of", "tool_names"]

TokenAmount = Annotated[int | float, Field(ge=0)]
"""A token count (int), or a share of the window (a float up to 1)."""
PROMPTS = "prompts/policies"
"""Where the policies' prompts live inside the package."""
_THINKING = re.compile(r"<(analysis|scratchpad)>.*?</\1>\s*", re.DOTALL)
_SUMMARY_TAG = re.compile(r"<summary>\s*(.*?)\s*</summary>", re.DOTALL)


class PolicySettings(BaseModel):
    """Base of every policy's settings: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


def tokens_of(amount: float, window: int | None) -> int:
    """`amount` in tokens: a float up to 1 is a share of `window`, anything else a count.

    A share of no window (None) is 0: nothing can be measured against an unknown window.
    """
    if isinstance(amount, float) and amount <= 1:
        return int(amount * window) if window else 0
    return int(amount)


def approx_tokens(text: str) -> int:
    """The rough count Codex and OpenCode use: a token per four bytes, rounded up."""
    return (len(text.encode("utf-8")) + 3) // 4


def load_prompt(name: str) -> str:
    """The text of ``workbench/prompts/policies/<name>.md`` (package data)."""
    resource = importlib.resources.files("workbench").joinpath(PROMPTS).joinpath(f"{name}.md")
    return resource.read_text(encoding="utf-8")


def strip_thinking(text: str) -> str:
    """`text` without its ``<analysis>``/``<scratchpad>`` blocks, and only the inside of a
    ``<summary>`` block when it has one."""
    kept = _THINKING.sub("", text)
    found = _SUMMARY_TAG.search(kept)
    return (found.group(1) if found else kept).strip()


def human_text(message: Message) -> str | None:
    """The text of a user message the human wrote (no tool output in it), or None."""
    if message.role != "user" or message.has_tool_response():
        return None
    text = message.concat_text().strip()
    return text or None


def tool_names(messages: Sequence[Message]) -> dict[str, str]:
    """Tool call id -> tool name, over every request in `messages`."""
    return {r.id: r.name or "" for m in messages for r in m.tool_requests()}


def replace_outputs(message: Message, texts: dict[str, str]) -> Message:
    """`message` with the output of each tool call id in `texts` replaced by its text (the
    error flag kept); the same object when none of its outputs is named."""
    if not any(isinstance(c, ToolResponse) and c.id in texts for c in message.content):
        return message
    items = []
    for item in message.content:
        if isinstance(item, ToolResponse) and item.id in texts:
            stub = Message.user().with_tool_response(item.id, texts[item.id],
                                                     is_error=item.tool_result.is_error)
            item = stub.content[0]
        items.append(item)
    return message.copy_with(content=items)


class Calls:
    """The summariser calls of one compaction: each call's usage and attempt record, and the
    billed usage carried by the error when a call fails.

    Args:
        model: The summariser (a `CompactionModel`).
    """

    def __init__(self, model: CompactionModel | None) -> None:
        if model is None:
            raise ValueError("this policy summarises: it needs a model")
        self.model = model
        self.usages: list[Usage] = []
        self.attempts: list[Attempt] = []

    async def ask(self, system: str, messages: Sequence[Message], request: str) -> str:
        """Send `system` and one user message: `request`, then the transcript of `messages`;
        return the reply text.

        Raises:
            ContextLengthExceeded: the prompt does not fit (the policy decides what to do;
                the usages of earlier calls stay in `usages`).
            CompactionError: any other failure, carrying the usage of the earlier calls.
        """
        prompt = request + "\n\n" + format_transcript(messages)
        started = time.perf_counter()
        number = len(self.attempts) + 1
        try:
            reply, usage = await self.model.complete(system, [Message.user(prompt)])
        except ContextLengthExceeded as exc:
            self.attempts.append(Attempt(number, 0, 0, 0, "context_length_exceeded",
                                         error=str(exc)))
            raise
        except Exception as exc:
            self.attempts.append(Attempt(number, 0, 0, 0, "error", error=str(exc)))
            raise CompactionError(f"summariser call failed: {exc}", billed_usage=self.usages,
                                  attempts=self.attempts) from exc
        self.usages.append(usage)
        self.attempts.append(Attempt(number, 0, 0, 0, "ok", usage=usage,
                                     latency_ms=(time.perf_counter() - started) * 1000))
        return reply.concat_text()

    def failed(self, message: str) -> CompactionError:
        """A `CompactionError` carrying what was billed so far."""
        return CompactionError(message, billed_usage=self.usages, attempts=self.attempts)


def policy_result(context: list[Message], request: CompactionRequest, *,
                  calls: Calls | None = None, summary: str | None = None, compacted: bool = True,
                  **detail: object) -> StrategyResult:
    """The `StrategyResult` of a policy.

    The probes of a cell score everything the agent is left with (the summary and the
    messages kept beside it), so `StrategyResult.summary_text` is the agent-visible text of
    the context; the summary alone is ``detail["summary"]`` (a replay reads its pending
    sections there). A replay (``request.score`` false) gets the summary as the text.
    """
    text, tokens = scored_view(context, request)
    if summary is not None:
        detail["summary"] = summary
        if not request.score:
            text = summary
    return StrategyResult(context=context, usages=list(calls.usages) if calls else [],
                          attempts=list(calls.attempts) if calls else [],
                          summary_text=text, retained_tokens=tokens, compacted=compacted,
                          parse_outcome="text" if summary is not None else None,
                          structured=False, detail=detail)
