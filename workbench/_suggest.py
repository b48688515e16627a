"""Suggestions for a misspelt name: ``(did you mean 'lean-facts'?)``.

Every place that refuses an unknown name (a template variant, a strategy, a metric, a rule, a
command, a model entry) says which known name is closest, so a typo costs one look.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6
"""How alike (difflib's ratio, 0-1) a known name must be to be suggested."""
MIN_PART = 4
"""A name this long or longer that is part of a known one suggests it."""


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like `name` (case ignored), or None when none is close."""
    options = list(dict.fromkeys(str(k) for k in known))
    lowered = {k.lower(): k for k in options}
    text = str(name).lower()
    found = difflib.get_close_matches(text, list(lowered), n=1, cutoff=CUTOFF)
    if found:
        return lowered[found[0]]
    # A short form of a longer name (``smollm2`` for ``smollm2-135m/grammar``).
    holding = sorted((k for k in lowered if len(text) >= MIN_PART and text in k), key=len)
    return lowered[holding[0]] if holding else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known name, else an empty string."""
    match = closest(name, known)
    return f" (did you mean {match!r}?)" if match is not None and match != name else ""
