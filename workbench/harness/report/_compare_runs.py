"""Two runs side by side: what ``workbench compare RUN_A RUN_B`` prints and the viewer shows.

In: two run folders. Out: `RunComparison`, whose `lines` are the text both print: per
(template, model, window) the B - A deltas of the comparison table, the cells whose status or
parse outcome changed, a paired cluster-bootstrap comparison of B against A on one metric, and
the verdict of B against A per model x window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from workbench.harness.report._report import markdown_table
from workbench.harness.results._paired import paired_comparison
from workbench.harness.results._results import Results
from workbench.harness.results._table import PERCENT_COLUMNS, comparison_table
from workbench.harness.results._table_delta import changed_cells, table_delta
from workbench.harness.results._verdict import verdict

__all__ = ["DELTA_FORMATS", "RunComparison", "compare_runs"]

_BY = ("template", "model", "window")
DELTA_FORMATS = {
    "cells": "{:+,.0f}", "failures": "{:+,.0f}", "retries_max": "{:+,.0f}",
    "retained_tokens": "{:+,.0f}", "summary_tokens": "{:+,.0f}", "billed_tokens": "{:+,.0f}",
    "cost": "{:+.4f}", "parse_success_pct": "{:+.1f}", "retries_mean": "{:+.3f}",
    "compression_ratio": "{:+.3f}", "replies": "{:+,.0f}", "failed": "{:+,.0f}",
    "errors": "{:+,.0f}", "n": "{:+,.0f}", "useful_structured_pct": "{:+.1f}",
    "billed_reported": "{:+,.0f}", "billed_estimated": "{:+,.0f}", "cost_total": "{:+.4f}",
    "http_retries_total": "{:+,.0f}", "effective_window": "{:+,.0f}", "calls": "{:+.2f}",
    "spent_tokens": "{:+,.0f}", "calls_made_total": "{:+,.0f}", "calls_shared_total": "{:+,.0f}",
}


@dataclass
class RunComparison:
    """Run B against run A.

    Attributes:
        lines: The text blocks, in order (what ``workbench compare`` prints).
        both: The cells of both runs with a ``run`` column (``A``/``B``), or None when a run
            has no cells (nothing to pair).
    """

    lines: list[str] = field(default_factory=list)
    both: pd.DataFrame | None = None

    def to_text(self) -> str:
        """The comparison as text."""
        return "\n".join(self.lines)


def compare_runs(run_a: Path, run_b: Path, metric: str = "probe_recall",
                 seed: int = 0) -> RunComparison:
    """Compare run B with run A (deltas are B - A).

    Args:
        run_a: The first run folder.
        run_b: The second.
        metric: The metric of the paired comparison.
        seed: Bootstrap seed.

    Raises:
        ConfigError: a folder holds no results store.
    """
    a, b = Results.load(run_a), Results.load(run_b)
    delta = table_delta(comparison_table(a.cells, _BY), comparison_table(b.cells, _BY), _BY)
    formats = {**DELTA_FORMATS, **{c: "{:+.1%}" for c in PERCENT_COLUMNS}}
    out = RunComparison([f"A: {run_a}\nB: {run_b}\n",
                         "Per (template, model, window), B - A (means over each run's common "
                         "sessions):\n", markdown_table(delta, formats)])
    changed = changed_cells(a.cells, b.cells)
    out.lines.append(f"Cells whose status or parse outcome changed: {len(changed)}\n")
    if not changed.empty:
        out.lines.append(markdown_table(changed))
    if a.cells.empty or b.cells.empty:
        return out
    both = pd.concat([a.cells.assign(run="A"), b.cells.assign(run="B")], ignore_index=True)
    result = paired_comparison(both, "A", "B", on="run", metric=metric, seed=seed)
    out.lines.append(f"Paired comparison, B - A: {result}\n")
    out.lines.append(verdict(both, on="run", seed=seed).to_text())
    out.both = both
    return out
