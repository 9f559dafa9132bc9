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


class NonFinite(ArithmeticError):
    """A comparison with a Monte Carlo estimate that decides nothing (see ``Estimate.agrees``)."""


def _is_nan(x) -> bool:
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError, OverflowError):  # complex, symbolic: not NaN
        return False


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
        """Whether ``exact`` lies in the interval.  An estimate that is not finite (overflowed
        samples), or an exact value that is NaN, decides nothing: ``NonFinite`` is raised, so
        the check stops undecided instead of reading it as a disagreement; a finite estimate
        against an infinite exact value disagrees."""
        if not (math.isfinite(self.mean) and math.isfinite(self.se)):
            raise NonFinite(f"the Monte Carlo estimate is not finite (mean {self.mean}, "
                            f"standard error {self.se}): it decides nothing")
        if _is_nan(exact):
            raise NonFinite("the value compared with the Monte Carlo estimate is NaN: the "
                            "comparison decides nothing")
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


# ----------------------------------------------------------------------------------------------
# Samplers for cross-checking the exact moment kernels
# ----------------------------------------------------------------------------------------------
def sample_wishart(sigma: np.ndarray, n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of W = X X^T, X = [x_1 .. x_n] with x_i ~ N(0, sigma): shape (size, d, d).

    The convention of ``moments.wishart``: W, not W/n.
    """
    sigma = np.asarray(sigma, dtype=float)
    L = np.linalg.cholesky(sigma)
    X = L @ rng.standard_normal((size, sigma.shape[0], n))
    return X @ X.transpose(0, 2, 1)


def sample_gaussian(mean: np.ndarray | None, cov: np.ndarray | None, d: int, size: int,
                    rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of x ~ N(mean, cov) (None: zero mean / identity), shape (size, d)."""
    z = rng.standard_normal((size, d))
    if cov is not None:
        z = z @ np.linalg.cholesky(np.asarray(cov, dtype=float)).T
    if mean is not None:
        z = z + np.asarray(mean, dtype=float).reshape(1, d)
    return z


def wishart_estimates(statistic: Callable[[np.ndarray], np.ndarray], sigma: np.ndarray, n: int,
                      samples: int, rng: np.random.Generator,
                      chunk: int = 20_000) -> list[Estimate]:
    """Estimates of E[statistic(W)] for a statistic mapping a batch (B, d, d) to (B, m)."""
    def draw(k: int) -> np.ndarray:
        return np.asarray(statistic(sample_wishart(sigma, n, k, rng)), dtype=float).reshape(k, -1)

    means, ses = streaming_estimate(draw, samples, chunk)
    return [Estimate(float(m), float(s), samples) for m, s in zip(means, ses)]


def trace_power_statistic(ks) -> Callable[[np.ndarray], np.ndarray]:
    """W -> (tr W^k for k in ks), batched."""
    ks = list(ks)

    def stat(W: np.ndarray) -> np.ndarray:
        out, P, done = [], W, 1
        for k in sorted(set(ks)):
            while done < k:
                P = P @ W
                done += 1
            out.append(np.trace(P, axis1=1, axis2=2))
        by_k = dict(zip(sorted(set(ks)), out))
        return np.stack([by_k[k] for k in ks], axis=1)

    return stat
