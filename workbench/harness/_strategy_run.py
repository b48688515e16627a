"""How a cell runs its strategy: build it from the cell, hand it the history, and say what the
probes score (the whole session, or the prefix a recorded summary covered)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from workbench.harness._cells import Cell
from workbench.harness._experiment import Experiment
from workbench.sessions import Session
from workbench.strategies import CompactionRequest, StrategyResult, get_strategy

__all__ = ["run_strategy", "scored_session"]


async def run_strategy(cell: Cell, session: Session, variant: Any, model: Any,
                       experiment: Experiment, estimator: Any) -> StrategyResult:
    """Compact `session` with the cell's strategy.

    Args:
        cell: The cell (strategy name and settings).
        session: Its session.
        variant: Its template variant (templates and ``summarize`` options).
        model: The cell's model, or None for strategies that call none.
        experiment: The experiment (``manual_compact``).
        estimator: The `TokenEstimator`.

    Returns:
        The `StrategyResult`.
    """
    strategy = get_strategy(cell.strategy_name, cell.strategy_settings)
    request = CompactionRequest(
        messages=session.messages, model=model, window=cell.window, estimator=estimator,
        templates=variant.templates, options=dict(variant.options),
        manual_compact=experiment.manual_compact, session=session)
    return await strategy.compact(request)


def scored_session(session: Session, result: StrategyResult) -> Session:
    """The session the probes score `result` against: the prefix a recorded summary covers
    (``detail["scored_messages"]``, with planted facts of that prefix only), else `session`."""
    prefix = result.detail.get("scored_messages")
    if prefix is None:
        return session
    return prefix_session(session, len(prefix))


def prefix_session(session: Session, end: int) -> Session:
    """`session` cut to its first `end` messages; planted facts are those of the prefix, stale
    only when their replacement is inside it."""
    meta = dict(session.meta)
    facts = meta.get("planted_facts")
    if facts:
        inside = {f.get("id"): f for f in facts if int(f.get("message_index", 0)) < end}
        meta["planted_facts"] = [
            {**f, "stale": bool(f.get("stale")) and f.get("superseded_by") in inside}
            for f in inside.values()]
    return replace(session, messages=list(session.messages[:end]), meta=meta)
