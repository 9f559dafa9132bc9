"""Exact comparisons of named formulas for the proof-step claims: a side that is not a finite
real number at an admitted point (a complex power, a division by zero, an infinity) is no bound
there, so the comparison fails rather than raising."""
from __future__ import annotations

from typing import Mapping

import mpmath
import sympy

from .dominance import _gd_le, _mp_value
from .moment_search import _finite_real


def finite_value(expr, env: Mapping):
    """The value of ``expr`` at ``env`` at 40 digits, or None when it is not a finite real."""
    try:
        with mpmath.workdps(40):
            return _finite_real(_mp_value(expr, env))
    except (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError):
        return None


def real_le(lhs, rhs, env: Mapping, strict: bool = False) -> bool:
    """lhs <= rhs (< if ``strict``) exactly as ``dominance._gd_le`` decides it, False where a side
    is not a finite real number."""
    if finite_value(sympy.sympify(lhs), env) is None or finite_value(sympy.sympify(rhs),
                                                                      env) is None:
        return False
    try:
        return _gd_le(lhs, rhs, env, strict=strict)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError):
        return False


def holds(expr, env: Mapping) -> bool:
    """A named condition at exact values (``dominance._holds``); False where it cannot be
    evaluated as a real relation (the hypothesis says nothing there)."""
    from .dominance import _holds
    try:
        return _holds(expr, env)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError):
        return False


def value(expr, env: Mapping):
    """``dominance._mp_value`` at the caller's precision, nan where the formula is not a real
    number there (a complex power, a division by zero): every comparison with it fails."""
    try:
        v = _mp_value(expr, env)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError):
        return mpmath.nan
    if isinstance(v, mpmath.mpc):
        return v.real if v.imag == 0 else mpmath.nan
    return v
