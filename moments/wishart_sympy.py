"""The sympy-facing interface to the exact Wishart moments of ``moments.wishart``: E tr W^k, E[W^k],
E[W^r p_lam(W)], E[p_lam(W)] and E tr p(W), E[p(W)] for a polynomial p, as sympy expressions in
n and the power sums p_j = tr Sigma^j (and the commutative symbol Sigma), or in n and d at
Sigma = I, optionally at a given n.  Same convention as the engine: W = sum_{i<=n} x_i x_i^T,
x_i ~ N(0, Sigma), so E[W] = n Sigma."""
from __future__ import annotations

from typing import Iterable

import sympy

from .wishart import D, N, check_order, moment


def _with_n(expr: sympy.Expr, n) -> sympy.Expr:
    return expr if n is None else sympy.expand(expr.subs(N, n))


def trace_moment(k: int, identity: bool = False, n=None) -> sympy.Expr:
    """E tr W^k: a polynomial in n and p_1..p_k (p_j = tr Sigma^j), or in n and d at Sigma = I."""
    return _with_n(moment(check_order(k), (), trace=True, identity=identity).as_expr(), n)


def power_moment(k: int, identity: bool = False, n=None) -> sympy.Expr:
    """E[W^k]: a polynomial in n, p_j and the commutative symbol Sigma (only powers of Sigma
    occur, so Sigma commutes with everything here); at Sigma = I the scalar in n and d that
    multiplies the identity matrix."""
    return _with_n(moment(check_order(k), (), identity=identity).as_expr(), n)


def mixed_moment(r: int, lam: Iterable[int] = (), identity: bool = False, n=None) -> sympy.Expr:
    """E[W^r p_lam(W)] with p_lam(W) = prod_i tr W^{lam_i} (a matrix polynomial when r > 0)."""
    lam = tuple(int(x) for x in lam)
    return _with_n(moment(int(r), lam, identity=identity).as_expr(), n)


def trace_product_moment(lam: Iterable[int], identity: bool = False, n=None) -> sympy.Expr:
    """E[p_lam(W)] = E[prod_i tr W^{lam_i}]."""
    return mixed_moment(0, lam, identity=identity, n=n)


def _coefficients_in_w(expr, w: sympy.Symbol) -> dict[int, sympy.Expr]:
    poly = sympy.Poly(sympy.expand(expr), w)
    return {int(k[0]): c for k, c in poly.terms()}


def expected_trace(expr, w: sympy.Symbol, identity: bool = True, n=None) -> sympy.Expr:
    """E tr p(W) for a polynomial p(W) = sum_k c_k W^k with scalar coefficients, given as a
    sympy expression in the commutative symbol ``w`` (e.g. (1 - a*w/n)**(2*L), or a product of
    factors (1 + a_l*w/n)); W^0 = I contributes c_0 d (d = p_0 = tr Sigma^0 in general)."""
    total = sympy.Integer(0)
    for k, c in _coefficients_in_w(expr, w).items():
        if k == 0:
            total += c * D
        else:
            total += c * moment(check_order(k), (), trace=True, identity=identity).as_expr()
    return _with_n(total, n)


def expected_power(expr, w: sympy.Symbol, identity: bool = False, n=None) -> sympy.Expr:
    """E[p(W)] for a polynomial p with scalar coefficients: a polynomial in Sigma (the constant
    term c_0 W^0 = c_0 I is written c_0; at Sigma = I everything multiplies I_d)."""
    total = sympy.Integer(0)
    for k, c in _coefficients_in_w(expr, w).items():
        total += c if k == 0 else c * moment(check_order(k), (), identity=identity).as_expr()
    return _with_n(total, n)


__all__ = ["trace_moment", "power_moment", "mixed_moment", "trace_product_moment", "expected_trace",
           "expected_power"]
