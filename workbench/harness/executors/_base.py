"""The executor seam: what the runner hands an executor, and what an executor promises back.

The runner (``workbench.harness._runner``) owns the run folder: it expands the cells, opens the
results store, keeps the budget and the progress bar. An executor only decides *where* cells
run. It gets a `CellJob` and calls ``job.record(outcome)`` on the driver, once per finished cell,
in completion order; the runner's callback writes the store. Nothing else writes the run folder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from workbench.errors import ConfigError

RAY_EXTRA_MESSAGE = ('the Ray executor needs the `ray` extra: pip install '
                     '"compaction-workbench[ray]"')
"""Text of the `ConfigError` raised when ``--executor ray`` is asked for without Ray installed."""

EXECUTOR_KINDS: tuple[str, ...] = ("local", "ray")


@dataclass
class CellJob:
    """Everything an executor needs to run the cells of one runner invocation.

    Attributes:
        experiment: The experiment being run.
        out: The run folder (only the driver writes under it).
        run_id: The current run's id (goes into every cell row).
        cells: The cells to run, in expansion order.
        sessions: Session id -> loaded `Session`.
        variants: Template variant name -> resolved `Variant`.
        concurrency: The global limit on cells in flight.
        model_for: Driver-side ``Cell -> CompactionModel`` (the local executor calls it).
        model_factory: The user's factory, when one was given (shipped to Ray workers).
        shared: The run's `SharedCalls` table (``model_for`` already wraps models with it; a
            remote executor shares calls the same way through its own copy, then merges it
            back), or None.
        record: Called on the driver with each finished `CellOutcome`.
        budget_reached: Returns the reason the budget stops new cells, or None.
    """

    experiment: Any
    out: Path
    run_id: str
    cells: list[Any]
    sessions: dict[str, Any]
    variants: dict[str, Any]
    concurrency: int
    model_for: Callable[[Any], Any]
    record: Callable[[Any], None]
    budget_reached: Callable[[], str | None]
    model_factory: Callable[[Any], Any] | None = None
    shared: Any = None


@dataclass
class ExecutorReport:
    """How an executor's pass over a `CellJob` ended.

    Attributes:
        stopped: Why new cells stopped being started (the budget), or None.
        skipped: Cells not run because of `stopped`.
    """

    stopped: str | None = None
    skipped: int = 0


class Executor(Protocol):
    """Runs cells somewhere and reports each finished one to the driver."""

    kind: str

    def start(self) -> dict[str, Any]:
        """Connect to (or start) the compute; return a description for the runs table."""
        ...

    async def run(self, job: CellJob) -> ExecutorReport:
        """Run `job`'s cells, calling ``job.record`` for each finished one."""
        ...

    def close(self) -> None:
        """Release what `start` acquired."""
        ...


def make_executor(kind: str = "local", address: str | None = None, **options: Any) -> Executor:
    """The executor named `kind`.

    Args:
        kind: ``"local"`` (the asyncio runner in this process) or ``"ray"``.
        address: Ray only: ``None`` (start a private local instance), ``"auto"`` (join the
            cluster this machine belongs to) or ``"ray://host:port"`` (a remote cluster).
        **options: Ray only: ``cpus_per_cell``, ``max_retries``, ``init_options``.

    Raises:
        ConfigError: an unknown kind, an address for the local executor, or the Ray executor
            without the ``ray`` extra installed.
    """
    if kind == "local":
        if address is not None:
            raise ConfigError(f"--address {address!r} needs --executor ray (the local executor "
                              "runs in this process)")
        from workbench.harness.executors._local import LocalExecutor

        return LocalExecutor()
    if kind == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError(RAY_EXTRA_MESSAGE) from None
        from workbench.harness.executors._ray import RayExecutor

        return RayExecutor(address=address, **options)
    raise ConfigError(f"unknown executor {kind!r}; use one of {', '.join(EXECUTOR_KINDS)}")
