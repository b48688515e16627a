"""Metrics and retention probes for one compacted cell.

`compute_metrics` runs every registered metric (``@metric(name)``) and adds ``probe_recall``;
`compute_forgotten` lists what the summary lost. Probe families, one module each: files
(`files_probe`), errors (`errors_probe`), user requests (`requests_probe`), planted facts
(`facts_probe`), structured-summary fill rate, compression ratio; `template_echo` (the
runner adds it, since it needs the template).
"""

from workbench.harness.metrics._common import ProbeResult
from workbench.harness.metrics._compute import compute_forgotten, compute_metrics
from workbench.harness.metrics._echo import template_echo
from workbench.harness.metrics._errors import error_line, errors_probe, session_errors
from workbench.harness.metrics._facts import fact_mentioned, fact_value, facts_probe
from workbench.harness.metrics._files import files_probe, touched_files
from workbench.harness.metrics._fill import SUMMARY_FIELDS
from workbench.harness.metrics._registry import METRICS, MetricInput, metric, unregister_metric
from workbench.harness.metrics._requests import requests_probe, user_requests

__all__ = [
    "METRICS", "MetricInput", "ProbeResult", "SUMMARY_FIELDS", "compute_forgotten",
    "compute_metrics", "error_line", "errors_probe", "fact_mentioned", "fact_value",
    "facts_probe", "files_probe", "metric", "requests_probe", "session_errors",
    "template_echo", "touched_files", "unregister_metric", "user_requests",
]
