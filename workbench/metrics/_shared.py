"""One run of each probe per cell: a cell's metrics and its forgotten items ask the same probes
the same question (the session's messages, the summary text), so inside `shared_probes` a
probe answers a repeated question from the first answer.

Outside the block nothing is remembered, so a caller that changes a session between two probe
calls always gets a fresh answer; inside it the subject must not change (the scoring step of a
cell reads its session and summary only). The remembered results are per thread (cells are
scored on several threads) and go when the outermost block ends.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar, cast

__all__ = ["probe_once", "shared_probes"]

R = TypeVar("R")
S = TypeVar("S")

_STATE = threading.local()


@contextmanager
def shared_probes() -> Iterator[None]:
    """A block in which each `probe_once` probe runs once per (subject, summary text)."""
    outer = getattr(_STATE, "results", None)
    _STATE.results = {} if outer is None else outer
    try:
        yield
    finally:
        _STATE.results = outer


def probe_once(probe: Callable[[S, str], R]) -> Callable[[S, str], R]:
    """`probe` answering a repeated ``(subject, summary_text)`` from its first answer inside
    `shared_probes` (the same subject object, an equal text); unchanged outside it."""

    @functools.wraps(probe)
    def remembered(subject: S, summary_text: str) -> R:
        results: dict[tuple[object, int, str], tuple[object, object]] | None = getattr(_STATE, "results", None)
        if results is None:
            return probe(subject, summary_text)
        key = (probe, id(subject), summary_text)
        hit = results.get(key)
        if hit is not None and hit[0] is subject:
            return cast(R, hit[1])  # stored under this probe's key: its own answer
        value = probe(subject, summary_text)
        results[key] = (subject, value)  # the subject is held, so its id is not reused
        return value

    return remembered
