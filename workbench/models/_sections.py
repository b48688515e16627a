"""The extractive baseline for prompts that ask for sections instead of Goose's JSON.

The agents' policy prompts (`workbench/prompts/policies/`) show the shape of the answer they
want in a fenced block: markdown headings (``## Pending tasks``), XML tags
(``<overall_goal>``...) inside a wrapper (``<state_snapshot>``), and thinking blocks
(``<analysis>``, ``<scratchpad>``). `requested_sections` reads that shape; `answer_sections`
writes an answer of exactly that shape, each section filled by a rule chosen from the words of
its heading (`SECTION_RULES`, first match wins), so two prompts that ask for different
sections get different summaries of the same conversation, offline.

Rules, by heading words: every user message; pending work (a request the user deferred, plus
the latest request); the single next step (the latest request); errors (failure lines quoted
from tool output); names and values to keep (the user's constraint lines, backticked
identifiers and paths); files (path and whether it was edited or only read); concepts (tools
used); progress and actions (the assistant's latest notes); current work (the assistant's last
note and the last tool call); intent (the first request and the latest ones); anything else
gets the assistant's last note. A thinking block gets ``extractive``. Lists keep at most
`MAX_ITEMS` entries (the first and the latest), each clipped to `ITEM_CHARS` characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.messages import Message
from workbench.models._extractive import (
    SECTION_ANSWERERS,
    _dedup,
    _error_lines,
    _is_edit,
    _request_paths,
    _Turn,
    _turns_from_messages,
    parse_transcript,
)
from workbench.models._requested_schema import clip_text

__all__ = ["SECTION_RULES", "Section", "answer_sections", "requested_sections",
           "section_answer", "section_turns"]

MAX_ITEMS = 10
ITEM_CHARS = 300
THINKING_TAGS = ("analysis", "scratchpad")
_FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)
_FENCE_KINDS = ("", "text", "xml", "markdown", "md")
_MD = re.compile(r"^(#{1,6})\s+(.+?)\s*$")
_OPEN = re.compile(r"^\s*<([A-Za-z][\w-]*)>\s*$")
_CLOSE = re.compile(r"^\s*</([A-Za-z][\w-]*)>\s*$")
_BACKTICKED = re.compile(r"`([^`\n]{2,80})`")
_DEFERRED = re.compile(r"\b(later|not now|still need|before we close|for after|next time)\b",
                       re.IGNORECASE)
_CONSTRAINT = re.compile(r"\b(never|must|always|don't|do not|only|keep|limit|port|instead of)\b",
                         re.IGNORECASE)


@dataclass(frozen=True)
class Section:
    """One line of an answer's shape: a heading to fill, or a line written as it is.

    Attributes:
        kind: ``md`` (a markdown heading), ``tag`` (an XML element to fill), ``think`` (a
            thinking block) or ``line`` (a wrapper tag written as it is).
        title: The heading text or tag name.
        line: The line as the prompt wrote it.
    """

    kind: str
    title: str
    line: str


def requested_sections(prompt: str) -> list[Section] | None:
    """The answer shape of the last fenced block of `prompt` that names at least two sections
    (module docstring), or None when the prompt shows none."""
    for kind, body in reversed(_FENCE.findall(prompt)):
        if kind.lower() not in _FENCE_KINDS:
            continue
        shape = _shape(body.splitlines())
        if sum(1 for s in shape if s.kind in ("md", "tag")) >= 2:
            return shape
    return None


def _shape(lines: list[str]) -> list[Section]:
    tags = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _OPEN.match(line))]
    closes = {m.group(1): i for i, line in enumerate(lines) if (m := _CLOSE.match(line))}
    shape: list[Section] = []
    for i, line in enumerate(lines):
        md = _MD.match(line)
        if md is not None:
            shape.append(Section("md", md.group(2), line))
            continue
        opened = _OPEN.match(line)
        if opened is not None:
            name = opened.group(1)
            end = closes.get(name, i)
            inner = [t for j, t in tags if i < j < end]
            if name.lower() in THINKING_TAGS:
                shape.append(Section("think", name, line))
            elif inner or name.lower() == "summary":
                shape.append(Section("line", name, line))
            else:
                shape.append(Section("tag", name, line))
            continue
        closed = _CLOSE.match(line)
        if closed is not None and closed.group(1).lower() not in THINKING_TAGS:
            name = closed.group(1)
            opened_at = next((j for j, t in tags if t == name), None)
            inner = [t for j, t in tags if opened_at is not None and opened_at < j < i]
            if inner or name.lower() == "summary":
                shape.append(Section("line", name, line))
    return shape


def section_turns(system: str, messages: Sequence[Message]) -> list[_Turn]:
    """The conversation a sections prompt was sent: the transcript in the system prompt, else
    the one in the user messages, else the messages themselves."""
    turns = parse_transcript(system)
    if turns:
        return turns
    text = "\n".join(m.concat_text() for m in messages if m.role == "user")
    return parse_transcript(text) or _turns_from_messages(messages)


class _Facts:
    """What the rules draw on, read once from the conversation."""

    def __init__(self, turns: list[_Turn]) -> None:
        self.requests = [t.text for t in turns if t.role == "user" and t.text]
        self.notes = [t.text for t in turns if t.role == "assistant" and t.text]
        self.files: dict[str, str] = {}
        self.errors: list[str] = []
        self.tools: list[str] = []
        self.last_call = ""
        for turn in turns:
            for tool, args in turn.requests:
                self.tools.append(tool)
                self.last_call = f"{tool} {', '.join(_request_paths(args))}".strip()
                for path in _request_paths(args):
                    if _is_edit(tool, args) or self.files.get(path) == "edited":
                        self.files[path] = "edited"
                    else:
                        self.files.setdefault(path, "read")
            for response in turn.responses:
                self.errors.extend(_error_lines(response))
        texts = self.requests + self.notes
        self.names = _dedup([m for t in texts for m in _BACKTICKED.findall(t)])
        self.constraints = _dedup([line.strip(" -*") for r in self.requests
                                   for line in r.splitlines()
                                   if _CONSTRAINT.search(line) and len(line.split()) >= 3])

    def last_note(self) -> list[str]:
        return self.notes[-1:]


def _cap(items: list[str]) -> list[str]:
    items = _dedup([clip_text(i, ITEM_CHARS) for i in items if i.strip()])
    return items if len(items) <= MAX_ITEMS else items[:1] + items[-(MAX_ITEMS - 1):]


Rule = Callable[[_Facts], list[str]]
SECTION_RULES: list[tuple[re.Pattern[str], Rule]] = [
    (re.compile(r"user messages?"), lambda f: f.requests),
    (re.compile(r"pending|remaining|still|open|to.?do|comes next|next steps|plan"),
     lambda f: [r for r in f.requests if _DEFERRED.search(r)] + f.requests[-1:]),
    (re.compile(r"next step"), lambda f: f.requests[-1:]),
    (re.compile(r"error|fix|bug"), lambda f: f.errors),
    (re.compile(r"knowledge|constraint|preference|rule|remember|values|names|data|reference"
                r"|key facts"),
     lambda f: f.constraints + [f"`{n}`" for n in f.names] + list(f.files)),
    (re.compile(r"file|code"), lambda f: [f"{p}: {how}" for p, how in f.files.items()]),
    (re.compile(r"concept|technolog"), lambda f: f.tools),
    (re.compile(r"progress|decision|problem|did|changed|actions|summary so far|context"),
     lambda f: f.notes[-MAX_ITEMS:]),
    (re.compile(r"current|now|recent"),
     lambda f: f.last_note() + ([f"last tool call: {f.last_call}"] if f.last_call else [])),
    (re.compile(r"request|intent|goal|objective|asked|aim"), lambda f: f.requests),
]
"""Heading words -> what fills the section (module docstring), first match wins."""


def _fill(title: str, facts: _Facts) -> list[str]:
    words = title.lower().replace("_", " ")
    for pattern, rule in SECTION_RULES:
        if pattern.search(words):
            return _cap(rule(facts))
    return _cap(facts.last_note())


def answer_sections(shape: list[Section], turns: list[_Turn]) -> str:
    """An answer of exactly `shape`, each section filled by `SECTION_RULES` from `turns`."""
    facts = _Facts(turns)
    out: list[str] = []
    for section in shape:
        if section.kind == "line":
            out.append(section.line.strip())
        elif section.kind == "think":
            out.append(f"<{section.title}>extractive</{section.title}>")
        else:
            items = _fill(section.title, facts)
            body = "\n".join(f"- {i}" for i in items) if items else "- none"
            if section.kind == "md":
                out.append(f"{section.line.strip()}\n{body}")
            else:
                out.append(f"<{section.title}>\n{body}\n</{section.title}>")
    return "\n".join(out)


def section_answer(system: str, messages: list[Message]) -> str | None:
    """The answer to a prompt that shows the sections it wants, or None for any other prompt
    (registered in ``_extractive.SECTION_ANSWERERS``)."""
    shape = requested_sections(system)
    if shape is None:
        return None
    return answer_sections(shape, section_turns(system, messages))


if section_answer not in SECTION_ANSWERERS:
    SECTION_ANSWERERS.append(section_answer)
