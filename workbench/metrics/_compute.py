"""`compute_metrics` and `compute_forgotten`: every registered metric for one finished cell.

Importing this module registers the built-in metrics, in this order: compression, files,
errors, requests, facts, fill. ``probe_recall`` is added last: the mean of every ``*_recall``
value that is not None (built-in: files, errors, requests, facts; a user metric that returns a
``*_recall`` key joins the mean).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.metrics import _compression, _fill  # noqa: F401  (register)
from workbench.metrics._errors import errors_probe
from workbench.metrics._facts import facts_probe
from workbench.metrics._files import files_probe
from workbench.metrics._registry import METRICS, MetricInput, MetricValue
from workbench.metrics._requests import requests_probe
from workbench.sessions import Session

if TYPE_CHECKING:  # a name for annotations only: compaction's modules load when a cell parses
    from workbench.compaction import StructuredSummary

# Registration order decides column order in tables; compression first reads best.
_ORDER = ("compression", "files", "errors", "requests", "facts", "fill")


def compute_metrics(session: Session, summary_text: str, structured: StructuredSummary | None, *,
                    original_tokens: int, summary_tokens: int) -> dict[str, MetricValue]:
    """Score one cell with every registered metric.

    Args:
        session: The session that was compacted.
        summary_text: The rendered summary text.
        structured: The parsed `StructuredSummary`, or None when the reply did not parse.
        original_tokens: Tokens of the agent-visible conversation before compaction.
        summary_tokens: Tokens of the summary text.

    Returns:
        A flat JSON-ready dict: the keys of every metric plus ``probe_recall`` (None when no
        recall applies). See the metric modules for each key.
    """
    inp = MetricInput(session=session, summary_text=summary_text or "", structured=structured,
                      original_tokens=int(original_tokens or 0),
                      summary_tokens=int(summary_tokens or 0))
    names = [n for n in _ORDER if n in METRICS] + [n for n in METRICS if n not in _ORDER]
    out: dict[str, MetricValue] = {}
    for name in names:
        out.update(METRICS[name](inp))
    recalls = [v for k, v in out.items() if k.endswith("_recall") and v is not None]
    out["probe_recall"] = sum(recalls) / len(recalls) if recalls else None
    return out


def compute_forgotten(session: Session, summary_text: str) -> dict[str, list[str]]:
    """What the summary forgot, for the report's "what the summary forgot" section.

    Args:
        session: The session that was compacted.
        summary_text: The rendered summary text.

    Returns:
        ``files``, ``errors``, ``requests`` and ``facts`` (missing items, in session order);
        ``stale`` (stale values mentioned without their replacement) for planted-fact sessions.
    """
    text = summary_text or ""
    out = {
        "files": list(files_probe(session.messages, text).missing),
        "errors": list(errors_probe(session.messages, text).missing),
        "requests": list(requests_probe(session.messages, text).missing),
        "facts": [],
    }
    facts = facts_probe(session, text)
    if facts is not None:  # lists of their own: a probe's result may be shared (shared_probes)
        out["facts"] = list(facts[0].missing)
        out["stale"] = list(facts[1].missing)
    return out
