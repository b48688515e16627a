"""`record_experiment`: run an experiment with its real models, recording every answer.

Every calling model is switched to the read-write cache on its recording file (its entry's
``cache_path``, else the spec's ``[cache] path``, else the user cache), so prompts already
recorded are answered from the file and only new ones reach the model (the user's key, billed).
The gate then replays the files.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from workbench.errors import ConfigError
from workbench.harness import Experiment, Results, run_experiment
from workbench.models import ResponseCache
from workbench.models._spec import release_shared_cache
from workbench.regress._replay import (
    calls_a_model,
    force_cache_mode,
    infrastructure_problems,
    recording_paths,
)


@dataclass
class RecordReport:
    """What a recording run did.

    Attributes:
        experiment: The experiment's name.
        recording: The (first) recording file written.
        cells: Cells run.
        recorded: Answers (and refusals) added to the recording.
        counted: Prompt sizes in a model's own tokenizer added to the recording.
        errors: Cell error type -> count (compaction outcomes and infrastructure alike).
        problems: Cells that failed for infrastructure reasons (auth, rate limit, timeout).
        backup: Where the previous (first) recording went (``fresh`` only).
        recordings: Every recording file written (models may have their own).
        backups: Where each previous recording went (``fresh`` only).
    """

    experiment: str
    recording: Path
    cells: int = 0
    recorded: int = 0
    counted: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    backup: Path | None = None
    recordings: list[Path] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when every cell produced an outcome, 1 when some hit an infrastructure error."""
        return 1 if self.problems else 0

    def render(self) -> str:
        """The report as plain text."""
        files = ", ".join(map(str, self.recordings or [self.recording]))
        lines = [f"workbench record: experiment {self.experiment!r}: {self.cells} cells, "
                 f"{self.recorded} new recording(s) and {self.counted} new prompt size(s) in "
                 f"{files}"]
        lines.extend(f"  previous recording moved to {b}"
                     for b in (self.backups or ([self.backup] if self.backup else [])))
        if self.errors:
            counts = ", ".join(f"{n} x {kind}" for kind, n in sorted(self.errors.items()))
            lines.append(f"  cell errors: {counts}")
        lines.extend(f"ERROR {p}" for p in self.problems)
        return "\n".join(lines)


def record_experiment(spec: str | Path | Experiment, out: str | Path | None = None, *,
                      fresh: bool = False, progress: bool = True) -> RecordReport:
    """Record the answers of every calling model of `spec` into its recording file.

    Args:
        spec: The experiment (TOML path or `Experiment`).
        out: Keep the run in this folder (resumed if it exists); default a temporary folder.
        fresh: Move the existing recording aside (``<file>.<UTC time>.bak``) and record all
            answers anew, instead of only the missing ones.
        progress: Show the progress bar.

    Raises:
        ConfigError: the spec cannot be read, or no model in it calls a model.
    """
    experiment = spec if isinstance(spec, Experiment) else Experiment.from_toml(spec)
    if not any(calls_a_model(m.model) for m in experiment.models):
        raise ConfigError(f"experiment {experiment.name!r}: nothing to record, every model is "
                          "extractive (no model call)")
    forced = force_cache_mode(experiment, "rw")
    paths = recording_paths(forced)
    report = RecordReport(experiment.name, paths[0], recordings=paths)
    if fresh:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        for path in paths:
            if path.exists():
                release_shared_cache(path)
                backup = path.with_name(f"{path.name}.{stamp}.bak")
                path.rename(backup)
                report.backups.append(backup)
        report.backup = report.backups[0] if report.backups else None
    before = {path: _entries(path) for path in paths}
    if out is not None:
        results = run_experiment(forced, Path(out), progress=progress)
    else:
        with tempfile.TemporaryDirectory(prefix="workbench-record-") as tmp:
            results = run_experiment(forced, Path(tmp) / experiment.name, progress=progress)
    assert isinstance(results, Results)
    for path in paths:
        release_shared_cache(path)
        if not path.exists():
            continue
        cache = ResponseCache(path)
        try:
            stats = cache.stats()
            recorded = int(stats["entries"]) - before[path][0]
            counted = int(stats["token_counts"]) - before[path][1]
            report.recorded += recorded
            report.counted += counted
            if recorded or counted:
                cache.vacuum()  # one compact committable file, no WAL beside it
        finally:
            cache.close()
    cells = results.cells
    report.cells = len(cells)
    if not cells.empty and "error_type" in cells.columns:
        failed = cells[cells["status"] == "error"]
        report.errors = {str(k): int(v) for k, v in failed["error_type"].value_counts().items()}
    report.problems = infrastructure_problems(results)
    return report


def _entries(path: Path) -> tuple[int, int]:
    """Recorded answers and recorded prompt sizes in the file (0, 0 when it does not exist)."""
    if not path.exists():
        return 0, 0
    cache = ResponseCache(path)
    try:
        stats = cache.stats()
        return int(stats["entries"]), int(stats["token_counts"])
    finally:
        cache.close()
