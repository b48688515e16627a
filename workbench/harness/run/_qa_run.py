"""The QA step of a cell: ask the session's questions of its compacted context, grade them.

In: a finished cell (its strategy's next context), its session, the experiment's ``[qa]``
table, the run's `QuestionBank`, and ``model_for(cell, role)`` (the runner's models: cache,
shared calls, budget and executor routing included). Out: the cell's ``qa_*`` metrics, its QA
calls (attempt rows and billed sums) and its questions and answers as JSON (kept beside the
cell as ``qa.json``).

1. The question set: saved, or built from the session (and the ``probe_author``'s questions),
   then saved under ``qa/questions/``.
2. Answers: the answerer sees exactly what the agent sees after compaction (the agent-visible
   messages of the strategy's context, as the agent sees them; for a recorded boundary only
   what covers the prefix), the question as the next user message. ``lookup`` answers by
   retrieval, without a model. With ``full_context`` each question is also answered from the
   full history where it fits the cell's window (``full_fits``) and a model answerer's: the
   reference of ``qa_loss_exact``, ``qa_loss_open`` and ``qa_gain``; elsewhere they are n/a.
3. Grades: exact questions deterministically; open ones by word overlap and, with a judge, on
   the rubric. The judge also grades ``judge_calibration`` exact questions per cell (the same
   ones in every cell of a session), so its agreement with the exact grader is measured. A judge reply that is not the rubric's JSON fails the cell (`ReplyFormatError`
   naming the cell), never scores 0.
4. At a recorded compaction boundary (``next_action``), the answerer takes the next turn from
   the compacted context (and from the full history); its tool call is compared with the
   recorded one.

An exception leaves with the calls made so far attached (``exc.qa_calls``), so the error row
still counts what was billed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench._memo import memo
from workbench._redact import redact
from workbench._storage import write_atomic
from workbench.compaction._model import CompactionModel
from workbench.errors import ContextLengthExceeded, ReplyFormatError
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._qa_table import QATable
from workbench.harness.results._results import QUESTIONS_DIR
from workbench.harness.run._qa_bank import QuestionBank
from workbench.harness.run._qa_calls import QACalls
from workbench.harness.run._run_models import ModelFor
from workbench.messages import Message
from workbench.models._cache_keys import messages_json
from workbench.probes import (
    ANSWERER_SYSTEM,
    AUTHOR_SOURCE,
    AUTHOR_SYSTEM,
    DIMENSIONS,
    JUDGE_SYSTEM,
    AnsweredQuestion,
    JudgeGrade,
    LookupAnswerer,
    NextActionCase,
    NextActionResult,
    Question,
    QuestionSet,
    actions_match,
    author_message,
    ground_authored,
    is_unknown,
    judge_message,
    next_action_case,
    next_action_system,
    parse_action,
    parse_author_reply,
    parse_judge_reply,
    qa_metrics,
    question_message,
    question_set_key,
)
from workbench.sessions import Session

__all__ = ["QAOutcome", "calibration_sample", "compacted_context", "run_qa"]

QA_CONCURRENCY = 4
"""At most this many QA calls of one cell in flight at once."""
CONTEXT_TOO_LONG = "the compacted context exceeds the answerer's window"
FULL_TOO_LONG = "the full history exceeds the answerer's window"
FULL_NOT_IN_WINDOW = ("the full history exceeds the cell's window: no agent at that window could "
                      "read it, so there is no full-history reference (qa_loss n/a)")
AUTHOR_TOO_LONG = "probe author {model} skipped: the full history exceeds its window"
LOOKUP_NO_ACTION = "next action not taken: lookup answers questions, it does not act"
NO_ANSWER_REASON = "no answer was given (not sent to the judge)"



@dataclass
class QAOutcome:
    """What the QA step gives the cell row.

    Attributes:
        metrics: The ``qa_*`` metrics (`workbench.probes.qa_metrics`).
        calls: Every model call the step made.
        text: The cell's questions, answers and grades as JSON (redacted).
    """

    metrics: dict[str, float | int]
    calls: QACalls
    text: str


def compacted_context(context: Sequence[Message], session: Session,
                      boundary: int | None) -> list[Message]:
    """The strategy's next context without the messages after a recorded boundary (the
    ``reference`` strategy keeps the recorded continuation after its summary)."""
    if boundary is None:
        return list(context)
    after = {id(m) for m in session.messages[boundary:]}
    return [m for m in context if id(m) not in after]


def agent_view(messages: Sequence[Message]) -> list[Message]:
    """The agent-visible messages, as the agent sees them."""
    return [m.agent_projection() for m in messages if m.is_agent_visible]


async def run_qa(cell: Cell, session: Session, scored: Session, context: Sequence[Message],
                 qa: QATable, bank: QuestionBank, model_for: ModelFor, out: Path,
                 full_fits: bool = True) -> QAOutcome:
    """Run the QA step of one cell (see the module docstring).

    Args:
        cell: The cell.
        session: The whole session.
        scored: The session the cell is scored against (a recorded prefix, or `session`).
        context: The strategy's next context.
        qa: The ``[qa]`` table.
        bank: The run's question sets.
        model_for: ``(cell, role) -> model`` for ``answerer``, ``judge``, ``probe_author``.
        out: The run folder (or a worker's scratch folder).
        full_fits: The scored history fits the cell's window: only then is it answered whole.

    Raises:
        ReplyFormatError: a judge's or author's reply is not in the format asked (names the
            cell); any model error. Either carries ``qa_calls``.
    """
    calls = QACalls()
    try:
        return await _run(cell, session, scored, context, qa, bank, model_for, out, calls,
                          full_fits)
    except BaseException as exc:
        exc.qa_calls = calls  # type: ignore[attr-defined]
        raise


async def _run(cell: Cell, session: Session, scored: Session, context: Sequence[Message],
               qa: QATable, bank: QuestionBank, model_for: ModelFor, out: Path, calls: QACalls,
               full_fits: bool) -> QAOutcome:
    boundary = len(scored.messages) if scored is not session else None
    question_set = await _question_set(cell, session, scored, boundary, qa, bank, model_for,
                                       calls, out)
    questions = [q for q in question_set.questions if q.kind in qa.kinds]
    compacted = compacted_context(context, session, boundary)
    notes: list[str] = []
    full_context = qa.full_context and full_fits
    if qa.full_context and not full_fits:
        notes.append(FULL_NOT_IN_WINDOW)
    if qa.uses_lookup:
        answers = lookup_answers(question_set, questions, compacted)
        answered = [AnsweredQuestion(q, a) for q, a in zip(questions, answers, strict=True)]
        if full_context:
            full = bank.full_lookup(question_set, scored.messages)
            for item in answered:
                item.full_answer = full.get(item.question.id)
    else:
        model = model_for(cell, "answerer")
        answered = await _model_answers(model, qa.answerer.model, questions,
                                        agent_view(compacted),
                                        agent_view(scored.messages) if full_context else None,
                                        calls)
    if qa.judge is not None:
        await _judge(cell, model_for(cell, "judge"), qa.judge.model, answered, calls,
                     calibration_sample(answered, qa.judge_calibration))
    next_result = None
    case = next_action_case(session, boundary) if qa.next_action else None
    if case is not None:
        if qa.uses_lookup:
            notes.append(LOOKUP_NO_ACTION)
        else:
            next_result = await _next_action(model_for(cell, "answerer"), qa, compacted,
                                             scored.messages if full_context else None, case,
                                             calls, notes)
    metrics = qa_metrics(answered, next_result)
    text = _cell_json(cell, question_set, qa, answered, next_result, metrics, notes)
    return QAOutcome(metrics, calls, text)


def lookup_answers(question_set: QuestionSet, questions: list[Question],
                   context: list[Message]) -> tuple[str, ...]:
    """The ``lookup`` answerer's answers to `questions` from `context`, worked out once per
    question set and content of the context while the run lasts (the run memo's
    ``lookup_answers``): the cells of a session whose compactions leave the same context
    (windows and models that summarise alike, a template parameter the summary does not
    reach) are asked the same questions of it, and retrieval is deterministic."""
    visible = [m for m in context if m.is_agent_visible]  # all the answerer reads
    digest = hashlib.sha256(messages_json(visible).encode()).hexdigest()
    # The entry holds the set, so the id in its key cannot be reused while the entry lives.
    key = (id(question_set), tuple(q.id for q in questions), digest)

    def answer() -> tuple[QuestionSet, tuple[str, ...]]:
        answerer = LookupAnswerer(context)
        return question_set, tuple(answerer.answer(q) for q in questions)

    return memo().lookup_answers.get_or(key, answer)[1]


async def _question_set(cell: Cell, session: Session, scored: Session, boundary: int | None,
                        qa: QATable, bank: QuestionBank, model_for: ModelFor, calls: QACalls,
                        out: Path) -> QuestionSet:
    key = question_set_key(session.id, boundary)
    async with bank.lock(key):
        found = bank.known(key)
        if found is None:
            found = bank.build(session, boundary, qa)
            bank.remember(found)
        if qa.probe_author is not None and found.author is None:
            found = await _authored(cell, found, scored, qa, model_for(cell, "probe_author"),
                                    calls)
            bank.remember(found)
        target = out / QUESTIONS_DIR / f"{key}.json"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, redact(found.to_json()))
    return found


async def _authored(cell: Cell, question_set: QuestionSet, scored: Session, qa: QATable,
                    model: CompactionModel, calls: QACalls) -> QuestionSet:
    entry = qa.probe_author
    assert entry is not None
    messages = [*agent_view(scored.messages), author_message(qa.author_questions, qa.kinds)]
    notes = list(question_set.notes)
    try:
        reply = await calls.call(model, entry.model, "author", AUTHOR_SYSTEM, messages)
    except ContextLengthExceeded:
        notes.append(AUTHOR_TOO_LONG.format(model=entry.model))
        added: list[Question] = []
    else:
        text = reply.concat_text()
        try:
            added = parse_author_reply(text, qa.author_questions, qa.kinds, entry.model)
        except ReplyFormatError as exc:
            raise ReplyFormatError(f"cell {cell.cell_id} ({cell.key}): probe author "
                                   f"{entry.model}: {exc}; reply: {text[:200]!r}") from exc
    taken = {q.id for q in question_set.questions}
    added, unfounded = ground_authored([q for q in added if q.id not in taken],
                                       scored.messages)
    dropped = dict(question_set.dropped)
    if unfounded:
        dropped[AUTHOR_SOURCE] = dropped.get(AUTHOR_SOURCE, 0) + unfounded
    return QuestionSet(key=question_set.key, session_id=question_set.session_id,
                       boundary=question_set.boundary,
                       questions=[*question_set.questions, *added], author=entry.model,
                       notes=notes, dropped=dropped, version=question_set.version)


async def _model_answers(model: CompactionModel, model_string: str, questions: list[Question],
                         context: list[Message], full: list[Message] | None,
                         calls: QACalls) -> list[AnsweredQuestion]:
    limit = asyncio.Semaphore(QA_CONCURRENCY)
    fits = {"context": True, "full": full is not None}
    answered = [AnsweredQuestion(q, None) for q in questions]

    async def ask(which: str, messages: list[Message], q: Question) -> str | None:
        if not fits[which]:
            return None
        async with limit:
            if not fits[which]:  # an earlier question found it too long: do not send again
                return None
            try:
                purpose = "answer" if which == "context" else "answer_full"
                reply = await calls.call(model, model_string, purpose, ANSWERER_SYSTEM,
                                         [*messages, question_message(q)], q.id)
            except ContextLengthExceeded:
                fits[which] = False
                return None
        return reply.concat_text()

    async def one(item: AnsweredQuestion) -> None:
        item.answer = await ask("context", context, item.question)
        if item.answer is None:
            item.note = CONTEXT_TOO_LONG
        if full is not None:
            item.full_answer = await ask("full", full, item.question)
            if item.full_answer is None and not item.note:
                item.note = FULL_TOO_LONG

    await asyncio.gather(*(one(a) for a in answered))
    return answered


def calibration_sample(answered: Sequence[AnsweredQuestion], size: int) -> set[str]:
    """The ids of the exact questions a judge also grades: up to `size` answered ones (an
    answer saying nothing is not worth a call), picked by a hash of the question id, so every
    cell of a session gives the judge the same questions."""
    ids = [a.question.id for a in answered if a.question.exact and not a.question.authored
           and a.answer is not None and not is_unknown(a.answer)]
    return set(sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())[:size])


async def _judge(cell: Cell, model: CompactionModel, model_string: str, answered: list[AnsweredQuestion],
                 calls: QACalls, sample: set[str]) -> None:
    limit = asyncio.Semaphore(QA_CONCURRENCY)

    async def one(item: AnsweredQuestion) -> None:
        q = item.question
        if not (q.judged or q.id in sample) or item.answer is None:
            return
        if is_unknown(item.answer):
            item.judge = JudgeGrade(dict.fromkeys(DIMENSIONS, 0),
                                    dict.fromkeys(DIMENSIONS, NO_ANSWER_REASON))
            return
        async with limit:
            reply = await calls.call(model, model_string, "judge" if q.judged else "judge_exact",
                                     JUDGE_SYSTEM, [judge_message(q, item.answer)], q.id)
        text = reply.concat_text()
        try:
            item.judge = parse_judge_reply(text)
        except ReplyFormatError as exc:
            raise ReplyFormatError(f"cell {cell.cell_id} ({cell.key}): judge {model_string} "
                                   f"on question {q.id}: {exc}; reply: {text[:200]!r}") from exc

    await asyncio.gather(*(one(a) for a in answered))


async def _next_action(model: CompactionModel, qa: QATable, compacted: Sequence[Message],
                       history: Sequence[Message] | None, case: NextActionCase, calls: QACalls,
                       notes: list[str]) -> NextActionResult | None:
    system = next_action_system(case.tools)
    lead_in = agent_view(case.lead_in)
    try:
        reply = await calls.call(model, qa.answerer.model, "next_action", system,
                                 [*agent_view(compacted), *lead_in])
    except ContextLengthExceeded:
        notes.append(f"next action: {CONTEXT_TOO_LONG}")
        return None
    action = parse_action(reply)
    full_action = None
    if history is not None:
        try:
            full_reply = await calls.call(model, qa.answerer.model, "next_action_full", system,
                                          [*agent_view(history), *lead_in])
            full_action = parse_action(full_reply)
        except ContextLengthExceeded:
            notes.append(f"next action: {FULL_TOO_LONG}")
    return NextActionResult(
        recorded=case.recorded, action=action, full_action=full_action,
        match=actions_match(action, case.recorded),
        match_full=None if full_action is None else actions_match(action, full_action),
        full_match=None if full_action is None else actions_match(full_action, case.recorded),
        reply=reply.concat_text())


def _cell_json(cell: Cell, question_set: QuestionSet, qa: QATable,
               answered: list[AnsweredQuestion], next_result: NextActionResult | None,
               metrics: dict[str, float | int], notes: list[str]) -> str:
    data = {
        "cell_id": cell.cell_id, "key": cell.key, "session_id": cell.session_id,
        "question_set": question_set.key, "boundary": question_set.boundary,
        "answerer": qa.answerer.model, "judge": qa.judge.model if qa.judge else None,
        "metrics": metrics, "questions": [a.to_dict() for a in answered],
        "next_action": next_result.to_dict() if next_result is not None else None,
        "notes": notes + list(question_set.notes),
    }
    return redact(json.dumps(data, ensure_ascii=False, indent=1, default=str)) + "\n"
