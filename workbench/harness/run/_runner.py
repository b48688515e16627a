"""The async runner: expands an experiment into cells, hands them to an executor (the local
asyncio one by default, or Ray: ``harness/executors``), and writes every finished cell (with its
attempts) to the run folder's results store; only this driver writes the folder.

Re-running over the same folder resumes: cells already stored are skipped ('error' cells too,
unless ``retry_errors``). A failing cell is recorded with its error and the run goes on.

One writer per folder: the run holds `RunLock` from before it reads the store until it has
written its last row; runs an earlier, killed process left 'running' are marked 'interrupted'.
With a budget, every model call reserves its estimated cost first (`BudgetedModel`). Everything
written (spec copy, rows, logs) passes through the redaction layer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from workbench._redact import install_log_redaction, redact, register_secrets_in
from workbench._version import __version__
from workbench.harness.experiment._cells import (
    Cell,
    SessionCache,
    expand_cells,
    load_experiment_sessions,
)
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import load_variant
from workbench.harness.results._results import DB_FILE, SPEC_FILE, SUMMARIES_DIR
from workbench.harness.results._store import ResultsStore
from workbench.harness.run._budget import BudgetedModel, RunBudget
from workbench.harness.run._cell_run import CellOutcome
from workbench.harness.run._estimate import OUTPUT_TOKENS_ESTIMATE, estimate_cells
from workbench.harness.run._lock import RunLock
from workbench.harness.run._run_folder import check_run_folder, fresh_folder
from workbench.harness.run.executors import CellJob, Executor, make_executor
from workbench.models._shared import SharedCalls

log = logging.getLogger("workbench.harness")

BUDGET_MESSAGE = ("budget reached ({what}); {left} cell(s) not run. Raise [budget] in the spec "
                  "and run again to continue.")
BUDGET_STOPPED = "BudgetReached"
"""``error_type`` of a cell the budget stopped after it was billed; such cells run again."""

ModelFactory = Callable[[Cell], Any]


def _version() -> str:
    return __version__


def _coerce(spec: Experiment | str | Path) -> Experiment:
    return spec if isinstance(spec, Experiment) else Experiment.from_toml(spec)


def write_spec(experiment: Experiment, out: Path) -> Path:
    """Write the experiment as run to ``<out>/spec.toml`` (no secrets, absolute base_dir)."""
    base = str(Path(experiment.base_dir or ".").resolve())
    as_run = experiment.model_copy(update={"base_dir": base})
    path = out / SPEC_FILE
    path.write_text(redact(as_run.to_toml()), encoding="utf-8")
    return path


async def run_experiment_async(spec: Experiment | str | Path, out: str | Path, *,
                               retry_errors: bool = False, dry_run: bool = False,
                               progress: bool = True, model_factory: ModelFactory | None = None,
                               concurrency: int | None = None, new: bool = False,
                               share_calls: bool | SharedCalls = True,
                               only_sessions: Collection[str] | None = None,
                               check_folder: bool = True, executor: str | None = None,
                               address: str | None = None) -> Any:
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

    Returns:
        `Results` of the run folder, or a `DryRunEstimate` when `dry_run`.

    Raises:
        ConfigError: `out` holds the cells of an experiment with different cells (see
            `check_run_folder`), and `new` is false.
    """
    experiment = _coerce(spec)
    out = fresh_folder(Path(out)) if new else Path(out)
    if check_folder:
        check_run_folder(experiment, out)
    for entry in experiment.models:
        register_secrets_in(entry.params)
    install_log_redaction()
    runner = _executor(experiment, executor, address)
    session_cache = SessionCache()
    sessions = load_experiment_sessions(experiment, session_cache)
    cells = expand_cells(experiment, sessions)
    if only_sessions is not None:
        wanted = set(only_sessions)
        cells = [c for c in cells if c.session_id in wanted]
    variants = {name: load_variant(name, experiment) for name in dict.fromkeys(c.template for c in cells)}
    if dry_run:
        todo = cells
        if (out / DB_FILE).is_file():
            with ResultsStore(out / DB_FILE) as store:
                todo = cells_to_run(cells, store, retry_errors)
        estimate = estimate_cells(experiment, cells, todo, sessions, variants)
        print(estimate)
        return estimate

    # The lock comes before reading the store: a second process fails here, before any call.
    with RunLock(out) as lock:
        if lock.previous:
            log.warning("took over the lock of a killed run (pid %s on %s since %s)",
                        lock.previous.get("pid"), lock.previous.get("host"),
                        lock.previous.get("started_at"))
        (out / SUMMARIES_DIR).mkdir(exist_ok=True)
        write_spec(experiment, out)
        store = ResultsStore(out / DB_FILE)
        try:
            store.mark_interrupted()
            todo = cells_to_run(cells, store, retry_errors)
            run_id = store.start_run(experiment.name, experiment.model_dump_json(
                exclude={"models": {"__all__": {"params": {"api_key"}}}}), _version())
            status = "running"
            try:
                cluster = runner.start()
                store.record_executor(run_id, runner.kind, json.dumps(cluster, sort_keys=True))
                shared = (share_calls if isinstance(share_calls, SharedCalls)
                          else SharedCalls(enabled=bool(share_calls)))
                status = await _run_cells(experiment, out, store, run_id, todo, sessions,
                                          variants, model_factory, progress, concurrency, shared,
                                          runner)
                if experiment.replay is not None and status == "finished":
                    from workbench.harness.run._replay_run import run_replays

                    await run_replays(experiment, store, run_id, sessions,
                                      retry_errors=retry_errors)
            finally:
                runner.close()
                store.finish_run(run_id, status if status != "running" else "interrupted")
        finally:
            store.close()
    from workbench.harness.results._results import Results

    return Results.load(out)


def cells_to_run(cells: list[Cell], store: ResultsStore, retry_errors: bool) -> list[Cell]:
    """The cells a run (or its dry run) still has to do: not stored yet, stopped by the budget
    after billing (they run again), or stored as errors when `retry_errors`."""
    stored = store.cell_statuses()
    rerun = store.cells_with_error_type(BUDGET_STOPPED)
    return [c for c in cells if c.cell_id not in stored or c.cell_id in rerun
            or (retry_errors and stored[c.cell_id] == "error")]


async def _run_cells(experiment: Experiment, out: Path, store: ResultsStore, run_id: str,
                     todo: list[Cell], sessions: list[Any], variants: dict[str, Any],
                     model_factory: ModelFactory | None, progress: bool,
                     concurrency: int | None, shared: SharedCalls,
                     executor: Executor) -> str:
    from tqdm.auto import tqdm

    budget = RunBudget(experiment.budget.max_cost, experiment.budget.max_tokens, *store.billed())
    wrappers: dict[str, list[BudgetedModel]] = {}
    stopped: list[str] = []
    skipped = 0
    models: dict[tuple[int, int | None], Any] = {}
    bar = tqdm(total=len(todo), desc=experiment.name, unit="cell", disable=not progress)

    def base_model(cell: Cell) -> Any:
        if model_factory is not None:
            return model_factory(cell)
        key = (cell.model_index, cell.window)
        if key not in models:
            models[key] = _load_model(experiment, cell)
        return models[key]

    def model_for(c: Cell) -> Any:
        # Sharing sits outside the budget: a cell answered by another cell's call never
        # reserves. Repeats are independent samples: they never share a call.
        model = base_model(c)
        if budget.active:
            model = BudgetedModel(model, budget, c.model_string, output_tokens=int(
                c.params.get("max_tokens") or OUTPUT_TOKENS_ESTIMATE))
            wrappers.setdefault(c.cell_id, []).append(model)
        return shared.wrap(model, scope=c.repeat)

    def record(outcome: CellOutcome) -> None:
        nonlocal skipped
        cell_wrappers = wrappers.pop(outcome.row["cell_id"], [])
        if executor.kind != "local":
            # Remote workers call their own models, not the driver's budgeted ones: the
            # budget learns their spend from the finished cell.
            budget.charge(outcome.row)
        if any(w.refused for w in cell_wrappers):
            if not stopped:
                stopped.append(budget.reached() or "no room for another call")
            skipped += 1
            if not _billed(outcome.row):
                return  # nothing was billed: the cell simply runs next time
            outcome.row["error_type"] = BUDGET_STOPPED
        store.record_cell(outcome.row, outcome.attempts)
        bar.update(1)

    job = CellJob(experiment=experiment, out=out, run_id=run_id, cells=todo,
                  sessions={s.id: s for s in sessions}, variants=variants,
                  concurrency=concurrency or experiment.concurrency, model_for=model_for,
                  record=record, budget_reached=budget.reached, model_factory=model_factory,
                  shared=shared)
    try:
        report = await executor.run(job)
    finally:
        bar.close()
    reason = stopped[0] if stopped else report.stopped
    if reason:
        message = (BUDGET_MESSAGE.format(what=reason, left=skipped + report.skipped) + " "
                   + budget.spent_line())
        log.warning(message)
        print(message)
        return "budget_reached"
    return "finished"


def _billed(row: dict[str, Any]) -> bool:
    return bool(row.get("cost") or row.get("billed_input_tokens") or row.get("billed_output_tokens"))


def _executor(experiment: Experiment, kind: str | None, address: str | None) -> Executor:
    """The executor asked for: arguments win over the experiment's ``executor`` table."""
    spec = experiment.executor
    kind = kind or spec.kind
    if kind != "ray":
        return make_executor(kind, address)
    return make_executor("ray", address or spec.address, cpus_per_cell=spec.cpus_per_cell,
                         max_retries=spec.max_retries)


def _load_model(experiment: Experiment, cell: Cell) -> Any:
    from workbench.models import load_model

    cache = experiment.cache
    kwargs: dict[str, Any] = {}
    if cache.mode is not None:
        kwargs["cache"] = cache.mode
    if cache.path or experiment.models[cell.model_index].cache_path:
        kwargs["cache_path"] = experiment.cache_file(cell.model_index)
    return load_model(cell.model_string, window=cell.window, **kwargs, **cell.params)


def default_out(experiment: Experiment) -> Path:
    """``runs/<name>`` under the working directory: re-running the same command resumes."""
    return Path("runs") / experiment.name


def run_experiment(spec: Experiment | str | Path | None = None, out: str | Path | None = None,
                   **kwargs: Any) -> Any:
    """Synchronous `run_experiment_async`; works inside a running event loop (Jupyter).

    Args:
        spec: An `Experiment`, a TOML path, or None for `Experiment.default()`.
        out: The run folder; default ``runs/<name>``.
        **kwargs: See `run_experiment_async`.

    Returns:
        `Results`, or a `DryRunEstimate` with ``dry_run=True``.
    """
    experiment = Experiment.default() if spec is None else _coerce(spec)
    folder = Path(out) if out is not None else default_out(experiment)
    from workbench._sync import run_sync

    return run_sync(run_experiment_async(experiment, folder, **kwargs))
