"""The Ray executor: each cell is a Ray task; the driver alone writes the run folder and the cache.

Design, in one paragraph per guarantee:

- **Connecting.** No address starts a new private instance, whatever ``RAY_ADDRESS`` or an
  earlier ``ray start`` on the machine says; ``"auto"`` joins this machine's cluster;
  ``ray://`` goes through Ray Client, whose head may fail to start the connection's server
  (`CLIENT_FAILED_MESSAGE` says why), so such a start is tried again, a few times.
- **One writer.** A task runs `run_cell` on a worker into a scratch folder and returns the
  cell's rows and files; the driver writes the files under the run folder and hands the rows to
  the runner's callback, which writes ``results.sqlite``. The driver is the only process that
  opens a recording, too: it ships each one to the coordinator actor (``_ray_coordinator``,
  placed on the head node), which answers the workers' lookups, and writes back what the run
  recorded (``_ray_recording``). So a run needs nothing on the cluster's disks, and works the
  same under Ray Client, where the driver is not a node.
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
- **Killed workers and nodes.** A task is retried by Ray (``max_retries``), on another node
  when its node died; the retry inherits its cell's slot, and the store keeps one row per cell
  (``record_cell`` replaces by cell id). What a killed try spent is recorded honestly:
  `_apply_lost` adds its paid calls that the kept try did not reuse as ``outcome = 'lost'``
  attempt rows (and into the cell's billed totals), and a call cut off mid-flight as a lost row
  with unknown usage (NULL cost, not folded into the cell's cost, which stays the sum of what
  is known). A call is never counted twice. Every attempt row names the node its try ran on.
- **Budget.** As locally, a cell starts only if the budget was not reached when it got its
  slot: the driver records a finished cell, tells the coordinator to stop if the budget is now
  reached, and only then gives the cell's slot back. It also checks the budget before each
  submission and keeps at most twice the global limit submitted.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import time
import traceback
from types import ModuleType
from typing import TYPE_CHECKING, TypedDict, cast

from workbench._json_types import JSONObject
from workbench._storage import write_atomic
from workbench.errors import ConfigError, WorkbenchError
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._spec import Experiment
from workbench.harness.results._cell_result import AttemptResult, CellResult
from workbench.harness.results._outcomes import error_class, outcome_kind
from workbench.harness.results._results import QUESTIONS_DIR
from workbench.harness.results._store import utc_now
from workbench.harness.run._cell_run import cell_result
from workbench.harness.run.executors._base import CellJob, ExecutorReport
from workbench.harness.run.executors._ray_coordinator import Coordinator
from workbench.harness.run.executors._ray_messages import (
    CellRefs,
    CellTaskResult,
    CoordinatorHandle,
    LostCall,
)
from workbench.harness.run.executors._ray_recording import (
    Batch,
    open_recordings,
    snapshot,
    write_back,
)
from workbench.harness.run.executors._ray_worker import run_cell_task
from workbench.models._cache import ResponseCache
from workbench.models._spec import parse_model_spec

if TYPE_CHECKING:  # Ray is an optional extra: its type is needed only by the type checker
    from ray import ObjectRef
    from ray.actor import ActorHandle

log = logging.getLogger("workbench.harness")

LOST_UNKNOWN = ("worker died during this call; the provider may have billed it, "
                "the usage is unknown")
LOST_PAID = "paid by a try whose worker died; the kept try did not reuse its answer"
DEFAULT_MAX_RETRIES = 3
SHIP_FAILED_MESSAGE = ("the Ray cluster did not take the run's data ({error}); run the same "
                       "command again: it resumes, and finished cells are not run or billed "
                       "again")
"""A failure to send the run's objects that is not theirs: the Ray Client connection broke.
Measured so with two heads on one machine, whose Ray Client proxies gave two connections'
servers one port (docs/ray.md, "Two Ray Client heads on one machine"): Ray then says, e.g.,
"Expected to receive a chunk from request with id 6, but found 3 instead"."""
FACTORY_MESSAGE = ("model_factory cannot be sent to Ray workers (define it at module level, "
                   "or use the local executor)")
HEAD_RESOURCE = "node:__internal_head__"
"""The resource Ray gives the head node only: where the coordinator is placed."""
CLIENT_TRIES = 3
"""Connections tried when a Ray Client head fails to start this connection's server."""
CLIENT_RETRY_PAUSE = 2.0
"""Seconds before the next try (doubling each time)."""
CLIENT_RETRY_MESSAGE = ("Ray Client at %s could not start a server for this connection "
                        "(try %d of %d), trying again: %s")
CLIENT_FAILED_MESSAGE = (
    "cannot connect to Ray Client at {address}: the head could not start a server for this "
    "connection, {tries} times ({reason}). Its session logs (ray_client_server*.err) say why; "
    "a head whose grpcio is 1.80 or later crashes this way (grpc/grpc#43055): install the "
    "workbench's [ray] extra on the head, or start it with GRPC_ENABLE_FORK_SUPPORT=false")


class RayOptions(TypedDict, total=False):
    """The Ray executor's options beside its address (`RayExecutor` documents them)."""

    cpus_per_cell: float
    max_retries: int
    init_options: dict[str, object] | None


class RayExecutor:
    """Runs cells as Ray tasks (see the module docstring).

    Args:
        address: None starts a private local Ray instance (whatever ``RAY_ADDRESS`` says or
            ``ray start`` left on this machine); ``"auto"`` joins this machine's cluster (the
            one ``RAY_ADDRESS`` names, or the last ``ray start``); ``"ray://host:port"``
            connects to a cluster's Ray Client port. Ignored when Ray is already initialized
            in this process (that instance is used as it is).
        cpus_per_cell: CPUs Ray reserves per cell task (below 1 packs more I/O-bound cells
            per core).
        max_retries: How often Ray re-runs a cell whose worker died.
        init_options: Extra keyword arguments for ``ray.init``.
    """

    kind = "ray"

    def __init__(self, address: str | None = None, cpus_per_cell: float = 1.0,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 init_options: dict[str, object] | None = None) -> None:
        self.address = address
        self.cpus_per_cell = cpus_per_cell
        self.max_retries = max_retries
        self.init_options = dict(init_options or {})
        self._owns_ray = False
        self._head: str | None = None
        self.stats: dict[str, int] = {}

    def start(self) -> JSONObject:
        """Connect to (or start) Ray; describe the cluster for the runs table."""
        import ray  # the optional extra, imported only when a Ray run starts

        if not ray.is_initialized():
            options = {"include_dashboard": False, "log_to_driver": False, **self.init_options}
            # "local" always starts a new instance: None would join a cluster RAY_ADDRESS or
            # an earlier `ray start` on this machine points at.
            _connect(ray, self.address or "local", options)
            self._owns_ray = True
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        heads = [n["NodeID"] for n in nodes if HEAD_RESOURCE in n.get("Resources", {})]
        self._head = heads[0] if heads else None
        return {"address": self.address or "local", "ray_version": ray.__version__,
                "nodes": len(nodes), "cpus": ray.cluster_resources().get("CPU", 0.0),
                "coordinator_node": self._head}

    def close(self) -> None:
        """Shut Ray down if `start` started or joined it."""
        if self._owns_ray:
            import ray  # the optional extra: a Ray run started it

            ray.shutdown()
            self._owns_ray = False

    async def run(self, job: CellJob) -> ExecutorReport:
        """Submit the cells as tasks and record each as it finishes (see the module docstring)."""
        # Ray is the optional extra: imported only when a Ray run starts
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # Ray's too

        experiment = job.experiment
        plans = _cache_plans(experiment) if job.model_factory is None else {}
        qa_plans = _qa_cache_plans(experiment) if job.qa_model_factory is None else {}
        # Before anything is sent: a read-only recording that is to be recorded into is refused.
        caches = open_recordings([*plans.values(), *qa_plans.values()])
        try:
            factory_ref = ray.put(job.model_factory)
        except (TypeError, pickle.PicklingError) as exc:  # what Ray says of an unpicklable
            raise ConfigError(f"{FACTORY_MESSAGE}: {exc}") from exc
        except Exception as exc:  # the cluster, not the factory (a dropped Ray Client)
            raise WorkbenchError(SHIP_FAILED_MESSAGE.format(error=exc)) from exc
        try:
            used = dict.fromkeys(c.session_id for c in job.cells)
            sessions = {sid: ray.put(job.sessions[sid]) for sid in used}
            variants = {name: ray.put(v) for name, v in job.variants.items()}
            experiment_ref = ray.put(experiment)
        except Exception as exc:
            raise WorkbenchError(SHIP_FAILED_MESSAGE.format(error=exc)) from exc
        share = job.shared is not None and job.shared.enabled
        # Each recording travels once: its answers to the coordinator, its prompt sizes to
        # the workers (whose window caps count prompts before asking it).
        shipped = {path: snapshot(cache) for path, cache in caches.items()}
        # On the head: a worker node may be lost (or scaled away) mid-run, the head cannot be
        # without ending the cluster; and as the coordinator opens no file, where the driver
        # runs does not matter (under Ray Client it is not a node). A Ray that does not mark
        # its head lets Ray place it.
        where = (NodeAffinitySchedulingStrategy(self._head, soft=False)
                 if self._head is not None else "DEFAULT")
        # Ray types an actor's methods only when they are decorated with ray.method; the
        # coordinator stays plain Python, so its handle's type is said here.
        coordinator = cast(CoordinatorHandle, ray.remote(num_cpus=0)(Coordinator).options(
            scheduling_strategy=where).remote(
            job.concurrency, {i: m.concurrency for i, m in enumerate(experiment.models)
                              if m.concurrency}, share_calls=share,
            answers=job.shared.answers() if share and job.shared is not None else None,
            recordings=ray.put({path: rows for path, (rows, _) in shipped.items()})))
        task = ray.remote(run_cell_task).options(num_cpus=self.cpus_per_cell,
                                                 max_retries=self.max_retries)
        bank_ref, qa_factory_ref = ray.put(job.qa_bank), ray.put(job.qa_model_factory)
        counts = {path: ray.put(sizes) for path, (_, sizes) in shipped.items()}
        no_counts = ray.put(dict[str, int]())
        report = ExecutorReport()
        queue = list(job.cells)
        queue.reverse()  # pop() from the end keeps expansion order
        pending: dict[asyncio.Future[CellTaskResult],
                      tuple[Cell, ObjectRef[CellTaskResult]]] = {}
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
                    refs: CellRefs = (sessions[cell.session_id], variants[cell.template],
                                      experiment_ref, factory_ref,
                                      counts.get(plan[1] or "", no_counts), bank_ref,
                                      qa_factory_ref)
                    # ray's overloads type a function by its leading arguments only
                    ref = task.remote(  # type: ignore[call-arg]
                        cell, refs, job.run_id, coordinator, plan, share, qa_plans)
                    pending[asyncio.ensure_future(_result(ref))] = (cell, ref)
                if not pending:
                    break
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    cell, _ = pending.pop(future)
                    recording = caches.get(plans.get(cell.model_index, ("off", None))[1] or "")
                    outcome = await self._finish(job, coordinator, cell, future, recording)
                    if outcome is None:
                        report.skipped += 1
                        report.stopped = report.stopped or job.budget_reached()
                    else:
                        job.record(outcome)
                        reason = job.budget_reached()
                        if reason is not None:
                            report.stopped = report.stopped or reason
                            await coordinator.stop.remote(reason)
                    _write_back(caches, await coordinator.end_cell.remote(cell.cell_id))
            self.stats = await coordinator.stats.remote()
            if job.shared is not None:
                job.shared.absorb(*await coordinator.shared_state.remote())
        finally:
            for future, (_, ref) in pending.items():  # interrupted: stop what is still out
                future.cancel()
                ray.cancel(ref)
            try:  # what the cells still out had recorded is paid for: keep it
                _write_back(caches, await coordinator.drain.remote())
            except Exception as exc:  # noqa: BLE001 - the coordinator's node may be gone
                log.warning("could not take back the recordings of the last calls: %s", exc)
            finally:
                ray.kill(cast("ActorHandle[Coordinator]", coordinator))  # Ray's own type
        return report

    async def _finish(self, job: CellJob, coordinator: CoordinatorHandle, cell: Cell,
                      future: asyncio.Future[CellTaskResult],
                      recording: ResponseCache | None) -> CellResult | None:
        try:
            result = future.result()
        except Exception as exc:  # every try of the cell died: the cell is an error row
            crashed = _crashed_result(cell, job.run_id, exc)
            _apply_lost(crashed, await coordinator.lost_calls.remote(cell.cell_id, None), None)
            return crashed
        if result.get("skipped"):
            return None
        for rel, text in result["files"].items():
            target = job.out / rel
            if rel.startswith(QUESTIONS_DIR + "/") and target.exists():
                continue  # a session's saved questions are written once, never replaced
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, text)
        if result["counts"] and recording is not None:  # prompt sizes the worker counted
            write_back(recording, counts=result["counts"])
        done = result["result"]
        lost = (await coordinator.lost_calls.remote(cell.cell_id, result["try"])
                if result["try"] else [])
        _apply_lost(done, lost, result["try"], result["node"])
        return done


def _connect(ray: ModuleType, address: str, options: dict[str, object]) -> None:
    """``ray.init`` with errors as `ConfigError`; a Ray Client connection whose server the
    head failed to start (its proxy forks one per connection, which can crash: see
    `CLIENT_FAILED_MESSAGE`) is tried again, a few times."""
    where = "a new local instance" if address == "local" else address
    for attempt in range(1, CLIENT_TRIES + 1):
        try:
            ray.init(address=address, **options)
            return
        except ConnectionAbortedError as exc:  # Ray Client: the head refused this start
            if not address.startswith("ray://"):
                raise ConfigError(f"cannot start Ray on {where}: {exc}") from exc
            text = str(exc).strip()
            reason = text.splitlines()[-1] if text else type(exc).__name__
            if attempt == CLIENT_TRIES:
                raise ConfigError(CLIENT_FAILED_MESSAGE.format(
                    address=address, tries=attempt, reason=reason)) from exc
            log.warning(CLIENT_RETRY_MESSAGE, address, attempt, CLIENT_TRIES, reason)
            time.sleep(CLIENT_RETRY_PAUSE * 2 ** (attempt - 1))
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"cannot start Ray on {where}: {exc}") from exc


def _write_back(caches: dict[str, ResponseCache], batches: dict[str, Batch]) -> None:
    for path, batch in batches.items():
        if path in caches:
            write_back(caches[path], batch)


async def _result(ref: ObjectRef[CellTaskResult]) -> CellTaskResult:
    return await ref


def _cache_plans(experiment: Experiment) -> dict[int, tuple[str, str | None]]:
    """Model index -> (cache mode, absolute cache file), resolved on the driver."""
    plans: dict[int, tuple[str, str | None]] = {}
    for i, entry in enumerate(experiment.models):
        mode = experiment.cache.mode or parse_model_spec(entry.model).cache_mode or "off"
        plans[i] = (mode, str(experiment.cache_file(i)) if mode != "off" else None)
    return plans


def _qa_cache_plans(experiment: Experiment) -> dict[str, tuple[str, str | None]]:
    """``[qa]`` role -> (cache mode, absolute cache file), resolved on the driver."""
    if experiment.qa is None:
        return {}
    path = str(experiment.cache_file())
    plans: dict[str, tuple[str, str | None]] = {}
    for role, entry in experiment.qa.models().items():
        mode = experiment.cache.mode or parse_model_spec(entry.model).cache_mode or "off"
        plans[role] = (mode, path if mode != "off" else None)
    return plans


def _crashed_result(cell: Cell, run_id: str, exc: BaseException) -> CellResult:
    now = utc_now()
    return cell_result(
        cell, run_id, started_at=now, finished_at=now, status="error",
        outcome_kind=outcome_kind(exc), error_class=error_class(exc),
        error_type=type(exc).__name__, error_message=str(exc),
        traceback="".join(traceback.format_exception(exc)), billed_input_tokens=0,
        billed_output_tokens=0, cache_read_tokens=0, cache_write_tokens=0, cost=0.0,
        attempts=0, retries=0)


def _apply_lost(result: CellResult, lost: list[LostCall], kept_try: int | None,
                node_id: str | None = None) -> None:
    """Tag the kept try's attempts with its try number and node, and add the lost calls (see
    the module docstring)."""
    for attempt in result.attempt_results:
        attempt.task_attempt = kept_try
        attempt.node_id = node_id
    for call in lost:
        usage = call["usage"]
        attempt = AttemptResult(
            attempt_no=call["seq"], outcome="lost", model=call["model"] or result.model,
            error=LOST_PAID if usage else LOST_UNKNOWN, prompt_hash=call["prompt_hash"],
            task_attempt=call["try_no"], node_id=call.get("node_id"),
            attempt_id=call.get("call_id") or None)  # shared: other cells' shared_from names it
        result.attempt_results.append(attempt)
        if usage is None:
            continue
        attempt.input_tokens, attempt.output_tokens = usage.input_tokens, usage.output_tokens
        attempt.cache_read_tokens = usage.cache_read_input_tokens
        attempt.cache_write_tokens = usage.cache_write_input_tokens
        attempt.cost, attempt.cache_hit = usage.cost, 0
        result.add("billed_input_tokens", usage.input_tokens)
        result.add("billed_output_tokens", usage.output_tokens)
        result.add("cache_read_tokens", usage.cache_read_input_tokens)
        result.add("cache_write_tokens", usage.cache_write_input_tokens)
        if result.cost is not None:
            result.cost = None if usage.cost is None else result.cost + usage.cost
