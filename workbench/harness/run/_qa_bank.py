"""The run's question sets: saved ones read once at the start, the rest built on demand.

A question set is data: ``<run>/qa/questions/<key>.json``, one per session (or recorded
prefix). At the start of a run the runner reads every saved set of the run folder, and of the
``[qa] questions`` folder when one is named (the run folder's own file wins), so a resumed run,
or a new run pointed at an earlier one's questions, asks exactly the saved questions, hand
edits included. A session without a saved set gets built questions (`build_questions`), and,
with a ``probe_author``, the author's questions on top; the set is then saved for review and
reuse. The bank travels to Ray workers with the job; each worker process keeps its own memo of
built sets and of the ``lookup`` answers from the full history (computed once per session).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from workbench.errors import ConfigError
from workbench.harness.experiment._qa_table import QATable
from workbench.harness.experiment._spec import Experiment
from workbench.harness.results._results import QUESTIONS_DIR
from workbench.messages import Message
from workbench.probes import LookupAnswerer, QuestionSet, build_questions, read_question_set
from workbench.sessions import Session

__all__ = ["QuestionBank"]


class QuestionBank:
    """Saved and built question sets of one run (see the module docstring).

    Args:
        saved: Question sets read from files, by key.
    """

    def __init__(self, saved: dict[str, QuestionSet] | None = None) -> None:
        self.saved = dict(saved or {})
        self._built: dict[str, QuestionSet] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._full_lookup: dict[str, dict[str, str]] = {}

    @classmethod
    def load(cls, experiment: Experiment, out: Path) -> QuestionBank:
        """The saved sets of the run folder `out` and of ``[qa] questions``.

        Raises:
            ConfigError: a saved file is not a question set (named with its problem).
        """
        saved: dict[str, QuestionSet] = {}
        qa = experiment.qa
        folders = []
        if qa is not None and qa.questions:
            folder = experiment.resolve_path(qa.questions)
            if not folder.is_dir():
                raise ConfigError(f"qa.questions: {folder} is not a folder of question sets "
                                  f"(an earlier run's {QUESTIONS_DIR})")
            folders.append(folder)
        folders.append(Path(out) / QUESTIONS_DIR)
        for folder in folders:  # the run folder's own files come last and win
            if folder.is_dir():
                for path in sorted(folder.glob("*.json")):
                    found = read_question_set(path)
                    saved[found.key or path.stem] = found
        return cls(saved)

    def lock(self, key: str) -> asyncio.Lock:
        """The lock cells of one session hold while its set is built (one author call)."""
        if key not in self._locks:
            self._locks[key] = asyncio.Lock()
        return self._locks[key]

    def known(self, key: str) -> QuestionSet | None:
        """The set with `key`, saved or built earlier in this process, or None."""
        return self._built.get(key) or self.saved.get(key)

    def remember(self, question_set: QuestionSet) -> None:
        """Keep a set built in this process."""
        self._built[question_set.key] = question_set

    def build(self, session: Session, boundary: int | None, qa: QATable) -> QuestionSet:
        """A freshly built set (`build_questions` with the ``[qa]`` table's counts)."""
        return build_questions(session, boundary=boundary, **qa.build_options())

    def full_lookup(self, question_set: QuestionSet, messages: list[Message]) -> dict[str, str]:
        """The ``lookup`` answers of `question_set` from the full history `messages` (once per
        set and process: every cell of a session shares them)."""
        answers = self._full_lookup.get(question_set.key)
        if answers is None or set(answers) != {q.id for q in question_set.questions}:
            answerer = LookupAnswerer(messages)
            answers = {q.id: answerer.answer(q) for q in question_set.questions}
            self._full_lookup[question_set.key] = answers
        return answers

    def __getstate__(self) -> dict[str, dict[str, QuestionSet]]:
        # Locks do not travel (Ray pickles the bank); memos of a worker stay its own.
        return {"saved": self.saved}

    def __setstate__(self, state: dict[str, dict[str, QuestionSet]]) -> None:
        self.__init__(state["saved"])  # type: ignore[misc]
