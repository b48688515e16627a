"""How a cell runs its strategy: build it from the cell, hand it the history, and say what the
probes score (the whole session, or the prefix a recorded summary covered)."""

from __future__ import annotations

from workbench.compaction._model import CompactionModel
from workbench.errors import ConfigError
from workbench.harness.experiment._cells import Cell
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import Variant
from workbench.messages import Message
from workbench.sessions import Session, prefix_session
from workbench.strategies import CompactionRequest, StrategyResult, get_strategy, reference_summary
from workbench.tokens import TokenEstimator

__all__ = ["run_strategy", "scored_session"]


async def run_strategy(cell: Cell, session: Session, variant: Variant,
                       model: CompactionModel | None, experiment: Experiment,
                       estimator: TokenEstimator) -> StrategyResult:
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
    messages = session.messages
    if cell.strategy_at == "recorded" and cell.strategy_name != "reference":
        messages = recorded_prefix(session)
    request = CompactionRequest(
        messages=messages, model=model, window=cell.window, estimator=estimator,
        templates=variant.templates, options=dict(variant.options),
        manual_compact=experiment.manual_compact, session=session)
    result = await strategy.compact(request)
    if messages is not session.messages:
        result.detail["scored_messages"] = messages
    return result


def recorded_prefix(session: Session) -> list[Message]:
    """The messages before the first recorded summary's boundary (what the ``reference`` row
    covers).

    Raises:
        ConfigError: the session carries no recorded summary.
    """
    found = reference_summary(session)
    if found is None:
        raise ConfigError(f"session {session.id} carries no recorded summary to compact at")
    index = found.get("index")
    end = len(session.messages) if index is None else int(index)
    return list(session.messages[:end])


def scored_session(session: Session, result: StrategyResult) -> Session:
    """The session the probes score `result` against: the prefix a recorded summary covers
    (``detail["scored_messages"]``, with planted facts of that prefix only), else `session`."""
    prefix = result.detail.get("scored_messages")
    if not isinstance(prefix, list):  # None (the whole session): only a list is ever set here
        return session
    return prefix_session(session, len(prefix))
