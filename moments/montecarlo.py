"""Monte Carlo estimators with confidence intervals, for cross-checking exact moments.

Comparisons use a two-sided normal interval at ``level`` with a Bonferroni correction over the
number of comparisons made together, never a fixed epsilon.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class Estimate:
    """Sample mean, its standard error and sample count."""

    mean: float
    se: float
    count: int

    def interval(self, level: float = 0.999, comparisons: int = 1) -> tuple[float, float]:
        z = z_critical(level, comparisons)
        return (self.mean - z * self.se, self.mean + z * self.se)

    def z_score(self, exact: float) -> float:
        if self.se == 0:
            return 0.0 if self.mean == exact else math.inf
        return (self.mean - exact) / self.se

    def agrees(self, exact: float, level: float = 0.999, comparisons: int = 1) -> bool:
        return abs(self.z_score(exact)) <= z_critical(level, comparisons)

    def as_dict(self, level: float = 0.999, comparisons: int = 1) -> dict:
        lo, hi = self.interval(level, comparisons)
        return {"mean": self.mean, "se": self.se, "samples": self.count,
                "ci": [lo, hi], "level": level, "comparisons": comparisons}


def z_critical(level: float = 0.999, comparisons: int = 1) -> float:
    """Two-sided critical value with a Bonferroni correction."""
    alpha = (1 - level) / max(1, comparisons)
    return float(norm.ppf(1 - alpha / 2))


def estimate(samples: np.ndarray) -> Estimate:
    """Mean and standard error of i.i.d. samples along axis 0 (scalar samples)."""
    x = np.asarray(samples, dtype=float).ravel()
    if x.size < 2:
        raise ValueError("need at least two samples")
    return Estimate(float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)), int(x.size))


def streaming_estimate(draw: Callable[[int], np.ndarray], total: int, chunk: int = 50_000) -> np.ndarray:
    """Means and standard errors of vector-valued samples drawn ``chunk`` at a time.

    ``draw(k)`` returns an array of shape (k, m); the result has shape (2, m): [means, ses].
    """
    count, mean, m2 = 0, None, None
    while count < total:  # Chan et al.'s pairwise update keeps the variance accurate
        k = min(chunk, total - count)
        x = np.asarray(draw(k), dtype=float).reshape(k, -1)
        cm = x.mean(0)
        cm2 = ((x - cm) ** 2).sum(0)
        if mean is None:
            mean, m2 = cm, cm2
        else:
            delta = cm - mean
            mean = mean + delta * k / (count + k)
            m2 = m2 + cm2 + delta ** 2 * count * k / (count + k)
        count += k
    var = m2 / (count - 1)
    return np.stack([mean, np.sqrt(var / count)])
