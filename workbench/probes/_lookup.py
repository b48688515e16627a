"""``lookup``: an offline, model-free answerer that answers by retrieval from the context.

It simulates an agent that reads the whole compacted context and answers from the passage
that names the asked subject, whatever the layout: headings or none, lists or prose,
``key: value`` lines, JSON, tables, tags, any order of sections. No model reads anything:

1. reading: a human message is one passage; every other text is cut into units by
   `workbench.probes._units.read_units` (a statement each, labelled with the field it stands
   under, a file record's units with its path); each tool call is a passage, and each line of
   a tool output;
2. the subject: a question naming something in backticks (a file, a command, a name) is
   about it; when nothing in the context names it, the answer is ``unknown`` (a question
   whose answer the session never gives relies on this);
3. retrieval: passages are ranked by the cue words (`Question.cue`, else the question's own
   content words) found in their text, label or record; ties go to the later message (the earlier for a question about the
   *first* of something), then by content: the field's label, and the item's place in that
   field's list. The order of a summary's sections never decides. A cue naming a kind of
   passage (a human message, a tool call) reads those alone, and a summary's units under a
   ``user`` label stand for the human's messages there;
4. extraction: from the best passages, the value of the question's answer type that the
   question does not hold: after the words before a blank when it has some, else the first
   value of the passage (`workbench.probes._lookup_read`). An error question takes the error
   line of the latest (or first) failing tool output, or in a context without tool outputs of
   the error units; an open question takes the best passages' text; a list of files every
   path a writing call or an edit statement names; whether a file was created, edited or
   deleted is read from what the statements about that file say of it (deleted over created
   over edited, a created file being edited after); a question whose answer stands in a tool
   call (`Question.answer_in`) reads the calls, or the output of the call its cue names.

It never reads `Question.expected` nor `Question.stale`, so a context that lost a value cannot
score it; it is generous the other way (a value merely present beside the right words counts).
Its scores bound what a model could recover, at no cost: the default experiment uses it, so
the QA columns appear with no key.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

from workbench.messages import Message
from workbench.metrics._common import content_words
from workbench.metrics._errors import error_line
from workbench.probes._lookup_read import (
    CHOICE_WORDS,
    EDIT_WORDS,
    UNKNOWN,
    agent_view,
    attributed_choice,
    cap_texts,
    find_word,
    has_word,
    path_tokens,
    replayed_prompt,
    same_path,
    subject_terms,
    text_error,
    values_in,
    written_in,
)
from workbench.probes._normalize import contains, normalize_text
from workbench.probes._questions import CUE_TOOL_CALL, CUE_TOOL_OUTPUT, CUE_USER, Question
from workbench.probes._transcript import call_head, is_human, written_paths
from workbench.probes._units import bare_text, read_units, stem

__all__ = ["LookupAnswerer", "Passage", "TOP_PASSAGES"]

TOP_PASSAGES = 5
"""How many of the best passages extraction looks through (and an open answer joins)."""
USER_MARK, CALL_MARK, OUTPUT_MARK = CUE_USER, CUE_TOOL_CALL, CUE_TOOL_OUTPUT
MARKS = (USER_MARK, CALL_MARK, OUTPUT_MARK)


class Passage(NamedTuple):
    """One retrievable piece of the context (immutable; a named tuple, as a full history makes
    tens of thousands of them and a tuple is built several times faster than a frozen
    dataclass).

    Attributes:
        text: The passage as the context shows it (a unit without its layout's markup).
        mark: Where it came from: `USER_MARK`, `CALL_MARK`, `OUTPUT_MARK` or ``""`` (text).
        written: For a tool call that writes files, the paths it writes.
        head: For a tool call, what it does without what it carries (`call_head`).
        label: Stems of the field a unit stands under (`workbench.probes._units.Unit`).
        subject: The path of the file record a unit belongs to.
        message: The index of its message in the context (the time order).
        group: The field (or, for other passages, the message part) it is an item of.
        order: Its place in `group`.
        body: Where a unit's text starts after a lead-in that labels it, or 0.
    """

    text: str
    mark: str = ""
    written: tuple[str, ...] = ()
    head: str = ""
    label: frozenset[str] = frozenset()
    subject: str = ""
    message: int = 0
    group: str = ""
    order: int = 0
    body: int = 0


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
        visible = [agent_view(m) for m in messages if m.is_agent_visible]
        for index, message in enumerate(visible):
            self._add(message, index, index > 0 and visible[index - 1].role == "assistant")
        lowered = [p.text.lower() for p in self.passages]
        self._starts: list[int] = []
        at = 0
        for text in lowered:
            self._starts.append(at)
            at += len(text) + 1
        self._corpus = "\n".join(lowered)
        self._labels: dict[str, set[int]] = defaultdict(set)
        for n, passage in enumerate(self.passages):
            for word in passage.label:
                self._labels[word].add(n)
        self._subjects = "\n".join(p.subject.lower() for p in self.passages)
        self._hits: dict[str, tuple[set[int], set[int]]] = {}
        self._bare: list[str] | None = None
        self._distinct = 0

    def _add(self, message: Message, index: int, after_assistant: bool) -> None:
        text = message.concat_text().strip()
        part = 0
        if text:
            if is_human(message, text) or replayed_prompt(message, text, after_assistant):
                self.passages.append(Passage(text, USER_MARK, message=index))
                part = 1
            else:
                for unit in read_units(text):
                    # a summary (a user-role text) lists the human's words under a "user" label
                    user = message.role == "user" and "user" in unit.label
                    self.passages.append(Passage(
                        unit.text, USER_MARK if user else "", label=unit.label,
                        subject=unit.subject, message=index, group=unit.group,
                        order=unit.order, body=unit.body))
        for response in message.tool_responses():
            result = response.tool_result
            body = response.text() if result.ok else str(result.error or "")
            error = error_line(body, flagged=result.is_error) if body else None
            lines = [line.strip() for line in body.splitlines() if line.strip()]
            if error is not None:
                self._output_errors.append((len(self.passages), error))
            at = len(self.passages)
            self._outputs.setdefault(response.id, (at, at + len(lines), body))
            self.passages.extend(Passage(line, OUTPUT_MARK, message=index, group="\x00",
                                         order=part + i) for i, line in enumerate(lines))
            part += len(lines)
        for request in message.tool_requests():
            self._call_ids[len(self.passages)] = request.id
            written = tuple(written_paths(request.name or "", request.arguments or {}))
            head = call_head(request.name or "", request.arguments)
            self.passages.append(Passage(f"{request.name} {request.arguments or {}}", CALL_MARK,
                                         written, head, message=index, group="\x00",
                                         order=part))
            part += 1

    # ---- retrieval -----------------------------------------------------------------------

    def _passages_with(self, word: str) -> tuple[set[int], set[int]]:
        """(passages whose text holds `word` as a whole word, or carry it as their mark;
        passages whose label or record names it)."""
        found = self._hits.get(word)
        if found is not None:
            return found
        in_text: set[int] = set()
        in_label: set[int] = set()
        if word in MARKS:
            in_text = {i for i, p in enumerate(self.passages) if p.mark == word}
        elif word:
            in_text = find_word(self._corpus, self._starts, word)
            stems = [stem(w) for w in re.findall(r"[a-z0-9]+", word)]
            if stems:
                in_label = set.intersection(*(self._labels.get(s, set()) for s in stems))
            if self._subjects.strip():
                in_label |= find_word(self._subjects, None, word)
        self._hits[word] = (in_text, in_label)
        return in_text, in_label

    def ranked(self, cue: Sequence[str], first: bool = False) -> list[int]:
        """Indexes of the passages the cue words name, best first (see the module docstring:
        the most cue words, each weighed by how few passages it names; then the latest message,
        or with `first` the earliest; then the field's label and the item's place in it)."""
        scores: dict[int, float] = defaultdict(float)
        bare = self._bare_texts()
        total = self._distinct
        for word in dict.fromkeys(w.lower() for w in cue):
            in_text, in_label = self._passages_with(word)
            named = in_text | in_label
            if named:  # a statement a summary repeats in two sections counts once
                weight = math.log(1 + total / len({bare[n] for n in named}))
                for n in named:
                    scores[n] += weight
        return sorted(scores, key=lambda n: self._order(n, first, -round(scores[n], 9)))

    def _bare_texts(self) -> list[str]:
        if self._bare is None:
            self._bare = [bare_text(p.text) for p in self.passages]
            self._distinct = len(set(self._bare))  # the passages of distinct content
        return self._bare

    def _order(self, n: int, first: bool, *before: float) -> tuple[object, ...]:
        p = self.passages[n]
        when = p.message if first else -p.message
        return (*before, when, p.group, p.order if first else -p.order)

    # ---- answers -------------------------------------------------------------------------

    def answer(self, question: Question) -> str:
        """The answer `question` gets from this context (``unknown`` when nothing fits)."""
        terms = subject_terms(question.text)
        if terms and not any(self._named(t) for t in terms):
            return UNKNOWN
        return self._answer(question, terms) or UNKNOWN

    def _named(self, term: str) -> bool:
        """True when some passage names `term` (a path by its file name)."""
        word = term.lower()
        if "/" in word:
            word = word.rstrip("/").rsplit("/", 1)[-1]
        in_text, in_label = self._passages_with(word)
        return bool(in_text or in_label)

    def _answer(self, question: Question, terms: list[str]) -> str:
        first = question.position == "first"
        if question.answer_in == "output":
            return self._in_output(question, first)
        if question.answer_type == "error":
            return self._error(question, first)
        if question.answer_type == "paths":
            return "\n".join(self._written_paths())
        marks = [w for w in question.cue if w in MARKS]
        words = [w for w in question.cue if w not in MARKS]
        ranked = self.ranked(marks, first) if marks else []
        if not ranked:
            ranked = self.ranked(words or content_words(question.text, min_len=3), first)
        calls = ([n for n in ranked if self.passages[n].mark == CALL_MARK]
                 if question.answer_in == "call" else [])
        if question.answer_type == "text":
            if calls:
                return self.passages[calls[0]].text
            if marks and ranked:
                return self._marked_text(ranked, first)
            return self._joined(ranked)
        if question.answer_type == "choice":
            by_head = self._by_head(calls, words, first)
            if by_head:
                return self._choice(by_head, question.choices)
            path = next((t for t in terms if path_tokens(t)), "")
            return self._attributed(path, ranked, question.choices)
        asked = normalize_text(question.text)
        texts = [self.passages[n].text for n in (calls or ranked)[:TOP_PASSAGES]]
        return values_in(texts, question, asked)

    def _marked_text(self, ranked: list[int], first: bool) -> str:
        """The best passage of the marked kind: a human message whole; a summary's unit under
        a ``user`` label with the items of its field next to it, up to `TOP_PASSAGES` (the
        ones before it for the latest, after it for the first)."""
        best = self.passages[ranked[0]]
        if best.mark != USER_MARK or not best.group:
            return best.text
        items = sorted((p for p in self.passages
                        if p.message == best.message and p.group == best.group),
                       key=lambda p: p.order)
        at = items.index(best)
        chosen = items[at:at + TOP_PASSAGES] if first else items[max(0, at - TOP_PASSAGES + 1):
                                                                 at + 1]
        return cap_texts([p.text for p in chosen])

    def _joined(self, ranked: list[int]) -> str:
        """The best `TOP_PASSAGES` passages of distinct text, joined."""
        texts: dict[str, str] = {}
        for n in ranked:
            text = self.passages[n].text
            texts.setdefault(bare_text(text), text)
            if len(texts) == TOP_PASSAGES:
                break
        return cap_texts(list(texts.values()))

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
            return values_in(ordered, question, asked)
        ranked = self.ranked(words + content_words(question.text, min_len=3), first)
        if question.answer_type == "text":
            return self._joined(ranked)
        texts = [self.passages[n].text for n in ranked[:TOP_PASSAGES]]
        if question.answer_type == "error":
            return next((e for text in texts if (e := text_error(text))), "")
        return values_in(texts, question, asked)

    def _error(self, question: Question, first: bool) -> str:
        """The error line of the latest (or first) failing tool output; in a context without
        one, of the unit holding an error line that the cue names best, in the latest (or
        first) message, at its field's end (or start)."""
        if self._output_errors:
            return self._output_errors[0 if first else -1][1]
        found = {n: e for n, p in enumerate(self.passages)
                 if p.mark != CALL_MARK and (e := text_error(p.text, p.body))}
        if not found:
            return ""
        scores: dict[int, int] = defaultdict(int)
        for word in dict.fromkeys(w.lower() for w in question.cue if w not in MARKS):
            in_text, in_label = self._passages_with(word)
            for n in (in_text | in_label) & found.keys():
                scores[n] += 1
        best = min(found, key=lambda n: (
            self.passages[n].message if first else -self.passages[n].message, -scores[n],
            self.passages[n].group, self.passages[n].order if first else -self.passages[n].order))
        return found[best]

    def _by_head(self, ranked: list[int], words: Sequence[str], first: bool) -> list[int]:
        """The tool calls of `ranked` whose head (`call_head`) holds a cue word, the most
        first (ties by position): a call that only carries the word in a file it wrote, or in
        a script it ran, does not count. A choice reads all of them, in this order."""
        scores = {n: sum(1 for w in words if contains(self.passages[n].head.lower(), w.lower()))
                  for n in ranked if self.passages[n].head}
        return sorted((n for n, s in scores.items() if s),
                      key=lambda n: (-scores[n], n if first else -n))

    def _choice(self, ranked: list[int], choices: Sequence[str]) -> str:
        allowed = list(choices) or list(CHOICE_WORDS)
        # every call naming the file may tell (the latest ones often only read it)
        for n in ranked:
            passage = self.passages[n]
            lower = (passage.head or passage.text).lower()
            for choice in allowed:
                for word in CHOICE_WORDS.get(choice, (choice,)):
                    if has_word(lower, word):
                        return choice
        return ""

    def _attributed(self, path: str, ranked: list[int], choices: Sequence[str]) -> str:
        """A file's fate from what is said of it (`attributed_choice`): the tool calls that
        name it by what they do, else the statements: its record's units whole, other units
        by the clause naming it."""
        if not path:
            return attributed_choice([(self.passages[n].text, False)
                                      for n in ranked[:TOP_PASSAGES]], "", choices)
        in_text, in_label = self._passages_with(path.rstrip("/").rsplit("/", 1)[-1].lower())
        named = [self.passages[n] for n in sorted(in_text | in_label)]  # by the file's name
        heads = [(p.head, True) for p in named
                 if p.mark == CALL_MARK and path_tokens(p.head, path)]
        if heads:
            return attributed_choice(heads, path, choices)
        statements = [(p.text, same_path(p.subject, path)) for p in named
                      if p.mark != CALL_MARK and (same_path(p.subject, path)
                                                  or path_tokens(p.text, path))]
        return attributed_choice(statements, path, choices)

    def _written_paths(self) -> list[str]:
        seen: dict[str, None] = {}
        edits = set().union(*(self._passages_with(w)[0] for w in EDIT_WORDS))
        for n, passage in enumerate(self.passages):
            if passage.mark == CALL_MARK:
                paths: Sequence[str] = passage.written
            elif n in edits:
                paths = written_in(passage.text, passage.subject)
            else:
                continue
            for path in paths:
                seen.setdefault(path, None)
        return list(seen)
