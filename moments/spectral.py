"""Spectral evaluation: polynomials whose letters are all functions of one symmetric matrix.

If every letter is a function of Sigma (Sigma itself, or an unknown g(Sigma) in an ansatz), a
matrix word is the function prod f_i(lambda) applied to Sigma, so a matrix-valued polynomial is
f(Sigma) for a scalar function f of the eigenvalue ``lambda``; a trace tr(prod f_i(Sigma)) is a
power sum ``p_k = tr Sigma^k`` when the product is lambda^k, and an opaque ``tr(...)`` otherwise.
Stationarity conditions then become scalar equations in ``lambda`` that sympy can solve.
"""
from __future__ import annotations

from typing import Mapping

import sympy

from .letters import FREE_LEFT, FREE_RIGHT
from .poly import Poly

LAMBDA = sympy.Symbol("lambda", positive=True)
TR = sympy.Function("tr")


def power_sum(k: int) -> sympy.Symbol:
    """p_k = tr(Sigma^k)."""
    return sympy.Symbol(f"p{k}", positive=True)


def _word_function(word, functions: Mapping[str, sympy.Expr]) -> sympy.Expr:
    value = sympy.Integer(1)
    for name, _ in word:
        if name in (FREE_LEFT, FREE_RIGHT):
            continue
        if name not in functions:
            raise ValueError(f"letter {name} is not a function of the base matrix")
        value *= functions[name]
    return value


def _trace_of(f: sympy.Expr, lam: sympy.Symbol, dim: sympy.Expr) -> sympy.Expr:
    f = sympy.expand(f)
    poly = sympy.Poly(f, lam) if f.is_polynomial(lam) else None
    if poly is not None and not (poly.free_symbols - {lam}):
        out = 0
        for (k,), c in poly.terms():
            out += c * (dim if k == 0 else power_sum(k))
        return out
    return TR(f)


def spectral_value(poly: Poly, functions: Mapping[str, sympy.Expr], lam: sympy.Symbol = LAMBDA,
                   dim: sympy.Expr | None = None) -> sympy.Expr:
    """The scalar function of ``lam`` representing ``poly`` (matrix-valued or scalar)."""
    dim = sympy.Symbol("d", positive=True, integer=True) if dim is None else dim
    total = sympy.Integer(0)
    for (cycles, chains), coeff in poly.terms.items():
        value = coeff
        for w in cycles:
            value *= _trace_of(_word_function(w, functions), lam, dim)
        for w in chains:
            if w[0][0] != FREE_LEFT or w[-1][0] != FREE_RIGHT:
                raise ValueError("bilinear forms in vectors have no spectral value")
            value *= _word_function(w, functions)
        total += value
    return total


def depends_on_traces_of(expr: sympy.Expr, unknown: sympy.Symbol) -> bool:
    """Whether an unknown function enters through a trace (then the equation is not pointwise)."""
    return any(unknown in t.free_symbols for t in expr.atoms(TR))
