"""Bootstrap p-values and Holm's step-down adjustment, for the verdict's comparisons with the best.

`bootstrap_p_value` reads a two-sided p-value off a bootstrap distribution of a mean difference:
twice the smaller share of resampled means on either side of zero (zero counts on both sides),
with the usual +1 so that it is never 0: ``p = min(1, 2 * min(1 + #(d* <= 0), 1 + #(d* >= 0))
/ (B + 1))``. Its smallest value is ``2 / (B + 1)`` (0.001 at 2,000 resamples). It rejects at
level alpha about when the percentile interval at 1 - alpha excludes zero.

`holm_adjust` turns the p-values of one family of comparisons into Holm's adjusted p-values:
sorted ascending, the i-th smallest (1-based) of m becomes ``max over j <= i of min(1, (m - j +
1) * p_(j))``. A comparison is significant at level alpha when its adjusted p-value is below
alpha; that controls the chance of any false "worse" in the family at alpha, as Bonferroni
does, while rejecting at least as often.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bootstrap_p_value(means: np.ndarray) -> float:
    """Two-sided bootstrap p-value of "the mean difference is zero" from resampled means.

    Args:
        means: The bootstrap distribution (`cluster_bootstrap_means`); non-empty.

    Returns:
        A p-value in ``(0, 1]``.
    """
    b = len(means)
    below = int(np.count_nonzero(means <= 0))
    above = int(np.count_nonzero(means >= 0))
    return float(min(1.0, 2 * (1 + min(below, above)) / (b + 1)))


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (NaNs stay NaN, outside the family).

    Args:
        p_values: One p-value per comparison of the family.

    Returns:
        The adjusted p-values (each at least its raw value, at most 1).
    """
    known = [(p, i) for i, p in enumerate(p_values) if not np.isnan(p)]
    m = len(known)
    out = [float("nan")] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(known)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
