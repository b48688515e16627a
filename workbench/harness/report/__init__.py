"""Stage 4 of the harness, the report: a run's results as documents.

In: `Results` (`workbench.harness.results`). Out: ``RUN_DIR/report/``: ``report.md`` and CSVs
(``_report``), the self-contained ``report.html`` (``_html`` with its table ``_html_table``,
verdict ``_html_verdict``, per-cell drill-down ``_drilldown`` and ``assets/``) and the replay
section (``_replays``). The last stage: nothing in the harness imports it.
"""

from workbench.harness.report._report import REPORT_DIR, write_report

__all__ = ["REPORT_DIR", "write_report"]
