"""``lookup``: an offline, model-free answerer that answers by retrieval from the context.

It simulates one thing only: *is the answer findable* in what the agent was left with. No
model reads the context; a question is answered by

1. retrieval: the context is cut into passages (a human message whole; other texts by
   paragraph, long paragraphs by line; each tool call; each line of a tool output), and the
   passages holding the most of the question's cue words (`Question.cue`, else the question's
   own content words) come first, ties broken by recency (or by earliness for a question about
   the *first* of something). A cue naming a kind of passage (a human message, a tool call)
   reads those passages alone, latest first, and the other cue words only when the context
   holds none of them;
2. extraction: from the best passages, the value of the question's answer type that the
   question does not already contain: for a fill-in-the-blank question the value right after
   the words before the blank, else the first number, path or identifier of the passage. An
   error question takes the error line (the errors probe's extraction) of the latest or first
   failing tool output, or, in a context without tool outputs (a summary), of its text; an
   open question takes the best passage's whole text; a list of files takes every path a
   writing tool call or an edit sentence names. A ``value`` question with words before its
   blank takes the token that follows them, whatever its shape (a commit hash, a version);
3. where a question says its answer stands in a tool call (`Question.answer_in`: which
   command ran, how a file was touched), only the tool calls are ranked, and a choice is read
   from what a call does (its name, command and paths), not from the text it carries; for a
   question about a call's outcome (an exit code, an error, what a command printed), the tool
   call its cue words name best (ties by position), and the value of the asked type in that
   call's own output. A context without tool calls (a summary) is searched like any other, by
   the cue (and, for an outcome, the question's own words).

It never sees the expected answer, so a context that lost a value cannot score it; it is
generous the other way (a value merely present near the right words counts). Its scores bound
what a model could recover, at no cost: the default experiment uses it, so the QA columns
appear with no key. Cue words are found by substring search over the lowered context (word
boundaries checked), so building an answerer costs little more than reading the context once.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.messages import Message, TextContent, ToolResponse
from workbench.metrics._common import content_words
from workbench.metrics._errors import error_line
from workbench.metrics._files import FILE_EXTENSIONS
from workbench.probes._normalize import contains, normalize_text
from workbench.probes._questions import CUE_TOOL_CALL, CUE_TOOL_OUTPUT, CUE_USER, Question
from workbench.probes._transcript import call_head, is_human, written_paths

__all__ = ["LookupAnswerer", "PASSAGE_CHARS", "TOP_PASSAGES"]

PASSAGE_CHARS = 500
"""A paragraph longer than this is cut into its lines."""
TOP_PASSAGES = 5
"""How many of the best passages extraction looks through before giving up."""
USER_MARK, CALL_MARK, OUTPUT_MARK = CUE_USER, CUE_TOOL_CALL, CUE_TOOL_OUTPUT
MARKS = (USER_MARK, CALL_MARK, OUTPUT_MARK)

EDIT_WORDS = ("edited", "modified", "changed", "updated", "created", "wrote", "written",
              "deleted", "removed", "patched")
CHOICE_WORDS = {
    "created": ("created", "create", "wrote", "write", "write_file", "create_file", "new",
                "added", "cat <<"),
    "edited": ("edited", "edit", "edit_file", "modified", "changed", "updated", "patched",
               "fixed", "str_replace", "multiedit", "sed -i"),
    "deleted": ("deleted", "delete", "delete_file", "removed", "rm"),
    "read": ("read", "read_file", "view", "open", "cat", "nl", "head", "tail", "sed -n"),
}
ERROR_HINTS = ("error", "exception", "failed", "fatal", "traceback", "not found", "denied")
"""A text passage is searched for an error line only when it holds one of these."""
_NUMBER = re.compile(r"(?<![\w.])\d[\d,_]*(?:\.\d+)?(?!\w)")
_TOKEN = re.compile(r"[A-Za-z0-9_./~-]+")
_BACKTICKED = re.compile(r"`([^`\n]{1,120})`")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_BROAD_ERROR = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception):.*|\b(?:error|fatal):.*")
_PARAGRAPH = re.compile(r"\n\s*\n")
_TOKEN_AFTER = re.compile(r"\s*[`'\"(\[]?([^\s`'\"()\[\],;]+)")
_BULLET = re.compile(r"^[ \t]*(?:[-*+•]|\d+[.)])[ \t]+", re.MULTILINE)
SECTION_CHARS = 1500
"""An open answer that lands on a heading takes the section under it, up to this many
characters."""


@dataclass(frozen=True)
class Passage:
    """One retrievable piece of the context.

    Attributes:
        text: The passage as the context shows it.
        mark: Where it came from: `USER_MARK`, `CALL_MARK`, `OUTPUT_MARK` or ``""`` (text).
        written: For a tool call that writes files, the paths it writes.
        head: For a tool call, what it does without what it carries (`call_head`): a
            question about a call's kind reads this, not the file content it wrote.
    """

    text: str
    mark: str = ""
    written: tuple[str, ...] = ()
    head: str = ""


def _paragraphs(text: str) -> list[str]:
    out: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = para.strip()
        if len(para) <= PASSAGE_CHARS:
            if para:
                out.append(para)
        else:
            out.extend(line.strip() for line in para.splitlines() if line.strip())
    return out


def _agent_view(message: Message) -> Message:
    """What the agent sees of `message` (`Message.agent_projection`, skipped when nothing in
    it is annotated for an audience, which is almost always)."""
    for item in message.content:
        if isinstance(item, TextContent) and item.annotations is not None:
            return message.agent_projection()
        if isinstance(item, ToolResponse) and any(
                getattr(b, "annotations", None) is not None for b in item.tool_result.blocks()):
            return message.agent_projection()
    return message


def _path_like(token: str) -> bool:
    token = token.strip(".,;:)(`'\"")
    if not token or token.startswith("-") or "://" in token:
        return False
    if "/" in token and any(ch.isalnum() for ch in token):
        return True
    ext = token.rsplit(".", 1)[-1].lower() if "." in token else ""
    return ext in FILE_EXTENSIONS and len(token) > len(ext) + 1


def _candidates(text: str, answer_type: str) -> list[tuple[int, str]]:
    """(offset, value) of every value of `answer_type` in `text`, in order."""
    if answer_type == "number":
        return [(m.start(), m.group()) for m in _NUMBER.finditer(text)]
    if answer_type == "path":
        return [(m.start(), m.group().strip(".,;:)(`'\"")) for m in _TOKEN.finditer(text)
                if _path_like(m.group())]
    if answer_type == "identifier":
        found = [(m.start(1), m.group(1).strip()) for m in _BACKTICKED.finditer(text)]
        found += [(m.start(), m.group()) for m in _IDENTIFIER.finditer(text)
                  if "_" in m.group() or any(c.isdigit() for c in m.group())]
        return sorted(found)
    return sorted(_candidates(text, "number") + _candidates(text, "path")
                  + _candidates(text, "identifier"))


def _text_error(text: str) -> str | None:
    lower = text.lower()
    if not any(h in lower for h in ERROR_HINTS):
        return None
    # A summary lists errors as bullets: the marker hides progress lines from error_line.
    line = error_line(_BULLET.sub("", text))
    if line is not None:
        return line
    match = _BROAD_ERROR.search(text)
    return " ".join(match.group().split()) if match else None


def _is_heading(text: str) -> bool:
    return text.startswith("#") or (text.endswith(":") and len(text.split()) <= 8)


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


class LookupAnswerer:
    """Answers questions from one context by retrieval (see the module docstring).

    Args:
        messages: The context; only agent-visible messages, as the agent sees them, count.
    """

    def __init__(self, messages: Sequence[Message]) -> None:
        self.passages: list[Passage] = []
        self._output_errors: list[tuple[int, str]] = []
        self._call_ids: dict[int, str] = {}
        self._outputs: dict[str, tuple[int, int, str]] = {}
        for message in messages:
            if message.is_agent_visible:
                self._add(_agent_view(message))
        lowered = [p.text.lower() for p in self.passages]
        self._starts: list[int] = []
        at = 0
        for text in lowered:
            self._starts.append(at)
            at += len(text) + 1
        self._corpus = "\n".join(lowered)
        self._hits: dict[str, set[int]] = {}
        self._text_errors: list[tuple[int, str]] | None = None

    def _add(self, message: Message) -> None:
        text = message.concat_text().strip()
        if text:
            if is_human(message, text):
                self.passages.append(Passage(text, USER_MARK))
            else:
                self.passages.extend(Passage(p) for p in _paragraphs(text))
        for response in message.tool_responses():
            result = response.tool_result
            body = response.text() if result.ok else str(result.error or "")
            error = error_line(body, flagged=result.is_error) if body else None
            lines = [line.strip() for line in body.splitlines() if line.strip()]
            if error is not None:
                self._output_errors.append((len(self.passages), error))
            at = len(self.passages)
            self._outputs.setdefault(response.id, (at, at + len(lines), body))
            self.passages.extend(Passage(line, OUTPUT_MARK) for line in lines)
        for request in message.tool_requests():
            self._call_ids[len(self.passages)] = request.id
            written = tuple(written_paths(request.name or "", request.arguments or {}))
            head = call_head(request.name or "", request.arguments)
            self.passages.append(Passage(f"{request.name} {request.arguments or {}}", CALL_MARK,
                                         written, head))

    def _passages_with(self, word: str) -> set[int]:
        """Indexes of the passages holding `word` as a whole word (or carrying it as mark)."""
        found = self._hits.get(word)
        if found is not None:
            return found
        found = set()
        if word in MARKS:
            found = {i for i, p in enumerate(self.passages) if p.mark == word}
        elif word:
            corpus, size = self._corpus, len(word)
            start = corpus.find(word)
            while start >= 0:
                end = start + size
                if ((start == 0 or not _is_word(corpus[start - 1]))
                        and (end == len(corpus) or not _is_word(corpus[end]))):
                    found.add(bisect.bisect_right(self._starts, start) - 1)
                start = corpus.find(word, start + 1)
        self._hits[word] = found
        return found

    def ranked(self, cue: Sequence[str], first: bool = False) -> list[int]:
        """Indexes of the passages holding at least one cue word, best first (ties: latest,
        or earliest when `first`)."""
        scores: dict[int, int] = defaultdict(int)
        for word in dict.fromkeys(w.lower() for w in cue):
            for n in self._passages_with(word):
                scores[n] += 1
        return sorted(scores, key=lambda n: (-scores[n], n if first else -n))

    def answer(self, question: Question) -> str:
        """The answer `question` gets from this context (``""`` when nothing fits)."""
        first = question.position == "first"
        if question.answer_in == "output":
            return self._in_output(question, first)
        if question.answer_type == "error":
            return self._error(first)
        if question.answer_type == "paths":
            return "\n".join(self._written_paths())
        marks = [w for w in question.cue if w in MARKS]
        words = [w for w in question.cue if w not in MARKS]
        ranked = self.ranked(marks, first) if marks else []
        if not ranked:
            ranked = self.ranked(words or content_words(question.text, min_len=3), first)
        calls = ([n for n in ranked if self.passages[n].mark == CALL_MARK]
                 if question.answer_in == "call" else [])
        ranked = calls or ranked  # a summary has no calls: its text is read as usual
        if question.answer_type == "text":
            return self._section(ranked[0]) if ranked else ""
        if question.answer_type == "choice":
            by_head = self._by_head(calls, words, first)
            return (self._choice(by_head, question.choices, heads=True) if by_head
                    else self._choice(ranked, question.choices))
        asked = normalize_text(question.text)
        return self._first_value([self.passages[n].text for n in ranked[:TOP_PASSAGES]],
                                 question, asked)

    def _first_value(self, texts: Sequence[str], question: Question, asked: str) -> str:
        """The first value of `texts` (best first); a ``value`` blank is looked for after its
        words in every text before any other value is taken."""
        found = "" if question.answer_type != "value" else next(
            (v for text in texts if (v := self._after_lead(text, question, asked))), "")
        return found or next((v for text in texts if (v := self._value(text, question, asked))),
                             "")

    def _after_lead(self, text: str, question: Question, asked: str) -> str:
        """The token right after the words before the blank (whitespace aside; their last
        occurrence for a question about the latest value), or ``""``."""
        lead = question.blank_before.strip().lower()
        if not lead:
            return ""
        flat = " ".join(text.split())
        at = flat.lower().rfind(lead) if question.position == "last" else flat.lower().find(lead)
        token = _TOKEN_AFTER.match(flat, at + len(lead)) if at >= 0 else None
        value = token.group(1).rstrip(".:") if token else ""
        return value if value and normalize_text(value) not in asked else ""

    def _section(self, n: int) -> str:
        """Passage `n`, or when it is a heading (``## User Intent``, ``Next steps:``) the text
        under it up to the next heading."""
        passage = self.passages[n]
        if not _is_heading(passage.text):
            return passage.text
        parts = [passage.text]
        size = len(passage.text)
        for nxt in self.passages[n + 1:]:
            if _is_heading(nxt.text) or nxt.mark or size > SECTION_CHARS:
                break
            parts.append(nxt.text)
            size += len(nxt.text)
        return "\n".join(parts)

    def _in_output(self, question: Question, first: bool) -> str:
        """The answer read from the output of the tool call the cue names best, or, in a
        context without one, from the passages the cue and the question's words name."""
        words = [w for w in question.cue if w not in MARKS]
        calls = [n for n in self.ranked(words, first) if n in self._call_ids]
        asked = normalize_text(question.text)
        output = self._outputs.get(self._call_ids[calls[0]]) if calls else None
        if output is not None:
            start, end, body = output
            lines = [p.text for p in self.passages[start:end]]
            if question.answer_type == "error":
                return (error_line(body, flagged=True) or "") if body else ""
            if question.answer_type == "text":
                return "\n".join(lines)
            lead = question.blank_before.strip().lower()
            ordered = sorted(lines, key=lambda line: not (lead and lead in line.lower()))
            return self._first_value(ordered, question, asked)
        ranked = self.ranked(words + content_words(question.text, min_len=3), first)
        if question.answer_type == "text":
            return self._section(ranked[0]) if ranked else ""
        texts = [self.passages[n].text for n in ranked[:TOP_PASSAGES]]
        if question.answer_type == "error":
            return next((e for text in texts if (e := _text_error(text))), "")
        return self._first_value(texts, question, asked)

    def _value(self, text: str, question: Question, asked: str) -> str:
        kind = question.answer_type if question.answer_type != "value" else "any"
        found = [(at, v) for at, v in _candidates(text, kind)
                 if v and normalize_text(v) not in asked]
        if not found:
            return ""
        lead = question.blank_before.strip().lower()
        if lead:
            at = text.lower().find(lead)
            if at >= 0:
                after = [v for offset, v in found if offset >= at + len(lead)]
                if after:
                    return after[0]
        return found[0][1]

    def _error(self, first: bool) -> str:
        errors = self._output_errors
        if not errors:  # no failing tool output here (a summary): errors quoted in its text
            if self._text_errors is None:
                self._text_errors = [(i, e) for i, p in enumerate(self.passages)
                                     if p.mark != CALL_MARK and (e := _text_error(p.text))]
            errors = self._text_errors
        if not errors:
            return ""
        return errors[0][1] if first else errors[-1][1]

    def _by_head(self, ranked: list[int], words: Sequence[str], first: bool) -> list[int]:
        """The tool calls of `ranked` whose head (`call_head`) holds a cue word, the most
        first (ties by position): a call that only carries the word in a file it wrote, or in
        a script it ran, does not count. A choice reads all of them, in this order."""
        scores = {n: sum(1 for w in words if contains(self.passages[n].head.lower(), w.lower()))
                  for n in ranked if self.passages[n].head}
        return sorted((n for n, s in scores.items() if s),
                      key=lambda n: (-scores[n], n if first else -n))

    def _choice(self, ranked: list[int], choices: Sequence[str], heads: bool = False) -> str:
        allowed = list(choices) or list(CHOICE_WORDS)
        # every call naming the file may tell (the latest ones often only read it)
        for n in ranked if heads else ranked[:TOP_PASSAGES]:
            passage = self.passages[n]
            lower = (passage.head if heads and passage.head else passage.text).lower()
            for choice in allowed:
                for word in CHOICE_WORDS.get(choice, (choice,)):
                    if re.search(r"(?<![\w])" + re.escape(word) + r"(?![\w])", lower):
                        return choice
        return ""

    def _written_paths(self) -> list[str]:
        seen: dict[str, None] = {}
        edits = set().union(*(self._passages_with(w) for w in EDIT_WORDS))
        for n, passage in enumerate(self.passages):
            if passage.mark == CALL_MARK:
                paths: Sequence[str] = passage.written
            elif n in edits:
                paths = [m.group().strip(".,;:)(`'\"") for m in _TOKEN.finditer(passage.text)
                         if _path_like(m.group())]
            else:
                continue
            for path in paths:
                seen.setdefault(path, None)
        return list(seen)
