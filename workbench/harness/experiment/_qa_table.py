"""The experiment's ``[qa]`` table: functional probes asked of every finished cell.

```toml
[qa]
answerer = "lookup"                # or a model string, or { model = "...", params = {...} }
judge = "cached:openai/gpt-4o-mini"    # optional: grades open questions on the rubric
kinds = ["recall", "artifact", "continuation", "decision"]
per_session = 10                   # a generated session: at most this many (from its manifest)
tokens_per_question = 2000         # a recording: one question per 2k tokens of session,
min_questions = 15                 #   at least this many (when found),
max_questions = 40                 #   at most this many
next_action = true                 # at a recorded compaction boundary
judge_calibration = 4              # with a judge: exact questions per cell it also grades
```

Every model named here goes through the same gateway as the summarizers (cache, shared calls,
budget, redaction, executor). ``lookup`` is the offline answerer (`workbench.probes.LookupAnswerer`).
"""

from __future__ import annotations

from typing import Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator
from pydantic_core import PydanticCustomError

from workbench._redact import public_params
from workbench.errors import ConfigError
from workbench.models._spec import check_model_string
from workbench.probes import (
    DEFAULT_MAX_QUESTIONS,
    DEFAULT_MIN_QUESTIONS,
    DEFAULT_PER_SESSION,
    KINDS,
    TOKENS_PER_QUESTION,
)

__all__ = ["LOOKUP", "QAModel", "QATable"]

LOOKUP = "lookup"
"""The answerer string of the offline, model-free answerer."""

Kind = Literal["recall", "artifact", "continuation", "decision"]
ROLES = ("answerer", "judge", "probe_author")
"""The ``[qa]`` keys that name a model."""


class BuildOptions(TypedDict):
    """The keyword arguments of `workbench.probes.build_questions` a ``[qa]`` table sets."""

    kinds: list[Kind]
    per_session: int
    tokens_per_question: int
    min_questions: int
    max_questions: int


class QAModel(BaseModel):
    """A model of the ``[qa]`` table: its string and parameters (``api_base``, ``temperature``...)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    model: str = Field(min_length=1)
    """A model string for `workbench.models.load_model` (``[cached:|replay:]model[@window]``)."""
    params: dict[str, JsonValue] = Field(default_factory=dict)
    """Keyword arguments for the model; ``api_key`` is accepted but never written anywhere."""

    @model_validator(mode="after")
    def _known(self) -> QAModel:
        if self.model != LOOKUP:
            try:
                check_model_string(self.model, self.params)
            except ConfigError as exc:
                raise PydanticCustomError("model_string", "{message}",
                                          {"message": str(exc)}) from None
        return self

    def to_toml_value(self, secrets: bool = False) -> str | dict[str, object]:
        """A bare string when there are no params, else a table; unless `secrets`, secret
        params are dropped (as for ``models`` entries)."""
        params = self.params if secrets else public_params(self.params)
        return self.model if not params else {"model": self.model, "params": params}


def _entry(value: object) -> object:
    return {"model": value} if isinstance(value, str) else value


class QATable(BaseModel):
    """``[qa]``: which models answer, judge and write questions, and which questions to ask."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    answerer: QAModel = Field(default_factory=lambda: QAModel(model=LOOKUP))
    """Answers the questions from each cell's compacted context (and from the full history):
    ``lookup`` (offline retrieval, no model), or a model."""
    judge: QAModel | None = None
    """Grades the open questions' answers on the six-dimension rubric; none: they are graded
    by word overlap only."""
    probe_author: QAModel | None = None
    """Writes `author_questions` more questions per session from its full history (saved with
    the session's questions, so later runs reuse them)."""
    author_questions: int = Field(default=4, ge=1)
    """How many questions the probe author writes per session."""
    kinds: list[Kind] = Field(default_factory=lambda: list(KINDS), min_length=1)  # type: ignore[arg-type]
    """The kinds of question to ask."""
    per_session: int = Field(default=DEFAULT_PER_SESSION, ge=1)
    """The most questions built from a generated session's manifest (kinds taken in turn)."""
    tokens_per_question: int = Field(default=TOKENS_PER_QUESTION, ge=1)
    """A recording without a manifest: one question per this many tokens of session."""
    min_questions: int = Field(default=DEFAULT_MIN_QUESTIONS, ge=1)
    """A recording: at least this many questions (when its transcript gives them)."""
    max_questions: int = Field(default=DEFAULT_MAX_QUESTIONS, ge=1)
    """A recording: at most this many questions."""
    next_action: bool = True
    """At a recorded compaction boundary, also have the answerer take the next turn and compare
    its tool call with the recorded agent's."""
    full_context: bool = True
    """Also answer from the full uncompacted history where it fits the cell's window (and a
    model answerer's): ``qa_loss_exact``, ``qa_loss_open``, ``qa_gain``,
    ``next_action_match_full``."""
    judge_calibration: int = Field(default=4, ge=0)
    """With a judge: how many exact questions per cell it also grades, so its agreement with
    the exact grader is measured (Cohen's kappa per model and window,
    ``Results.judge_agreement()``); 0 grades none."""
    questions: str | None = None
    """A folder of saved question sets (``<run>/qa/questions`` of an earlier run) to ask
    instead of building them; sessions without a file there get built questions."""

    @field_validator("answerer", "judge", "probe_author", mode="before")
    @classmethod
    def _shorthand(cls, value: object) -> object:
        return _entry(value)

    @field_validator("kinds")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _lookup_only_answers(self) -> QATable:
        for role in ("judge", "probe_author"):
            entry = getattr(self, role)
            if entry is not None and entry.model == LOOKUP:
                raise PydanticCustomError(
                    "qa_model", "{role} must be a model: lookup only answers", {"role": role})
        return self

    def build_options(self) -> BuildOptions:
        """The keyword arguments of `workbench.probes.build_questions` this table sets: the
        kinds, a manifest's cap and a recording's counts."""
        return {"kinds": list(self.kinds), "per_session": self.per_session,
                "tokens_per_question": self.tokens_per_question,
                "min_questions": self.min_questions, "max_questions": self.max_questions}

    @property
    def uses_lookup(self) -> bool:
        """True when the answerer is the offline ``lookup``."""
        return self.answerer.model == LOOKUP

    def models(self) -> dict[str, QAModel]:
        """Role -> model entry, for every role that calls a model (``lookup`` left out)."""
        out = {role: getattr(self, role) for role in ROLES if getattr(self, role) is not None}
        if self.uses_lookup:
            out.pop("answerer", None)
        return out

    def to_toml_value(self, secrets: bool = False) -> dict[str, object]:
        """The table as written (defaults left out; secret params only with `secrets`)."""
        data: dict[str, object] = {"answerer": self.answerer.to_toml_value(secrets)}
        for role in ("judge", "probe_author"):
            entry = getattr(self, role)
            if entry is not None:
                data[role] = entry.to_toml_value(secrets)
        defaults = QATable()
        for name in ("author_questions", "kinds", "per_session", "tokens_per_question",
                     "min_questions", "max_questions", "next_action", "full_context",
                     "judge_calibration", "questions"):
            value = getattr(self, name)
            if value != getattr(defaults, name):
                data[name] = value
        return data
