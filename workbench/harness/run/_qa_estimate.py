"""``--dry-run`` for the ``[qa]`` step: how many answerer, judge and author calls the cells to
run would make, and their tokens and dollars (litellm's bundled prices, as for summaries).

Per cell, with a model answerer, each question is one call on the compacted context (for a
summarizing strategy the summary's assumed size; for one that keeps
messages, the history up to the window) and, with ``full_context``, one on the full history,
counted once per session and repeat since every cell of a session sends the same prompt (shared
calls), and only where the history fits the cell's window; at a recorded boundary the next
action adds one of each. A judge adds one call per open question and per calibration sample
(``judge_calibration`` exact questions), a probe author one per session. ``lookup`` calls nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._qa_table import QAModel
from workbench.harness.experiment._spec import Experiment
from workbench.harness.run._qa_bank import QuestionBank
from workbench.models._spec import max_tokens_param, parse_model_spec
from workbench.probes import build_questions, question_set_key
from workbench.sessions import Session
from workbench.strategies import reference_summary
from workbench.tokens import default_estimator

__all__ = ["QAEstimate", "estimate_qa"]

QUESTION_TOKENS = 80
"""Assumed tokens of one question message (text and format line)."""
JUDGE_INPUT_TOKENS = 900
"""Assumed tokens of one judge prompt (the rubric, question, reference and answer)."""
QA_OUTPUT_TOKENS = 300
"""Assumed output tokens of one answerer, judge or author call (unless ``max_tokens``)."""


@dataclass
class QAEstimate:
    """The QA step's share of a dry run.

    Attributes:
        calls: Model calls (after sharing).
        tokens: Input plus assumed output tokens.
        cost: US dollars, or None when a model's price is unknown.
    """

    calls: int = 0
    tokens: int = 0
    cost: float | None = 0.0

    price: Callable[[str, int, int], float | None] = lambda model, tokens_in, tokens_out: None

    def add(self, model_string: str, tokens_in: int, tokens_out: int, calls: int = 1) -> None:
        """Count `calls` calls of `model_string` with these token sizes each."""
        if calls <= 0:
            return
        self.calls += calls
        self.tokens += calls * (tokens_in + tokens_out)
        cost = self.price(model_string, tokens_in, tokens_out)
        self.cost = None if cost is None or self.cost is None else self.cost + calls * cost


def _boundary(cell: Cell, session: Session) -> int | None:
    if cell.strategy_name != "reference" and cell.strategy_at != "recorded":
        return None
    found = reference_summary(session)
    index = found.get("index") if found is not None else None
    return None if index is None else int(index)


def _output(entry: QAModel) -> int:
    return max_tokens_param(entry.params, QA_OUTPUT_TOKENS)


def estimate_qa(experiment: Experiment, todo: list[Cell], sessions: dict[str, Session],
                bank: QuestionBank | None = None, *, price: Callable[[str, int, int], float | None],
                summary_tokens: int) -> QAEstimate:
    """Estimate the QA calls of the cells in `todo` (see the module docstring).

    Args:
        experiment: The experiment (its ``[qa]`` table).
        todo: The cells a run would execute.
        sessions: Session id -> session.
        bank: The run's `QuestionBank` (saved sets count as they are), or None.
        price: ``(model string, input tokens, output tokens) -> dollars or None``.
        summary_tokens: The assumed size of a summary (a summarizing cell's context).
    """
    qa = experiment.qa
    out = QAEstimate(price=price)
    if qa is None:
        return out
    estimator = default_estimator()
    sizes: dict[str, tuple[int, int, int, bool]] = {}  # key -> (history, questions, open, action)
    full_done: set[tuple[str, int]] = set()
    authored: set[str] = set()
    answerer = None if qa.uses_lookup else qa.answerer
    window = parse_model_spec(answerer.model).window if answerer is not None else None
    for cell in todo:
        session = sessions[cell.session_id]
        boundary = _boundary(cell, session)
        key = question_set_key(session.id, boundary)
        if key not in sizes:
            known = bank.known(key) if bank is not None else None
            qs = known or build_questions(session, boundary=boundary, **qa.build_options())
            asked = [q for q in qs.questions if q.kind in qa.kinds]
            messages = session.messages if boundary is None else session.messages[:boundary]
            sizes[key] = (estimator.count_context_tokens(messages), len(asked),
                          sum(1 for q in asked if q.judged)
                          + min(qa.judge_calibration, sum(1 for q in asked if q.exact)),
                          boundary is not None)
        history, n, judged, action = sizes[key]
        saved = bank.known(key) if bank is not None else None
        if qa.probe_author is not None and (saved is None or saved.author is None):
            # The author's questions are asked (and judged) like the built ones.
            n, judged = n + qa.author_questions, judged + qa.author_questions
            if key not in authored:
                authored.add(key)
                out.add(qa.probe_author.model, history + QUESTION_TOKENS,
                        _output(qa.probe_author))
        calls = n + (1 if action and qa.next_action else 0)
        if answerer is not None:
            if cell.uses_model:
                context = summary_tokens
            else:
                context = min(history, cell.window) if cell.window else history
            out.add(answerer.model, context + QUESTION_TOKENS, _output(answerer), calls)
            if (qa.full_context and (key, cell.repeat) not in full_done
                    and (window is None or history + QUESTION_TOKENS <= window)
                    and (not cell.window or history <= cell.window)):
                full_done.add((key, cell.repeat))
                out.add(answerer.model, history + QUESTION_TOKENS, _output(answerer), calls)
        if qa.judge is not None:
            out.add(qa.judge.model, JUDGE_INPUT_TOKENS, _output(qa.judge), judged)
    return out
