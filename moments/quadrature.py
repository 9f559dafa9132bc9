"""Gauss quadrature of the spectral measure of a Wishart matrix, from its exact moments.

For W = X X^T with X (d x n) of i.i.d. N(0, 1) entries, the measure nu on [0, oo) with
int w^k dnu(w) = E tr W^k (total mass d) turns the mean of any spectral trace into one integral:
E tr p(W) = int p dnu for a polynomial p.  The K-point Gauss rule of nu (nodes w_j > 0, weights
omega_j > 0, sum omega_j = d) is exact for deg p <= 2K - 1, so E tr p(W) is a sum of K values of
p.  The rule needs m_0 .. m_{2K-1}; they are exact (``moments.wishart``), the recurrence
coefficients are computed from them in rational arithmetic (Chebyshev's algorithm, exact, so its
ill-conditioning in floating point does not arise), and only the nodes and weights, the
eigenvalues and first eigenvector components of the Jacobi matrix (Golub-Welsch), are found in
floating point, at ``digits`` digits.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Sequence

import mpmath
import sympy

from .wishart import D
from .wishart_sympy import trace_moment


@lru_cache(maxsize=None)
def trace_moments(n: int, d: int, top: int) -> tuple[Fraction, ...]:
    """m_k = E tr W^k for k = 0 .. top (m_0 = d), W = X X^T, X (d x n) standard Gaussian."""
    out = [Fraction(d)]
    for k in range(1, top + 1):
        value = sympy.Rational(trace_moment(k, identity=True, n=n).subs(D, d))
        out.append(Fraction(int(value.p), int(value.q)))
    return tuple(out)


def recurrence(moments: Sequence[Fraction], K: int) -> tuple[list[Fraction], list[Fraction]]:
    """(alpha_0..alpha_{K-1}, beta_0..beta_{K-1}) of the monic orthogonal polynomials of the
    measure with moments m_0 .. m_{2K-1}: p_{k+1}(w) = (w - alpha_k) p_k(w) - beta_k p_{k-1}(w),
    beta_0 = m_0 (Chebyshev's algorithm, Gautschi, "Orthogonal Polynomials", Alg. 2.1), exactly."""
    if K <= 0 or len(moments) < 2 * K:
        raise ValueError(f"a {K}-point rule needs the moments m_0 .. m_{2 * K - 1}")
    m = [Fraction(x) for x in moments[:2 * K]]
    prev, cur = [Fraction(0)] * (2 * K), m
    alpha, beta = [m[1] / m[0]], [m[0]]
    for k in range(1, K):
        new = [Fraction(0)] * (2 * K)
        for ell in range(k, 2 * K - k):
            new[ell] = cur[ell + 1] - alpha[k - 1] * cur[ell] - beta[k - 1] * prev[ell]
        if new[k] <= 0:
            raise ValueError(f"the moments are not those of a measure with {K} points or more")
        alpha.append(new[k + 1] / new[k] - cur[k] / cur[k - 1])
        beta.append(new[k] / cur[k - 1])
        prev, cur = cur, new
    return alpha, beta


@dataclass(frozen=True)
class GaussRule:
    """Nodes and weights (mpmath numbers) of a K-point Gauss rule: exact for degree <= 2K - 1."""

    nodes: tuple
    weights: tuple

    @property
    def exact_degree(self) -> int:
        return 2 * len(self.nodes) - 1


def _mpf(x: Fraction):
    return mpmath.mpf(x.numerator) / x.denominator


def gauss_rule(moments: Sequence[Fraction], K: int, digits: int = 50) -> GaussRule:
    """The K-point Gauss rule of the measure with moments ``moments`` (Golub-Welsch on the
    recurrence of ``recurrence``, at ``digits`` digits)."""
    alpha, beta = recurrence(moments, K)
    with mpmath.workdps(digits):
        J = mpmath.matrix(K, K)
        for i in range(K):
            J[i, i] = _mpf(alpha[i])
            if i + 1 < K:
                J[i, i + 1] = J[i + 1, i] = mpmath.sqrt(_mpf(beta[i + 1]))
        E, Q = mpmath.eigsy(J)
        order = sorted(range(K), key=lambda i: E[i])
        return GaussRule(tuple(+E[i] for i in order),
                         tuple(_mpf(beta[0]) * Q[0, i] ** 2 for i in order))


def wishart_rule(n: int, d: int, K: int, digits: int = 50) -> GaussRule:
    """The K-point Gauss rule of W's spectral measure: sum_j omega_j p(w_j) = E tr p(W) for every
    polynomial p of degree <= 2K - 1."""
    return gauss_rule(trace_moments(n, d, 2 * K - 1), K, digits)
