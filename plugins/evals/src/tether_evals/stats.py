"""The paired bootstrap: is the difference between two systems' scores on the same cases
more than noise?

For the per-case differences ``d_i = B_i - A_i`` the statistic is their mean. Resampling
the cases with replacement ``resamples`` times (seeded: the same inputs give the same
interval) gives the distribution of that mean; its 2.5th and 97.5th percentiles are the
95% interval. An interval that excludes zero is a difference; one that includes it is
noise at that level. The two-sided p-value is twice the share of resampled means on the
far side of zero (at least ``1 / resamples``). Pairing by case removes the case-to-case
variation both systems share, which is what makes small improvements detectable
(Efron & Tibshirani, *An Introduction to the Bootstrap*, ch. 16; Koehn 2004 for its use
in comparing systems).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PairedTest", "paired_bootstrap"]


@dataclass(frozen=True, slots=True)
class PairedTest:
    """The mean paired difference, its interval, and a two-sided p-value."""

    n: int
    mean_difference: float
    low: float
    high: float
    confidence: float
    p_value: float
    resamples: int
    method: str = "paired bootstrap"

    @property
    def verdict(self) -> str:
        """``better``, ``worse`` or ``no significant difference`` (for B against A)."""
        if self.n and self.low > 0:
            return "better"
        if self.n and self.high < 0:
            return "worse"
        return "no significant difference"


def _percentile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedTest:
    """The paired bootstrap of ``mean(b - a)`` over cases (``a[i]`` and ``b[i]`` score the
    same case)."""
    if len(a) != len(b):
        raise ValueError(f"paired scores need as many A as B values ({len(a)} != {len(b)})")
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    if n == 0:
        return PairedTest(0, 0.0, 0.0, 0.0, confidence, 1.0, 0)
    observed = sum(diffs) / n
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    tail = (1 - confidence) / 2
    low, high = _percentile(means, tail), _percentile(means, 1 - tail)
    if all(d == diffs[0] for d in diffs):
        p = 1.0 if diffs[0] == 0 else 1 / resamples
    else:
        below = sum(m <= 0 for m in means) / resamples
        above = sum(m >= 0 for m in means) / resamples
        p = min(1.0, max(2 * min(below, above), 1 / resamples))
    return PairedTest(n, observed, low, high, confidence, p, resamples)
