"""``gemini-cli``: Gemini CLI's chat compression.

Source: google-gemini/gemini-cli, ``packages/core/src/services/chatCompressionService.ts`` (the
threshold, the share kept, the split point, the tool-output budget, the verification pass, the
inflation check and the truncation-only fallback) and ``packages/core/src/core/prompts.ts`` (the
``<state_snapshot>`` it asks for); summarised in ``../shared/reference/peers.md`` B.10.

- Trigger: half the window (``threshold`` 0.5).
- Tool outputs first: walking from the newest message back, tool outputs are counted against a
  budget of 50,000 tokens; once it is spent, every older output is cut to its last 30 lines
  (Gemini CLI saves the full text to a file the agent can read; the replay has no file).
- Split: the newest ~30 % of the history (by characters) is kept verbatim. The cut is the first
  human message at or after 70 % of the characters; when there is none, everything is
  summarised if the history ends with an assistant message that calls no tool, else the cut
  falls at the last human message before 70 %. Nothing before the cut: no compression.
- The snapshot: the older part goes to the model with a prompt asking for an XML
  ``<state_snapshot>`` (overall goal, key knowledge, file-system state, recent actions, current
  plan), told to carry over an earlier snapshot when there is one; it reads the original
  outputs when they fit the window less 20,000 tokens, else the cut ones. Then a verification
  pass: the model is shown its snapshot and asked to correct anything missing, else to repeat
  it; the second answer is kept (the first when the second is empty).
- The new context: the snapshot (as a user message), a short acknowledgement from the
  assistant, then the kept part (with its cut outputs).
- Discard: when the new context is larger than the one it replaces, it is thrown away and
  the context stays as it was; after that, later rounds only cut tool outputs (and apply the
  cut when it makes the context smaller), as Gemini CLI does after a failed compression.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from workbench.compaction._format import format_message_for_compacting
from workbench.messages import Message
from workbench.strategies._base import CompactionRequest, Strategy, StrategyResult
from workbench.strategies._policy import (
    Calls,
    PolicySettings,
    TokenAmount,
    human_text,
    load_prompt,
    policy_result,
    replace_outputs,
    strip_thinking,
    tokens_of,
)
from workbench.strategies._registry import strategy
from workbench.tokens import TokenEstimator, context_tokens

__all__ = ["ACKNOWLEDGEMENT", "GeminiCliSettings", "GeminiCliStrategy", "cut_tool_outputs",
           "split_point"]

ACKNOWLEDGEMENT = "Understood, I have the context I need from that snapshot."
"""The assistant's reply after the snapshot."""
FIRST_REQUEST = "Write a new <state_snapshot> of the history below."
CARRY_REQUEST = ("The history below already holds a <state_snapshot>. Write an updated "
                 "<state_snapshot> that keeps everything in the earlier one that still holds and "
                 "adds what happened since.")
SNAPSHOT_TAG = "<state_snapshot>"


class GeminiCliSettings(PolicySettings):
    """Settings of ``gemini-cli`` (defaults: Gemini CLI's)."""

    threshold: float = Field(default=0.5, gt=0, le=1)
    """Compress when the prompt reaches this share of the window."""
    preserve_share: float = Field(default=0.3, gt=0, lt=1)
    """The newest share of the history (by characters) kept verbatim."""
    tool_output_budget: TokenAmount = 50_000
    """Tool-output tokens kept whole, newest first; older outputs are cut."""
    tail_lines: int = Field(default=30, ge=1)
    """The lines a cut output keeps (its last ones)."""
    safe_buffer: TokenAmount = 20_000
    """The summariser reads the original outputs only when they fit the window less this."""
    verify: bool = True
    """Run the verification pass."""


def cut_tool_outputs(messages: list[Message], budget: int, tail: int,
                     estimator: TokenEstimator) -> list[Message]:
    """Tool outputs beyond `budget` tokens (counted from the newest) cut to their last `tail`
    lines, with a note that they were cut; the same objects where nothing changed."""
    spent = 0
    texts: dict[str, str] = {}
    for m in reversed(messages):
        for item in reversed(m.tool_responses()):
            text = item.text()
            cost = int(estimator.count_text_tokens(text))
            if spent + cost <= budget:
                spent += cost
                continue
            lines = text.splitlines()
            if len(lines) <= tail:
                spent += cost
                continue
            short = (f"[output too long: only its last {tail} lines are kept]\n"
                     + "\n".join(lines[-tail:]))
            texts[item.id] = short
            spent += int(estimator.count_text_tokens(short))
    return [replace_outputs(m, texts) for m in messages] if texts else list(messages)


def _chars(message: Message) -> int:
    # Gemini CLI measures a message by the length of its JSON; the transcript line says the same
    # text and calls, and is computed for the summary anyway.
    return len(format_message_for_compacting(message))


def split_point(messages: list[Message], keep_share: float) -> int:
    """Index of the first message kept verbatim (see the module docstring); ``len`` when
    everything is summarised, 0 when nothing is."""
    counts = [_chars(m) for m in messages]
    target = sum(counts) * (1 - keep_share)
    last, total = 0, 0
    for i, m in enumerate(messages):
        if human_text(m) is not None:
            if total >= target:
                return i
            last = i
        total += counts[i]
    final = messages[-1] if messages else None
    if final is not None and final.role == "assistant" and not final.tool_requests():
        return len(messages)
    return last


@strategy("gemini-cli")
class GeminiCliStrategy(Strategy):
    """Gemini CLI's chat compression: a verified state snapshot of the older ~70 %, the rest
    kept; larger results discarded (module docstring)."""

    Settings = GeminiCliSettings
    settings: GeminiCliSettings
    uses_template = False

    def __init__(self, settings: BaseModel | None = None) -> None:
        super().__init__(settings)
        self.failed = False  # a compression was discarded: only cut tool outputs from now on

    def trigger_tokens(self, window: int) -> int | None:
        """Half the window (``threshold``)."""
        return max(1, int(self.settings.threshold * window))

    async def compact(self, request: CompactionRequest) -> StrategyResult:
        """Cut old outputs, summarise and verify the older part, keep the rest; discard a
        result larger than its input.

        Raises:
            CompactionError: a summariser call failed.
            ContextLengthExceeded: the older part does not fit the summariser's window.
        """
        s = self.settings
        window, est = request.window, request.estimator
        messages = [m for m in request.messages if m.is_agent_visible]
        before = context_tokens(messages, est)
        cut = cut_tool_outputs(messages, tokens_of(s.tool_output_budget, window), s.tail_lines,
                               est)
        if self.failed:
            smaller = context_tokens(cut, est) < before
            return policy_result(cut if smaller else messages, request, compacted=smaller,
                                 status="truncated only" if smaller else "noop")
        split = split_point(cut, s.preserve_share)
        if split == 0:
            return policy_result(messages, request, compacted=False, status="noop")
        original = messages[:split]
        fits = window is None or context_tokens(original, est) < window - tokens_of(
            s.safe_buffer, window)
        older = original if fits else cut[:split]
        carry = any(SNAPSHOT_TAG in m.concat_text() for m in older)
        calls = Calls(request.model)
        prompt = load_prompt("gemini-cli")
        first = strip_thinking(await calls.ask(prompt, older,
                                               CARRY_REQUEST if carry else FIRST_REQUEST))
        snapshot = first
        if s.verify:
            check = [*older, Message.assistant(first)]
            second = strip_thinking(await calls.ask(prompt, check, load_prompt(
                "gemini-cli-verify")))
            snapshot = second or first
        if not snapshot.strip():
            raise calls.failed("the snapshot came back empty")
        context = [Message.user(snapshot), Message.assistant(ACKNOWLEDGEMENT), *cut[split:]]
        after = context_tokens(context, est)
        if after > before:
            self.failed = True
            return policy_result(messages, request, calls=calls, summary=snapshot,
                                 compacted=False, status="discarded: larger than its input",
                                 tokens_discarded=after)
        return policy_result(context, request, calls=calls, summary=snapshot, status="compressed",
                             kept_messages=len(cut) - split)
