"""Compression: how small the summary is next to the conversation it replaces."""

from __future__ import annotations

from workbench.metrics._registry import MetricInput, metric


@metric("compression")
def compression_metrics(inp: MetricInput) -> dict[str, float | int | None]:
    """``compression_ratio = summary_tokens / original_tokens`` (None for an empty original)."""
    ratio = inp.summary_tokens / inp.original_tokens if inp.original_tokens > 0 else None
    return {"compression_ratio": ratio}
