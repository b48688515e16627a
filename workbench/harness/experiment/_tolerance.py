"""Tolerance rules: how far a metric may move from its baseline before it counts as a regression.

Written as short strings in an experiment's ``[regress]`` table, one per metric::

    [regress]
    parse_success_pct = "not lower"   # never below the baseline
    retained_tokens = "+5%"           # at most 5 % above the baseline (any drop is fine)
    probe_recall = "-0.02"            # at most 0.02 below the baseline (absolute)
    failures = "no new"               # a count that must not grow

Forms (case and inner spaces do not matter): ``not lower``, ``not higher``, ``no new`` (a count:
same as ``not higher``), ``exact``, ``+N%`` / ``-N%`` / ``±N%`` (relative to the baseline value)
and ``+N`` / ``-N`` / ``±N`` (absolute; ``+-`` may stand for ``±``). A missing value (NaN) only
matches a missing value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal, SupportsFloat, SupportsIndex

from workbench.errors import ConfigError

Direction = Literal["up", "down", "both"]

_EPSILON = 1e-9
_WORDS: dict[str, tuple[Direction, float] | None] = {
    # direction of the allowed move, and how far it may go the other way (always 0 here)
    "notlower": ("up", 0.0),
    "nolower": ("up", 0.0),
    "nothigher": ("down", 0.0),
    "nohigher": ("down", 0.0),
    "nonew": ("down", 0.0),
    "exact": None,
    "equal": None,
}
_AMOUNT = re.compile(r"^(\+-|±|\+|-)(\d+(?:\.\d+)?)(%?)$")
FORMS = "'not lower', 'not higher', 'no new', 'exact', '+5%', '-5%', '±5%', '+10', '-0.02' or '±1'"
"""The accepted forms, for error messages."""


@dataclass(frozen=True)
class Tolerance:
    """A parsed tolerance rule.

    Attributes:
        text: The rule as written.
        free: Which way the metric may move without limit: ``"up"`` (``not lower``), ``"down"``
            (``not higher``, ``no new``), or ``"both"`` when only `slack` bounds it.
        slack: How far the metric may move against `free` (for ``"both"``: either way).
        relative: `slack` is a fraction of the baseline value rather than an absolute amount.
    """

    text: str
    free: Direction
    slack: float = 0.0
    relative: bool = False

    def bound(self, baseline: float) -> tuple[float, float]:
        """The (lowest, highest) value allowed against `baseline`."""
        room = abs(baseline) * self.slack if self.relative else self.slack
        room += _EPSILON * max(1.0, abs(baseline))  # float noise from summing in another order
        low, high = baseline - room, baseline + room
        if self.free == "up":
            high = math.inf
        elif self.free == "down":
            low = -math.inf
        return low, high

    def describe(self, baseline: object) -> str:
        """What the rule asks of a value against `baseline`: ``"at least 95.5"``..."""
        b = _number(baseline)
        if b is None:
            return "no value, as in the baseline"
        room = abs(b) * self.slack if self.relative else self.slack
        if self.free == "up":
            return f"at least {_show(b - room)}"
        if self.free == "down":
            return f"at most {_show(b + room)}"
        if room == 0:
            return f"exactly {_show(b)}"
        return f"between {_show(b - room)} and {_show(b + room)}"

    def allows(self, baseline: object, current: object) -> bool:
        """Whether `current` is within this rule of `baseline` (None/NaN only matches None/NaN)."""
        b, c = _number(baseline), _number(current)
        if b is None or c is None:
            return b is None and c is None
        low, high = self.bound(b)
        return low <= c <= high


def _number(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, (str, bytes, bytearray, SupportsFloat, SupportsIndex)):
        return None  # what float() refuses with a TypeError
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _show(value: float) -> str:
    return f"{value:.6g}"


def parse_tolerance(text: str) -> Tolerance:
    """Read one rule (see the module docstring for the forms).

    Raises:
        ConfigError: the text is not one of the forms; the message lists them.
    """
    if not isinstance(text, str):
        raise ConfigError(f"a tolerance is a string like {FORMS}; got {text!r}")
    squeezed = re.sub(r"\s+", "", text).lower()
    if squeezed in _WORDS:
        word = _WORDS[squeezed]
        if word is None:
            return Tolerance(text, "both")
        return Tolerance(text, word[0], word[1])
    match = _AMOUNT.match(squeezed)
    if match is None:
        raise ConfigError(f"cannot read tolerance {text!r}; write {FORMS}")
    sign, amount, percent = match.groups()
    slack = float(amount) / (100.0 if percent else 1.0)
    # "+5%" lets the metric rise by 5 % and fall freely; "-5%" the other way round.
    free: Direction = {"+": "down", "-": "up"}.get(sign, "both")  # type: ignore[assignment]
    return Tolerance(text, free, slack, relative=bool(percent))
