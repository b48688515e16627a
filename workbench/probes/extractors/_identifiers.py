"""Identifiers: names and exact values the work depends on, asked as fill-in-the-blanks.

Found in what the agent wrote, what the tools printed and what the calls wrote into files:

- functions and classes: a name in backticks in the agent's text (`` `settle_totals` ``,
  `` `Spotter.Telemetry.Otel` ``), and the name a definition introduces (``def name``,
  ``class Name``, ``defmodule Name``, ``function name``, ``fn name``);
- endpoints: ``GET /api/x`` and ``http(s)://`` addresses;
- versions: ``name 1.5.0``, ``name==1.5.0``, ``"~> 1.8"``, ``version 2.1.39``;
- commit hashes: on a line that speaks of a commit (``Commit 503d567 fix: ...``, ``[main
  a1b2c3d] msg``, ``HEAD is now at ...``);
- numeric limits: a number set for a timeout, limit, maximum, size, port, retry count...
  (``timeout: 60000``, ``max_tokens = 512``).

Names, endpoints, versions, commits and limits are read from the agent's own texts;
definitions, endpoints, versions and limits from what its calls wrote into files; commits,
versions and endpoints from tool outputs (a file's listing holds names the agent may never
have looked at). Each distinct value is asked once, at the first line that holds it (the
agent's own words first), as a fill-in-the-blank on that line (*recall*). A value that shows
twice on its line, or whose blank the history fills with another value elsewhere, is not
asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from workbench.metrics._files import FILE_EXTENSIONS
from workbench.probes._questions import Question
from workbench.probes.extractors._common import cloze_question
from workbench.probes.extractors._history import History

__all__ = ["identifier_questions", "identifiers_in"]

SOURCE = "transcript:identifiers"
MIN_CHARS = 4
_BACKTICKED = re.compile(r"`([A-Za-z_][\w.:]*[\w])(?:\(\))?`")
_DEFINED = re.compile(r"^[^A-Za-z\n]{0,12}(?:(?:export |pub |async |public |private )*)"
                      r"(?:def|defp|class|defmodule|function|func|struct|interface|trait|fn)\s+"
                      r"([A-Za-z_][\w.]*\w)\s*[(:{<]|^[^A-Za-z\n]{0,12}defmodule ([\w.]+) do",
                      re.MULTILINE)
_ENDPOINT = re.compile(r"\b(?:GET|POST|PUT|PATCH|DELETE) (/[\w/{}:.-]+)|(https?://[^\s)`'\"<>]+)")
_VERSION = re.compile(r"(?:\b[\w-]+(?:==|>=|<=|@| )|~> |\bversion:? |\bv)"
                      r"(\d+\.\d+(?:\.\d+)*(?:-[\w.]+)?)"
                      r"(?![\w.])", re.IGNORECASE)
_COMMIT_LINE = re.compile(r"\bcommit\b|^\[[\w./-]+ [0-9a-f]{7,40}\]|HEAD is now at", re.IGNORECASE)
_HASH = re.compile(r"(?<![\w/.])([0-9a-f]{7,40})(?![\w/])")
_LIMIT = re.compile(
    r"\b[\w.]*(?:timeout|limit|max|min|size|port|retries|retry|threshold|budget|interval|ttl|"
    r"workers|threads|depth|width|length|capacity)[\w.]*['\"]?\s*(?:[:=]|=>|:=| is| to| of)\s*"
    r"(\d+(?:[_,]\d{3})*(?:\.\d+)?)(?![\w.])", re.IGNORECASE)


def _is_name(value: str) -> bool:
    """A function or class name, not a word, a file name or a number."""
    if len(value) < MIN_CHARS or value.rsplit(".", 1)[-1].lower() in FILE_EXTENSIONS:
        return False
    inner = value.replace(".", "")
    return "_" in value or "." in value or (inner != inner.lower() and inner != inner.upper()
                                            and not inner.istitle())


AGENT, WRITTEN, OUTPUT = "agent", "written", "output"
"""Where a text comes from: the agent's words, a file a call wrote, a tool's output."""
KINDS_FROM = {AGENT: {"name", "endpoint", "version", "commit", "limit"},
              WRITTEN: {"definition", "endpoint", "version", "limit"},
              OUTPUT: {"definition", "endpoint", "version", "commit"}}
"""What is looked for in each: a tool output is often a file's listing, whose names, limits
and definitions the agent may never have looked at; its commits and versions are results."""


def identifiers_in(text: str, origin: str = AGENT) -> Iterator[tuple[str, int, str]]:
    """``(value, offset, answer type)`` of each identifier of `text` that `origin` gives
    (`KINDS_FROM`), in the module's order."""
    kinds = KINDS_FROM[origin]
    if "name" in kinds:
        for match in _BACKTICKED.finditer(text):
            if _is_name(match.group(1)):
                yield match.group(1), match.start(1), "identifier"
    if "definition" in kinds:
        for match in _DEFINED.finditer(text):
            group = 1 if match.group(1) else 2
            if len(match.group(group)) >= MIN_CHARS:
                yield match.group(group), match.start(group), "identifier"
    if "endpoint" in kinds:
        yield from _endpoints(text)
    if "version" in kinds:
        for match in _VERSION.finditer(text):
            yield match.group(1), match.start(1), "value"
    if "commit" in kinds:
        yield from _commits(text)
    if "limit" in kinds:
        for match in _LIMIT.finditer(text):
            yield match.group(1), match.start(1), "number"


def _endpoints(text: str) -> Iterator[tuple[str, int, str]]:
    for match in _ENDPOINT.finditer(text):
        group = 1 if match.group(1) else 2
        yield match.group(group).rstrip(".,:;"), match.start(group), "value"


def _commits(text: str) -> Iterator[tuple[str, int, str]]:
    for line in re.finditer(r"[^\n]+", text):
        if _COMMIT_LINE.search(line.group()):
            for match in _HASH.finditer(line.group()):
                value = match.group(1)
                if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
                    yield value, line.start() + match.start(1), "value"


def _sources(history: History) -> Iterator[tuple[int, str, str]]:
    """``(message index, text, origin)`` to read, the agent's texts first, then the texts the
    calls wrote (file contents, edits) and the tool outputs."""
    yield from ((t.index, t.text, AGENT) for t in history.agent)
    for call in history.calls:
        for value in call.arguments.values():
            if isinstance(value, str) and "\n" in value:
                yield call.index, value, WRITTEN
        if call.result is not None and call.output:
            yield call.result, call.output, OUTPUT


def identifier_questions(history: History) -> list[Question]:
    """The identifier questions of the session (see the module docstring)."""
    found: dict[str, Question] = {}
    for index, text, origin in _sources(history):
        for value, at, answer_type in identifiers_in(text, origin):
            if value in found:
                continue
            question = cloze_question("recall", SOURCE, text, value, at, index,
                                      "number" if answer_type == "number" else "value",
                                      corpus=history.corpus_lower)
            if question is not None:
                found[value] = question
    ordered = sorted(found.values(), key=lambda q: q.evidence[0].message)
    clozes: dict[str, int] = {}
    for q in ordered:
        clozes[q.text] = clozes.get(q.text, 0) + 1
    return [q for q in ordered if clozes[q.text] == 1]
