"""The cumulative summary: one request that rewrites the previous summary with a new span.

Mirrors ``DefaultSummarizer::summarize`` (``context/summarizer.rs``). The request goes through a
`workbench.compaction.CompactionModel`: the system prompt as ``system``, the filled user prompt as
the one user message. ``max_tokens`` and the model name are recorded on the result (the protocol
carries no generation settings; the model object was configured with them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.compaction import CompactionModel, Usage
from workbench.errors import CompactionError, ModelCallError
from workbench.messages import Message
from workbench.strategies.awaken._config import CompactionConfig

PREVIOUS_SUMMARY_PLACEHOLDER = "{previous_summary}"
MESSAGES_PLACEHOLDER = "{messages}"
_PLACEHOLDERS = re.compile(r"\{previous_summary\}|\{messages\}")

_DEFAULT_CONFIG = CompactionConfig()


class SummarizationError(CompactionError):
    """The summarizer call failed or answered nothing (awaken records this as a failure).

    Attributes:
        kind: ``"inference"`` (the model call raised) or ``"empty"`` (an empty reply).
    """

    def __init__(self, kind: str, message: str, billed_usage: list[Usage] | None = None) -> None:
        super().__init__(message, billed_usage=billed_usage)
        self.kind = kind


def build_summary_prompt(transcript: str, previous_summary: str | None,
                         config: CompactionConfig | None = None, *,
                         single_pass: bool = False) -> str:
    """Fill the user prompt: ``{previous_summary}`` first, then ``{messages}``.

    Both values are trimmed; no previous summary fills in an empty string. Because awaken
    substitutes one placeholder after the other, a previous summary that itself contains the
    literal ``{messages}`` gets the transcript spliced into it (awaken's quirk).

    Args:
        transcript: The rendered transcript of the span to fold in.
        previous_summary: The stored cumulative summary, or None.
        config: The summarizer settings; None means awaken's defaults.
        single_pass: The fix for the splice: substitute both placeholders of the template in one
            pass, so text inside the values is never read as a placeholder. False reproduces awaken.
    """
    template = (config or _DEFAULT_CONFIG).summarizer_user_prompt
    previous = (previous_summary or "").strip()
    messages = transcript.strip()
    if single_pass:
        values = {PREVIOUS_SUMMARY_PLACEHOLDER: previous, MESSAGES_PLACEHOLDER: messages}
        return _PLACEHOLDERS.sub(lambda m: values[m.group(0)], template)
    return template.replace(PREVIOUS_SUMMARY_PLACEHOLDER, previous).replace(
        MESSAGES_PLACEHOLDER, messages)


@dataclass(frozen=True)
class CumulativeSummary:
    """One summarizer call and its answer.

    Attributes:
        text: The new cumulative summary, as the model wrote it.
        usage: The billed usage of the call.
        system: The system prompt sent.
        prompt: The user prompt sent.
        max_tokens: The reply cap awaken would send (``summary_max_tokens`` or 1024).
        summary_model: The upstream model awaken would name (``""`` when unset).
    """

    text: str
    usage: Usage
    system: str
    prompt: str
    max_tokens: int
    summary_model: str


async def summarize_cumulative(model: CompactionModel, transcript: str,
                               previous_summary: str | None = None,
                               config: CompactionConfig | None = None, *,
                               single_pass: bool = False) -> CumulativeSummary:
    """Ask `model` for the updated cumulative summary.

    Args:
        model: The summarizer model.
        transcript: `render_transcript` of the span (a `CompactionPlan.transcript`).
        previous_summary: The stored summary (a `CompactionPlan.previous_summary`).
        config: The summarizer settings; None means awaken's defaults.
        single_pass: The ``{messages}`` splice fix, see `build_summary_prompt`.

    Raises:
        SummarizationError: the call raised (kind ``inference``) or the reply had no text
            (kind ``empty``; its usage is in ``billed_usage``).
    """
    cfg = config or _DEFAULT_CONFIG
    prompt = build_summary_prompt(transcript, previous_summary, cfg, single_pass=single_pass)
    system = cfg.summarizer_system_prompt
    try:
        reply, usage = await model.complete(system, [Message.user(prompt)])
    except ModelCallError as exc:
        raise SummarizationError("inference", f"inference failed: {exc}") from exc
    text = reply.concat_text()
    if not text:
        raise SummarizationError("empty", "empty summary returned", billed_usage=[usage])
    return CumulativeSummary(text=text, usage=usage, system=system, prompt=prompt,
                             max_tokens=cfg.max_tokens, summary_model=cfg.summary_model or "")
