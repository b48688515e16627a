"""How ``workbench run`` says it stopped: interrupted (Ctrl-C), or nothing left to run.

On Ctrl-C the runner finishes its writes and marks the run 'interrupted' (every finished cell is
in the store); the command then prints one line, with what was saved, what remains and the exact
command that resumes, and exits `EXIT_INTERRUPTED`. The command is the one typed, with ``--new``
dropped and ``--out`` naming the folder the run went to, so the same cells resume there.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    import pandas as pd

    from workbench.harness import Results
    from workbench.harness.experiment import Experiment

ARGV_KEY = "workbench.argv"
"""``ctx.meta`` key: the subcommand's arguments as typed (the group stores them)."""
ON_INTERRUPT_KEY = "workbench.on_interrupt"
"""``ctx.meta`` key: a callable giving the line to print when the command is interrupted."""
INTERRUPTED_LINE = ("interrupted: {saved:,} cell(s) saved in {folder}, {left:,} of {total:,} "
                    "remain{replay}; resume with: {command}")
NOTHING_TO_RUN = "nothing to run: {folder} already holds all {cells:,} cells (finished {finished})"
# A flag a resumed command must drop (it would start yet another folder), and the folder option.
_DROPPED_FLAGS = ("--new",)
_OUT = "--out"


def typed_arguments() -> list[str]:
    """The current subcommand's arguments as typed (``["run", "exp.toml", "--limit", "3"]``)."""
    ctx = click.get_current_context(silent=True)
    return list(ctx.meta.get(ARGV_KEY, [])) if ctx is not None else []


def on_interrupt(line: Callable[[], str]) -> None:
    """Register what the group prints when the current command is interrupted."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[ON_INTERRUPT_KEY] = line


def resume_command(arguments: list[str], folder: Path, default_folder: Path) -> str:
    """The command that resumes a run into `folder`: `arguments` as typed, without ``--new``,
    with ``--out`` naming `folder` (added at the end when it is not where the command puts the
    run anyway)."""
    kept: list[str] = []
    named = False
    values = iter(arguments)
    for arg in values:
        if arg in _DROPPED_FLAGS:
            continue
        if arg == _OUT or arg.startswith(_OUT + "="):
            if arg == _OUT:
                next(values, None)
            kept += [_OUT, str(folder)]
            named = True
            continue
        kept.append(arg)
    if not named and Path(folder) != Path(default_folder):
        kept += [_OUT, str(folder)]
    return shlex.join(["workbench", *kept])


def progress_of(experiment: Experiment, folder: Path) -> tuple[int, int, int]:
    """``(saved, left, total)``: cells stored in `folder`, cells a resume would still run
    (`cells_to_run`), and the experiment's cells."""
    # The harness loads only once a run has been stopped: --help starts light.
    from workbench.harness.experiment._cells import SessionCache  # (as above)
    from workbench.harness.results import DB_FILE, ResultsStore  # (as above)
    from workbench.harness.run._preflight import prepare  # (as above)
    from workbench.harness.run._runner import cells_to_run  # (as above)

    cells = prepare(experiment, cache=SessionCache()).cells
    if not (folder / DB_FILE).is_file():
        return 0, len(cells), len(cells)
    with ResultsStore(folder / DB_FILE) as store:
        saved = len(store.cell_statuses())
        left = len(cells_to_run(cells, store, retry_errors=False))
    return saved, left, len(cells)


def interrupted_line(experiment: Experiment, folder: Path, command: str) -> str:
    """The one line `workbench run` prints on Ctrl-C."""
    saved, left, total = progress_of(experiment, folder)
    replay = (" (then the whole-session replay)" if experiment.replay is not None else "")
    return INTERRUPTED_LINE.format(saved=saved, folder=folder, left=left, total=total,
                                   replay=replay, command=command)


def nothing_ran(results: Results) -> bool:
    """True when the latest invocation found every cell done: it stored no cell and no replay,
    and an earlier invocation exists (a first run with no cells is not a resume)."""
    runs = results.runs
    if len(runs) < 2 or runs["status"].iloc[-1] != "finished":
        return False
    latest = runs["run_id"].iloc[-1]

    def stored_by(frame: pd.DataFrame) -> bool:
        return bool(not frame.empty and "run_id" in frame and (frame["run_id"] == latest).any())

    return not stored_by(results.cells) and not stored_by(results.replays)


def nothing_to_run_line(results: Results) -> str:
    """``nothing to run: FOLDER already holds all N cells (finished DATE); ...``: DATE is when
    the last earlier invocation that finished did."""
    earlier = results.runs.iloc[:-1]
    done = earlier[earlier["status"] == "finished"]["finished_at"].dropna()
    when = str(done.iloc[-1])[:16].replace("T", " ") + " UTC" if len(done) else "earlier"
    return NOTHING_TO_RUN.format(folder=results.run_dir, cells=len(results.cells), finished=when)
