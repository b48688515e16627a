"""Running one cell: compact the session, measure it, and return its `CellResult`.

Never raises for a failing cell: the error (type, message, traceback) becomes the result, with
the usage of every attempt that was billed before the failure. The cell's model calls go
through the pipeline the runner composes (`model_for`, with this cell's record step); its
scoring runs on the event loop once its calls are done (`_cell_score`), so the only thread a
cell's work meets is the store's writer, which the executor hands the result to.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from workbench.compaction import Attempt
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import Variant
from workbench.harness.results._cell_result import CellResult, SQLValue
from workbench.harness.results._outcomes import error_class, outcome_kind, root_error
from workbench.harness.results._store import utc_now
from workbench.harness.run._cell_score import count_soon, score, session_tokens
from workbench.harness.run._qa_bank import QuestionBank
from workbench.harness.run._qa_calls import QACalls, QACount, QASums
from workbench.harness.run._qa_run import run_qa
from workbench.harness.run._record import RecordStep, attempt_results
from workbench.harness.run._run_models import ModelFor
from workbench.harness.run._strategy_run import run_strategy, scored_session
from workbench.models._billing import billing_columns, http_retries, usage_columns
from workbench.models._window import window_facts
from workbench.sessions import Session
from workbench.tokens import default_estimator

__all__ = ["add_qa_calls", "cell_result", "error_result", "run_cell"]

QA_SUM_COLUMNS: tuple[tuple[str, QACount], ...] = (
    ("billed_input_tokens", "input_tokens"), ("billed_output_tokens", "output_tokens"),
    ("cache_read_tokens", "cache_read_tokens"), ("cache_write_tokens", "cache_write_tokens"),
    ("reported_tokens", "reported_tokens"), ("estimated_tokens", "estimated_tokens"),
    ("calls_made", "calls_made"), ("calls_shared", "calls_shared"),
    ("http_retries", "http_retries"))
"""(cell column, `QASums` name) of the QA sums added to a cell's own."""


def cell_result(cell: Cell, run_id: str, **columns: SQLValue) -> CellResult:
    """A `CellResult` naming `cell` (whatever became of it), with `columns` set.

    Raises:
        ValueError: a name in `columns` is not a cell column.
    """
    result = CellResult(cell_id=cell.cell_id, run_id=run_id, session_id=cell.session_id,
                        session_path=cell.session_path, session_format=cell.session_format,
                        strategy=cell.strategy, model=cell.model, template=cell.template,
                        window=cell.window, repeat=cell.repeat)
    result.update(columns)
    return result


def _ladder_columns(records: list[Attempt]) -> dict[str, int | None]:
    extras = [(u.extra or {}) for r in records if (u := getattr(r, "usage", None)) is not None]
    return {
        "calls_made": sum(1 for e in extras if not e.get("shared")),
        "calls_shared": sum(1 for e in extras if e.get("shared")),
        "attempts": len(records),
        "retries": max(len(records) - 1, 0),
        "max_removal_percent": max((r.removal_percent for r in records), default=None),
        "tool_responses_removed": max((r.tool_responses_removed for r in records), default=None),
    }


def _gave_up_after(exc: BaseException | None) -> int | None:
    """How many tries the gateway made for a call that gave up (its error says), or None."""
    attempts = getattr(root_error(exc), "attempts", None) if exc is not None else None
    return attempts if isinstance(attempts, int) else None


async def run_cell(cell: Cell, session: Session, variant: Variant, model_for: ModelFor,
                   experiment: Experiment, out: Path, run_id: str,
                   qa_bank: QuestionBank | None = None,
                   calls_done: Callable[[], None] | None = None
                   ) -> CellResult:
    """Compact `session` as `cell` says and return its result (errors become an error result).

    Args:
        cell: The cell.
        session: Its loaded session.
        variant: Its resolved template variant.
        model_for: ``(cell, role=None, **steps) -> CompactionModel``: the summarizer, or with
            a role (``answerer``, ``judge``, ``probe_author``) a ``[qa]`` model; `steps` adds
            pipeline steps (this cell's ``record``).
        experiment: The experiment (manual_compact flag, ``[qa]``).
        out: The run folder (``qa/questions/`` files are written under it).
        run_id: The current run's id.
        qa_bank: The run's `QuestionBank` (a fresh one when None and ``[qa]`` is set).
        calls_done: Called once the cell will call no model again (after the compaction and
            the ``[qa]`` step, before the scoring): the local executor admits the next cell
            there, so it prepares and calls while this one is scored.
    """
    estimator = default_estimator()
    result = cell_result(cell, run_id, started_at=utc_now())
    if variant.params:
        result.template_params = json.dumps(variant.params, ensure_ascii=False)
    started = time.perf_counter()
    records: list[Attempt] = []
    record = RecordStep(on_first_call=lambda: count_soon(session, estimator))
    qa_calls: QACalls | None = None
    try:
        model = model_for(cell, record=record) if cell.uses_model else None
        if model is not None:
            result.effective_window, result.window_tokenizer = window_facts(model)
        done = await run_strategy(cell, session, variant, model, experiment, estimator)
        result.latency_ms = (time.perf_counter() - started) * 1000
        # Counted by now (`count_soon`, from the first call on: in the wait for the reply),
        # or here; never before the first calls go out.
        result.original_tokens = session_tokens(session, estimator)
        records = list(done.attempts)
        result.update({**usage_columns(list(done.usages)), **_ladder_columns(records),
                       **billing_columns(records, record.raw_usages)})
        result.http_retries = http_retries(record.raw_usages)
        result.outcome_kind = outcome_kind(None)
        qa_metrics: dict[str, float | int] = {}
        if experiment.qa is not None:  # the cell's last model calls
            scored = scored_session(session, done)
            window = result.effective_window or cell.window
            tokens = (result.original_tokens if scored is session
                      else session_tokens(scored, estimator))
            qa = await run_qa(cell, session, scored, done.context, experiment.qa,
                              qa_bank if qa_bank is not None else QuestionBank(), model_for,
                              out, full_fits=not window or tokens <= window)
            qa_metrics, qa_calls, result.texts.qa = qa.metrics, qa.calls, qa.text
        if calls_done is not None:
            calls_done()
            await asyncio.sleep(0)  # the cell it admitted starts before this one is scored
        score(result, cell, session, variant, done,
              record.last_text if model is not None else None, estimator, qa_metrics)
    except Exception as exc:  # one failing cell never stops the run
        if result.original_tokens is None:  # the strategy failed before it was counted
            with contextlib.suppress(Exception):
                result.original_tokens = session_tokens(session, estimator)
        _failed(result, exc, records, record, started)
        qa_calls = getattr(exc, "qa_calls", None)
    result.finished_at = utc_now()
    result.attempt_results = attempt_results(records, cell.model, record.prompt_hashes)
    if qa_calls is not None or experiment.qa is not None:
        add_qa_calls(result, qa_calls)
    if qa_calls is not None:
        result.attempt_results += qa_calls.attempt_results(first_number=len(records) + 1)
    return result


def _failed(result: CellResult, exc: Exception, records: list[Attempt], record: RecordStep,
            started: float) -> None:
    """Turn `result` into the cell's error result: what was billed before `exc`, and `exc`."""
    if result.latency_ms is None:
        result.latency_ms = (time.perf_counter() - started) * 1000
    records[:] = list(getattr(exc, "attempts", None) or records)
    usages = [r.usage for r in records if r.usage is not None]
    usages = usages or list(getattr(exc, "billed_usage", None) or [])
    unknown = sum(1 for r in records if getattr(r, "outcome", None) == "error"
                  and getattr(r, "usage", None) is None)
    result.update({**usage_columns(usages, unknown), **_ladder_columns(records),
                   **billing_columns(records, record.raw_usages)})
    result.http_retries = http_retries(record.raw_usages, _gave_up_after(exc))
    result.outcome_kind, result.error_class = outcome_kind(exc), error_class(exc)
    result.status, result.error_type, result.error_message = "error", type(exc).__name__, str(exc)
    result.traceback = "".join(traceback.format_exception(exc))
    result.parse_outcome = result.structured = None


def add_qa_calls(result: CellResult, calls: QACalls | None) -> None:
    """Fold the QA step's calls into the cell: the billed totals, cost, reported and estimated
    tokens, call counts and gateway retries, and the ``qa_*`` billing columns."""
    sums: QASums = calls.sums() if calls is not None else {
        "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
        "cache_write_tokens": 0, "cost": 0.0, "reported_tokens": 0, "estimated_tokens": 0,
        "calls_made": 0, "calls_shared": 0, "http_retries": 0, "calls": 0}
    for column, name in QA_SUM_COLUMNS:
        result.add(column, sums[name])
    if result.cost is not None:
        result.cost = None if sums["cost"] is None else result.cost + sums["cost"]
    result.qa_input_tokens, result.qa_output_tokens = sums["input_tokens"], sums["output_tokens"]
    result.qa_cost, result.qa_calls = sums["cost"], sums["calls"]


def error_result(cell: Cell, exc: BaseException, run_id: str) -> CellResult:
    """The result of a cell that cannot start: its session file could not be read, or its
    template variant could not be compiled. Nothing was called or billed."""
    now = utc_now()
    result = cell_result(cell, run_id, started_at=now, latency_ms=0.0, finished_at=now)
    result.update({**usage_columns([]), **_ladder_columns([]), **billing_columns([], [])})
    result.http_retries = 0
    result.outcome_kind, result.error_class = outcome_kind(exc), error_class(exc)
    result.status, result.error_type, result.error_message = "error", type(exc).__name__, str(exc)
    result.traceback = "".join(traceback.format_exception(exc))
    return result
