"""The structured summary: its fields, lenient reading, validation and rendering (``structured.rs``).

The model is asked for one JSON document (see ``prompts/compaction.md``). `StructuredSummary.parse`
finds it (`json_candidates`), reads it leniently (wrong shapes are stringified, not rejected),
drops blank entries, and gives None when nothing usable is left, so the caller keeps the raw
response: Goose's lossless fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from workbench._json_types import JSONObject, JSONValue
from workbench.compaction._candidates import (
    RUST_WHITESPACE,
    CandidateDecoder,
    candidate_spans,
    json_candidates,
    leading_object,
    safely_parse_json,
)
from workbench.compaction._templates import COMPACTION_SUMMARY_TEMPLATE, builtin_template, render

__all__ = [
    "FileActivity",
    "ParseOutcome",
    "ParseReason",
    "StructuredSummary",
    "json_candidates",
    "leading_object",
    "safely_parse_json",
    "stringify",
]

_STRING_LISTS = (
    "user_intent",
    "technical_concepts",
    "errors_and_fixes",
    "problem_solving",
    "user_messages",
    "pending_tasks",
)
_KNOWN_FIELDS = frozenset((*_STRING_LISTS, "files", "current_work", "next_step"))

ParseReason = Literal["ok", "no_candidate", "invalid_json", "empty"]


def _float_text(value: float) -> str:
    """serde_json's float text (ryu): shortest digits, ``1.0``, ``1e20``, ``1.5e-7``."""
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent = int(exponent) + len(digit_tuple) - len(digits)
    length = len(digits)
    kk = length + exponent  # 10^(kk-1) <= value < 10^kk
    if 0 <= exponent and kk <= 16:
        text = digits + "0" * exponent + ".0"
    elif 0 < kk <= 16:
        text = f"{digits[:kk]}.{digits[kk:]}"
    elif -5 < kk <= 0:
        text = "0." + "0" * -kk + digits
    elif length == 1:
        text = f"{digits}e{kk - 1}"
    else:
        text = f"{digits[0]}.{digits[1:]}e{kk - 1}"
    return sign + text


def stringify(value: JSONValue) -> str:
    """Goose's ``stringify_lenient``: any JSON value as one string.

    Strings stay as they are, null is ``""``, objects become ``"k: v"`` pairs and arrays their
    items, both joined with ``"; "`` (recursively, in document order), and numbers and booleans
    their JSON text (``42`` -> ``"42"``, ``true`` -> ``"true"``, ``1e20`` -> ``"1e20"``).
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {stringify(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(stringify(v) for v in value)
    if isinstance(value, float):
        return _float_text(value)
    return str(value)


def _blank(text: str) -> bool:
    return not text.strip(RUST_WHITESPACE)


def _string_list(value: JSONValue) -> list[str]:
    if isinstance(value, list):
        return [stringify(item) for item in value]
    if value is None:
        return []
    return [stringify(value)]


def _optional_string(value: JSONValue) -> str | None:
    return None if value is None else stringify(value)


@dataclass
class FileActivity:
    """A file the session viewed or edited.

    Attributes:
        path: The file path ("" when the model gave none).
        summary: What was done there.
        key_code: An important snippet, or None.
    """

    path: str
    summary: str = ""
    key_code: str | None = None

    @classmethod
    def from_value(cls, value: JSONValue) -> FileActivity | None:
        """One ``files`` entry read leniently; None for an entry Goose drops."""
        if isinstance(value, dict):
            return cls(
                path=stringify(value.get("path")),
                summary=stringify(value.get("summary")),
                key_code=_optional_string(value.get("key_code")),
            )
        path = stringify(value)
        return None if _blank(path) else cls(path=path)

    def to_dict(self) -> JSONObject:
        """The entry as the template sees it."""
        return {"path": self.path, "summary": self.summary, "key_code": self.key_code}


def _file_list(value: JSONValue) -> list[FileActivity]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [f for f in (FileActivity.from_value(item) for item in items) if f is not None]


@dataclass
class ParseOutcome:
    """Result of `StructuredSummary.parse_detailed`.

    Attributes:
        summary: The accepted summary, or None when the raw response must be kept.
        reason: ``"ok"``; ``"no_candidate"`` (no JSON object at any marker);
            ``"invalid_json"`` (no candidate parsed to a JSON object); ``"empty"`` (some parsed,
            but every one was empty after dropping blank entries).
        candidates: How many candidates were tried.
    """

    summary: StructuredSummary | None
    reason: ParseReason
    candidates: int = 0


@dataclass
class StructuredSummary:
    """The summary document the compaction prompt asks for. Lists are most important first.

    Attributes:
        user_intent: Every goal or request the user stated.
        technical_concepts: Tools, methods and concepts discussed.
        files: Files viewed or edited.
        errors_and_fixes: Problems met, their fixes, and user-driven changes.
        problem_solving: Issues solved or open, and decisions with their reasons.
        user_messages: The user's messages.
        pending_tasks: Unfinished user requests.
        current_work: What was in progress when compaction started.
        next_step: The next action, when it directly continues a user instruction.
        extra: Unknown top-level keys (kept for custom templates; not counted by `is_empty`).
    """

    user_intent: list[str] = field(default_factory=list)
    technical_concepts: list[str] = field(default_factory=list)
    files: list[FileActivity] = field(default_factory=list)
    errors_and_fixes: list[str] = field(default_factory=list)
    problem_solving: list[str] = field(default_factory=list)
    user_messages: list[str] = field(default_factory=list)
    pending_tasks: list[str] = field(default_factory=list)
    current_work: str | None = None
    next_step: str | None = None
    extra: JSONObject = field(default_factory=dict)

    @classmethod
    def from_value(cls, value: JSONValue) -> StructuredSummary | None:
        """Read a parsed JSON value leniently (goose.md 3.2); None when it is not an object.

        Blank entries are kept; call `normalize` to drop them.
        """
        if not isinstance(value, dict):
            return None
        lists = {name: _string_list(value.get(name)) for name in _STRING_LISTS}
        return cls(
            **lists,
            files=_file_list(value.get("files")),
            current_work=_optional_string(value.get("current_work")),
            next_step=_optional_string(value.get("next_step")),
            extra={k: v for k, v in value.items() if k not in _KNOWN_FIELDS},
        )

    def normalize(self) -> StructuredSummary:
        """Drop blank list entries, blank key_code/current_work/next_step, and empty files.

        Strings themselves are not trimmed. Returns self.
        """
        for name in _STRING_LISTS:
            setattr(self, name, [s for s in getattr(self, name) if not _blank(s)])
        for activity in self.files:
            if activity.key_code is not None and _blank(activity.key_code):
                activity.key_code = None
        self.files = [
            f
            for f in self.files
            if not _blank(f.path) or not _blank(f.summary) or f.key_code is not None
        ]
        if self.current_work is not None and _blank(self.current_work):
            self.current_work = None
        if self.next_step is not None and _blank(self.next_step):
            self.next_step = None
        return self

    def is_empty(self) -> bool:
        """True when all nine known fields are empty or None (`extra` does not count)."""
        return not any(getattr(self, name) for name in _STRING_LISTS) and not (
            self.files or self.current_work is not None or self.next_step is not None
        )

    @classmethod
    def parse(cls, text: str) -> StructuredSummary | None:
        """The first usable summary in a model response, or None to keep the raw text."""
        return cls.parse_detailed(text).summary

    @classmethod
    def parse_detailed(cls, text: str) -> ParseOutcome:
        """Like `parse`, but also says why parsing fell back."""
        spans = candidate_spans(text)
        if not spans:
            return ParseOutcome(None, "no_candidate", 0)
        decoder = CandidateDecoder(text)
        any_object = False
        for tried, (start, end) in enumerate(spans, 1):
            try:
                value = decoder.decode(start, end)
            except ValueError:
                continue
            summary = cls.from_value(value)
            if summary is None:
                continue
            any_object = True
            if not summary.normalize().is_empty():
                return ParseOutcome(summary, "ok", tried)
        return ParseOutcome(None, "empty" if any_object else "invalid_json", len(spans))

    def to_context(self) -> JSONObject:
        """Template variables: the nine fields (None stays None) with `extra` keys at top level."""
        context: JSONObject = {name: list(getattr(self, name)) for name in _STRING_LISTS}
        context["files"] = [f.to_dict() for f in self.files]
        context["current_work"] = self.current_work
        context["next_step"] = self.next_step
        ordered = {
            name: context[name]
            for name in (
                "user_intent",
                "technical_concepts",
                "files",
                "errors_and_fixes",
                "problem_solving",
                "user_messages",
                "pending_tasks",
                "current_work",
                "next_step",
            )
        }
        ordered.update(self.extra)
        return ordered

    def render(self, template: str | None = None, name: str | None = None,
               params: Mapping[str, object] | None = None) -> str:
        """Render the summary as markdown.

        Args:
            template: A summary template source; the built-in one when None.
            name: The template's name for error messages.
            params: Template parameter values, rendered as variables over the summary's own
                (as their baked ``{% set %}`` lines would be).

        Raises:
            TemplateError: The template does not compile or fails to render.
        """
        if template is None:
            template = builtin_template(COMPACTION_SUMMARY_TEMPLATE) or ""
            name = name or COMPACTION_SUMMARY_TEMPLATE
        context: Mapping[str, object] = self.to_context()
        if params:
            context = {**context, **params}
        return render(template, context, name=name or COMPACTION_SUMMARY_TEMPLATE)
