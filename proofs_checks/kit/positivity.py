"""A sufficient certificate that an expression is >= 0 at every point of the probe's domain
(every symbol positive, an integer symbol >= 1), for the bounds a proof chain builds: sums and
products of the symbols with ``Max`` of such terms.

``nonnegative(E)``: each ``Max(u, v, ...)`` atom M of E in turn, replaced by a fresh symbol m:
where E is linear in m with a coefficient certified >= 0, E is nondecreasing in M and
M >= each argument, so one argument put for M that leaves E >= 0 suffices; otherwise E equals
one of its branches at every point, so every branch must be >= 0.  Without a ``Max``, E =
num / den (``together``) with den a polynomial whose coefficients are all >= 0 and not all 0 in
the positive symbols (so den > 0), and num a polynomial whose coefficients are all >= 0 once
each integer symbol k is written 1 + k' (k' >= 0).  Anything else (a square root, an
exponential, a negative coefficient) is not certified: False means "no certificate", never
"negative".  ``at_least_one(ratio)`` certifies ratio >= 1 this way."""
from __future__ import annotations

import sympy

MAX_BRANCHES = 64  # Max atoms are few in a proof's bound; beyond this, no certificate


def at_least_one(ratio: sympy.Expr) -> bool:
    """ratio >= 1 at every positive point (integer symbols >= 1), certified (see the module)."""
    return nonnegative(sympy.sympify(ratio) - 1)


def nonnegative(expr: sympy.Expr, budget: list | None = None) -> bool:
    """expr >= 0 at every positive point, certified; False where no certificate was found."""
    budget = [MAX_BRANCHES] if budget is None else budget
    if budget[0] <= 0:
        return False
    budget[0] -= 1
    if not all(s.is_positive for s in expr.free_symbols):
        return False  # the probe's domain is the positive orthant: nothing else is certified
    atoms = sorted(expr.atoms(sympy.Max), key=sympy.default_sort_key)
    if not atoms:
        return _rational_nonnegative(expr)
    # the atoms E is not certified nondecreasing in first ("for every branch"), then the others
    # ("for some branch"), per branch of the first: for all b exists c is weaker than the reverse
    splits = [_split(expr, M, budget) for M in atoms]
    universal = [s for s in splits if not s[0]]
    rising, branches = (universal or splits)[0]
    if rising:
        return any(nonnegative(b, budget) for b in branches)
    return all(nonnegative(b, budget) for b in branches)


def _split(expr: sympy.Expr, M: sympy.Max, budget: list) -> tuple[bool, list]:
    """(E is linear in M with a slope certified >= 0, E with each argument of M put for M)."""
    m = sympy.Dummy("m", positive=True)
    em = expr.xreplace({M: m})
    slope = sympy.diff(em, m)
    rising = m not in slope.free_symbols and nonnegative(slope, budget)
    return rising, [em.xreplace({m: a}) for a in M.args]


def _rational_nonnegative(expr: sympy.Expr) -> bool:
    num, den = sympy.fraction(sympy.together(sympy.expand(expr)))
    syms = sorted(expr.free_symbols, key=str)
    if not syms:
        return bool(sympy.sympify(expr) >= 0) if expr.is_comparable else False
    den_coeffs = _coefficients(den, syms)
    if den_coeffs is None or not all(c >= 0 for c in den_coeffs) or not any(c > 0 for c in
                                                                              den_coeffs):
        return False
    shifted = num.xreplace({s: 1 + s for s in syms if s.is_integer})
    num_coeffs = _coefficients(shifted, syms)
    return num_coeffs is not None and all(c >= 0 for c in num_coeffs)


def _coefficients(expr: sympy.Expr, syms: list) -> list | None:
    """The rational coefficients of ``expr`` as a polynomial in ``syms``, or None where it is
    not one (a root, a function, a symbolic coefficient)."""
    try:
        poly = sympy.Poly(sympy.expand(expr), *syms)
    except sympy.PolynomialError:
        return None
    if not poly.domain.is_QQ and not poly.domain.is_ZZ:
        return None
    return poly.coeffs()
