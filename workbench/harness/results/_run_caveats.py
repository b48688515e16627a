"""The run-level recommendation's caveats: every caveat its strata carry, said once.

A stratum's recommendation states its caveats on its own line (its pick is significantly worse
on a metric the rule does not weigh, no template recalled anything, too few sessions, the
judge's figures left out). The run's recommendation carries each of them as an indented line
under its own, prefixed by the strata that carry it (a caveat several strata carry in the same
words is one line naming them all), after two kinds the run adds: the strata counted with
another because they ran at its real window, and the strata that could recommend nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.harness.experiment._windows import format_window

__all__ = ["caveat_lines", "fmt_window", "same_window_line"]


def fmt_window(window: int | str | None) -> str:
    """A window as a stratum's title writes it (``8k``; ``none`` passes through)."""
    return window if isinstance(window, str) else format_window(window)


def same_window_line(model: str, window: int | str, real: int | str | None, first: str) -> str:
    """The caveat of the stratum `model` @ `window`, counted with the stratum titled `first`:
    its cells ran at the same real window, `real`."""
    return f"{model} @ {fmt_window(window)} ran at {fmt_window(real)}: counted with {first}"


def caveat_lines(strata: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """One line per distinct caveat: ``<titles>: <caveat>``, in the order they first appear.

    Args:
        strata: ``(stratum title, its recommendation's caveats)`` per counted stratum.
    """
    titles: dict[str, list[str]] = {}
    for title, caveats in strata:
        for caveat in caveats:
            titles.setdefault(caveat, [])
            if title not in titles[caveat]:
                titles[caveat].append(title)
    return [f"{', '.join(names)}: {caveat}" for caveat, names in titles.items()]
