"""Stage 4 of the harness, the report: a run's results as documents.

In: `Results` (`workbench.harness.results`). Out: ``RUN_DIR/report/``: ``report.md`` and CSVs
(``_report``), the self-contained ``report.html`` (``_html`` with its table ``_html_table``,
verdict ``_html_verdict``, per-cell drill-down ``_drilldown`` and ``assets/``) and the replay
section (``_replays``); the terminal table (``_text_table``). The last stage: nothing in the
harness imports it. Its names load on first use, so printing a run's table (``_text_table``)
never imports the report's plots (matplotlib).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports

_LAZY = {"REPORT_DIR": "workbench.harness.report._report",
         "write_report": "workbench.harness.report._report"}

__all__ = ["REPORT_DIR", "write_report"]

__getattr__, __dir__ = lazy_exports("workbench.harness.report", _LAZY, globals())

if TYPE_CHECKING:  # pragma: no cover
    from workbench.harness.report._report import REPORT_DIR, write_report
