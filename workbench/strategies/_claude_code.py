"""``claude-code``: Claude Code's automatic compaction, as its public documentation and the
published reverse-engineering describe it.

Sources: https://code.claude.com/docs/en/context-window (what compaction keeps and re-injects);
the nine-section summary as community extractions of the prompt list it
(https://ccprompts.info/prompts/service/service-compact-partial); the trigger, summary cap and
circuit breaker from anthropics/claude-code#31806 and https://juejin.cn/post/7647909099690246178;
the files re-attached after compaction from the source analysis at
https://zhanghandong.github.io/harness-engineering-from-cc-to-ai-coding/en/part3/ch10.html.
Summarised in ``../shared/reference/peers.md`` B.5.

- Trigger: near the limit. The window less a reserve for the reply (the smaller of the
  model's output cap and 20,000 tokens) is the effective window; compaction fires 13,000
  tokens below it (about 83.5 % of a 200k window).
- The summary: the whole conversation goes to the model with the policy's prompt, which asks
  for a private ``<analysis>`` and then nine sections (primary request and intent, key
  technical concepts, files and code, errors and fixes, problem solving, all user messages,
  pending tasks, current work, optional next step). The analysis is dropped; the summary
  becomes the first message of the new context, introduced as the continuation of an earlier
  conversation.
- Re-injected after it: the files the agent read most recently, newest first, at most 5, each
  cut to 5,000 tokens and 50,000 in all (Claude Code re-reads them from disk; the replay takes
  the contents the session last read). Project memory (CLAUDE.md) and invoked skills are
  re-read from disk too; a replayed recording has no disk to read, so nothing stands for them.
- Failures: a summary call that fails leaves the context as it was; after 3 failures in a
  row the breaker opens and later rounds no longer call the model (the breaker was added
  after sessions were seen failing 50 times and more in a row).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, Strategy, StrategyResult
from workbench.strategies._policy import (
    Calls,
    PolicySettings,
    TokenAmount,
    load_prompt,
    policy_result,
    strip_thinking,
    tokens_of,
)
from workbench.strategies._registry import strategy
from workbench.tokens import TokenEstimator

__all__ = ["CONTINUATION_LEAD", "ClaudeCodeSettings", "ClaudeCodeStrategy", "recent_reads"]

CONTINUATION_LEAD = ("This conversation continues an earlier one that ran out of context. "
                     "What happened before is summarised here:\n\n")
"""The text the summary message starts with."""
REQUEST = "Write the analysis and the nine-section summary of the conversation below."
READ_TOOLS = ("read", "view", "cat")
PATH_KEYS = ("path", "file_path", "file", "filename")


class ClaudeCodeSettings(PolicySettings):
    """Settings of ``claude-code`` (defaults: the published figures)."""

    output_reserve: TokenAmount = 20_000
    """Tokens kept for the reply: the smaller of the output cap and 20,000."""
    buffer: TokenAmount = 13_000
    """How far below the effective window compaction fires."""
    restore_files: int = Field(default=5, ge=0)
    """Recently read files re-attached after compaction."""
    restore_file_tokens: TokenAmount = 5_000
    """Each re-attached file is cut to this many tokens."""
    restore_budget: TokenAmount = 50_000
    """All re-attached files together stay within this many tokens."""
    max_failures: int = Field(default=3, ge=1)
    """Failed compactions in a row after which the breaker opens."""


def _read_path(name: str, args: object) -> str | None:
    if not any(word in name.lower() for word in READ_TOOLS) or not isinstance(args, dict):
        return None
    if args.get("command") not in (None, "view"):
        return None
    return next((str(args[k]) for k in PATH_KEYS if isinstance(args.get(k), str)), None)


def recent_reads(messages: list[Message]) -> list[tuple[str, str]]:
    """``(path, contents)`` of the files the conversation read, newest read first, one per
    path (its latest read)."""
    calls: dict[str, str] = {}
    for m in messages:
        for r in m.tool_requests():
            path = _read_path(r.name or "", r.arguments)
            if path is not None:
                calls[r.id] = path
    found: dict[str, str] = {}
    for m in reversed(messages):
        for item in reversed(m.tool_responses()):
            path = calls.get(item.id)
            if path is not None and path not in found and not item.tool_result.is_error:
                found[path] = item.text()
    return list(found.items())


@strategy("claude-code")
class ClaudeCodeStrategy(Strategy):
    """Claude Code's auto-compaction: a nine-section analysed summary near the limit, then
    the most recently read files re-attached (module docstring)."""

    Settings = ClaudeCodeSettings
    settings: ClaudeCodeSettings
    uses_template = False

    def __init__(self, settings: BaseModel | None = None) -> None:
        super().__init__(settings)
        self.failures = 0  # in a row; the breaker opens at max_failures

    def trigger_tokens(self, window: int) -> int | None:
        """The effective window less the buffer."""
        s = self.settings
        return max(1, window - tokens_of(s.output_reserve, window) - tokens_of(s.buffer, window))

    def _restored(self, messages: list[Message], request: CompactionRequest) -> list[Message]:
        s = self.settings
        each = tokens_of(s.restore_file_tokens, request.window)
        left = tokens_of(s.restore_budget, request.window)
        out = []
        for path, text in recent_reads(messages)[:s.restore_files]:
            text = _cut_tokens(text, each, request.estimator)
            cost = int(request.estimator.count_text_tokens(text))
            if cost > left:
                break
            left -= cost
            out.append(Message.user(f"Contents of {path}, read again after the summary:\n{text}"))
        return out

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Summarise, then re-attach recent files; a failure is counted for the breaker.

        Raises:
            CompactionError: the summary call failed (the context is left as it was).
            ContextLengthExceeded: the conversation does not fit the summariser's window.
        """
        messages = [m for m in request.messages if m.is_agent_visible]
        if self.failures >= self.settings.max_failures:
            return policy_result(messages, request, compacted=False,
                                 reason=f"breaker open after {self.failures} failures in a row")
        calls = Calls(request.model)
        try:
            reply = await calls.ask(load_prompt("claude-code"), messages, REQUEST)
        except Exception:
            self.failures += 1
            raise
        self.failures = 0
        summary = strip_thinking(reply)
        context = [Message.user(CONTINUATION_LEAD + summary), *self._restored(messages, request)]
        return policy_result(context, request, calls=calls, summary=summary,
                             restored_files=len(context) - 1)


def _cut_tokens(text: str, limit: int, estimator: TokenEstimator) -> str:
    """`text` cut to about `limit` tokens (its head: the start of a file says most)."""
    if estimator.count_text_tokens(text) <= limit:
        return text
    lines = text.splitlines()
    lo, hi = 0, len(lines)
    while lo < hi:  # the most whole lines that fit
        mid = (lo + hi + 1) // 2
        if estimator.count_text_tokens("\n".join(lines[:mid])) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return "\n".join(lines[:lo]) + "\n[cut to fit]"
