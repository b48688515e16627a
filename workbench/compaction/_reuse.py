"""Work the summarizer does once per distinct input: rendered prompts, parsed replies and
their rendered summaries.

Rendering is a pure function of the template source, the variables it reads and the render
limits; parsing a reply is a pure function of its text, and its summary's render a pure
function of that text, the summary template, its parameters and the limits. A tune's
render-only variants send one prompt per session (their parameters are read by the summary
template only) and share one reply, and repeats answered alike parse the same text: each is
rendered or parsed once, the rest are handed the result. Errors are never remembered (a
failing render is retried, and raises, every time).

The memos are small, least-recently-used and thread-safe. A remembered parse is shared, so
only callers that never modify it use `parsed_reply` (the summarizer and the harness's
scoring, which read it).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from workbench.compaction._limits import RenderLimits
from workbench.compaction._templates import render, template_variables

PROMPTS_KEPT = 64
REPLIES_KEPT = 64


class _Lru:
    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


PROMPTS = _Lru(PROMPTS_KEPT)
REPLIES = _Lru(REPLIES_KEPT)
SUMMARIES = _Lru(PROMPTS_KEPT)
"""(reply text, parser, summary template, parameters, limits) -> the rendered summary."""
_VARIABLES = _Lru(PROMPTS_KEPT)
"""(source, limits) -> the variables the source reads, known once it has rendered (off the
event loop: a hostile source is only ever parsed there)."""


def _render_key(source: str, names: frozenset[str], context: dict[str, Any],
                limits: RenderLimits) -> Any:
    read = []
    for name in sorted(names & context.keys()):
        value = context[name]
        read.append((name, value if isinstance(value, str) else
                     json.dumps(value, sort_keys=True, default=repr)))
    return source, tuple(read), limits


def remembered_render(source: str, context: dict[str, Any]) -> str | None:
    """The text `render(source, context)` gave before, or None (cheap: for the event loop)."""
    limits = RenderLimits.from_env()
    names = _VARIABLES.get((source, limits))
    if names is None:
        return None
    found: str | None = PROMPTS.get(_render_key(source, names, context, limits))
    return found


def render_and_remember(source: str, context: dict[str, Any], name: str = "<template>") -> str:
    """`render(source, context, name)`, remembered for `remembered_render` (synchronous and
    CPU-bound: run it on a worker thread).

    Raises:
        TemplateError: as `render` (nothing is remembered).
    """
    limits = RenderLimits.from_env()
    text = render(source, context, name, limits)
    names = frozenset(template_variables(source, name, limits))  # cached: it just compiled
    _VARIABLES.put((source, limits), names)
    PROMPTS.put(_render_key(source, names, context, limits), text)
    return text


def _parser() -> Any:
    from workbench.compaction._structured import StructuredSummary

    parse = StructuredSummary.parse_detailed
    return parse, getattr(parse, "__func__", parse)  # a different parser: parsed anew


def parsed_reply(text: str) -> Any:
    """`StructuredSummary.parse_detailed(text)`, parsed once per distinct text (shared: read
    it, never modify it)."""
    parse, func = _parser()
    key = (text, func)
    found = REPLIES.get(key)
    if found is None:
        found = parse(text)
        REPLIES.put(key, found)
    return found


def remembered_reply(text: str) -> Any:
    """The `parsed_reply` of `text` when it is remembered, else None (cheap: for the loop)."""
    return REPLIES.get((text, _parser()[1]))


def _summary_key(text: str, template: str | None, params: dict[str, Any] | None) -> Any:
    return (text, _parser()[1], template,
            json.dumps(params, sort_keys=True, default=repr) if params else None,
            RenderLimits.from_env())


def remembered_summary(text: str, template: str | None,
                       params: dict[str, Any] | None) -> str | None:
    """The rendered summary `render_summary` gave for this reply text, template and
    parameters, or None (cheap: for the event loop)."""
    found: str | None = SUMMARIES.get(_summary_key(text, template, params))
    return found


def render_summary(text: str, summary: Any, template: str | None,
                   params: dict[str, Any] | None) -> str:
    """``summary.render(template, params=params)`` for the summary parsed from `text`,
    remembered for `remembered_summary` (synchronous and CPU-bound: a worker thread's job).

    Raises:
        TemplateError: as `StructuredSummary.render` (nothing is remembered).
    """
    rendered: str = summary.render(template, params=params)
    SUMMARIES.put(_summary_key(text, template, params), rendered)
    return rendered
