"""Questions as data: `Question`, the `QuestionSet` of one session, and their JSON files.

A question carries everything needed to ask it and to grade it without a model: its kind (one
of `KINDS`, after Factory's probe-based evaluation), the text asked, the expected answer, how
it is graded (`GRADERS`), the answer's type (which normaliser applies), and for the offline
``lookup`` answerer the words to retrieve by (`Question.cue`). A `QuestionSet` is what one
session (or the prefix of it a recorded summary covers) is asked; it is saved as JSON under the
run folder (``qa/questions/<key>.json``), read back unchanged by later runs, and may be edited
by hand: questions are reviewable data, not code.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbench._json_types import JSONObject, JSONValue
from workbench._storage import write_atomic
from workbench.errors import ConfigError

__all__ = ["AUTHOR_SOURCE", "CUE_TOOL_CALL", "CUE_TOOL_OUTPUT", "CUE_USER", "GRADERS", "KINDS",
           "QUESTION_SET_VERSION", "Evidence", "Question", "QuestionSet", "question_set_key",
           "read_question_set", "write_question_set"]

KINDS: tuple[str, ...] = ("recall", "artifact", "continuation", "decision")
"""The four kinds of question: what happened (values, errors), which files changed and how,
what comes next, what was decided and why."""

GRADERS: tuple[str, ...] = ("exact", "list", "overlap")
"""How a question is graded without a model:

- ``exact``: the normalised expected value occurs in the normalised answer (1 or 0);
- ``list``: the share of the expected items the answer names (0..1);
- ``overlap``: an open question; 1 when the answer holds at least half of the expected
  answer's content words, else 0. A judge model, when configured, grades these too.
"""

ANSWER_TYPES: tuple[str, ...] = ("value", "number", "identifier", "path", "error", "choice",
                                 "text", "paths")
ANSWER_PLACES: tuple[str, ...] = ("", "call", "output")
"""Values of `Question.answer_in`."""
QUESTION_SET_VERSION = 1
CUE_USER, CUE_TOOL_CALL, CUE_TOOL_OUTPUT = "user", "toolcall", "tooloutput"
"""Cue words that stand for a kind of passage rather than a word (`Question.cue`): a human
message, a tool call, a tool output. When a question's cue names one, ``lookup`` reads those
passages alone (latest first), and falls back to the other cue words when the context has
none (a summary)."""
AUTHOR_SOURCE = "author"
"""`Question.source` of a model-written question (``author`` or ``author:<model>``)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Evidence:
    """Where a question's answer stands in the session: a message and a verbatim span of it.

    Attributes:
        message: The index of the message in the session (in the part a set covers).
        quote: A span of that message, verbatim up to whitespace (a text, a tool output, or
            an argument of a tool call), holding the expected answer.
    """

    message: int
    quote: str

    def to_dict(self) -> JSONObject:
        """JSON-ready."""
        return {"message": self.message, "quote": self.quote}

    @classmethod
    def from_dict(cls, data: JSONValue, where: str) -> Evidence:
        """Read one evidence entry back.

        Raises:
            ConfigError: not an object with an integer ``message`` and a string ``quote``.
        """
        if (not isinstance(data, dict) or set(data) != {"message", "quote"}
                or not isinstance(data["message"], int) or not isinstance(data["quote"], str)):
            raise ConfigError(f"{where}: evidence must be {{\"message\": <index>, "
                              "\"quote\": <text>}")
        return cls(data["message"], data["quote"])


@dataclass
class Question:
    """One question about a session.

    Attributes:
        id: Stable within its set (``recall-fact-f07``, ``artifact-files``...).
        kind: One of `KINDS`.
        text: The question as the answerer is asked it.
        expected: The expected answer: a string, or a list of strings for the ``list`` grader.
        grader: One of `GRADERS`.
        answer_type: Which normaliser applies: ``value``, ``number``, ``identifier``, ``path``,
            ``error``, ``choice``, ``text``, or ``paths`` (a list of paths).
        source: Where the ground truth came from (``planted_fact:f07``, ``errors``,
            ``transcript:last_error``, ``author``...).
        cue: Words the ``lookup`` answerer retrieves passages by (default: the question's
            content words).
        choices: The allowed answers of a ``choice`` question.
        stale: Values the session replaced by `expected` (saying only these is wrong).
        position: ``first`` or ``last``: which of several matching passages the question is
            about (``lookup`` breaks ties by it); empty means the latest.
        blank_before: For a fill-in-the-blank question, the words just before the blank
            (``lookup`` reads the value that follows them).
        judged: True for an open question a judge model grades (when one is configured).
        reference: The full reference answer the judge sees, when it says more than
            `expected` (a decision's reason); empty means `expected`.
        evidence: Where the expected answer stands in the history (message index and quoted
            span; one entry per item of a list); empty for a manifest's questions, whose
            ground truth is the manifest.
        answer_in: Where the answer stands, for ``lookup``: ``""`` any passage; ``call`` a
            tool call the cue words name (which file a call wrote, which command ran);
            ``output`` the output of the tool call the cue words name best (an exit code,
            what a command printed). Where the context holds no tool calls (a summary),
            ``lookup`` reads the passages the cue words name.
        abstention: The session never gives the answer: only an answer saying so
            ("unknown", "not stated"...) is right (LongMemEval's abstention questions).
    """

    id: str
    kind: str
    text: str
    expected: str | list[str]
    grader: str = "exact"
    answer_type: str = "value"
    source: str = ""
    cue: list[str] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    position: str = ""
    blank_before: str = ""
    judged: bool = False
    reference: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    answer_in: str = ""
    abstention: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"question {self.id!r}: kind {self.kind!r} is not one of "
                              f"{', '.join(KINDS)}")
        if self.grader not in GRADERS:
            raise ConfigError(f"question {self.id!r}: grader {self.grader!r} is not one of "
                              f"{', '.join(GRADERS)}")
        if self.answer_type not in ANSWER_TYPES:
            raise ConfigError(f"question {self.id!r}: answer_type {self.answer_type!r} is not "
                              f"one of {', '.join(ANSWER_TYPES)}")
        if self.answer_in not in ANSWER_PLACES:
            raise ConfigError(f"question {self.id!r}: answer_in {self.answer_in!r} is not one "
                              f"of {', '.join(repr(p) for p in ANSWER_PLACES)}")
        if (self.grader == "list") != isinstance(self.expected, list):
            raise ConfigError(f"question {self.id!r}: a list grader needs a list of expected "
                              "items, and only it takes one")

    @property
    def authored(self) -> bool:
        """True for a question a model wrote (the ``probe_author``), kept apart in metrics."""
        return self.source.split(":", 1)[0] == AUTHOR_SOURCE

    @property
    def exact(self) -> bool:
        """True when the ground truth is exact (the ``exact`` and ``list`` graders)."""
        return self.grader != "overlap"

    def expected_text(self) -> str:
        """The expected answer as one string (list items one per line)."""
        return "\n".join(self.expected) if isinstance(self.expected, list) else self.expected

    def reference_text(self) -> str:
        """What a judge is shown as the right answer: `reference`, else the expected answer."""
        return self.reference or self.expected_text()

    def to_dict(self) -> JSONObject:
        """JSON-ready; empty optional fields are left out."""
        data = asdict(self)
        data["evidence"] = [e.to_dict() for e in self.evidence]
        for name in ("cue", "choices", "stale", "position", "blank_before", "source",
                     "reference", "evidence", "answer_in", "judged", "abstention"):
            if not data[name]:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: Any, where: str = "question") -> Question:
        """Read a question back.

        Raises:
            ConfigError: a field is missing, unknown or invalid (the message names `where`).
        """
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: a question must be a JSON object")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
        missing = [k for k in ("id", "kind", "text", "expected") if k not in data]
        if missing:
            raise ConfigError(f"{where}: missing field(s) {', '.join(missing)}")
        fields = dict(data)
        evidence = fields.get("evidence", [])
        if not isinstance(evidence, list):
            raise ConfigError(f"{where}: evidence must be a list")
        fields["evidence"] = [Evidence.from_dict(e, f"{where}: evidence[{i}]")
                              for i, e in enumerate(evidence)]
        try:
            return cls(**fields)
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None


@dataclass
class QuestionSet:
    """The questions asked about one session (or one recorded prefix of it).

    Attributes:
        key: The file stem under ``qa/questions/`` (`question_set_key`).
        session_id: The session asked about.
        boundary: The number of messages the questions cover (a recorded summary's prefix),
            or None for the whole session.
        questions: The questions, in asking order.
        author: The model string of the ``probe_author`` that added questions, if any.
        notes: What happened while the set was made (an author that could not read the
            whole history, ...).
        dropped: Questions left out because their expected answer is not verbatim in the
            history at their evidence, counted per source (``transcript:files``, ``author``...).
        version: The file format version.
    """

    key: str
    session_id: str
    boundary: int | None
    questions: list[Question] = field(default_factory=list)
    author: str | None = None
    notes: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    version: int = QUESTION_SET_VERSION

    def to_dict(self) -> JSONObject:
        """JSON-ready."""
        data: JSONObject = {"version": self.version, "key": self.key,
                            "session_id": self.session_id, "boundary": self.boundary,
                            "author": self.author,
                            "questions": [q.to_dict() for q in self.questions]}
        if self.notes:
            data["notes"] = list(self.notes)
        if self.dropped:
            data["dropped"] = dict(self.dropped)
        return data

    def to_json(self) -> str:
        """The set as the indented JSON text of its file."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n"

    @classmethod
    def from_dict(cls, data: Any, where: str = "question set") -> QuestionSet:
        """Read a set back.

        Raises:
            ConfigError: not a question set of a known version, or a bad question (named).
        """
        if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
            raise ConfigError(f"{where}: not a question set (an object with a questions list)")
        version = data.get("version", QUESTION_SET_VERSION)
        if version != QUESTION_SET_VERSION:
            raise ConfigError(f"{where}: question set version {version!r}; this workbench "
                              f"reads version {QUESTION_SET_VERSION}")
        questions = [Question.from_dict(q, f"{where}: questions[{i}]")
                     for i, q in enumerate(data["questions"])]
        ids = [q.id for q in questions]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ConfigError(f"{where}: duplicate question id(s) {', '.join(dupes)}")
        boundary = data.get("boundary")
        notes = data.get("notes") or []
        dropped = data.get("dropped") or {}
        if not isinstance(dropped, dict) or not all(isinstance(v, int) for v in dropped.values()):
            raise ConfigError(f"{where}: dropped must map sources to counts")
        return cls(key=str(data.get("key") or ""), session_id=str(data.get("session_id") or ""),
                   boundary=int(boundary) if boundary is not None else None,
                   questions=questions, author=data.get("author"),
                   notes=[str(n) for n in notes] if isinstance(notes, list) else [],
                   dropped={str(k): v for k, v in dropped.items()}, version=version)


def question_set_key(session_id: str, boundary: int | None = None) -> str:
    """A file-safe stem naming a session's question set (``gen-012k-s2``,
    ``4d5611e5-...@132`` for a recorded prefix); unsafe characters become ``_`` plus a short
    hash, so two ids never share a file."""
    stem = _UNSAFE.sub("_", session_id).strip("._") or "session"
    if stem != session_id or len(stem) > 80:
        digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:8]
        stem = f"{stem[:80]}-{digest}"
    return stem if boundary is None else f"{stem}@{boundary}"


def read_question_set(path: str | Path) -> QuestionSet:
    """Read ``qa/questions/<key>.json``.

    Raises:
        ConfigError: unreadable file, invalid JSON, or not a question set (the message names
            the file).
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the question set: {exc.strerror}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{p}: not a JSON question set: {exc}") from None
    found = QuestionSet.from_dict(data, str(p))
    if not found.key:
        found.key = p.stem
    return found


def write_question_set(question_set: QuestionSet, folder: str | Path) -> Path:
    """Write `question_set` to ``<folder>/<key>.json`` (the folder is created)."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{question_set.key}.json"
    write_atomic(path, question_set.to_json())
    return path
