"""The Ray executor: each cell is a Ray task; the driver alone writes the run folder and the cache.

Design, in one paragraph per guarantee:

- **One writer.** A task runs `run_cell` on a worker into a scratch folder and returns the
  cell's rows and files; the driver writes the files under the run folder and hands the rows to
  the runner's callback, which writes ``results.sqlite``. Workers never open the response
  cache: their models' lookups and recordings go to the coordinator actor
  (``_ray_coordinator``), which is pinned to the driver's node and is the cache's only
  writer, so the file stays the one the driver names, on the driver's disk.
- **Cluster-wide limits.** The coordinator holds the global and per-model cell slots,
  deduplicates identical cached prompts in flight and pauses a rate-limited model everywhere;
  workers take a slot before a cell starts.
- **Shared calls.** The coordinator holds the run's shared-calls table for the whole cluster,
  seeded with what the driver's `SharedCalls` already answered: a cell sending a prompt an
  earlier or in-flight cell sent (same model, same repeat) gets that reply with zero usage,
  and the rows are those of the local executor. The driver merges back what the run answered
  and its counts, so the tuner's rungs keep sharing across runs.
- **Sessions travel once.** Each session, variant, the experiment and the user's model
  factory are put in Ray's object store once; tasks get object references (which each worker
  resolves once per run, ``_ray_worker._fetch``), so the driver holds one copy whatever the
  number of workers, and no worker reads a session file.
- **Killed workers.** A task is retried by Ray (``max_retries``); the retry inherits its cell's
  slot, and the store keeps one row per cell (``record_cell`` replaces by cell id). What a
  killed try spent is recorded honestly: `_apply_lost` adds its paid calls that the kept try did
  not reuse as ``outcome = 'lost'`` attempt rows (and into the cell's billed totals), and a
  call cut off mid-flight as a lost row with unknown usage (NULL cost, not folded into the
  cell's cost, which stays the sum of what is known). A call is never counted twice.
- **Budget.** As locally, a cell starts only if the budget was not reached when it got its
  slot: the driver records a finished cell, tells the coordinator to stop if the budget is now
  reached, and only then gives the cell's slot back. It also checks the budget before each
  submission and keeps at most twice the global limit submitted.
"""

from __future__ import annotations

import asyncio
import traceback
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.harness.results._store import utc_now
from workbench.harness.run.executors._base import CellJob, ExecutorReport

LOST_UNKNOWN = ("worker died during this call; the provider may have billed it, "
                "the usage is unknown")
LOST_PAID = "paid by a try whose worker died; the kept try did not reuse its answer"
DEFAULT_MAX_RETRIES = 3
FACTORY_MESSAGE = ("model_factory cannot be sent to Ray workers (define it at module level, "
                   "or use the local executor)")


class RayExecutor:
    """Runs cells as Ray tasks (see the module docstring).

    Args:
        address: None starts a private local Ray instance; ``"auto"`` joins this machine's
            cluster; ``"ray://host:port"`` connects to a remote one. Ignored when Ray is
            already initialized in this process (that instance is used as it is).
        cpus_per_cell: CPUs Ray reserves per cell task (below 1 packs more I/O-bound cells
            per core).
        max_retries: How often Ray re-runs a cell whose worker died.
        init_options: Extra keyword arguments for ``ray.init``.
    """

    kind = "ray"

    def __init__(self, address: str | None = None, cpus_per_cell: float = 1.0,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 init_options: dict[str, Any] | None = None) -> None:
        self.address = address
        self.cpus_per_cell = cpus_per_cell
        self.max_retries = max_retries
        self.init_options = dict(init_options or {})
        self._owns_ray = False
        self.stats: dict[str, int] = {}

    def start(self) -> dict[str, Any]:
        """Connect to (or start) Ray; describe the cluster for the runs table."""
        import ray

        if not ray.is_initialized():
            options = {"include_dashboard": False, "log_to_driver": False, **self.init_options}
            try:
                ray.init(address=self.address, **options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "a new local instance"
                raise ConfigError(f"cannot start Ray on {where}: {exc}") from exc
            self._owns_ray = True
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        return {"address": self.address or "local", "ray_version": ray.__version__,
                "nodes": len(nodes), "cpus": ray.cluster_resources().get("CPU", 0.0)}

    def close(self) -> None:
        """Shut Ray down if `start` started or joined it."""
        if self._owns_ray:
            import ray

            ray.shutdown()
            self._owns_ray = False

    async def run(self, job: CellJob) -> ExecutorReport:
        """Submit the cells as tasks and record each as it finishes (see the module docstring)."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from workbench.harness.run.executors._ray_coordinator import Coordinator
        from workbench.harness.run.executors._ray_worker import run_cell_task

        experiment = job.experiment
        try:
            factory_ref = ray.put(job.model_factory)
        except Exception as exc:
            raise ConfigError(f"{FACTORY_MESSAGE}: {exc}") from exc
        used = dict.fromkeys(c.session_id for c in job.cells)
        sessions = {sid: ray.put(job.sessions[sid]) for sid in used}
        variants = {name: ray.put(v) for name, v in job.variants.items()}
        experiment_ref = ray.put(experiment)
        share = job.shared is not None and job.shared.enabled
        coordinator: Any = ray.remote(num_cpus=0)(Coordinator).options(
            scheduling_strategy=_driver_node(ray, NodeAffinitySchedulingStrategy)).remote(
            job.concurrency, {i: m.concurrency for i, m in enumerate(experiment.models)
                              if m.concurrency}, share_calls=share,
            answers=job.shared.answers() if share else None)
        task = ray.remote(run_cell_task).options(num_cpus=self.cpus_per_cell,
                                                 max_retries=self.max_retries)
        plans = _cache_plans(experiment) if job.model_factory is None else {}
        # Workers never open the recording: its prompt sizes travel once, as a snapshot.
        counts = {path: ray.put(_recorded_counts(path)) for _, path in plans.values() if path}
        no_counts = ray.put(dict[str, int]())
        report = ExecutorReport()
        queue = list(job.cells)
        queue.reverse()  # pop() from the end keeps expansion order
        pending: dict[asyncio.Future[Any], tuple[Any, Any]] = {}
        cap = max(2 * job.concurrency, 2)
        try:
            while queue or pending:
                while queue and len(pending) < cap:
                    reason = job.budget_reached()
                    if reason is not None:
                        report.stopped = report.stopped or reason
                        report.skipped += len(queue)
                        queue.clear()
                        break
                    cell = queue.pop()
                    plan = plans.get(cell.model_index, ("off", None))
                    refs = [sessions[cell.session_id], variants[cell.template], experiment_ref,
                            factory_ref, counts.get(plan[1] or "", no_counts)]
                    ref = task.remote(cell, refs, job.run_id, coordinator, plan, share)
                    pending[asyncio.ensure_future(_result(ref))] = (cell, ref)
                if not pending:
                    break
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    cell, _ = pending.pop(future)
                    outcome = await self._finish(job, coordinator, cell, future)
                    if outcome is None:
                        report.skipped += 1
                        report.stopped = report.stopped or job.budget_reached()
                    else:
                        job.record(outcome)
                        reason = job.budget_reached()
                        if reason is not None:
                            report.stopped = report.stopped or reason
                            await coordinator.stop.remote(reason)
                    await coordinator.end_cell.remote(cell.cell_id)
            self.stats = await coordinator.stats.remote()
            if job.shared is not None:
                job.shared.absorb(*await coordinator.shared_state.remote())
        finally:
            for future, (_, ref) in pending.items():  # interrupted: stop what is still out
                future.cancel()
                ray.cancel(ref)
            try:
                await coordinator.close.remote()
            finally:
                ray.kill(coordinator)
        return report

    async def _finish(self, job: CellJob, coordinator: Any, cell: Any,
                      future: asyncio.Future[Any]) -> Any:
        try:
            result = future.result()
        except Exception as exc:  # every try of the cell died: the cell is an error row
            outcome = _crashed_outcome(cell, job.run_id, exc)
            _apply_lost(outcome, await coordinator.lost_calls.remote(cell.cell_id, None), None)
            return outcome
        if result.get("skipped"):
            return None
        for rel, text in result["files"].items():
            (job.out / rel).write_text(text, encoding="utf-8")
        outcome = result["outcome"]
        lost = (await coordinator.lost_calls.remote(cell.cell_id, result["try"])
                if result["try"] else [])
        _apply_lost(outcome, lost, result["try"])
        return outcome


def _driver_node(ray: Any, strategy: Any) -> Any:
    """Pin the coordinator to the driver's node, so the cache file it opens is the driver's;
    a Ray Client driver has no node of its own, and the head node's file is used instead."""
    try:
        node = ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - client mode: let Ray place the actor (the head)
        return "DEFAULT"
    return strategy(node, soft=False) if node else "DEFAULT"


async def _result(ref: Any) -> Any:
    return await ref


def _cache_plans(experiment: Any) -> dict[int, tuple[str, str | None]]:
    """Model index -> (cache mode, absolute cache file), resolved on the driver."""
    from workbench.models._spec import parse_model_spec

    plans: dict[int, tuple[str, str | None]] = {}
    for i, entry in enumerate(experiment.models):
        mode = experiment.cache.mode or parse_model_spec(entry.model).cache_mode or "off"
        plans[i] = (mode, str(experiment.cache_file(i)) if mode != "off" else None)
    return plans


def _recorded_counts(path: str) -> dict[str, int]:
    """The prompt sizes a recording holds (none when the file does not exist yet)."""
    from workbench.models._cache import ResponseCache

    if not Path(path).is_file():
        return {}
    cache = ResponseCache(path)
    try:
        return cache.all_tokens()
    finally:
        cache.close()


def _crashed_outcome(cell: Any, run_id: str, exc: BaseException) -> Any:
    from workbench.harness.results._outcomes import error_class, outcome_kind
    from workbench.harness.run._cell_run import CellOutcome, cell_identity

    now = utc_now()
    row = {
        **cell_identity(cell, run_id), "started_at": now, "finished_at": now,
        "status": "error", "outcome_kind": outcome_kind(exc), "error_class": error_class(exc),
        "error_type": type(exc).__name__, "error_message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)), "billed_input_tokens": 0,
        "billed_output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost": 0.0,
        "attempts": 0, "retries": 0,
    }
    return CellOutcome(row, [])


def _apply_lost(outcome: Any, lost: list[dict[str, Any]], kept_try: int | None) -> None:
    """Tag the kept try's attempts with its try number and add the lost calls (see module)."""
    for attempt in outcome.attempts:
        attempt["task_attempt"] = kept_try
    row = outcome.row
    for call in lost:
        usage = call["usage"]
        outcome.attempts.append({
            "attempt_no": call["seq"], "outcome": "lost", "model": call["model"] or row["model"],
            "input_tokens": usage.input_tokens if usage else None,
            "output_tokens": usage.output_tokens if usage else None,
            "cache_read_tokens": usage.cache_read_input_tokens if usage else None,
            "cache_write_tokens": usage.cache_write_input_tokens if usage else None,
            "cost": usage.cost if usage else None, "cache_hit": 0 if usage else None,
            "error": LOST_PAID if usage else LOST_UNKNOWN, "prompt_hash": call["prompt_hash"],
            "task_attempt": call["try_no"],
        })
        if call.get("call_id"):  # other cells shared this paid call: their shared_from names it
            outcome.attempts[-1]["attempt_id"] = call["call_id"]
        if usage is None:
            continue
        for column, value in (("billed_input_tokens", usage.input_tokens),
                              ("billed_output_tokens", usage.output_tokens),
                              ("cache_read_tokens", usage.cache_read_input_tokens),
                              ("cache_write_tokens", usage.cache_write_input_tokens)):
            row[column] = (row.get(column) or 0) + (value or 0)
        if row.get("cost") is not None:
            row["cost"] = None if usage.cost is None else row["cost"] + usage.cost
