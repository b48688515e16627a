"""Work the summarizer does once per distinct input: rendered prompts and parsed replies.

Rendering is a pure function of the template source, the variables it reads and the render
limits; parsing a reply is a pure function of its text. A tune's render-only variants send
one prompt per session (their parameters are read by the summary template only) and share one
reply, and repeats answered alike parse the same text: each is rendered or parsed once, the
rest are handed the result. Errors are never remembered (a failing render is retried, and
raises, every time).

Both memos are small, least-recently-used and thread-safe. A remembered parse is shared, so
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


def parsed_reply(text: str) -> Any:
    """`StructuredSummary.parse_detailed(text)`, parsed once per distinct text (shared: read
    it, never modify it)."""
    from workbench.compaction._structured import StructuredSummary

    parse = StructuredSummary.parse_detailed
    key = (text, getattr(parse, "__func__", parse))  # a different parser: parsed anew
    found = REPLIES.get(key)
    if found is None:
        found = parse(text)
        REPLIES.put(key, found)
    return found
