"""Work the summarizer does once per distinct input: rendered prompts, parsed replies and
their rendered summaries.

Rendering is a pure function of the template source, the variables it reads and the render
limits; parsing a reply is a pure function of its text, and its summary's render a pure
function of that text, the summary template, its parameters and the limits. A tune's
render-only variants send one prompt per session (their parameters are read by the summary
template only) and share one reply, and repeats answered alike parse the same text: each is
rendered or parsed once, the rest are handed the result. Errors are never remembered (a
failing render is retried, and raises, every time). When the run was told which points render
a summary template (`expect_points`: the tuner tells each rung), the first render of a reply
renders it for every point of the caller's prompt group in one request to the render process
(`workbench.compaction._sandbox.render_each`), and the other points' cells find theirs
remembered: one round trip per reply, not one per point.

What is remembered lives in the run memo (`workbench._memo`: ``renders``, ``variables``,
``replies``, ``summaries``, ``summary_points``). A prompt's transcript is named by its lines (each message's line
is one object while the message lives), so a ladder step that sends what an earlier cell sent
finds its prompt without joining or hashing the transcript again. A remembered parse is
shared, so only callers that never modify it use `parsed_reply` (the summarizer and the
harness's scoring, which read it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from workbench._memo import memo
from workbench.compaction import _sandbox
from workbench.compaction._limits import RenderLimits
from workbench.compaction._stand_in import render_standing_in
from workbench.compaction._structured import ParseOutcome, StructuredSummary
from workbench.compaction._templates import (
    COMPACTION_SUMMARY_TEMPLATE,
    builtin_template,
    render,
    render_async,
)
from workbench.errors import TemplateError
from workbench.messages import Message
from workbench.tokens import PromptText

__all__ = ["ExpectedPoints", "expect_points", "parsed_reply", "remembered_prompt",
           "remembered_reply", "remembered_summary", "render_prompt", "render_summary",
           "render_summary_async"]

TRANSCRIPT = "messages"
"""The variable the compaction template reads the transcript from."""
BATCH = 512
"""Most summaries one request renders (`expect_points`; the memo keeps 1,024)."""


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


class _NotRendered(Exception):
    """A render promised by a request for several (`render_each`) that did not make it: the
    caller waiting for it renders it itself (and meets its error, if it has one)."""


def _fail(future: asyncio.Future[str], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
        future.exception()  # retrieved: no warning when nobody waited


async def _once(key: Hashable, make: Callable[[], Awaitable[str]]) -> str:
    """``await make()``, or, while an equal render is being made, its result: renders asked
    for at once (the cells of a wave, before any has finished) are made once."""
    flights = memo().in_flight
    found = flights.get(key)
    if found is not None and found.get_loop() is asyncio.get_running_loop():
        try:
            return await asyncio.shield(found)
        except _NotRendered:
            pass  # the request that was to make it stopped first: make it here
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    flights[key] = future
    try:
        value = await make()
    except BaseException as exc:
        _fail(future, exc)
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
    if TRANSCRIPT in context:
        text = await render_async(source, context, name, limits)
    else:  # the transcript crosses to the render process as a stand-in where it can
        text = await render_standing_in(source, context, name, limits, TRANSCRIPT, transcript)
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


def _params_json(params: Mapping[str, object] | None) -> str | None:
    return json.dumps(params, sort_keys=True, default=repr) if params else None


def _summary_key(text: str, template: str | None, params: str | None) -> Hashable:
    """The ``summaries`` key of a reply text rendered with `template` and the parameters
    whose `_params_json` is `params`."""
    return (text, _parser()[1], template, params, RenderLimits.from_env())


def remembered_summary(text: str, template: str | None,
                       params: Mapping[str, object] | None) -> str | None:
    """The rendered summary `render_summary` gave for this reply text, template and
    parameters, or None (cheap: for the event loop)."""
    found: str | None = memo().summaries.get(_summary_key(text, template, _params_json(params)))
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
    return memo().summaries.put(_summary_key(text, template, _params_json(params)),
                                render(source, context, name))


@dataclass
class ExpectedPoints:
    """What `expect_points` was told about one summary template (the memo's
    ``summary_points``).

    Attributes:
        group_of: A point's parameters (`_params_json`) -> the index of its group (-1: it
            is in several, and is rendered with theirs but asks for none).
        groups: The points of each group, as (parameters as JSON, parameters).
        asked: (hash of a reply text, group) already asked for in one request.
    """

    group_of: dict[str | None, int]
    groups: list[list[tuple[str | None, dict[str, object]]]]
    asked: set[tuple[int, int]] = field(default_factory=set)


def expect_points(template: str, groups: Iterable[Iterable[Mapping[str, object]]]) -> None:
    """Say that the run's cells render summaries with `template` and these parameter sets,
    in groups whose points get the same reply (the points of a tune's rung that send the same
    prompt): the first render of a reply for a point then renders it for every point of its
    group in one request (`render_each`), and the other points' cells find their summary
    remembered. Replaces what was said before about `template`."""
    expected = ExpectedPoints({}, [])
    for index, group in enumerate(groups):
        expected.groups.append([(_params_json(p), dict(p)) for p in group])
        for pjson, _ in expected.groups[-1]:  # a point in several groups (the baseline) asks
            expected.group_of[pjson] = index if pjson not in expected.group_of else -1  # alone
    memo().summary_points.put(template, expected)


def _other_points(text: str, template: str | None, key: Hashable, params: str | None
                  ) -> list[tuple[Hashable, Mapping[str, object]]]:
    """The points of the group of `params` (`expect_points`) but the caller's whose summary of
    `text` is neither remembered nor being made, when that group's summaries of `text` are
    asked for the first time; else none (a point whose render failed is asked for again only
    by its own cell; the reply is known by its hash, a collision only costs a request for
    one)."""
    expected = cast("ExpectedPoints | None", memo().summary_points.get(template)) \
        if template is not None else None
    group = expected.group_of.get(params) if expected is not None else None
    if expected is None or group is None or group < 0 or (hash(text), group) in expected.asked:
        return []
    expected.asked.add((hash(text), group))
    flights, summaries = memo().in_flight, memo().summaries
    found: list[tuple[Hashable, Mapping[str, object]]] = []
    for params_json, values in expected.groups[group]:
        other = _summary_key(text, template, params_json)
        if other != key and ("summary", other) not in flights and summaries.get(other) is None:
            found.append((other, values))
            if len(found) == BATCH - 1:
                break
    return found


async def render_summary_async(text: str, summary: StructuredSummary, template: str | None,
                               params: Mapping[str, object] | None) -> str:
    """`render_summary`, awaited (the event loop stays free while the render process works);
    with the summaries of the other expected points (`expect_points`) rendered in the same
    request and remembered.

    Raises:
        TemplateError: as `render_summary`.
    """
    params_json = _params_json(params)
    key = _summary_key(text, template, params_json)
    found = memo().summaries.get(key)
    if found is not None:  # made by a request for several since the caller looked
        return found
    others = [] if ("summary", key) in memo().in_flight else \
        _other_points(text, template, key, params_json)
    if others:
        return await _render_points(summary, template, [(key, params or {}), *others])

    async def make() -> str:
        source, name = _summary_source(template)
        context = {**summary.to_context(), **params} if params else summary.to_context()
        return memo().summaries.put(key, await render_async(source, context, name))

    return await _once(("summary", key), make)


async def _render_points(summary: StructuredSummary, template: str | None,
                         points: list[tuple[Hashable, Mapping[str, object]]]) -> str:
    """The summary of the first of `points` (key, parameters), rendered in one request with
    the others'; each is remembered as it arrives, and the cells waiting for one are handed
    it. A point whose render fails is not remembered: its cell renders it again itself and
    meets the error there.

    Raises:
        TemplateError: the first point's render failed.
    """
    source, name = _summary_source(template)
    loop = asyncio.get_running_loop()
    flights, summaries = memo().in_flight, memo().summaries
    futures: list[asyncio.Future[str]] = []
    for key, _ in points:
        futures.append(loop.create_future())
        flights[("summary", key)] = futures[-1]

    def deliver(index: int, value: str | TemplateError) -> None:
        if isinstance(value, TemplateError):
            _fail(futures[index], value if index == 0 else _NotRendered())
        else:
            futures[index].set_result(summaries.put(points[index][0], value))

    try:
        await _sandbox.render_each(source, summary.to_context(), [p for _, p in points], name,
                                   RenderLimits.from_env(), deliver)
    except BaseException as exc:
        _fail(futures[0], exc)
        raise
    finally:
        for (key, _), future in zip(points, futures, strict=True):
            _fail(future, _NotRendered())
            if flights.get(("summary", key)) is future:
                del flights[("summary", key)]
    return futures[0].result()
