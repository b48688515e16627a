"""Questions for a recording without ground truth, from its transcript alone.

A user's own recorded session has no manifest: every fact a question asks for must come from
the session itself, never from a model. `build_transcript_questions`:

1. reads the transcript once and runs every extractor (`workbench.probes.extractors`): files,
   failures, commands, identifiers, constraints, requests, updates;
2. checks each question's evidence (`check_evidence`: the quoted span is in its message and
   holds the expected answer verbatim); a question that fails is dropped and counted in
   `QuestionSet.dropped` under its source;
3. keeps `question_target` questions: one per `tokens_per_question` tokens of the session, at
   least `min_questions`, at most `max_questions` (fewer when fewer were found);
4. spreads them over the session: the session is cut into as many stretches as questions,
   and the stretches are visited ends and middles first (`spread`), each giving the question
   of the extractor asked least so far; the requests (the last one, the task, what was
   pending) and the list of the files changed are always asked. The set lists them in
   session order.

Everything is deterministic: the same session always gets the same questions.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from workbench.probes._evidence import check_evidence, message_texts
from workbench.probes._normalize import normalize_text
from workbench.probes._questions import KINDS, Question, QuestionSet, question_set_key
from workbench.probes._spread import spread
from workbench.probes.extractors import EXTRACTORS, History
from workbench.sessions import Session
from workbench.tokens import context_tokens, default_estimator

__all__ = ["DEFAULT_MAX_QUESTIONS", "DEFAULT_MIN_QUESTIONS", "TOKENS_PER_QUESTION",
           "build_transcript_questions", "gives_away", "question_target",
           "transcript_candidates"]

TOKENS_PER_QUESTION = 2000
"""One question per this many tokens of session (agent-visible, o200k)."""
DEFAULT_MIN_QUESTIONS = 15
"""At least this many (when found): a short session's verdict needs questions as well."""
DEFAULT_MAX_QUESTIONS = 40
"""At most this many per session."""
ALWAYS = "transcript:requests"
"""The source whose questions are always asked (what the user wants and what was pending),
with the list of the files the session changed."""


def question_target(tokens: int, *, tokens_per_question: int = TOKENS_PER_QUESTION,
                    min_questions: int = DEFAULT_MIN_QUESTIONS,
                    max_questions: int | None = DEFAULT_MAX_QUESTIONS) -> int | None:
    """How many questions a session of `tokens` tokens gets (None: every one found)."""
    if max_questions is None:
        return None
    wanted = max(min_questions, math.ceil(tokens / tokens_per_question))
    return min(max_questions, wanted)


def transcript_candidates(session: Session) -> tuple[list[Question], dict[str, int]]:
    """Every question the extractors find in `session` that passes the evidence check, with
    ids (``<kind>-<extractor>-<n>``), and the count dropped per source."""
    history = History.read(session)
    kept: list[Question] = []
    dropped: Counter[str] = Counter()
    asked: set[str] = set()
    for name, extract in EXTRACTORS.items():
        for n, question in enumerate(extract(history), 1):
            question = replace(question, id=f"{question.kind}-{name}-{n}")
            if question.text in asked or gives_away(question):
                continue  # the same question from another fact, or one holding its answer
            if check_evidence(question, history.messages) is not None:
                dropped[question.source] += 1
                continue
            asked.add(question.text)
            kept.append(question)
    return kept, dict(dropped)


def gives_away(question: Question) -> bool:
    """True when an exact question's text holds its expected value (``0`` in ``--seed 0``):
    it would tell its answer, and ``lookup`` skips values the question holds."""
    if question.grader != "exact" or question.answer_type in ("text", "choice"):
        return False
    return normalize_text(question.expected_text()) in normalize_text(question.text)


def _positions(session: Session) -> list[float]:
    """Where each message starts, as a share of the session's text (0 to 1)."""
    sizes = [sum(len(t) for t in message_texts(m)) for m in session.messages]
    total = sum(sizes) or 1
    out, at = [], 0
    for size in sizes:
        out.append(at / total)
        at += size
    return out


def _always(question: Question) -> bool:
    return question.source == ALWAYS or question.grader == "list"


def _select(questions: list[Question], positions: list[float],
            target: int | None) -> list[Question]:
    def where(q: Question) -> float:
        index = max(e.message for e in q.evidence)
        return positions[index] if 0 <= index < len(positions) else 1.0

    chosen = [q for q in questions if _always(q)][:target]
    rest = [q for q in questions if not _always(q)]
    if target is None:
        chosen += rest
    else:
        stretches = max(1, target - len(chosen))
        buckets: dict[int, list[Question]] = {}
        for q in rest:
            buckets.setdefault(min(stretches - 1, int(where(q) * stretches)), []).append(q)
        order = list(EXTRACTORS)
        used = Counter(q.source for q in chosen)
        while len(chosen) < target and any(buckets.values()):
            for bucket in spread(range(stretches)):
                waiting = buckets.get(bucket)
                if not waiting or len(chosen) >= target:
                    continue
                best = min(waiting, key=lambda q: (used[q.source],
                                                    order.index(q.source.split(":")[1]),
                                                    where(q)))
                waiting.remove(best)
                used[best.source] += 1
                chosen.append(best)
    return sorted(chosen, key=lambda q: (where(q), q.id))


def build_transcript_questions(session: Session, *, boundary: int | None = None,
                               kinds: Sequence[str] = KINDS,
                               tokens_per_question: int = TOKENS_PER_QUESTION,
                               min_questions: int = DEFAULT_MIN_QUESTIONS,
                               max_questions: int | None = DEFAULT_MAX_QUESTIONS) -> QuestionSet:
    """The questions to ask about a recording (see the module docstring).

    Args:
        session: The session, already cut to `boundary` when it covers a recorded prefix.
        boundary: The prefix's length (for the set's key), or None for the whole session.
        kinds: The kinds to ask.
        tokens_per_question: One question per this many tokens of session.
        min_questions: At least this many questions (when found).
        max_questions: At most this many (None: every question found).

    Returns:
        The `QuestionSet`, with `QuestionSet.dropped` counting the questions whose evidence
        failed the check.
    """
    found, dropped = transcript_candidates(session)
    found = [q for q in found if q.kind in kinds]
    tokens = context_tokens(session.messages, default_estimator())
    target = question_target(tokens, tokens_per_question=tokens_per_question,
                             min_questions=min_questions, max_questions=max_questions)
    chosen = _select(found, _positions(session), target)
    return QuestionSet(key=question_set_key(session.id, boundary), session_id=session.id,
                       boundary=boundary, questions=chosen, dropped=dropped)
