"""The async runner: expands an experiment into cells, hands them to an executor (the local
asyncio one by default, or Ray: ``harness/executors``), and writes every finished cell (with its
attempts) to the run folder's results store; only this driver writes the folder.

Re-running over the same folder resumes: cells already stored are skipped ('error' cells too,
unless ``retry_errors``). A failing cell is recorded with its error and the run goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.harness._cell_run import CellOutcome
from workbench.harness._cells import Cell, SessionCache, expand_cells, load_experiment_sessions
from workbench.harness._estimate import estimate_cells
from workbench.harness._experiment import Experiment
from workbench.harness._store import ResultsStore
from workbench.harness._variants import load_variant
from workbench.harness.executors import CellJob, Executor, make_executor

log = logging.getLogger("workbench.harness")

SPEC_FILE = "spec.toml"
DB_FILE = "results.sqlite"
SUMMARIES_DIR = "summaries"
BUDGET_MESSAGE = ("budget reached ({what}); {left} cell(s) not run. Raise [budget] in the spec "
                  "and run again to continue.")

ModelFactory = Callable[[Cell], Any]


def _version() -> str:
    from workbench import __version__

    return __version__


def _coerce(spec: Experiment | str | Path) -> Experiment:
    return spec if isinstance(spec, Experiment) else Experiment.from_toml(spec)


def write_spec(experiment: Experiment, out: Path) -> Path:
    """Write the experiment as run to ``<out>/spec.toml`` (no secrets, absolute base_dir)."""
    base = str(Path(experiment.base_dir or ".").resolve())
    as_run = experiment.model_copy(update={"base_dir": base})
    path = out / SPEC_FILE
    path.write_text(as_run.to_toml(), encoding="utf-8")
    return path


class _Budget:
    def __init__(self, experiment: Experiment, cost: float, tokens: int) -> None:
        self.max_cost = experiment.budget.max_cost
        self.max_tokens = experiment.budget.max_tokens
        self.cost, self.tokens = cost, tokens

    def add(self, outcome: CellOutcome) -> None:
        row = outcome.row
        self.cost += row.get("cost") or 0.0
        self.tokens += (row.get("billed_input_tokens") or 0) + (row.get("billed_output_tokens") or 0)

    def reached(self) -> str | None:
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"cost ${self.cost:.4f} >= max_cost ${self.max_cost:g}"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"{self.tokens} billed tokens >= max_tokens {self.max_tokens}"
        return None


async def run_experiment_async(spec: Experiment | str | Path, out: str | Path, *,
                               retry_errors: bool = False, dry_run: bool = False,
                               progress: bool = True, model_factory: ModelFactory | None = None,
                               concurrency: int | None = None, executor: str | None = None,
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
        executor: ``"local"`` or ``"ray"``; overrides the experiment's ``executor.kind``.
        address: The Ray cluster (``"auto"``, ``"ray://host:port"``); overrides the
            experiment's ``executor.address``.

    Returns:
        `Results` of the run folder, or a `DryRunEstimate` when `dry_run`.
    """
    experiment = _coerce(spec)
    out = Path(out)
    runner = _executor(experiment, executor, address)
    session_cache = SessionCache()
    sessions = load_experiment_sessions(experiment, session_cache)
    cells = expand_cells(experiment, sessions)
    variants = {name: load_variant(name, experiment) for name in dict.fromkeys(c.template for c in cells)}
    stored = {}
    if (out / DB_FILE).is_file():
        with ResultsStore(out / DB_FILE) as store:
            stored = store.cell_statuses()
    todo = [c for c in cells
            if c.cell_id not in stored or (retry_errors and stored[c.cell_id] == "error")]
    if dry_run:
        estimate = estimate_cells(experiment, cells, todo, sessions, variants)
        print(estimate)
        return estimate

    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARIES_DIR).mkdir(exist_ok=True)
    write_spec(experiment, out)
    store = ResultsStore(out / DB_FILE)
    try:
        run_id = store.start_run(experiment.name, experiment.model_dump_json(
            exclude={"models": {"__all__": {"params": {"api_key"}}}}), _version())
        status = "running"
        try:
            cluster = runner.start()
            store.record_executor(run_id, runner.kind, json.dumps(cluster, sort_keys=True))
            status = await _run_cells(experiment, out, store, run_id, todo, sessions, variants,
                                      model_factory, progress, concurrency, runner)
        finally:
            runner.close()
            store.finish_run(run_id, status if status != "running" else "interrupted")
    finally:
        store.close()
    from workbench.harness._results import Results

    return Results.load(out)


async def _run_cells(experiment: Experiment, out: Path, store: ResultsStore, run_id: str,
                     todo: list[Cell], sessions: list[Any], variants: dict[str, Any],
                     model_factory: ModelFactory | None, progress: bool,
                     concurrency: int | None, executor: Executor) -> str:
    from tqdm.auto import tqdm

    budget = _Budget(experiment, *store.spent())
    models: dict[tuple[int, int | None], Any] = {}
    bar = tqdm(total=len(todo), desc=experiment.name, unit="cell", disable=not progress)

    def model_for(cell: Cell) -> Any:
        if model_factory is not None:
            return model_factory(cell)
        key = (cell.model_index, cell.window)
        if key not in models:
            models[key] = _load_model(experiment, cell)
        return models[key]

    def record(outcome: CellOutcome) -> None:
        store.record_cell(outcome.row, outcome.attempts)
        budget.add(outcome)
        bar.update(1)

    job = CellJob(experiment=experiment, out=out, run_id=run_id, cells=todo,
                  sessions={s.id: s for s in sessions}, variants=variants,
                  concurrency=concurrency or experiment.concurrency, model_for=model_for,
                  record=record, budget_reached=budget.reached, model_factory=model_factory)
    try:
        report = await executor.run(job)
    finally:
        bar.close()
    if report.stopped:
        message = BUDGET_MESSAGE.format(what=report.stopped, left=report.skipped)
        log.warning(message)
        print(message)
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


def _load_model(experiment: Experiment, cell: Cell) -> Any:
    from workbench.models import load_model

    cache = experiment.cache
    kwargs: dict[str, Any] = {}
    if cache.mode is not None:
        kwargs["cache"] = cache.mode
    if cache.path:
        kwargs["cache_path"] = experiment.resolve_path(cache.path)
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
    coro_args = (experiment, folder)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_experiment_async(*coro_args, **kwargs))
    # A loop is already running here (Jupyter): run ours on a worker thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run_experiment_async(*coro_args, **kwargs)).result()
