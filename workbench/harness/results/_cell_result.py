"""`CellResult`: one finished cell, as it travels from the executor to the store.

The run stage fills a `CellResult` (a `workbench.harness.run` executor, locally or on a Ray
worker); the results stage writes it (`ResultsStore.record_results`): its ``cells`` row, one
``attempts`` row per model call (`AttemptResult`), its summary file and the texts kept beside
it (the raw reply the summary was parsed from, what it forgot, the ``[qa]`` answers). Field
names are the store's column names; a field left None is NULL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TypeAlias

__all__ = ["ATTEMPT_COLUMNS", "CELL_COLUMNS", "AttemptResult", "CellResult", "CellTexts",
           "SQLValue"]

SQLValue: TypeAlias = str | int | float | bytes | None
"""A value SQLite stores in a column (and gives back in a row)."""


@dataclass
class AttemptResult:
    """One model call of a cell: an ``attempts`` row (see `ATTEMPT_COLUMNS`)."""

    attempt_no: int
    outcome: str
    model: str | None = None
    removal_percent: int | None = None
    messages_removed: int | None = None
    tool_responses_removed: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost: float | None = None
    latency_ms: float | None = None
    cache_hit: int | None = None
    error: str | None = None
    prompt_hash: str | None = None
    shared: int | None = None
    shared_from: str | None = None
    purpose: str | None = None
    question_id: str | None = None
    attempt_id: str | None = None
    """Set for a call other cells shared (their ``shared_from``); else made when written."""
    task_attempt: int | None = None
    node_id: str | None = None

    def row(self) -> dict[str, SQLValue]:
        """The columns that hold a value."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}


@dataclass
class CellTexts:
    """The texts a cell leaves beside its row.

    Attributes:
        summary: The summary the strategy produced (written to ``summaries/<digest>.md``, named by
            a digest of the text).
        raw: The model's last reply, the summary parser's input (``raw.txt``).
        forgotten: What the summary forgot, as JSON (``forgotten.json``).
        qa: The ``[qa]`` step's questions and answers, as JSON (``qa.json``).
    """

    summary: str | None = None
    raw: str | None = None
    forgotten: str | None = None
    qa: str | None = None

    def kept(self) -> dict[str, str]:
        """The texts stored in the results store by name (the summary is a file of its own)."""
        named = {"raw.txt": self.raw, "forgotten.json": self.forgotten, "qa.json": self.qa}
        return {name: text for name, text in named.items() if text is not None}


@dataclass
class CellResult:
    """A finished cell: its ``cells`` row, its attempts and its texts (see the module
    docstring; `CELL_COLUMNS` lists the row's columns in the store's order)."""

    cell_id: str
    run_id: str
    session_id: str | None = None
    session_path: str | None = None
    session_format: str | None = None
    strategy: str | None = None
    model: str | None = None
    template: str | None = None
    window: int | None = None
    repeat: int | None = None
    status: str | None = None
    original_tokens: int | None = None
    retained_tokens: int | None = None
    summary_tokens: int | None = None
    billed_input_tokens: int | None = None
    billed_output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost: float | None = None
    parse_outcome: str | None = None
    structured: int | None = None
    attempts: int | None = None
    retries: int | None = None
    max_removal_percent: int | None = None
    tool_responses_removed: int | None = None
    latency_ms: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    traceback: str | None = None
    summary_path: str | None = None
    metrics_json: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    outcome_kind: str | None = None
    error_class: str | None = None
    http_retries: int | None = None
    reported_tokens: int | None = None
    estimated_tokens: int | None = None
    effective_window: int | None = None
    window_tokenizer: str | None = None
    calls_made: int | None = None
    calls_shared: int | None = None
    template_params: str | None = None
    qa_input_tokens: int | None = None
    qa_output_tokens: int | None = None
    qa_cost: float | None = None
    qa_calls: int | None = None
    spent_input_tokens: int | None = None
    spent_output_tokens: int | None = None
    spent_cost: float | None = None
    attempt_results: list[AttemptResult] = field(default_factory=list)
    texts: CellTexts = field(default_factory=CellTexts)

    def row(self) -> dict[str, SQLValue]:
        """The ``cells`` columns that hold a value."""
        return {name: v for name in CELL_COLUMNS if (v := getattr(self, name)) is not None}

    def update(self, columns: Mapping[str, SQLValue]) -> None:
        """Set columns from a mapping of column names (a step's sums).

        Raises:
            ValueError: a name that is not a cell column.
        """
        unknown = set(columns) - _CELL_COLUMN_SET
        if unknown:
            raise ValueError(f"unknown cell columns: {sorted(unknown)}")
        for name, value in columns.items():
            setattr(self, name, value)

    def add(self, name: str, value: int | float | None) -> None:
        """Add `value` to a numeric column (None counts as 0)."""
        setattr(self, name, (getattr(self, name) or 0) + (value or 0))

    @property
    def billed(self) -> bool:
        """True when this run paid for any of the cell's calls."""
        return bool(self.spent_cost or self.spent_input_tokens or self.spent_output_tokens)


_NOT_COLUMNS = ("attempt_results", "texts")
CELL_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(CellResult)
                                      if f.name not in _NOT_COLUMNS)
"""The ``cells`` table's columns, in its order."""
_CELL_COLUMN_SET = frozenset(CELL_COLUMNS)
ATTEMPT_COLUMNS: tuple[str, ...] = (
    "attempt_id", "cell_id", "attempt_no", "removal_percent", "messages_removed",
    "tool_responses_removed", "outcome", "model", "input_tokens", "output_tokens",
    "cache_read_tokens", "cache_write_tokens", "cost", "latency_ms", "cache_hit", "error",
    "prompt_hash", "shared", "shared_from", "task_attempt", "purpose", "question_id",
    "node_id")
"""The ``attempts`` table's columns, in its order."""
