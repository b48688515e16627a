"""The async runner: expands an experiment into cells, hands them to an executor (the local
asyncio one by default, or Ray: ``harness/executors``), and writes every finished cell (with its
attempts) to the run folder's results store; only this driver writes the folder.

Re-running over the same folder resumes: cells already stored are skipped ('error' cells too,
unless ``retry_errors``). A failing cell is recorded with its error and the run goes on; so
are the cells of a session file that cannot be read and of a template variant that cannot be
compiled (`_preflight`), which are stored as error rows before the other cells start.

One writer per folder: the run holds `RunLock` from before it reads the store until its last
row is on disk; runs an earlier, killed process left 'running' are marked 'interrupted'. A
new folder's store is made by the writer thread (`CellWriter`, with the spec's copy and the
run's own rows) once the first calls are out, or in memory and written whole if the cells all
end before that; it writes the status too (`finish`) and reads the tables back (a new folder's
rows a wave at a time, while the calls are out: `RowsSoFar`), and the returned `Results` are
made of those rows on the loop thread while the writer closes the store (no second
connection, unless a replay writes after the cells).

Every model call of a cell passes one pipeline (`workbench.models.compose`, called once per
cell in ``model_for``): record, window, share, cache, slot, budget, then the model. With a
budget, every call about to be sent reserves its estimated cost first (`BudgetStep`). The run
keeps its caches in one `workbench._memo.RunMemo`, dropped when it ends. Everything written
(spec copy, rows, logs) passes through the redaction layer.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Collection
from pathlib import Path
from typing import Literal, Unpack, overload

from tqdm.auto import tqdm

from workbench._json_types import JSONObject
from workbench._memo import run_memo
from workbench._redact import install_log_redaction, register_secrets_in
from workbench._ulid import new_ulid
from workbench._version import __version__
from workbench.compaction._model import CompactionModel
from workbench.harness.experiment._cells import Cell, SessionCache
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import Variant
from workbench.harness.results._cell_result import CellResult
from workbench.harness.results._results import DB_FILE, SUMMARIES_DIR, Results
from workbench.harness.results._rows import RowsSoFar, Tables
from workbench.harness.results._store import ResultsStore
from workbench.harness.results._writer import CellWriter
from workbench.harness.run._budget import BUDGET_STOPPED, BudgetStep, RunBudget
from workbench.harness.run._cell_run import error_result
from workbench.harness.run._close_later import Closer, close_store, take_close_later
from workbench.harness.run._estimate import OUTPUT_TOKENS_ESTIMATE, DryRunEstimate, estimate_cells
from workbench.harness.run._faults import HeldFaults, storage_faults
from workbench.harness.run._heap import fewer_collections, still_heap
from workbench.harness.run._lock import RunLock
from workbench.harness.run._preflight import cells_to_run, forget_fixed_sessions, prepare
from workbench.harness.run._qa_bank import QuestionBank
from workbench.harness.run._qa_estimate import QA_OUTPUT_TOKENS
from workbench.harness.run._replay_run import run_replays
from workbench.harness.run._run_folder import check_run_folder, fresh_folder
from workbench.harness.run._run_models import (
    ModelFactory,
    QAModelFactory,
    load_cell_model,
    load_qa_model,
    qa_entry,
)
from workbench.harness.run._run_request import (
    RunOptions,
    SpecArg,
    as_experiment,
    default_out,
    write_spec,
)
from workbench.harness.run.executors import CellJob, Executor, make_executor
from workbench.models._pipeline import ModelPipeline, Step, compose
from workbench.models._shared import SharedCalls
from workbench.models._spec import max_tokens_param
from workbench.sessions import Session

__all__ = ["BUDGET_MESSAGE", "BUDGET_STOPPED", "ModelFactory", "QAModelFactory", "cells_to_run",
           "default_out", "load_qa_model", "log", "qa_entry", "run_experiment_async", "write_spec"]

log = logging.getLogger("workbench.harness")

BUDGET_MESSAGE = ("budget reached ({what}); {left} cell(s) not run. Raise [budget] in the spec "
                  "and run again to continue.")


@overload
async def run_experiment_async(spec: SpecArg, out: str | Path, *, dry_run: Literal[False] = False,
                               **options: Unpack[RunOptions]) -> Results: ...
@overload
async def run_experiment_async(spec: SpecArg, out: str | Path, *, dry_run: Literal[True],
                               **options: Unpack[RunOptions]) -> DryRunEstimate: ...
@overload
async def run_experiment_async(spec: SpecArg, out: str | Path, *, dry_run: bool,
                               **options: Unpack[RunOptions]) -> Results | DryRunEstimate: ...
@storage_faults
async def run_experiment_async(spec: SpecArg, out: str | Path, *,
                               retry_errors: bool = False, dry_run: bool = False,
                               progress: bool = True, model_factory: ModelFactory | None = None,
                               concurrency: int | None = None, new: bool = False,
                               share_calls: bool | SharedCalls = True,
                               only_sessions: Collection[str] | None = None,
                               check_folder: bool = True, executor: str | None = None,
                               address: str | None = None,
                               qa_model_factory: QAModelFactory | None = None
                               ) -> Results | DryRunEstimate:
    """Run (or resume) an experiment into the run folder `out`.

    Args:
        spec: An `Experiment` or the path of its TOML file.
        out: The run folder; created if missing, resumed if it holds a results store.
        retry_errors: Re-run cells stored as 'error' (their rows are replaced).
        dry_run: Only estimate: no model is called and nothing is written.
        progress: Show a tqdm progress bar (the notebook widget under Jupyter).
        model_factory: Builds the model of a cell instead of ``load_model`` (tests, custom
            models); called once per cell.
        concurrency: Overrides the experiment's global concurrency.
        new: Start a fresh folder (``<out>-2``, ``<out>-3``...) when `out` already holds a run,
            instead of resuming it.
        share_calls: True (default): cells sending the same prompt to the same model (same
            repeat) share one call (`SharedCalls`); False: every cell calls; or a `SharedCalls`
            to share calls across several runs (the tuner's rungs).
        only_sessions: Run only the cells of these session ids (the tuner's rungs).
        check_folder: Refuse a folder holding another experiment's cells (`check_run_folder`).
            The tuner turns it off: its rungs are subsets of one search sharing one folder.
        executor: ``"local"`` or ``"ray"``; overrides the experiment's ``executor.kind``.
        address: The Ray cluster (``"auto"``, ``"ray://host:port"``); overrides the
            experiment's ``executor.address``.
        qa_model_factory: Builds the ``[qa]`` models instead of ``load_model``: called as
            ``(cell, role)`` with role ``answerer``, ``judge`` or ``probe_author`` (tests,
            custom models); the result is wrapped like a summarizer (budget, shared calls).

    Returns:
        `Results` of the run folder, or a `DryRunEstimate` when `dry_run`.

    Raises:
        ConfigError: `out` holds the cells of an experiment with different cells (see
            `check_run_folder`), and `new` is false.
    """
    close_later = take_close_later()  # `run_experiment`'s own run only
    with run_memo(), fewer_collections():  # the run's caches, dropped at its end; fewer GCs
        return await _run_async(as_experiment(spec), out, retry_errors, dry_run, progress,
                                model_factory, concurrency, new, share_calls, only_sessions,
                                check_folder, executor, address, qa_model_factory, close_later)


async def _run_async(experiment: Experiment, out: str | Path, retry_errors: bool, dry_run: bool,
                     progress: bool, model_factory: ModelFactory | None,
                     concurrency: int | None, new: bool, share_calls: bool | SharedCalls,
                     only_sessions: Collection[str] | None, check_folder: bool,
                     executor: str | None, address: str | None,
                     qa_model_factory: QAModelFactory | None,
                     close_later: list[Closer] | None) -> Results | DryRunEstimate:
    out = fresh_folder(Path(out)) if new else Path(out)
    if check_folder:
        check_run_folder(experiment, out)
    for entry in experiment.models:
        register_secrets_in(entry.params)
    if experiment.qa is not None:
        for qa_entry in experiment.qa.models().values():
            register_secrets_in(qa_entry.params)
    install_log_redaction()
    runner = _executor(experiment, executor, address)
    plan = prepare(experiment, cache=SessionCache(), only_sessions=only_sessions)
    cells, sessions, variants = plan.cells, plan.sessions, plan.variants
    for problem in plan.problems():
        log.warning(problem)
    qa_bank = QuestionBank.load(experiment, out) if experiment.qa is not None else None
    if dry_run:
        todo = cells
        if (out / DB_FILE).is_file():
            with ResultsStore(out / DB_FILE) as stored:
                todo = cells_to_run(cells, stored, retry_errors)
        estimate = estimate_cells(experiment, cells, [c for c in todo if c.cell_id not in
                                                      plan.doomed], sessions, variants, qa_bank)
        estimate.to_run, estimate.problems = len(todo), plan.problems()
        print(estimate)
        return estimate

    # The lock comes before reading the store: a second process fails here, before any call.
    with RunLock(out) as lock:
        if lock.previous:
            log.warning("took over the lock of a killed run (pid %s on %s since %s)",
                        lock.previous.get("pid"), lock.previous.get("host"),
                        lock.previous.get("started_at"))
        (out / SUMMARIES_DIR).mkdir(exist_ok=True)
        db_path = out / DB_FILE
        run_id = new_ulid()
        spec_json = experiment.model_dump_json(
            exclude={"models": {"__all__": {"params": {"api_key"}}}})
        cluster: JSONObject | None = None
        doomed: list[Cell] = []
        tables: list[Tables] = []  # the run as written (its Results), read with its status
        spec: list[Path] = []  # its copy in the folder, once written
        so_far = RowsSoFar()  # a new folder's rows, read while the calls are out

        def open_run(s: ResultsStore) -> None:
            s.start_run(experiment.name, spec_json, __version__, run_id=run_id)

        def started(s: ResultsStore) -> None:  # the executor, and the cells that cannot start
            s.record_executor(run_id, runner.kind, json.dumps(cluster, sort_keys=True))
            s.record_results(error_result(cell, plan.doomed[cell.cell_id], run_id)
                             for cell in doomed)

        def save_spec() -> None:  # once; a new folder's by its writer, with its store
            if not spec:
                spec.append(write_spec(experiment, out))

        def new_folder(s: ResultsStore) -> None:
            save_spec()
            open_run(s)
            started(s)

        # A new folder's store is made by the writer (its prelude); an existing one read here.
        store: ResultsStore | None = ResultsStore(db_path) if db_path.exists() else None
        writer: CellWriter | None = None
        try:
            if store is not None:
                save_spec()
                store.mark_interrupted()
                if only_sessions is None:
                    forget_fixed_sessions(store, cells)
                todo = cells_to_run(cells, store, retry_errors)
                billed = store.billed()
                open_run(store)  # the run row comes before the executor starts
            else:
                todo, billed = list(cells), (0.0, 0, 0)
            doomed = [c for c in todo if c.cell_id in plan.doomed]
            todo = [c for c in todo if c.cell_id not in plan.doomed]
            status = "running"
            try:
                cluster = runner.start()
                if store is not None:
                    started(store)
                shared = (share_calls if isinstance(share_calls, SharedCalls)  # a tune's
                          else SharedCalls(bool(share_calls), [c.repeat for c in todo]))
                # Off the loop, started once it waits for replies (the local executor's
                # `calls_out`, which holds the cells until then) or by another's first cell.
                writer = CellWriter(db_path, None if store is not None else new_folder,
                                    start=False, hold_cells=runner.kind == "local",
                                    rows=None if store is not None else so_far)
                try:
                    status = await _run_cells(experiment, out, writer, billed, run_id, todo,
                                              sessions, variants, model_factory, progress,
                                              concurrency, shared, runner, qa_bank,
                                              qa_model_factory)
                finally:
                    try:
                        if store is None and writer.ready.is_set() and \
                                experiment.replay is not None:
                            store = ResultsStore(db_path)  # opened before the writer's closes
                    finally:  # every cell, then the status unless a replay writes after them
                        last = status != "running" and experiment.replay is None

                        def finished(s: ResultsStore) -> None:
                            s.finish_run(run_id, status)
                            tables.append(so_far.tables(s.db, replaced=s.replaced > 0))

                        writer.finish(finished if last else None)
                if experiment.replay is not None and status == "finished":
                    if store is None:
                        store = ResultsStore(db_path)
                    await run_replays(experiment, store, run_id, sessions,
                                      retry_errors=retry_errors)
            finally:
                runner.close()
                if writer is None or not writer.last_written:  # else the writer wrote it
                    if store is None:  # a new folder whose run stopped before its writer ran
                        store = ResultsStore(db_path)
                    if not store.has_run(run_id):
                        open_run(store)
                        if cluster is not None:
                            started(store)
                    store.finish_run(run_id, status if status != "running" else "interrupted")
                    save_spec()  # after the status: a full disk then loses no more
            if tables and writer is not None and writer.last_written:
                # Every row is committed (a whole store's when its writer closes: the lock
                # goes then), and the frames are made of the rows the writer read while it
                # folds the log into the file, or writes the file, and closes it.
                if not writer.whole:
                    lock.release()
                results = Results.from_rows(out, tables[-1])
                if close_later is not None:  # joined once the caller's loop has closed
                    close_later.append(functools.partial(  # its cells frame made meanwhile
                        close_store, writer, store, lambda: results.cells, lock.hand_over()))
                    writer = store = None
                return results
            if store is None:
                store = ResultsStore(db_path)
            return Results.from_store(out, store)
        finally:
            close_store(writer, store)


async def _run_cells(experiment: Experiment, out: Path, writer: CellWriter,
                     billed: tuple[float, int, int], run_id: str, todo: list[Cell],
                     sessions: list[Session], variants: dict[str, Variant],
                     model_factory: ModelFactory | None, progress: bool,
                     concurrency: int | None, shared: SharedCalls,
                     executor: Executor, qa_bank: QuestionBank | None = None,
                     qa_model_factory: QAModelFactory | None = None) -> str:
    budget = RunBudget(experiment.budget.max_cost, experiment.budget.max_tokens, *billed)
    budget_steps: dict[str, list[BudgetStep]] = {}
    stopped: list[str] = []
    skipped, faults = 0, HeldFaults()  # faults: cells a full or read-only disk stopped
    models: dict[tuple[int, int | None], CompactionModel] = {}
    bar = tqdm(total=len(todo), desc=experiment.name, unit="cell", disable=not progress)

    def base_model(cell: Cell) -> CompactionModel:
        if model_factory is not None:
            return model_factory(cell)
        key = (cell.model_index, cell.window)
        if key not in models:
            models[key] = load_cell_model(experiment, cell)
        return models[key]

    qa_models: dict[str, CompactionModel] = {}

    def qa_base(c: Cell, role: str) -> CompactionModel:
        if qa_model_factory is not None:
            return qa_model_factory(c, role)
        if role not in qa_models:
            qa_models[role] = load_qa_model(experiment, role)
        return qa_models[role]

    def model_for(c: Cell, role: str | None = None, *, record: Step | None = None,
                  slot: Step | None = None) -> ModelPipeline:
        """A cell's model (a ``[qa]`` model with `role`) and every step its calls pass, in
        the pipeline's order: record (the cell's), window and cache (the model's own, from
        its string), share (the run's table; repeats are independent samples and never
        share: a summarizer alone in its repeat has none, `SharedCalls.step_for`), slot (the
        executor's), budget (when the spec sets one)."""
        if role is None:
            model, string, params = base_model(c), c.model_string, c.params
        else:
            entry = qa_entry(experiment, role)
            model, string, params = qa_base(c, role), entry.model, entry.params
        budget_step = None
        if budget.active:
            default = OUTPUT_TOKENS_ESTIMATE if role is None else QA_OUTPUT_TOKENS
            budget_step = BudgetStep(budget, string,
                                     output_tokens=max_tokens_param(params, default))
            budget_steps.setdefault(c.cell_id, []).append(budget_step)
        share = shared.step(scope=c.repeat) if role else shared.step_for(c.repeat)
        return compose(model, record=record, share=share, budget=budget_step, slot=slot)

    def record(result: CellResult) -> None:
        nonlocal skipped
        steps = budget_steps.pop(result.cell_id, [])
        if executor.kind != "local":
            # Remote workers call their own models, not the driver's budgeted ones: the
            # budget learns their spend from the finished cell.
            budget.charge(result)
        if any(s.refused for s in steps):
            if not stopped:
                stopped.append(budget.reached() or "no room for another call")
            skipped += 1
            if not result.billed:
                return  # nothing was billed: the cell simply runs next time
            result.error_type = BUDGET_STOPPED
        if faults.hold(result.error_type, result.error_message):
            return  # not stored: it runs again on resume, its reply then from the cache
        writer.put(result)
        bar.update(1)

    job = CellJob(experiment=experiment, out=out, run_id=run_id, cells=todo,
                  sessions={s.id: s for s in sessions}, variants=variants,
                  concurrency=concurrency or experiment.concurrency, model_for=model_for,
                  record=record, model_factory=model_factory, shared=shared,
                  budget_reached=lambda: faults.stop_reason() or budget.reached(),
                  qa_bank=qa_bank, qa_model_factory=qa_model_factory, calls_out=writer.start)
    try:
        with still_heap():  # no pass over the loaded heap stalls the calls in flight
            report = await executor.run(job)
    finally:
        bar.close()
    faults.raise_first()
    reason = stopped[0] if stopped else report.stopped
    if reason:
        message = (BUDGET_MESSAGE.format(what=reason, left=skipped + report.skipped) + " "
                   + budget.spent_line())
        log.warning(message)  # once: the CLI exits 4 and does not repeat it
        return "budget_reached"
    return "finished"


def _executor(experiment: Experiment, kind: str | None, address: str | None) -> Executor:
    """The executor asked for: arguments win over the experiment's ``executor`` table."""
    spec = experiment.executor
    kind = kind or spec.kind
    if kind != "ray":
        return make_executor(kind, address)
    return make_executor("ray", address or spec.address, cpus_per_cell=spec.cpus_per_cell,
                         max_retries=spec.max_retries)
