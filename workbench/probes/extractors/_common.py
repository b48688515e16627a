"""What the extractors share: how a command, a line or a value becomes part of a question.

- `one_line`: a command short enough to quote in a question (one line, `MAX_COMMAND_CHARS`);
- `line_at`: the line of a text around an offset (the quoted span of a question's evidence);
- `occurrence`: which run of a repeated command a question is about (``the first time``...);
- `cue_words`: the words ``lookup`` retrieves by; `mentions`: its rule for finding them;
- `single_lead`: the words before a blank that the history follows with its answer only;
- `cloze_question`: a fill-in-the-blank question cut from one line of one message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from workbench.metrics._common import content_words, normalize_ws
from workbench.probes._cloze import BLANK, make_cloze
from workbench.probes._normalize import contains, normalize_text
from workbench.probes._questions import (
    CUE_TOOL_CALL,
    CUE_TOOL_OUTPUT,
    CUE_USER,
    Evidence,
    Question,
)

__all__ = ["FILL_QUESTION", "MAX_COMMAND_CHARS", "MAX_LINE_CHARS", "cloze_question",
           "cue_words", "line_at", "mentions", "occurrence", "one_line", "single_lead", "when"]

MAX_COMMAND_CHARS = 120
"""A longer command (or one over several lines) is not quoted in a question."""
MAX_LINE_CHARS = 240
"""A longer line is not quoted as evidence (a minified file, a long log record)."""
MIN_CONTEXT_WORDS = 2
"""A blank needs at least this many words around it (three letters and more)."""
LEAD_WORDS = 3
"""The words before a blank ``lookup`` reads after, at least (more when these do not single
out the answer)."""
SKIPPED_LINES = ("@@ ", "diff --git", "index ", "--- a/", "+++ b/")
"""Diff headers: they quote a line of code out of its place."""
FILL_QUESTION = ('Fill in the blank with the exact value the conversation gives (its latest '
                 'value, if it changed): "{cloze}"')
_NOISE = re.compile(r"\x1b\[[0-9;]*m")
_WORDY = re.compile(r"[A-Za-z]{3}")
PASSAGE_MARKS = frozenset({CUE_USER, CUE_TOOL_CALL, CUE_TOOL_OUTPUT})


def mentions(text: str, phrase: str) -> bool:
    """True when `text` holds `phrase` (any case) not as the middle of a longer word
    (``pytest`` is not in ``_pytest``): the rule ``lookup`` finds cue words by."""
    return contains(text.lower(), phrase.lower())


def one_line(command: str) -> str | None:
    """`command` stripped, or None when it spans lines or is longer than `MAX_COMMAND_CHARS`."""
    text = command.strip()
    if not text or "\n" in text or len(text) > MAX_COMMAND_CHARS or _NOISE.search(text):
        return None
    return text


def line_at(text: str, at: int) -> str:
    """The line of `text` holding offset `at`, stripped."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start:len(text) if end < 0 else end].strip()


def occurrence(n: int, total: int) -> tuple[str, str]:
    """``(position, phrase)`` for the `n`-th (0-based) of `total` runs of the same thing: only
    the first and the last of several are asked about (``first``, `` the first time``)."""
    if total <= 1:
        return "", ""
    if n == 0:
        return "first", " the first time"
    if n == total - 1:
        return "last", " the last time"
    raise ValueError("only the first and the last of repeated runs are asked about")


def when(total: int) -> list[int]:
    """Which runs of something that happened `total` times are asked about: the only one, or
    the first and the last."""
    return [0] if total == 1 else [0, total - 1] if total > 1 else []


def cue_words(text: str, extra: Sequence[str] = ()) -> list[str]:
    """Content words of `text` (three letters and more, at most 12), then `extra`. Words that
    name a kind of passage (`CUE_USER`...: ``user`` in ``/home/user/...``) are left out: as a
    cue they would read those passages alone."""
    words = [w for w in content_words(text.replace(BLANK, " "), min_len=3)
             if w not in PASSAGE_MARKS][:12]
    return words + [w for w in extra if w not in words]


def _fits(corpus: str, lead: str, values: Sequence[str]) -> bool:
    """True when every occurrence of `lead` in `corpus` (both lowercased) is followed by one of
    `values` (a whole token: ``start`` is not ``start_link``)."""
    at = corpus.find(lead)
    if at < 0:
        return False
    while at >= 0:
        rest = corpus[at + len(lead):].lstrip()
        if not any(rest.startswith(v) and not (rest[len(v):len(v) + 1].isalnum()
                                               or rest[len(v):len(v) + 1] == "_")
                   for v in values):
            return False
        at = corpus.find(lead, at + 1)
    return True


def single_lead(corpus: str, left: str, values: Sequence[str]) -> str | None:
    """The shortest ending of `left` (three words and more) that the history (`corpus`,
    lowercased) follows only with one of `values`: the words before a blank that single out
    its answer. None when even the whole of `left` does not."""
    words = left.split()
    wanted = [v.lower() for v in values]
    for n in range(min(LEAD_WORDS, len(words)), len(words) + 1):
        lead = " ".join(words[-n:])
        if _fits(corpus, lead.lower(), wanted):
            return lead
    return None


def cloze_question(kind: str, source: str, text: str, value: str, at: int, index: int,
                   answer_type: str, *, corpus: str, template: str = FILL_QUESTION,
                   stale: Sequence[str] = (), position: str = "") -> Question | None:
    """A fill-in-the-blank question on the line of `text` holding `value` at offset `at`.

    Its `Question.blank_before` is the shortest run of words before the blank that the
    history (`corpus`: `History.corpus_lower`) follows only with `value` (or a `stale` value,
    one the session replaced: asking for the latest is the point). None when there is none
    (the same words lead to another value elsewhere: the blank has no single answer), when
    the line is too long to quote, or when the value shows elsewhere in the question (it
    would give the answer away, and ``lookup`` skips values the question holds).
    """
    line = line_at(text, at)
    if (not line or len(line) > MAX_LINE_CHARS or _NOISE.search(line)
            or line.startswith(SKIPPED_LINES)):
        return None
    cut = make_cloze(text, value, at=at)
    if cut is not None and len(cue_words(cut[0])) < MIN_CONTEXT_WORDS:
        cut = make_cloze(text, value, 2, at=at)  # a short sentence: the one before it too
    if cut is None or len(cue_words(cut[0])) < MIN_CONTEXT_WORDS:
        return None  # too little around the blank to tell what is asked
    cloze = cut[0]
    asked = template.format(cloze=cloze)
    if normalize_text(value) in normalize_text(asked.replace(BLANK, " ")):
        return None
    before = single_lead(corpus, normalize_ws(cloze.split(BLANK, 1)[0]), [value, *stale])
    if before is None or not _WORDY.search(before):
        return None  # the words before the blank do not single out its answer
    return Question(id="", kind=kind, text=asked, expected=value, answer_type=answer_type,
                    source=source, cue=cue_words(cloze, [before.lower()]), blank_before=before,
                    stale=list(stale), position=position,
                    evidence=[Evidence(index, normalize_ws(line))])
