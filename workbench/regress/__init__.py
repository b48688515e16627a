"""The regression gate: replay recorded answers and hold summaries and metrics to a baseline.

Smallest first: `parse_tolerance` / `Tolerance` (the metric rules of an experiment's
``[regress]`` table), `Snapshot` (what is compared, read from a run or a baseline folder),
`run_regress` (the gate, exit 0/1/2 in its `RegressReport`), `record_experiment` (refresh the
recordings with the real models). The pytest plugin lives in ``_pytest_plugin``.

Names are imported lazily: pytest imports the plugin module at every start, and that must not
pull in pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "Tolerance": "workbench.harness.experiment._tolerance",
    "parse_tolerance": "workbench.harness.experiment._tolerance",
    "Finding": "workbench.regress._compare",
    "COULD_NOT_RUN": "workbench.regress._gate",
    "PASSED": "workbench.regress._gate",
    "REGRESSED": "workbench.regress._gate",
    "RegressReport": "workbench.regress._gate",
    "default_baseline": "workbench.regress._gate",
    "run_regress": "workbench.regress._gate",
    "RecordReport": "workbench.regress._record",
    "record_experiment": "workbench.regress._record",
    "Snapshot": "workbench.regress._snapshot",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("workbench.regress", _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover - mirrors _EXPORTS for type checkers
    from workbench.harness.experiment._tolerance import Tolerance as Tolerance
    from workbench.harness.experiment._tolerance import parse_tolerance as parse_tolerance
    from workbench.regress._compare import Finding as Finding
    from workbench.regress._gate import COULD_NOT_RUN as COULD_NOT_RUN
    from workbench.regress._gate import PASSED as PASSED
    from workbench.regress._gate import REGRESSED as REGRESSED
    from workbench.regress._gate import RegressReport as RegressReport
    from workbench.regress._gate import default_baseline as default_baseline
    from workbench.regress._gate import run_regress as run_regress
    from workbench.regress._record import RecordReport as RecordReport
    from workbench.regress._record import record_experiment as record_experiment
    from workbench.regress._snapshot import Snapshot as Snapshot
