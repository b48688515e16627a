"""Constraints: what the user required or forbade, in their own words.

A sentence (or list item) of a human turn is a constraint when it says what must or must not be
done: ``don't``, ``do not``, ``never``, ``must``, ``always``, ``only``, ``avoid``, ``make sure``,
``no need to``, ``should``/``shouldn't``. Each is asked as a fill-in-the-blank on that sentence
with the first content word after the constraint's trigger blanked (``Do not ____ the tests``),
so an answer must know *what* was required or forbidden, not only that something was
(*decision*: the user's decisions bind the rest of the session).
"""

from __future__ import annotations

import re

from workbench.metrics._common import STOPWORDS
from workbench.probes._questions import Question
from workbench.probes.extractors._common import cloze_question
from workbench.probes.extractors._history import History

__all__ = ["constraint_questions", "constraints_in"]

SOURCE = "transcript:constraints"
CONSTRAINT_QUESTION = ('Fill in the blank with the user\'s exact word: "{cloze}"')
MIN_WORDS, MAX_WORDS = 4, 45
_TRIGGER = re.compile(
    r"\b(?:don'?t|do not|never|must(?: not)?|always|only|avoid|make sure(?: to| that)?|"
    r"no need to|should(?:n'?t| not)?|please do not|be sure to|ensure(?: that)?)\b",
    re.IGNORECASE)
_SENTENCE = re.compile(r"[^\n.!?]+[.!?]?")
_WORD = re.compile(r"[A-Za-z][A-Za-z_-]{2,}")


def constraints_in(text: str) -> list[tuple[int, int]]:
    """``(offset of the sentence, offset of the word to blank)`` of each constraint in `text`."""
    out = []
    for sentence in _SENTENCE.finditer(text):
        words = sentence.group().split()
        if not MIN_WORDS <= len(words) <= MAX_WORDS:
            continue
        trigger = _TRIGGER.search(sentence.group())
        if trigger is None:
            continue
        for word in _WORD.finditer(sentence.group(), trigger.end()):
            if word.group().lower() not in STOPWORDS:
                out.append((sentence.start(), sentence.start() + word.start()))
                break
    return out


def constraint_questions(history: History) -> list[Question]:
    """The constraint questions of the session (see the module docstring)."""
    out: list[Question] = []
    seen: set[str] = set()
    for turn in history.human:
        for _, at in constraints_in(turn.text):
            value = _WORD.match(turn.text, at)
            assert value is not None
            question = cloze_question("decision", SOURCE, turn.text, value.group(), at,
                                      turn.index, "value", template=CONSTRAINT_QUESTION,
                                      corpus=history.corpus_lower)
            if question is not None and question.text not in seen:
                seen.add(question.text)
                out.append(question)
    return out
