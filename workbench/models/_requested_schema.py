"""The schema a compaction prompt asks for, as a simulated summarizer reads it: the fields in the
prompt's last ```json example and the caps the prompt states ("at most N entries in each list",
or per field: "`user_intent`: at most N entries"; "at most N characters"). The extractive model
fills only those fields within those caps, and the local model's grammar holds decoding to them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from workbench._json_types import JSONObject, JSONValue

__all__ = ["RequestedSchema", "SCHEMA_FIELDS", "STRING_FIELDS", "apply_schema", "clip_text",
           "requested_schema"]

_JSON_BLOCK = re.compile(r"```json[ \t]*\n(.*?)\n```", re.DOTALL)
_CAP = re.compile(r"at most (\d+) (?:entries|entry|items|item)\b", re.IGNORECASE)
_CHAR_CAP = re.compile(r"at most (\d+) (?:characters|character|chars)\b", re.IGNORECASE)
_FIELD_MENTION = re.compile(r"`([a-z_]+)`")
SCHEMA_FIELDS = ("user_intent", "technical_concepts", "files", "errors_and_fixes",
                 "problem_solving", "user_messages", "pending_tasks", "current_work", "next_step")
"""The structured-summary fields, in the order the answer lists them."""
STRING_FIELDS = ("current_work", "next_step")
"""The fields whose value is one string (the others are lists)."""


def clip_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class RequestedSchema:
    """What a compaction prompt asks for: which fields, and list caps it states.

    Attributes:
        fields: Requested fields in `SCHEMA_FIELDS` order (all of them when the prompt shows
            no readable schema).
        list_cap: A cap stated for every list, or None.
        field_caps: Caps stated for single fields (win over `list_cap`).
        char_cap: A length in characters stated for every string, or None.
        field_char_caps: Lengths stated for single fields (win over `char_cap`).
    """

    fields: tuple[str, ...] = SCHEMA_FIELDS
    list_cap: int | None = None
    field_caps: dict[str, int] = field(default_factory=dict)
    char_cap: int | None = None
    field_char_caps: dict[str, int] = field(default_factory=dict)

    def cap(self, name: str) -> int | None:
        """The cap for list field `name`, or None."""
        return self.field_caps.get(name, self.list_cap)

    def char_cap_for(self, name: str) -> int | None:
        """The length cap in characters for the strings of field `name`, or None."""
        return self.field_char_caps.get(name, self.char_cap)


def _stated_caps(lines: list[str], pattern: re.Pattern[str]) -> tuple[int | None, dict[str, int]]:
    """The cap `pattern` finds for every field and the caps for single fields."""
    every: int | None = None
    single: dict[str, int] = {}
    for line in lines:
        match = pattern.search(line)
        if match is None:
            continue
        named = [f for f in _FIELD_MENTION.findall(line) if f in SCHEMA_FIELDS]
        if len(named) == 1:
            single[named[0]] = int(match.group(1))
        else:
            every = int(match.group(1))
    return every, single


def requested_schema(prompt: str) -> RequestedSchema:
    """Read the schema a compaction prompt asks for (see the module docstring).

    The last ```json block whose body is a JSON object naming at least one summary field is the
    schema (the instructions follow the transcript in a compaction prompt, so a transcript
    quoting JSON does not count). Caps are read from list lines saying "at most N entries"/"items"
    (list lengths) or "at most N characters" (string lengths): a line naming one summary field
    in backticks caps that field, any other caps every list (or every string).
    """
    fields: tuple[str, ...] = SCHEMA_FIELDS
    for body in reversed(_JSON_BLOCK.findall(prompt)):
        try:
            shape = json.loads(body)
        except ValueError:
            continue
        if isinstance(shape, dict) and any(k in SCHEMA_FIELDS for k in shape):
            fields = tuple(f for f in SCHEMA_FIELDS if f in shape)
            break
    lines = [line for line in prompt.splitlines() if line.lstrip().startswith(("-", "*"))]
    list_cap, field_caps = _stated_caps(lines, _CAP)
    char_cap, field_char_caps = _stated_caps(lines, _CHAR_CAP)
    return RequestedSchema(fields, list_cap, field_caps, char_cap, field_char_caps)


def apply_schema(summary: JSONObject, schema: RequestedSchema) -> JSONObject:
    """`summary` reduced to the requested fields, lists cut to their caps, strings clipped to
    their stated lengths."""
    out: JSONObject = {}
    for name in schema.fields:
        value = summary.get(name)
        cap = schema.cap(name)
        if isinstance(value, list) and cap is not None:
            value = value[:cap]
        chars = schema.char_cap_for(name)
        if chars is not None:
            value = _clip_strings(value, chars)
        out[name] = value
    return out


def _clip_strings(value: JSONValue, limit: int) -> JSONValue:
    if isinstance(value, str):
        return clip_text(value, limit) if limit > 3 else value[:limit]
    if isinstance(value, list):
        return [_clip_strings(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: _clip_strings(v, limit) for k, v in value.items()}
    return value
