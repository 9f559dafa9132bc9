"""How far float64 can be from the exact value of a derived polynomial: the allowance a float
comparison is decided against (``verify.evidence.settle_le``).

For a polynomial p evaluated in float64 at x, |fl(p(x)) - p(x)| <= K eps p~(|x|), where p~ has
the absolute values of p's coefficients and K counts the roundings along the way (Higham,
*Accuracy and Stability of Numerical Algorithms*, Sec. 3.1)."""
from __future__ import annotations

import numpy as np
import sympy

from moments.poly import Poly

EPS64 = float(np.finfo(np.float64).eps)


def magnitude(poly: Poly) -> Poly:
    """p~: the polynomial with the absolute values of ``poly``'s coefficients (evaluated at the
    inputs' absolute values it bounds the size of every term)."""
    return poly.map_coeffs(sympy.Abs)


def rounding_factor(poly: Poly, d: int) -> int:
    """K for a polynomial in trace words of (d+1) x (d+1) blocks: the terms summed, plus the
    products of a monomial's letters ((d+1)-term inner products each), plus 2 for rounding the
    inputs (the point is quadratic in the formulas' values)."""
    letters = max((sum(len(w) for w in cyc + ch) for cyc, ch in poly.terms), default=0)
    return len(poly.terms) + letters * (d + 1) + 2
