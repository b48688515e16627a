"""The regression gate: replay recorded answers and hold summaries and metrics to a baseline.

Smallest first: `parse_tolerance` / `Tolerance` (the metric rules of an experiment's
``[regress]`` table), `Snapshot` (what is compared, read from a run or a baseline folder),
`run_regress` (the gate, exit 0/1/2 in its `RegressReport`), `record_experiment` (refresh the
recordings with the real models). The pytest plugin lives in ``_pytest_plugin``.
"""

from workbench.harness._tolerance import Tolerance, parse_tolerance
from workbench.regress._compare import Finding
from workbench.regress._gate import (
    COULD_NOT_RUN,
    PASSED,
    REGRESSED,
    RegressReport,
    default_baseline,
    run_regress,
)
from workbench.regress._record import RecordReport, record_experiment
from workbench.regress._snapshot import Snapshot

__all__ = [
    "COULD_NOT_RUN",
    "PASSED",
    "REGRESSED",
    "Finding",
    "RecordReport",
    "RegressReport",
    "Snapshot",
    "Tolerance",
    "default_baseline",
    "parse_tolerance",
    "record_experiment",
    "run_regress",
]
