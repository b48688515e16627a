"""Metrics and retention probes for one compacted cell.

`compute_metrics` runs every registered metric (``@metric(name)``) and adds ``probe_recall``;
`compute_forgotten` lists what the summary lost (inside `shared_probes` the two share each
probe's run). Probe families, one module each: files
(`files_probe`), errors (`errors_probe`), user requests (`requests_probe`), planted facts
(`facts_probe`), structured-summary fill rate, compression ratio; `template_echo` (the
runner adds it, since it needs the template).
"""

from workbench.metrics._common import ProbeResult
from workbench.metrics._compute import compute_forgotten, compute_metrics
from workbench.metrics._echo import template_echo
from workbench.metrics._errors import error_line, errors_probe, session_errors
from workbench.metrics._facts import fact_mentioned, fact_value, facts_probe
from workbench.metrics._files import files_probe, touched_files
from workbench.metrics._fill import SUMMARY_FIELDS
from workbench.metrics._registry import METRICS, MetricInput, metric, unregister_metric
from workbench.metrics._requests import requests_probe, user_requests
from workbench.metrics._shared import shared_probes

__all__ = [
    "METRICS", "MetricInput", "ProbeResult", "SUMMARY_FIELDS", "compute_forgotten",
    "compute_metrics", "error_line", "errors_probe", "fact_mentioned", "fact_value",
    "facts_probe", "files_probe", "metric", "requests_probe", "session_errors",
    "shared_probes", "template_echo", "touched_files", "unregister_metric", "user_requests",
]
