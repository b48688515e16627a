"""Fill rate of the structured summary: how many of its nine fields the model filled in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from workbench.metrics._registry import MetricInput, metric

if TYPE_CHECKING:  # a name for annotations only: compaction's modules load when a cell parses
    from workbench.compaction import StructuredSummary

SUMMARY_FIELDS = ("user_intent", "technical_concepts", "files", "errors_and_fixes",
                  "problem_solving", "user_messages", "pending_tasks", "current_work", "next_step")
"""The nine fields of `StructuredSummary`, in template order."""


def _field(structured: StructuredSummary | Mapping[str, object], name: str) -> object:
    if isinstance(structured, dict):
        return structured.get(name)
    return getattr(structured, name, None)


def is_filled(value: object) -> bool:
    """True for a non-blank string, a non-empty collection, or any other truthy value."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, tuple, dict, set)):
        return any(is_filled(v) if isinstance(v, str) else v is not None for v in value)
    return bool(value)


@metric("fill")
def fill_metrics(inp: MetricInput) -> dict[str, float | int | None]:
    """``fill_rate`` (fraction of the nine fields filled) and ``fill_<field>`` (0/1).

    All None when the reply did not parse into a structured summary.
    """
    if inp.structured is None:
        return {"fill_rate": None, **{f"fill_{f}": None for f in SUMMARY_FIELDS}}
    flags = {f"fill_{f}": int(is_filled(_field(inp.structured, f))) for f in SUMMARY_FIELDS}
    return {"fill_rate": sum(flags.values()) / len(SUMMARY_FIELDS), **flags}

