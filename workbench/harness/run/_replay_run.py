"""Running an experiment's ``[replay]`` table: every chosen session x strategy x window x
threshold replayed turn by turn (`workbench.strategies.replay_session_async`), one row each in the
run folder's results store (table ``replays``, migration ``m010_replays``).

Like cells, replays resume: a replay already stored is not run again, and a failing replay is
stored with its error while the others go on. A strategy that cannot run with the replay's
model (a provider-side compaction offline, `Strategy.unavailable`) is stored with status
``n/a`` and the reason, and looked at again on the next run (a key may have been set since).
A threshold of ``"policy"`` runs each strategy at its own trigger (stored as NULL).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict

from workbench._redact import redactor
from workbench.compaction._model import CompactionModel
from workbench.harness.experiment._cells import read_manifest
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._strategy_spec import StrategyEntry
from workbench.harness.experiment._validate import check_replay_count
from workbench.harness.results._migrations import transaction
from workbench.harness.results._replays import REPLAY_COLUMNS
from workbench.harness.results._store import ResultsStore, utc_now
from workbench.harness.run._run_models import CacheArgs
from workbench.models import load_model
from workbench.sessions import Session
from workbench.strategies import ReplayResult, replay_session_async

log = logging.getLogger("workbench.harness")

__all__ = ["REPLAY_COLUMNS", "record_replay", "replay_rows", "replay_tasks", "run_replays",
           "stored_replays"]

NA = "n/a"
"""The status of a replay whose strategy cannot run with the replay's model."""

ReplayRow = dict[str, str | int | float | None]
"""A ``replays`` row: column name -> value."""


def replay_id(session_id: str, strategy: str, model: str, window: int,
              threshold: float | None) -> str:
    """First 16 hex digits of sha256 over the replay's key (``policy`` for no threshold)."""
    shown = "policy" if threshold is None else repr(float(threshold))
    key = "|".join([session_id, strategy, model, str(window), shown])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _strategies(experiment: Experiment) -> list[StrategyEntry]:
    spec = experiment.replay
    assert spec is not None
    chosen = spec.strategies or experiment.strategies
    # The reference summary exists at one recorded point only; it has no turn-by-turn policy.
    return [s for s in chosen if s.name != "reference"]


def replay_tasks(experiment: Experiment, sessions: Sequence[Session]
                 ) -> list[tuple[Session, StrategyEntry, int, float | None]]:
    """(session, strategy, window, threshold) for every replay the spec asks for, in order."""
    spec = experiment.replay
    if spec is None:
        return []
    wanted = set(spec.sessions)
    if wanted:
        # A shipped dataset name stands for the sessions of its file.
        files = {str(path) for name, (path, _) in read_manifest().items() if name in wanted}
        chosen = [s for s in sessions if s.id in wanted or str(s.path) in files]
    else:
        chosen = list(sessions)
    # The whole product, before it is built.
    check_replay_count(len(chosen), len(_strategies(experiment)), len(spec.windows),
                       len(spec.thresholds))
    return [(session, entry, int(window), None if threshold == "policy" else float(threshold))
            for session in chosen for entry in _strategies(experiment)
            for window in spec.windows if window is not None
            for threshold in spec.thresholds]


def stored_replays(store: ResultsStore) -> dict[str, str]:
    """replay_id -> status of every stored replay."""
    return {r[0]: r[1] for r in store.db.execute("SELECT replay_id, status FROM replays")}


def record_replay(store: ResultsStore, row: ReplayRow) -> None:
    """Write (or replace) one replay row, its text through the redaction layer like a cell's.

    Raises:
        ValueError: `row` has a column the table does not.
    """
    unknown = set(row) - set(REPLAY_COLUMNS)
    if unknown:
        raise ValueError(f"unknown replay columns: {sorted(unknown)}")
    with transaction(store.db):
        store.db.execute("DELETE FROM replays WHERE replay_id = ?", (row["replay_id"],))
        store._insert("replays", REPLAY_COLUMNS, row, redactor().text)


def replay_rows(result: ReplayResult) -> ReplayRow:
    """The store columns of a `ReplayResult` (its totals, turns and rounds)."""
    summary = result.summary()
    row: ReplayRow = {k: summary[k] for k in REPLAY_COLUMNS if k in summary}
    row["turns_json"] = json.dumps([asdict(t) for t in result.turns])
    row["rounds_json"] = json.dumps([asdict(r) for r in result.rounds])
    return row


async def run_replays(experiment: Experiment, store: ResultsStore, run_id: str,
                      sessions: Sequence[Session], *, retry_errors: bool = False,
                      model_factory: Callable[[str], CompactionModel] | None = None) -> int:
    """Run the experiment's ``[replay]`` table into `store`; returns how many replays ran.

    Args:
        experiment: The experiment (its ``replay`` table).
        store: The run folder's results store.
        run_id: The current run.
        sessions: The experiment's loaded sessions.
        retry_errors: Run replays stored as 'error' again.
        model_factory: ``model string -> CompactionModel`` instead of ``load_model`` (tests).
    """
    spec = experiment.replay
    if spec is None:
        return 0
    done = stored_replays(store)
    model = None
    ran = 0
    for session, entry, window, threshold in replay_tasks(experiment, sessions):
        strategy = entry.build()
        model_name = spec.model if strategy.uses_model else ""
        rid = replay_id(session.id, entry.display, model_name, window, threshold)
        if rid in done and done[rid] != NA and not (retry_errors and done[rid] == "error"):
            continue
        if strategy.uses_model and model is None:
            model = _model(experiment, spec.model, model_factory)
        started = time.perf_counter()
        row: ReplayRow = {"replay_id": rid, "run_id": run_id, "session_id": session.id,
                               "strategy": entry.display, "model": model_name,
                               "window": window, "threshold": threshold}
        reason = strategy.unavailable(model if strategy.uses_model else None, window)
        if reason is not None:  # never simulated: stored as n/a with the reason
            row.update(status=NA, error_type="StrategyUnavailable", error_message=reason,
                       latency_ms=0.0, finished_at=utc_now())
            record_replay(store, row)
            ran += 1
            continue
        try:
            result = await replay_session_async(
                session, strategy, window=window, threshold=threshold,
                model=model if strategy.uses_model else None, probes=spec.probes,
                label=entry.display, rounds_per_turn=spec.rounds_per_turn)
            row.update(replay_rows(result))
            row["model"] = model_name
            row["status"] = "ok"
        except Exception as exc:  # one failing replay never stops the others
            log.warning("replay %s / %s failed:\n%s", session.id, entry.display,
                        "".join(traceback.format_exception(exc)))
            row.update(status="error", error_type=type(exc).__name__, error_message=str(exc))
        row["latency_ms"] = (time.perf_counter() - started) * 1000
        row["finished_at"] = utc_now()
        record_replay(store, row)
        ran += 1
    return ran


def _model(experiment: Experiment, model: str,
           factory: Callable[[str], CompactionModel] | None) -> CompactionModel:
    if factory is not None:
        return factory(model)
    kwargs: CacheArgs = {}
    if experiment.cache.mode is not None:
        kwargs["cache"] = experiment.cache.mode
    if experiment.cache.path:
        kwargs["cache_path"] = experiment.resolve_path(experiment.cache.path)
    return load_model(model, **kwargs)
