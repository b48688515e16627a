"""Turn a conversation into one summary message (the crate's ``summarize.rs``).

The whole conversation is rendered into the compaction template and sent as the **system
prompt**, with one short user request. When the model says the prompt is too long, whole
messages holding tool responses are dropped "middle outwards" at 0, 10, 20, 50 and 100 % and the
call is retried; a conversation without tool responses fails at once. The reply becomes a
user-role message, its missing token counts are estimated, and when its JSON parses it is
rewritten into the rendered structured summary (otherwise the raw reply is kept).

Faithful by default; ``order="centred"`` (V-prefix selection order) and ``removal="elide"``
(replace the response text instead of dropping the message) are options beside it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict, cast

from workbench._memo import memo
from workbench.compaction._format import TranscriptStyle, transcript_lines
from workbench.compaction._model import CompactionModel, Usage
from workbench.compaction._removal import (
    ELIDED_TOOL_RESPONSE_TEXT,
    REMOVAL_PERCENTAGES,
    Removal,
    RemovalOrder,
    apply_removal,
    elide_tool_responses,
    filter_tool_responses,
    removal_positions,
)
from workbench.compaction._reuse import (
    parsed_reply,
    remembered_prompt,
    remembered_reply,
    remembered_summary,
    render_prompt,
    render_summary,
    render_summary_async,
)
from workbench.compaction._templates import COMPACTION_TEMPLATE, Templates
from workbench.compaction._usage_estimate import ensure_usage_tokens
from workbench.errors import CompactionError, ContextLengthExceeded, TemplateError
from workbench.messages import (
    Message,
    TextContent,
)
from workbench.tokens import TokenEstimator

__all__ = ["Attempt", "CompactionCallFailed", "CompactionContextExceeded",
           "ELIDED_TOOL_RESPONSE_TEXT", "EXHAUSTED_REMOVAL_ERROR", "NO_TOOL_RESPONSES_ERROR",
           "REMOVAL_PERCENTAGES", "Removal", "RemovalOrder", "SUMMARY_REQUEST", "Summary",
           "apply_structured_summary", "elide_tool_responses", "filter_tool_responses",
           "removal_positions", "summarize"]

log = logging.getLogger(__name__)


SUMMARY_REQUEST = "Please write a summary of the conversation history given in the system prompt."
"""The only message sent to the summarizer; the conversation itself is in the system prompt."""

NO_TOOL_RESPONSES_ERROR = (
    "Failed to compact: the base prompt (system prompt, tool schemas and conversation) is larger "
    "than the model's effective context window, and there are no tool responses to remove. "
    "Switch to a model or configuration with a larger usable context, disable some extensions "
    "to shrink the tool-schema payload, or start a new session."
)
"""Fail-fast text when the prompt overflows and nothing can be removed (one model call)."""

EXHAUSTED_REMOVAL_ERROR = (
    "Failed to compact: context limit exceeded even after removing all tool responses"
)
"""Goose's exact text when every step of the removal ladder overflowed."""

UNEXPECTED_EXHAUSTION_ERROR = "Unexpected: exhausted all attempts without returning"


class CompactionContextExceeded(CompactionError, ContextLengthExceeded):
    """Summarization gave up because the prompt never fit the model's window.

    Both a `CompactionError` (carries ``billed_usage`` and ``attempts``) and a
    `ContextLengthExceeded`, like Goose's context-limit failure.
    """

    def __init__(self, message: str, billed_usage: list[Usage] | None = None,
                 attempts: list[Attempt] | None = None, model: str = "") -> None:
        CompactionError.__init__(self, message, billed_usage, attempts)
        self.model = model


class CompactionCallFailed(CompactionError):
    """A summarizer call failed with an error that is not retried.

    ``str(err)`` is the original error's text and ``err.__cause__`` the original error, so
    callers can still branch on its class (rate limit, authentication...).
    """


@dataclass
class Attempt:
    """One summarizer model call.

    Attributes:
        number: 1-based attempt number.
        removal_percent: The ladder step (share of tool-response messages removed).
        messages_removed: Whole messages dropped from the transcript.
        tool_responses_removed: Tool-response items dropped or elided.
        outcome: ``"ok"``, ``"context_length_exceeded"`` or ``"error"``.
        usage: Usage of the call when it returned one (after estimation for ``"ok"``).
        error: The error text of a failed call.
        latency_ms: Wall time of the call.
    """

    number: int
    removal_percent: int
    messages_removed: int
    tool_responses_removed: int
    outcome: Literal["ok", "context_length_exceeded", "error"]
    usage: Usage | None = None
    error: str | None = None
    latency_ms: float = 0.0


@dataclass
class Summary:
    """The result of `summarize`.

    Attributes:
        message: The summary, role user (rendered structured summary, or the raw reply).
        usage: Billable usage of the successful call (raw output, estimated where missing).
        attempts: How many model calls were made.
        structured: True when the reply was rewritten into the rendered structured summary.
        attempt_records: One `Attempt` per model call.
        parse_outcome: ``"structured"`` or why the raw reply was kept: ``"no_candidate"``,
            ``"invalid_json"``, ``"empty"``, ``"render_error"``, ``"render_empty"``.
        transcript_chars: Length of the transcript sent on the successful attempt.
    """

    message: Message
    usage: Usage
    attempts: int
    structured: bool
    attempt_records: list[Attempt] = field(default_factory=list)
    parse_outcome: str = "no_candidate"
    transcript_chars: int = 0


# ---- tool-response removal --------------------------------------------------------------------


# ---- structured rewrite -----------------------------------------------------------------------


def apply_structured_summary(response: Message, summary_template: str | None,
                             params: Mapping[str, object] | None = None) -> str:
    """Rewrite `response` into the rendered structured summary when its JSON parses.

    Only text items are parsed (thinking is ignored). When parsing or rendering fails, the
    response is left untouched, thinking included (the lossless raw fallback).

    Args:
        response: The summary message; its content is replaced in place on success.
        summary_template: The summary template source (None: the built-in one).
        params: Template parameter values rendered as variables (`Templates.params`).

    Returns:
        ``"structured"``, or the reason the raw reply was kept: ``"no_candidate"``,
        ``"invalid_json"``, ``"empty"``, ``"render_error"`` or ``"render_empty"``.
    """
    text = response.concat_text()
    outcome = parsed_reply(text)  # read only: shared by equal replies
    if outcome.summary is None:
        return outcome.reason
    try:
        rendered = render_summary(text, outcome.summary, summary_template, params)
    except TemplateError as err:
        log.warning("Failed to render structured compaction summary, keeping raw output: %s", err)
        return "render_error"
    return _rewrite(response, rendered)


async def apply_structured_summary_async(response: Message, summary_template: str | None,
                                        params: Mapping[str, object] | None = None) -> str:
    """`apply_structured_summary`, awaited: from what is remembered when it can be, else with
    the summary rendered in the render process while the event loop goes on."""
    known = remembered_structured_summary(response, summary_template, params)
    if known is not None:
        return known
    text = response.concat_text()
    outcome = parsed_reply(text)
    if outcome.summary is None:
        return outcome.reason
    try:
        rendered = await render_summary_async(text, outcome.summary, summary_template, params)
    except TemplateError as err:
        log.warning("Failed to render structured compaction summary, keeping raw output: %s", err)
        return "render_error"
    return _rewrite(response, rendered)


def remembered_structured_summary(response: Message, summary_template: str | None,
                                  params: Mapping[str, object] | None = None) -> str | None:
    """`apply_structured_summary` done from what is remembered (this reply text parsed, and
    its summary rendered with this template and parameters, before), or None when there is
    work to do. Cheap, for the event loop; the outcome and the rewrite are the same."""
    text = response.concat_text()
    outcome = remembered_reply(text)
    if outcome is None:
        return None
    if outcome.summary is None:
        return outcome.reason
    rendered = remembered_summary(text, summary_template, params)
    return None if rendered is None else _rewrite(response, rendered)


def _rewrite(response: Message, rendered: str) -> str:
    if not rendered.strip():
        log.warning("Structured compaction summary rendered empty (broken template override?), "
                    "keeping raw output")
        return "render_empty"
    response.content = [TextContent(text=rendered)]
    return "structured"


# ---- the ladder -------------------------------------------------------------------------------


def _context(templates: Templates, variables: dict[str, object]) -> dict[str, object]:
    """`variables` with the templates' parameters over them (`Templates.context`)."""
    params = getattr(templates, "params", None)
    return {**variables, **params} if params else variables


def summary_request() -> Message:
    """The user message every summarizer call sends (`SUMMARY_REQUEST`), one object per run
    (the run memo's ``requests``): models only read their request messages, and with one
    object the cache-key JSON, the prompt hash and the token count of the request are worked
    out once per run, not once per call."""
    found = memo().requests.get_or(SUMMARY_REQUEST, lambda: Message.user(SUMMARY_REQUEST))
    return cast(Message, found)


class SummarizeOptions(TypedDict, total=False):
    """The keyword options of `summarize`, for callers that pass them through."""

    transcript_style: TranscriptStyle
    removal: Removal
    order: RemovalOrder


async def summarize(
    model: CompactionModel,
    estimator: TokenEstimator | None,
    templates: Templates,
    messages: Sequence[Message],
    *,
    transcript_style: TranscriptStyle = "goose",
    removal: Removal = "drop",
    order: RemovalOrder = "goose",
) -> Summary:
    """Summarize `messages` into one user-role message, retrying with fewer tool responses.

    Args:
        model: The summarizer.
        estimator: A `TokenEstimator` to fill in missing usage, or None to keep the provider's
            usage exactly as reported.
        templates: The compaction and summary template sources.
        messages: The conversation to summarize (already projected for the agent).
        transcript_style: ``"goose"`` (baseline) or ``"jsonl"``.
        removal: ``"drop"`` whole tool-response messages (baseline) or ``"elide"`` their output.
        order: Removal order, ``"goose"`` (baseline) or ``"centred"``.

    Returns:
        The `Summary`.

    Raises:
        TemplateError: the compaction template failed to render (no model call is made).
        CompactionContextExceeded: the prompt overflowed and there were no tool responses to
            remove (after 1 call), or it still overflowed with all of them removed (5 calls).
        CompactionCallFailed: any other model error, raised at once without retry.
    """
    request = [summary_request()]
    variant = getattr(templates, "name", "")
    template_name = f"{variant}/{COMPACTION_TEMPLATE}" if variant else COMPACTION_TEMPLATE
    records: list[Attempt] = []
    last = len(REMOVAL_PERCENTAGES) - 1
    context = _context(templates, {})
    for index, pct in enumerate(REMOVAL_PERCENTAGES):
        kept, dropped, responses_removed = apply_removal(messages, pct, order, removal)
        lines = transcript_lines(kept, transcript_style)
        system_prompt = remembered_prompt(templates.compaction, context, lines)
        if system_prompt is None:  # rendered in the render process; the loop goes on meanwhile
            system_prompt = await render_prompt(templates.compaction, context, template_name,
                                                kept, lines, transcript_style)
        record = Attempt(number=index + 1, removal_percent=pct, messages_removed=dropped,
                         tool_responses_removed=responses_removed, outcome="ok")
        records.append(record)
        started = time.perf_counter()
        try:
            reply, usage = await model.complete(system_prompt, request)
        except ContextLengthExceeded as err:
            record.latency_ms = (time.perf_counter() - started) * 1000
            record.outcome, record.error = "context_length_exceeded", str(err)
            if not any(m.has_tool_response() for m in messages):
                raise CompactionContextExceeded(NO_TOOL_RESPONSES_ERROR, [], records,
                                                err.model) from err
            if index < last:
                continue
            raise CompactionContextExceeded(EXHAUSTED_REMOVAL_ERROR, [], records,
                                            err.model) from err
        except Exception as err:
            record.latency_ms = (time.perf_counter() - started) * 1000
            record.outcome, record.error = "error", str(err)
            raise CompactionCallFailed(str(err), [], records) from err
        record.latency_ms = (time.perf_counter() - started) * 1000
        response = reply.model_copy(deep=True)
        response.role = "user"
        if estimator is not None:
            usage = ensure_usage_tokens(usage, estimator, system_prompt, request, response)
        record.usage = usage
        params = getattr(templates, "params", None)
        outcome = await apply_structured_summary_async(response, templates.summary, params)
        return Summary(message=response, usage=usage, attempts=len(records),
                       structured=outcome == "structured", attempt_records=records,
                       parse_outcome=outcome,
                       transcript_chars=sum(map(len, lines)) + max(len(lines) - 1, 0))
    raise CompactionError(UNEXPECTED_EXHAUSTION_ERROR, [], records)  # pragma: no cover
