"""`render_standing_in`: a render whose one long variable is sent as a short stand-in.

A compaction prompt is a template around the session's transcript, often hundreds of kilobytes.
Sent as it is, the transcript crosses the pipe to the render process and the rendered prompt
crosses back: on the default run, some 130 MB of pickling, pipe writes and reads for text the
template only prints. When the template prints the variable only as it is (``{{ messages }}``,
nothing applied to it, not inside a macro, call or filter block: the render process's
`printed_whole_here` reads that from the template's syntax tree), the variable goes as a stand-in
(a short marker no text holds) and the marker is replaced by the value in the answer. The text
is the one the value itself gives:

- the value is printed unchanged wherever the marker is printed (no filter, no autoescape; the
  environment's ``finalize`` returns a string as it is);
- the answer is stripped around the marker, then again once the value is in, which strips what
  stripping the whole text strips (the marker holds no whitespace);
- the size limits count a printed marker as the value's characters, and the allowance is that
  of the value (`workbench.compaction._limits.stream`), so a render crosses a limit at the same
  place with the same message.

Anything else (a short value, a template that reads the value in any other way, a value or
template holding the marker) is rendered with the value itself.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from workbench._memo import memo
from workbench.compaction import _sandbox
from workbench.compaction._limits import STAND_IN_START, RenderLimits
from workbench.compaction._templates import render_async

__all__ = ["STAND_IN_MIN_CHARS", "printed_whole", "render_standing_in"]

STAND_IN_MIN_CHARS = 4096
"""Shortest value sent as a stand-in (a shorter one costs less to send than to replace)."""

_MARK = f"{STAND_IN_START}stand-in {secrets.token_hex(12)}{STAND_IN_START}"
"""The stand-in: this process's own, so no session or template text can hold it by chance."""


async def printed_whole(source: str, name: str, limits: RenderLimits) -> frozenset[str]:
    """The variables `source` only prints as they are (asked of the render process once per
    template, then remembered in the memo's ``variables``)."""
    key = ("printed whole", source, limits)
    found = memo().variables.get(key)
    if found is None:
        names = await _sandbox.call_async("printed whole", source, None, name, limits)
        found = memo().variables.put(key, frozenset(names))
    return found


async def render_standing_in(source: str, context: Mapping[str, object], name: str,
                             limits: RenderLimits, variable: str, value: str) -> str:
    """``render_async(source, {**context, variable: value}, name, limits)``: the same text,
    with `value` sent as a stand-in where that gives the same text (the module docstring).

    Raises:
        TemplateError: as `render_async` (the same message).
    """
    if (len(value) >= STAND_IN_MIN_CHARS and _MARK not in value and _MARK not in source
            and not any(isinstance(v, str) and _MARK in v for v in context.values())
            and variable in await printed_whole(source, name, limits)):
        text = await _sandbox.call_async("render with stand-ins", source,
                                         ({**context, variable: _MARK}, {_MARK: len(value)}),
                                         name, limits)
        return text.replace(_MARK, value).strip()
    return await render_async(source, {**context, variable: value}, name, limits)
