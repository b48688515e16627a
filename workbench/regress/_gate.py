"""`run_regress`: replay an experiment and hold its summaries and metrics against a baseline.

Steps: read the spec, force every calling model to replay-only, run into a fresh folder, stop
with exit 2 when any cell could not run (a cache miss names its cell), take the snapshot, then
either write it as the new baseline (``update``) or compare it with the committed one.

Exit codes: 0 passed (or baseline updated), 1 regressed, 2 could not run.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from workbench.errors import ConfigError, WorkbenchError
from workbench.harness import Experiment, Results, run_experiment
from workbench.harness.results._results import DB_FILE, SUMMARIES_DIR
from workbench.regress._compare import Finding, compare_metrics, compare_summaries
from workbench.regress._defaults import BASELINE_ROOT, DEFAULT_SPEC
from workbench.regress._replay import (
    calls_a_model,
    force_cache_mode,
    infrastructure_problems,
    recording_paths,
)
from workbench.regress._snapshot import Snapshot

PASSED, REGRESSED, COULD_NOT_RUN = 0, 1, 2
MAX_DIFFS = 12
"""Summary diffs printed in full; further changed files are listed by name (a CI log stays
readable when a template change touches every summary)."""
_RUN_FILES = ("results.sqlite", "results.sqlite-wal", "results.sqlite-shm", "spec.toml")


@dataclass
class RegressReport:
    """What one gate run found.

    Attributes:
        experiment: The experiment's name ("" when the spec could not be read).
        baseline: The baseline folder.
        exit_code: 0 passed or updated, 1 regressed, 2 could not run.
        findings: The regressions (empty unless `exit_code` is 1).
        problems: Why the gate could not run (empty unless `exit_code` is 2).
        cells: Cells run.
        rules: The metric rules applied.
        updated: The baseline was rewritten.
        run_dir: The run folder when it was kept (``out``), else None.
        summaries_checked: Summaries compared with the baseline.
        metric_checks: Metric rules checked.
        partial: The run was overridden from the command line: only its own cells' summaries
            were compared (the baseline's metrics are means over the whole spec).
    """

    experiment: str
    baseline: Path
    exit_code: int = PASSED
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    cells: int = 0
    rules: dict[str, str] = field(default_factory=dict)
    updated: bool = False
    run_dir: Path | None = None
    summaries_checked: int = 0
    metric_checks: int = 0
    partial: bool = False

    @property
    def status(self) -> str:
        """``passed``, ``updated``, ``regressed`` or ``could not run``."""
        if self.exit_code == COULD_NOT_RUN:
            return "could not run"
        if self.exit_code == REGRESSED:
            return "regressed"
        return "updated" if self.updated else "passed"

    def render(self) -> str:
        """The report as plain text for a terminal or a CI log."""
        head = f"workbench regress: experiment {self.experiment or '?'!r}, baseline {self.baseline}"
        lines = [head]
        if self.cells:
            rules = ", ".join(f"{m} {r!r}" for m, r in sorted(self.rules.items())) or "none"
            lines.append(f"  {self.cells} cells run (models that call one: replay-only); "
                         f"metric rules: {rules}")
        if self.run_dir is not None:
            lines.append(f"  run folder: {self.run_dir}")
        for problem in self.problems:
            lines.append(f"ERROR {problem}")
        summaries = [f for f in self.findings if f.kind == "summary"]
        others = [f for f in self.findings if f.kind != "summary"]
        for finding in others:
            lines.append(f"REGRESSED {finding.message}")
        for shown, finding in enumerate(summaries):
            lines.append(f"REGRESSED {finding.name}: {finding.message}")
            if finding.diff and shown < MAX_DIFFS:
                lines.append(finding.diff.rstrip("\n"))
        if len(summaries) > MAX_DIFFS:
            lines.append(f"(diffs shown for the first {MAX_DIFFS} files only; `--out DIR` keeps "
                         "this run's summaries for the rest)")
        if self.exit_code == REGRESSED:
            lines.append(f"result: REGRESSED ({len(summaries)} summary file(s), {len(others)} "
                         "metric(s)); if the change is intended, run `workbench regress SPEC "
                         "--update` and commit the baseline folder")
        elif self.exit_code == COULD_NOT_RUN:
            lines.append("result: COULD NOT RUN (exit 2)")
        elif self.updated:
            lines.append(f"result: baseline written to {self.baseline}; review and commit it")
        elif self.partial:
            lines.append(f"result: PASSED ({self.summaries_checked} summaries of the overridden "
                         "run identical to the baseline's; metrics not compared: the baseline's "
                         "are means over the whole spec)")
        else:
            lines.append(f"result: PASSED ({self.summaries_checked} summaries identical, "
                         f"{self.metric_checks} metric checks within tolerance)")
        return "\n".join(lines)


def default_baseline(experiment_name: str, root: str | Path = ".") -> Path:
    """``<root>/regress/<experiment name>``."""
    return Path(root) / BASELINE_ROOT / experiment_name


def run_regress(spec: str | Path | Experiment = DEFAULT_SPEC, baseline: str | Path | None = None,
                *, update: bool = False, out: str | Path | None = None,
                progress: bool = False, partial: bool = False) -> RegressReport:
    """Run the regression gate.

    Args:
        spec: The experiment (a TOML path or an `Experiment`); its ``[regress]`` table holds
            the metric rules.
        baseline: The baseline folder; default ``regress/<experiment name>``.
        update: Rewrite the baseline from this run instead of comparing.
        out: Keep the replayed run in this folder (replaced if it holds an earlier run);
            default: a temporary folder, removed afterwards.
        progress: Show the runner's progress bar.
        partial: The spec was overridden (fewer cells than the baseline's): compare only the
            summaries of the cells run, no metrics; `update` is refused.

    Returns:
        The report; it never raises for a bad spec, a missing recording or a missing baseline
        (those are exit code 2 with the reason in `RegressReport.problems`).
    """
    report = RegressReport("", Path(baseline) if baseline is not None else Path(BASELINE_ROOT),
                           partial=partial)
    try:
        if partial and update:
            raise ConfigError("--update rewrites the whole baseline: run the spec without "
                              "overrides (--model, --template, --window, --sessions, --limit, "
                              "--set) to update it")
        experiment = spec if isinstance(spec, Experiment) else Experiment.from_toml(spec)
        report.experiment = experiment.name
        report.rules = dict(experiment.regress)
        if baseline is None:
            report.baseline = default_baseline(experiment.name)
        forced = force_cache_mode(experiment, "replay")
        _check_recording(forced)
        if out is not None:
            report.run_dir = _fresh_run_folder(Path(out))
            _gate(forced, report, report.run_dir, update, progress)
        else:
            with tempfile.TemporaryDirectory(prefix="workbench-regress-") as tmp:
                _gate(forced, report, Path(tmp) / experiment.name, update, progress)
    except (WorkbenchError, OSError) as exc:
        report.problems.append(str(exc))
    if report.problems:
        report.exit_code = COULD_NOT_RUN
        report.findings = []
    elif report.findings:
        report.exit_code = REGRESSED
    return report


def _gate(experiment: Experiment, report: RegressReport, run_dir: Path, update: bool,
          progress: bool) -> None:
    results = run_experiment(experiment, run_dir, progress=progress)
    assert isinstance(results, Results)
    report.cells = len(results.cells)
    problems = infrastructure_problems(results)
    if problems:
        report.problems.extend(problems)
        report.problems.append("the recording lacks these answers or prompt sizes: record them "
                               "with `workbench record SPEC` (needs the real model), then run "
                               "the gate again")
        return
    current = Snapshot.from_results(results, experiment.regress, experiment.name)
    if update:
        current.write(report.baseline)
        report.updated = True
        return
    baseline = Snapshot.read(report.baseline)
    report.summaries_checked = len(current.summaries)
    if report.partial:  # only this run's cells: summaries the baseline has for them
        baseline.summaries = {k: v for k, v in baseline.summaries.items()
                              if k in current.summaries}
        report.findings = compare_summaries(baseline, current)
        return
    report.metric_checks = len(current.groups) * len(experiment.regress)
    report.findings = (compare_metrics(baseline, current, experiment.regress)
                       + compare_summaries(baseline, current))


def _check_recording(experiment: Experiment) -> None:
    if not any(calls_a_model(m.model) for m in experiment.models):
        return
    for path in recording_paths(experiment):
        if not path.is_file():
            raise ConfigError(f"recording {path} does not exist: the replayed models have "
                              "nothing to answer from; record it with `workbench record SPEC`")


def _fresh_run_folder(folder: Path) -> Path:
    if folder.exists() and any(folder.iterdir()):
        if not (folder / DB_FILE).is_file():
            raise ConfigError(f"--out {folder}: the folder holds files but no run; pick an empty "
                              "folder or a run folder of an earlier gate")
        for name in _RUN_FILES:
            (folder / name).unlink(missing_ok=True)
        shutil.rmtree(folder / SUMMARIES_DIR, ignore_errors=True)
    return folder
