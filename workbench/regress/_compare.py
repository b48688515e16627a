"""Comparing a run's snapshot with the baseline: summaries exactly, metrics within tolerance.

Every difference becomes a `Finding` that carries its own readable text (a unified diff for a
summary, both numbers and the rule for a metric), so the CLI, the pytest plugin and a CI log
all show the same report.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from workbench.harness.experiment._tolerance import parse_tolerance
from workbench.regress._snapshot import Snapshot

MAX_DIFF_LINES = 80
"""A summary diff longer than this is cut in the report (the run folder keeps the full text)."""

FindingKind = Literal["summary", "metric", "group"]


@dataclass(frozen=True)
class Finding:
    """One regression.

    Attributes:
        kind: ``summary`` (rendered text changed, appeared or vanished), ``metric`` (outside
            its tolerance) or ``group`` (a template x model x window present on one side only).
        name: The summary file, or ``metric [template · model · window]``.
        message: One line saying what changed.
        diff: The unified diff of a changed summary (empty otherwise).
    """

    kind: FindingKind
    name: str
    message: str
    diff: str = ""


def _show(value: object) -> str:
    return "—" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def summary_diff(name: str, baseline: str, current: str, limit: int = MAX_DIFF_LINES) -> str:
    """A unified diff of one summary file, cut after `limit` lines (saying how many were cut)."""
    lines = list(difflib.unified_diff(baseline.splitlines(keepends=True),
                                      current.splitlines(keepends=True),
                                      fromfile=f"baseline/{name}", tofile=f"current/{name}", n=2))
    lines = [line if line.endswith("\n") else line + "\n" for line in lines]
    if len(lines) > limit:
        cut = len(lines) - limit
        lines = lines[:limit] + [f"... {cut} more diff line(s) not shown\n"]
    return "".join(lines)


def compare_summaries(baseline: Snapshot, current: Snapshot) -> list[Finding]:
    """Summary files that differ, vanished or appeared, in file-name order."""
    findings = []
    for name in sorted(set(baseline.summaries) | set(current.summaries)):
        old, new = baseline.summaries.get(name), current.summaries.get(name)
        if old == new:
            continue
        if old is None:
            findings.append(Finding("summary", name, "new cell: no baseline summary",
                                    summary_diff(name, "", new or "")))
        elif new is None:
            findings.append(Finding("summary", name, "cell no longer in the experiment"))
        else:
            findings.append(Finding("summary", name, "rendered summary changed",
                                    summary_diff(name, old, new)))
    return findings


def compare_metrics(baseline: Snapshot, current: Snapshot,
                    rules: dict[str, str]) -> list[Finding]:
    """Metric values outside their tolerance, per template x model x window group.

    Args:
        baseline: The committed snapshot.
        current: This run's snapshot.
        rules: Metric -> tolerance text (the experiment's ``[regress]`` table as it is now).
    """
    findings = []
    for key in sorted(set(baseline.groups) | set(current.groups)):
        where = " · ".join(key)
        old, new = baseline.groups.get(key), current.groups.get(key)
        if old is None or new is None:
            side = "new in this run" if old is None else "missing from this run"
            findings.append(Finding("group", f"[{where}]", f"[{where}]: group {side}"))
            continue
        for metric in sorted(rules):
            if metric not in old:
                findings.append(Finding("metric", f"{metric} [{where}]",
                                        f"{metric} [{where}]: the baseline has no value for it "
                                        "(declared after the baseline was written)"))
                continue
            rule = parse_tolerance(rules[metric])
            if rule.allows(old[metric], new.get(metric)):
                continue
            findings.append(Finding(
                "metric", f"{metric} [{where}]",
                f"{metric} [{where}]: baseline {_show(old[metric])} -> now "
                f"{_show(new.get(metric))} (rule {rules[metric]!r}: "
                f"{rule.describe(old[metric])})"))
    return findings
