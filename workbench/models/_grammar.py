"""The JSON schema a local model's decoding is held to, built from the compaction prompt itself.

A small model asked for "one ```json block with this shape" rarely writes valid JSON, and when
it does it often copies the example or repeats one list entry until its token budget runs out.
llama.cpp can constrain decoding to a JSON schema (``LlamaGrammar.from_json_schema``), so the
reply is always a JSON object of the requested shape. The schema follows the prompt:

- the fields are the ones the prompt's last ```json example names, in the summary's order
  (`requested_schema`, the reader the extractive baseline uses), every one required, so the
  model must say something for each field it was asked about (an empty list is allowed);
- a list gets ``maxItems`` = the cap the prompt states for it ("at most N entries"), a string
  ``maxLength`` = the character cap the prompt states ("at most N characters"); where the prompt
  states none the model's own bound applies (`GrammarBounds`), because an unbounded list is
  exactly where a small model loops.

The grammar shapes the reply only; the workbench still parses it leniently like any other
reply, so parse success and the other metrics mean what they mean for every model. One repair
belongs to the grammar: a constrained reply that ``max_tokens`` cuts off is valid JSON up to
the cut, so its open strings, lists and objects are closed (`close_truncated_json`) and the
reply says so (``usage.extra["closed_at_max_tokens"]``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from workbench._json_types import JSONObject
from workbench.compaction._json_scan import brackets_outside_strings
from workbench.errors import ConfigError
from workbench.models._requested_schema import STRING_FIELDS, RequestedSchema, requested_schema

__all__ = ["GRAMMAR_MODES", "GrammarBounds", "GrammarMode", "check_grammar_mode",
           "close_truncated_json", "summary_schema"]

GrammarMode = Literal["schema", "off"]
GRAMMAR_MODES: tuple[str, ...] = ("schema", "off")
"""``schema``: decoding follows `summary_schema` of each prompt; ``off``: free decoding."""

GRAMMAR_VERSION = 1
"""Bump when `summary_schema` builds a different schema for the same prompt and bounds (it is
part of a local model's recording key)."""

DEFAULT_MAX_ITEMS = 6
"""Entries per list when the prompt states no cap."""
DEFAULT_MAX_CHARS = 240
"""Characters per string when the prompt states no cap (a path or an error line fits)."""

_FILE_FIELDS = ("path", "summary", "key_code")


@dataclass(frozen=True)
class GrammarBounds:
    """The bounds a grammar applies where the prompt states none.

    Attributes:
        max_items: ``maxItems`` of a list without a stated cap.
        max_chars: ``maxLength`` of a string without a stated cap.
    """

    max_items: int = DEFAULT_MAX_ITEMS
    max_chars: int = DEFAULT_MAX_CHARS

    def __post_init__(self) -> None:
        for name in ("max_items", "max_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"grammar_{name} must be a positive integer, got {value!r}")


def check_grammar_mode(mode: object) -> GrammarMode:
    """`mode` when it is a known grammar mode.

    Raises:
        ConfigError: naming the modes there are.
    """
    if mode == "schema":
        return "schema"
    if mode == "off":
        return "off"
    raise ConfigError(f"grammar must be one of {', '.join(map(repr, GRAMMAR_MODES))}, "
                      f"got {mode!r}")


def _string(max_chars: int, nullable: bool = False) -> JSONObject:
    shape: JSONObject = {"type": "string", "maxLength": max_chars}
    # anyOf, not "type": [..., "null"]: llama.cpp's converter drops maxLength from a type list.
    return {"anyOf": [shape, {"type": "null"}]} if nullable else shape


def _field_schema(name: str, asked: RequestedSchema, bounds: GrammarBounds) -> JSONObject:
    chars = asked.char_cap_for(name) or bounds.max_chars
    if name in STRING_FIELDS:
        return _string(chars, nullable=name == "next_step")
    items = asked.cap(name) or bounds.max_items
    entry: JSONObject
    if name == "files":
        entry = {
            "type": "object",
            "properties": {key: _string(chars, nullable=key == "key_code")
                           for key in _FILE_FIELDS},
            "required": list(_FILE_FIELDS),
        }
    else:
        entry = _string(chars)
    return {"type": "array", "items": entry, "maxItems": items}


def summary_schema(prompt: str, bounds: GrammarBounds | None = None) -> JSONObject:
    """The JSON schema a reply to compaction prompt `prompt` is decoded under.

    Args:
        prompt: The compaction prompt as sent (its last ```json example and its stated caps
            are read; a prompt with no readable example asks for all nine fields).
        bounds: Caps for lists and strings the prompt leaves open; `GrammarBounds()` by default.

    Returns:
        A JSON schema object (``type``, ``properties`` in summary order, ``required``).
    """
    bounds = bounds or GrammarBounds()
    asked = requested_schema(prompt)
    return {
        "type": "object",
        "properties": {name: _field_schema(name, asked, bounds) for name in asked.fields},
        "required": list(asked.fields),
    }


_PARTIAL_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{0,3})?$")
_DANGLING = ("", "null", ": null")
"""What may be missing before the closers: nothing, a value after a colon, a key's colon and
value (a reply cut inside a key)."""


def close_truncated_json(text: str) -> str | None:
    """Close a JSON object cut off by the token limit, so what was written is kept.

    A grammar-constrained reply is valid JSON up to the point where ``max_tokens`` stops it;
    closing the open string, arrays and objects (dropping a trailing comma, or giving a cut-off
    key a null value) keeps every entry the model finished and loses nothing it wrote.

    Args:
        text: The reply, starting with ``{``.

    Returns:
        The closed document, or None when `text` is not a cut JSON object (or is whole).
    """
    body = text.strip()
    if not body.startswith("{"):
        return None
    closers: list[str] = []
    in_string = False
    for _, ch in brackets_outside_strings(body):
        if ch == '"':
            in_string = True
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        else:
            if not closers:
                return None
            closers.pop()
    if not closers and not in_string:
        return None
    if in_string:
        body = _PARTIAL_ESCAPE.sub("", body) + '"'
    body = body.rstrip()
    if body.endswith(","):
        body = body[:-1]
    tail = "".join(reversed(closers))
    for missing in _DANGLING:
        candidate = body + missing + tail
        try:
            json.loads(candidate)
        except ValueError:
            continue
        return candidate
    return None
