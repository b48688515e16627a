"""What a run settles before any cell starts: which sessions load and which variants compile.

A session file that cannot be read, or a template variant that cannot be compiled, dooms its
own cells and nothing else: `prepare` loads every session and variant the experiment names,
keeps the failures, and marks the cells they doom with the error (a `SessionFormatError`
naming the file and line, a `TemplateError` naming the template and the limit). The runner
stores those cells as error rows at once and runs the rest; the dry run counts them apart.
A spec error (an unknown variant, a parameter outside its domain, a glob matching nothing)
is still a `ConfigError` before anything runs.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from workbench.errors import TemplateError
from workbench.harness.experiment._cells import (
    UNREADABLE_PREFIX,
    Cell,
    SessionCache,
    UnreadableSession,
    expand_cells,
    load_experiment_sessions,
)
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._subsets import limit_sessions
from workbench.harness.experiment._variants import Variant, load_variant
from workbench.harness.results._store import ResultsStore
from workbench.harness.run._budget import BUDGET_STOPPED
from workbench.harness.run._faults import STORAGE_ERROR
from workbench.sessions import Session

__all__ = ["Preflight", "cells_to_run", "forget_fixed_sessions", "prepare"]


@dataclass
class Preflight:
    """The experiment's cells, with what they need and what dooms some of them.

    Attributes:
        cells: Every cell of the experiment (for the sessions asked for), in expansion order.
        sessions: The sessions that loaded (placeholders of unreadable files left out).
        variants: Template variant name -> `Variant`, for the variants that compiled.
        unreadable: The session files that could not be read.
        broken: Template variant name -> the `TemplateError` it failed to compile with.
        doomed: Cell id -> the error that keeps the cell from starting.
    """

    cells: list[Cell]
    sessions: list[Session]
    variants: dict[str, Variant]
    unreadable: list[UnreadableSession] = field(default_factory=list)
    broken: dict[str, TemplateError] = field(default_factory=dict)
    doomed: dict[str, BaseException] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """One line per unreadable session file and per broken variant, with its cell count."""
        counts: dict[str, int] = {}
        for cell in self.cells:
            if cell.cell_id in self.doomed:
                key = str(self.doomed[cell.cell_id])
                counts[key] = counts.get(key, 0) + 1
        lines = []
        for item in self.unreadable:
            lines.append(f"session file unreadable ({counts.get(str(item.error), 0)} cells "
                         f"will be error rows): {item.error}")
        for error in self.broken.values():
            lines.append(f"variant does not compile ({counts.get(str(error), 0)} cells will "
                         f"be error rows): {error}")
        return lines


def prepare(experiment: Experiment, *, cache: SessionCache | None = None,
            only_sessions: Collection[str] | None = None) -> Preflight:
    """Load the experiment's sessions and variants and expand its cells.

    Args:
        experiment: The spec.
        cache: Loaded session files to share with the caller.
        only_sessions: Keep only the cells of these session ids (the tuner's rungs).

    Raises:
        ConfigError: a spec error (no such variant or file, a value outside a domain...).
    """
    unreadable: list[UnreadableSession] = []
    sessions = load_experiment_sessions(experiment, cache or SessionCache(), unreadable)
    cells = expand_cells(experiment, sessions)
    if only_sessions is not None:
        wanted = set(only_sessions)
        cells = [c for c in cells if c.session_id in wanted]
    variants: dict[str, Variant] = {}
    broken: dict[str, TemplateError] = {}
    for name in dict.fromkeys(c.template for c in cells):
        try:
            variants[name] = load_variant(name, experiment)
            # Baked now, while the render process is idle: scoring reads the baked text
            # (template echo) on the loop thread, where a render in flight would make it
            # start a second render process of its own (0.2 s of CPU) for one parse.
            variants[name].templates.baked()
        except TemplateError as exc:
            broken[name] = exc
    by_session = {u.session.id: u.error for u in unreadable}
    doomed: dict[str, BaseException] = {}
    for cell in cells:
        if cell.session_id in by_session:
            doomed[cell.cell_id] = by_session[cell.session_id]
        elif cell.template in broken:
            doomed[cell.cell_id] = broken[cell.template]
    readable = [s for s in limit_sessions(experiment, sessions) if s.id not in by_session]
    return Preflight(cells, readable, variants, unreadable, broken, doomed)


def forget_fixed_sessions(store: ResultsStore, cells: list[Cell]) -> int:
    """Remove the stored error rows of placeholder sessions that are no longer placeholders.

    A file that could not be read left error rows under ``unreadable:<path>``; once it
    loads, its real cells run under its real session id, and the old rows would count as
    errors forever. Returns how many rows were removed.
    """
    current = {c.cell_id for c in cells}
    stale = store.cells_of_sessions_starting(UNREADABLE_PREFIX) - current
    return store.delete_cells(sorted(stale)) if stale else 0


def cells_to_run(cells: list[Cell], store: ResultsStore, retry_errors: bool) -> list[Cell]:
    """The cells a run (or its dry run) still has to do: not stored yet, stopped by the budget
    after billing or by a storage fault (run again), or stored as errors when `retry_errors`."""
    stored = store.cell_statuses()
    rerun = {c for t in (BUDGET_STOPPED, STORAGE_ERROR) for c in store.cells_with_error_type(t)}
    return [c for c in cells if c.cell_id not in stored or c.cell_id in rerun
            or (retry_errors and stored[c.cell_id] == "error")]
