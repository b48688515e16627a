"""Work the summarizer does once per distinct input: rendered prompts, parsed replies and
their rendered summaries.

Rendering is a pure function of the template source, the variables it reads and the render
limits; parsing a reply is a pure function of its text, and its summary's render a pure
function of that text, the summary template, its parameters and the limits. A tune's
render-only variants send one prompt per session (their parameters are read by the summary
template only) and share one reply, and repeats answered alike parse the same text: each is
rendered or parsed once, the rest are handed the result. Errors are never remembered (a
failing render is retried, and raises, every time).

What is remembered lives in the run memo (`workbench._memo`: ``renders``, ``variables``,
``replies``, ``summaries``). A prompt's transcript is named by its lines (each message's line
is one object while the message lives), so a ladder step that sends what an earlier cell sent
finds its prompt without joining or hashing the transcript again. A remembered parse is
shared, so only callers that never modify it use `parsed_reply` (the summarizer and the
harness's scoring, which read it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import cast

from workbench._memo import memo
from workbench.compaction import _sandbox
from workbench.compaction._limits import RenderLimits
from workbench.compaction._structured import ParseOutcome, StructuredSummary
from workbench.compaction._templates import (
    COMPACTION_SUMMARY_TEMPLATE,
    builtin_template,
    render,
    render_async,
)
from workbench.messages import Message
from workbench.tokens import PromptText

__all__ = ["parsed_reply", "remembered_prompt", "remembered_reply", "remembered_summary",
           "render_prompt", "render_summary", "render_summary_async"]

TRANSCRIPT = "messages"
"""The variable the compaction template reads the transcript from."""


def _prompt_key(source: str, names: frozenset[str], context: Mapping[str, object],
                lines: Sequence[str], limits: RenderLimits) -> Hashable:
    read: list[tuple[str, str | tuple[int, ...]]] = []
    for name in sorted(names & (context.keys() | {TRANSCRIPT})):
        if name == TRANSCRIPT and TRANSCRIPT not in context:
            read.append((name, tuple(map(id, lines))))  # the lines' identities name them
            continue
        value = context.get(name)
        read.append((name, value if isinstance(value, str) else
                     json.dumps(value, sort_keys=True, default=repr)))
    return source, tuple(read), limits


async def _once(key: Hashable, make: Callable[[], Awaitable[str]]) -> str:
    """``await make()``, or, while an equal render is being made, its result: renders asked
    for at once (the cells of a wave, before any has finished) are made once."""
    flights = memo().in_flight
    found = flights.get(key)
    if found is not None and found.get_loop() is asyncio.get_running_loop():
        return await asyncio.shield(found)
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    flights[key] = future
    try:
        value = await make()
    except BaseException as exc:
        future.set_exception(exc)
        future.exception()  # retrieved: no warning when nobody waited
        raise
    finally:
        if flights.get(key) is future:
            del flights[key]
    future.set_result(value)
    return value


def remembered_prompt(source: str, context: Mapping[str, object], lines: Sequence[str]) -> str | None:
    """The prompt `render_prompt` gave before for this source, variables and transcript lines,
    or None (cheap: for the event loop).

    Args:
        source: The compaction template.
        context: Its variables other than the transcript.
        lines: The transcript's lines (`workbench.compaction.transcript_lines`).
    """
    limits = RenderLimits.from_env()
    names = memo().variables.get((source, limits))
    if names is None:
        return None
    found = memo().renders.get(_prompt_key(source, names, context, lines, limits))
    return None if found is None else found[1]


async def render_prompt(source: str, context: Mapping[str, object], name: str,
                        messages: Sequence[Message], lines: Sequence[str], style: str) -> str:
    """The compaction prompt: `source` rendered with `context` and the transcript of `lines`
    (the transcript lines of `messages` in `style`), remembered for `remembered_prompt`. A
    `PromptText` when the transcript appears whole in it, so it is counted from its parts.

    Raises:
        TemplateError: as `render` (nothing is remembered).
    """
    limits = RenderLimits.from_env()
    key = ("prompt", source, limits, tuple(map(id, lines)),
           json.dumps(context, sort_keys=True, default=repr))
    kept = tuple(lines)  # held by the entry, so the identities in its key stay theirs
    return await _once(key, lambda: _render_prompt(source, context, name, messages, kept,
                                                   style, limits))


async def _render_prompt(source: str, context: Mapping[str, object], name: str,
                         messages: Sequence[Message], lines: tuple[str, ...], style: str,
                         limits: RenderLimits) -> str:
    transcript = "\n".join(lines)
    full = context if TRANSCRIPT in context else {**context, TRANSCRIPT: transcript}
    text = await render_async(source, full, name, limits)
    names = memo().variables.get((source, limits))
    if names is None:
        found = await _sandbox.call_async("variables", source, None, name, limits)
        names = memo().variables.put((source, limits), frozenset(found))
    prompt = PromptText.around(text, transcript, messages, lines, style) \
        if TRANSCRIPT not in context else text
    memo().renders.put(_prompt_key(source, names, context, lines, limits), (lines, prompt))
    return prompt


def _parser() -> tuple[Callable[[str], ParseOutcome], object]:
    parse = StructuredSummary.parse_detailed
    return parse, getattr(parse, "__func__", parse)  # a different parser: parsed anew


def parsed_reply(text: str) -> ParseOutcome:
    """`StructuredSummary.parse_detailed(text)`, parsed once per distinct text (shared: read
    it, never modify it)."""
    parse, func = _parser()
    # The memo's ``replies`` table is filled here only: its values are parse outcomes.
    return cast(ParseOutcome, memo().replies.get_or((text, func), lambda: parse(text)))


def remembered_reply(text: str) -> ParseOutcome | None:
    """The `parsed_reply` of `text` when it is remembered, else None (cheap: for the loop)."""
    return cast("ParseOutcome | None", memo().replies.get((text, _parser()[1])))


def _summary_key(text: str, template: str | None,
                 params: Mapping[str, object] | None) -> Hashable:
    return (text, _parser()[1], template,
            json.dumps(params, sort_keys=True, default=repr) if params else None,
            RenderLimits.from_env())


def remembered_summary(text: str, template: str | None,
                       params: Mapping[str, object] | None) -> str | None:
    """The rendered summary `render_summary` gave for this reply text, template and
    parameters, or None (cheap: for the event loop)."""
    found: str | None = memo().summaries.get(_summary_key(text, template, params))
    return found


def _summary_source(template: str | None) -> tuple[str, str]:
    if template is None:
        return builtin_template(COMPACTION_SUMMARY_TEMPLATE) or "", COMPACTION_SUMMARY_TEMPLATE
    return template, COMPACTION_SUMMARY_TEMPLATE


def render_summary(text: str, summary: StructuredSummary, template: str | None,
                   params: Mapping[str, object] | None) -> str:
    """``summary.render(template, params=params)`` for the summary parsed from `text`,
    remembered for `remembered_summary`.

    Raises:
        TemplateError: as `StructuredSummary.render` (nothing is remembered).
    """
    source, name = _summary_source(template)
    context = {**summary.to_context(), **params} if params else summary.to_context()
    return memo().summaries.put(_summary_key(text, template, params),
                                render(source, context, name))


async def render_summary_async(text: str, summary: StructuredSummary, template: str | None,
                               params: Mapping[str, object] | None) -> str:
    """`render_summary`, awaited (the event loop stays free while the render process works).

    Raises:
        TemplateError: as `render_summary`.
    """
    key = _summary_key(text, template, params)

    async def make() -> str:
        source, name = _summary_source(template)
        context = {**summary.to_context(), **params} if params else summary.to_context()
        return memo().summaries.put(key, await render_async(source, context, name))

    return await _once(("summary", key), make)
