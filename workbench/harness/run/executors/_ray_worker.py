"""What runs inside a Ray worker: one cell per task, its model calls routed through the coordinator.

`run_cell_task` runs the same `run_cell` as the local executor and returns its `CellResult`,
the files it wrote into a scratch folder (a session's question set), the node it ran on and
the prompt sizes it counted for the recording; the driver writes them all. `RouteStep` stands
in the model pipeline where the share and cache steps stand locally: after the simulated
window, it asks the coordinator for a shared reply, a recording, a slot for the call, or a
wait.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import TYPE_CHECKING, ClassVar, TypeVar, cast

from workbench._memo import RunMemo, use_memo
from workbench.compaction._model import CompactionModel
from workbench.errors import CacheMiss, ContextLengthExceeded, RateLimited
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._spec import Experiment
from workbench.harness.run._cell_run import run_cell
from workbench.harness.run.executors._cell_folders import cell_folder
from workbench.harness.run.executors._ray_messages import (
    CellRefs,
    CellTaskResult,
    CoordinatorHandle,
)
from workbench.models._cache import CACHE_MISS_MESSAGE
from workbench.models._cache_keys import cache_key
from workbench.models._counts import SnapshotCounts
from workbench.models._pipeline import Call, ModelPipeline, Proceed, Reply, Step, compose
from workbench.models._shared import share_key
from workbench.models._spec import load_model_with

if TYPE_CHECKING:  # Ray is an optional extra: its type is needed only by the type checker
    from ray import ObjectRef

T = TypeVar("T")

# Per worker process: one event loop for every task it runs (models may hold clients bound to
# it) and the models built from the spec, keyed by (run id, model index, window).
_LOOP: asyncio.AbstractEventLoop | None = None
_MODELS: dict[tuple[str, int, int | str | None], CompactionModel] = {}
# Objects fetched from the object store, by object id, for the current run: a worker
# deserializes each session once, however many of its cells it runs.
_OBJECTS: dict[str, object] = {}
_OBJECTS_RUN: list[str] = [""]
# The run memo of each run this worker serves (its cells share what they derive).
_MEMOS: dict[str, RunMemo] = {}
# Prompt sizes counted by the task running now (a worker runs one task at a time), which it
# returns for the driver to record: the models above outlive the task that built them.
_FRESH_COUNTS: list[tuple[str, str, int]] = []


class RouteStep:
    """The pipeline's share-and-cache step on a Ray worker: the coordinator limits, shares,
    deduplicates and caches the call.

    Args:
        coordinator: The coordinator actor handle.
        cell_id: The cell this step serves.
        try_no: The cell's try number.
        mode: Cache mode: ``"rw"``, ``"replay"`` or ``"off"``.
        cache_path: The recording file (on the driver's machine; the coordinator holds a copy).
        share: Share calls through the coordinator's table (the runner's ``share_calls``).
        scope: Calls share only within an equal scope (the cell's repeat, as locally).
    """

    kind: ClassVar[str] = "share"

    def __init__(self, coordinator: CoordinatorHandle, cell_id: str, try_no: int, mode: str,
                 cache_path: str | None, share: bool = False, scope: int | None = None) -> None:
        self.coordinator = coordinator
        self.cell_id = cell_id
        self.try_no = try_no
        self.mode = mode
        self.cache_path = cache_path
        self.share = share
        self.scope = scope

    async def run(self, call: Call, proceed: Proceed) -> Reply:
        """Answer from an equal call or a recording when the coordinator has one, else let
        the call through and report how it ended."""
        key = share = None
        if self.mode != "off":
            key = cache_key(call.identity, call.system, call.messages)
        if self.share:
            share = share_key(call.identity, self.scope, call.system, call.messages,
                              call.prompt_hash())
        phash = call.prompt_hash()
        decision = await self.coordinator.call_begin.remote(
            self.cell_id, self.try_no, key, self.mode, self.cache_path, call.model, phash, share)
        if decision[0] == "shared":
            shared_from = decision[2].extra.get("shared_from")
            call.shared_from = None if shared_from is None else str(shared_from)
            return decision[1], decision[2]
        if decision[0] == "gone":
            raise RuntimeError(f"cell {self.cell_id}: try {self.try_no} was superseded by a retry")
        if decision[0] == "hit":
            call.cache_hit = True
            return decision[1], decision[2]
        if decision[0] == "refusal":
            raise ContextLengthExceeded(decision[1], model=call.model)
        if decision[0] == "miss":
            raise CacheMiss(CACHE_MISS_MESSAGE.format(model=call.model, prompt12=phash[:12]),
                            model=call.model)
        call_id = decision[1]
        end = self.coordinator.call_end
        started = time.perf_counter()
        try:
            message, usage = await proceed(call)
        except ContextLengthExceeded as exc:
            await end.remote(call_id, "refusal", str(exc), self.mode, self.cache_path)
            raise
        except RateLimited as exc:
            await end.remote(call_id, "rate_limited", getattr(exc, "retry_after", None),
                             self.mode, self.cache_path)
            raise
        except BaseException:
            await end.remote(call_id, "error", None, self.mode, self.cache_path)
            raise
        latency_ms = (time.perf_counter() - started) * 1000
        shared_id = await end.remote(call_id, "ok", (message, usage, latency_ms), self.mode,
                                     self.cache_path)
        if self.mode != "off":
            call.cache_hit = False
        if shared_id is not None:  # what the cells sharing this call name in shared_from
            call.call_id = shared_id
        return message, usage


def _base_model(experiment: Experiment, cell: Cell, run_id: str,
                counts: SnapshotCounts | None = None) -> CompactionModel:
    key = (run_id, cell.model_index, cell.window)
    if key not in _MODELS:
        if any(k[0] != run_id for k in _MODELS):
            _MODELS.clear()  # models of an older run are not needed again
        _MODELS[key] = load_model_with(cell.model_string, cell.params, window=cell.window,
                                       cache="off", counts=counts)
    return _MODELS[key]


def _counts(snapshot: dict[str, int], plan: tuple[str, str | None]) -> SnapshotCounts | None:
    """The recording's prompt sizes for a window cap; with a read-write cache, new ones are
    returned with the cell for the driver to record."""
    mode, cache_path = plan
    if mode == "off" or cache_path is None:
        return None
    sink = None
    if mode == "rw":
        def sink(key: str, tokenizer: str, tokens: int) -> None:
            _FRESH_COUNTS.append((key, tokenizer, tokens))
    return SnapshotCounts(snapshot, sink)


def _loop() -> asyncio.AbstractEventLoop:
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
    return _LOOP


def _fetch(ref: ObjectRef[T], run_id: str) -> T:
    import ray  # the optional extra, present wherever a task runs

    if _OBJECTS_RUN[0] != run_id:
        _OBJECTS.clear()
        _OBJECTS_RUN[0] = run_id
    key = ref.hex()
    if key not in _OBJECTS:
        _OBJECTS[key] = ray.get(ref)
    return cast(T, _OBJECTS[key])  # what ray.get(ref) gave for this very ref


def _qa_base_model(experiment: Experiment, role: str, run_id: str) -> CompactionModel:
    key = (run_id, -1, role)
    if key not in _MODELS:
        assert experiment.qa is not None  # a [qa] model is asked for only with a [qa] table
        entry = experiment.qa.models()[role]
        _MODELS[key] = load_model_with(entry.model, entry.params, cache="off")
    return _MODELS[key]


def run_cell_task(cell: Cell, refs: CellRefs, run_id: str, coordinator: CoordinatorHandle,
                  plan: tuple[str, str | None], share: bool = False,
                  qa_plans: dict[str, tuple[str, str | None]] | None = None) -> CellTaskResult:
    """Run one cell on this worker (the body of the Ray task).

    Args:
        cell: The `Cell`.
        refs: Object refs of its `Session`, its template `Variant`, the `Experiment`, the
            user's ``Cell -> model`` factory (None: load the spec's model), the recording's
            prompt sizes, the run's `QuestionBank` and the user's ``(cell, role) -> model``
            factory for ``[qa]`` models; wrapped in a tuple so Ray passes the refs, which
            `_fetch` resolves once per worker.
        run_id: The run id.
        coordinator: The coordinator actor handle.
        plan: (cache mode, cache file) of the cell's model.
        share: Share identical calls across cells (through the coordinator).
        qa_plans: ``[qa]`` role -> (cache mode, cache file) of its model.

    Returns:
        ``{"result": CellResult, "files": {relative path: text}, "try": int, "node": str,
        "worker": str, "counts": [(key, tokenizer, tokens)]}`` (the prompt sizes it counted
        for a read-write recording), or ``{"skipped": True}`` when the budget stopped new cells
        before this one got its slot. The driver gives the slot back after recording the cell.
    """
    import ray  # the optional extra, present wherever a task runs

    mode, cache_path = plan
    node = ray.get_runtime_context().get_node_id()
    try_no = ray.get(coordinator.begin_cell.remote(cell.cell_id, cell.model_index, node))
    if try_no < 0:
        return {"skipped": True}
    session_ref, variant_ref, experiment_ref, factory_ref, snapshot_ref, bank_ref, qa_ref = refs
    session, variant = _fetch(session_ref, run_id), _fetch(variant_ref, run_id)
    experiment, model_factory = _fetch(experiment_ref, run_id), _fetch(factory_ref, run_id)
    snapshot, qa_bank = _fetch(snapshot_ref, run_id), _fetch(bank_ref, run_id)
    qa_factory = _fetch(qa_ref, run_id)
    _FRESH_COUNTS.clear()
    counts = _counts(snapshot, plan)

    def model_for(c: Cell, role: str | None = None, **steps: Step) -> ModelPipeline:
        if role is not None:
            base = qa_factory(c, role) if qa_factory is not None else _qa_base_model(
                experiment, role, run_id)
            role_mode, role_path = (qa_plans or {}).get(role, ("off", None))
            route = RouteStep(coordinator, c.cell_id, try_no, role_mode, role_path, share,
                              scope=c.repeat)
        else:
            base = model_factory(c) if model_factory is not None else _base_model(
                experiment, c, run_id, counts)
            route = RouteStep(coordinator, c.cell_id, try_no, mode, cache_path, share,
                              scope=c.repeat)
        return compose(base, share=route, **steps)

    if run_id not in _MEMOS:
        _MEMOS.clear()  # an older run's memo is not needed again
        _MEMOS[run_id] = RunMemo(f"ray worker of {run_id}")
    with cell_folder() as folder, use_memo(_MEMOS[run_id]):
        result = _loop().run_until_complete(
            run_cell(cell, session, variant, model_for, experiment, folder, run_id, qa_bank))
        files = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
                 for p in sorted(folder.rglob("*")) if p.is_file()}
    return {"result": result, "files": files, "try": try_no, "node": node,
            "worker": f"{socket.gethostname()}:{os.getpid()}", "counts": list(_FRESH_COUNTS)}
