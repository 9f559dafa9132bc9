"""The population loss of the real forward pass at a point, without Monte Carlo, where it is a
spectral trace (the stationary-set check's loss comparison, ``kit.stationary_float``).

With whitened covariates X~ (d x n, i.i.d. N(0, 1); X = L_x X~) and weights that are functions
of Sigma, the conditional loss F(X~) = E[e^2 | X] of the forward pass is tr p(W) for W = X~ X~^T
and a polynomial p of known degree: it depends on X~ only through W's eigenvalues, one term
each.  Then p(w) = F(sqrt(w) v u^T) - (d - 1) F(0) / d (unit v, u: W = w v v^T has eigenvalues
w, 0, ..., 0), and E F = E tr p(W) = sum_j omega_j p(w_j) with the Gauss rule of W's spectral
measure (``moments.quadrature``), exact for deg p <= 2K - 1.  A few dozen forward passes in
float64 give the mean to rounding, where Monte Carlo of a polynomial of high degree in X has a
heavy right tail (a sample mean 4 standard errors low is common at 1,600 draws).

Both premises are checked at the instance before the mean is used, within ``RELATIVE`` of the
magnitudes: the structure, F(X~) = sum_i p(mu_i) at random X~ (mu_i: W's eigenvalues; p read
along other random v, u, so rotation invariance is tested too), and the degree, the K- and
(K+1)-point rules agreeing.  Where either fails the caller falls back to Monte Carlo.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from models.device import randn
from moments.quadrature import wishart_rule
from moments.wishart import MAX_DEGREE

# float64 forward passes at these sizes agree with the exact means to ~1e-14 relative (ahn2023
# Thms. 4-5); a wrong loss, set or degree moves them by 1e-2 or more
RELATIVE = 1e-9


@dataclass(frozen=True)
class SpectralMean:
    """E F(X~) by the K-point rule (``value``) and the (K+1)-point rule (``check``)."""

    value: float
    check: float
    scale: float  # sum_j omega_j |p(w_j)|: the magnitudes the rule adds
    structure_gap: float  # the largest relative |F(X~) - sum_i p(mu_i)| over the random X~
    nodes: int
    degree: int
    largest_node: float
    # ``value`` as a tensor, differentiable where F is (autograd through the forward passes)
    tensor: Any = field(default=None, compare=False, repr=False)

    @property
    def degree_gap(self) -> float:
        return abs(self.value - self.check) / self.scale if self.scale > 0 else float("nan")

    def holds(self) -> bool:
        """Both premises hold at the instance (module docstring), in numbers float64 holds: a
        non-finite value, or magnitudes at or below float64's smallest normal number (an
        underflowed loss), decide nothing."""
        return self.why_not() == ""

    def why_not(self) -> str:
        """Why ``holds`` is false, in one line ("" where it holds)."""
        if not np.isfinite([self.value, self.check, self.scale, self.structure_gap]).all():
            return "the forward passes are not finite in float64"
        if not self.scale > np.finfo(np.float64).tiny:
            return "the forward passes' losses underflow float64"
        if self.structure_gap > RELATIVE:
            return (f"the loss is not a sum over W's eigenvalues here (relative gap "
                    f"{self.structure_gap:.2g} at random X)")
        if not self.degree_gap <= RELATIVE:
            return (f"the {self.nodes}- and {self.nodes + 1}-point rules disagree (relative "
                    f"{self.degree_gap:.2g}): p has a higher degree than {self.degree}")
        return ""

    def as_dict(self) -> dict:
        return {"mean_with_one_more_node": self.check, "nodes": self.nodes,
                "exact_up_to_degree": 2 * self.nodes - 1, "degree_of_p": self.degree,
                "largest_node": self.largest_node, "rule_magnitude": self.scale,
                "structure_gap": self.structure_gap, "degree_gap": self.degree_gap,
                "relative_tolerance": RELATIVE}


def rule_size(degree: int) -> int:
    """K, the fewest Gauss nodes exact for degree ``degree`` (2K - 1 >= degree)."""
    return (degree + 2) // 2


def integrable(degree: int) -> bool:
    """Whether the moments the K- and (K+1)-point rules need (E tr W^k, k <= 2K + 1) are within
    the exact moment engine's reach (``moments.wishart.MAX_DEGREE``; ahn2023's four layers,
    degree 80, are not)."""
    return 2 * rule_size(degree) + 1 <= MAX_DEGREE


def _unit(v: torch.Tensor) -> torch.Tensor:
    return v / v.norm()


def spectral_mean(F: Callable[[torch.Tensor], torch.Tensor], n: int, d: int, degree: int,
                  generator: torch.Generator, trials: int = 3) -> SpectralMean:
    """E F(X~) for F(X~) = tr p(X~ X~^T), deg p <= ``degree`` (F maps a batch (B, d, n) to (B,));
    one batch of forward passes, differentiable through ``SpectralMean.tensor``."""
    K = rule_size(degree)
    rules = [wishart_rule(n, d, K), wishart_rule(n, d, K + 1)]
    kw = {"generator": generator, "dtype": torch.float64}
    e1, f1 = torch.zeros(d, dtype=torch.float64), torch.zeros(n, dtype=torch.float64)
    e1[0], f1[0] = 1.0, 1.0
    v, u = _unit(randn(d, **kw)), _unit(randn(n, **kw))
    Xs = randn(trials, d, n, **kw)
    mus = torch.linalg.eigvalsh(Xs @ Xs.transpose(1, 2)).clamp_min(0.0)

    def rank_one(w: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return w.sqrt()[:, None, None] * torch.outer(a, b)[None]

    nodes = [torch.tensor([float(w) for w in r.nodes], dtype=torch.float64) for r in rules]
    batch = torch.cat([torch.zeros(1, d, n, dtype=torch.float64), Xs,
                       rank_one(mus.reshape(-1), v, u)] + [rank_one(w, e1, f1) for w in nodes])
    out = F(batch)
    values = out.detach().to("cpu", torch.float64).numpy()
    F0, FX = values[0], values[1:1 + trials]
    pmu = values[1 + trials:1 + trials + trials * d].reshape(trials, d) - (d - 1) * F0 / d
    rest = values[1 + trials + trials * d:]
    gaps = np.abs(FX - pmu.sum(1)) / np.maximum(np.abs(FX) + np.abs(pmu).sum(1), 1e-300)
    means, scale = [], 0.0
    for r, w in zip(rules, nodes):
        p, rest = rest[:len(w)] - (d - 1) * F0 / d, rest[len(w):]
        omega = np.array([float(x) for x in r.weights])
        means.append(float(omega @ p))
        scale = max(scale, float(omega @ np.abs(p)))
    first = 1 + trials + trials * d
    omega = torch.tensor([float(x) for x in rules[0].weights], dtype=out.dtype, device=out.device)
    tensor = (omega * (out[first:first + K] - (d - 1) * out[0] / d)).sum()
    return SpectralMean(means[0], means[1], scale, float(gaps.max()), K, degree,
                        float(nodes[0][-1]), tensor)
