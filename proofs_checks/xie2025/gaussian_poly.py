"""Exact expectations of polynomials in independent Gaussian coordinates.

At concrete sizes every random quantity of the xie2025 setting is a polynomial in independent
scalar Gaussians: the entries x_i[a] of the context and query inputs (N(0, 1)) and the coordinates
of the task w_hat (N(w*[a], 1)).  For such a polynomial

    E[prod_k g_k^{e_k}] = prod_k E[g_k^{e_k}],   E[(mu + eps)^e] = sum_j C(e, j) mu^(e-j) (j-1)!!

(j even), so the expectation of any polynomial (a forward-pass error, a named integrand of
App. A.2, a mutant of it of any degree) is exact, term by term.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

import sympy


@lru_cache(maxsize=None)
def _central(j: int) -> int:
    """E[eps^j] for eps ~ N(0, 1): (j-1)!! for even j, 0 for odd j."""
    if j % 2:
        return 0
    out = 1
    for k in range(j - 1, 0, -2):
        out *= k
    return out


def _raw(mean: sympy.Expr, e: int) -> sympy.Expr:
    """E[(mean + eps)^e]."""
    return sum((sympy.binomial(e, j) * mean ** (e - j) * _central(j) for j in range(0, e + 1, 2)),
               sympy.Integer(0))


def expect(expr: sympy.Expr | sympy.Poly, means: Mapping[sympy.Symbol, sympy.Expr]) -> sympy.Expr:
    """E[expr] where each symbol in ``means`` is an independent N(mean, 1) variable (others are
    constants), exactly; ``expr`` may be a ``sympy.Poly`` in (some of) those symbols."""
    if isinstance(expr, sympy.Poly):
        poly, gens = expr, list(expr.gens)
    else:
        gens = [s for s in means if expr.has(s)]
        if not gens:
            return sympy.sympify(expr)
        try:
            poly = sympy.Poly(expr, *gens)
        except sympy.PolynomialError:
            raise ValueError(f"E[{sympy.sstr(expr)[:80]}] is taken exactly for polynomials in the "
                             f"Gaussian coordinates only, and this is not one") from None
    cache: dict = {}
    total = sympy.Integer(0)
    for exps, coeff in poly.terms():
        term = coeff
        for g, e in zip(gens, exps):
            if not e:
                continue
            if g not in means:  # a constant generator
                term = term * g ** e
                continue
            if (g, e) not in cache:
                cache[(g, e)] = _raw(means[g], e)
            term = term * cache[(g, e)]
            if term == 0:
                break
        total += term
    return sympy.expand(total)


@dataclass(frozen=True)
class GaussianPrompt:
    """Symbolic draws of the xie2025 data at concrete d and C: X (d x C, columns x_i), w_hat,
    x_q, and the Gaussian laws of their entries (means: 0, 0, w*)."""

    X: sympy.Matrix
    w_hat: sympy.Matrix
    x_q: sympy.Matrix
    means: dict

    @property
    def y(self) -> sympy.Matrix:
        """The context labels y_i = w_hat^T x_i (a C x 1 column)."""
        return self.X.T * self.w_hat

    def poly(self, x) -> sympy.Poly:
        """``x`` as a polynomial in every Gaussian coordinate."""
        return sympy.Poly(x, *self.means)

    def gram(self) -> sympy.Matrix:
        """G = (1/C) sum_i z_i z_i^T, z_i = [x_i; y_i] (App. A.2)."""
        d, C = self.X.shape
        Z = sympy.Matrix.vstack(self.X, self.y.T)
        return Z * Z.T / C

    def E(self, y_q) -> sympy.Matrix:
        """The prompt of eq. (2) with the query guess ``y_q``."""
        d, C = self.X.shape
        out = sympy.zeros(d + 1, C + 1)
        out[:d, :C] = self.X
        out[d, :C] = self.y.T
        out[:d, C] = self.x_q
        out[d, C] = y_q
        return out


def gaussian_prompt(d: int, C: int, w_star: Sequence) -> GaussianPrompt:
    """Symbols for every Gaussian coordinate of a prompt, with w_hat ~ N(w*, I_d)."""
    X = sympy.Matrix(d, C, lambda a, i: sympy.Symbol(f"x{i}_{a}"))
    wh = sympy.Matrix(d, 1, lambda a, _: sympy.Symbol(f"wh{a}"))
    xq = sympy.Matrix(d, 1, lambda a, _: sympy.Symbol(f"xq{a}"))
    means = {s: sympy.Integer(0) for s in list(X) + list(xq)}
    means.update({wh[a]: sympy.sympify(w_star[a]) for a in range(d)})
    return GaussianPrompt(X, wh, xq, means)
