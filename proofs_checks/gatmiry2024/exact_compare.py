"""Exact comparisons of named formulas for the proof-step claims: a side that is not a real number
at an admitted point (a complex power, nan, a division by zero) is no bound there, so the
comparison fails rather than raising; an infinite side is compared as an extended real
(x <= +oo holds, +oo <= y fails for finite y)."""
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
    except (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError, KeyError):
        return None


def extended_value(expr, env: Mapping):
    """The value of ``expr`` at ``env`` at 40 digits as an extended real (+-oo kept), or None
    when it is complex, nan or cannot be evaluated."""
    try:
        with mpmath.workdps(40):
            x = _mp_value(expr, env)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError, KeyError):
        return None
    if isinstance(x, mpmath.mpc):
        if x.imag != 0:
            return None
        x = x.real
    return None if mpmath.isnan(x) else x


def compare(lhs, rhs, env: Mapping, strict: bool = False):
    """(lhs <= rhs, lhs value, rhs value) at 40 digits, decided as ``real_le`` decides it."""
    x, y = finite_value(sympy.sympify(lhs), env), finite_value(sympy.sympify(rhs), env)
    if x is None or y is None:
        xe, ye = extended_value(sympy.sympify(lhs), env), extended_value(sympy.sympify(rhs), env)
        if xe is None or ye is None or (mpmath.isinf(xe) and xe == ye):
            return False, x, y  # not real, or oo against oo: no comparison
        return (bool(xe < ye) if strict else bool(xe <= ye)), xe, ye
    if x == 0 or y == 0 or (x > 0) != (y > 0) or \
            abs(y - x) > mpmath.mpf(10) ** -25 * max(abs(x), abs(y)):
        return (bool(x < y) if strict else bool(x <= y)), x, y
    try:
        return _gd_le(lhs, rhs, env, strict=strict), x, y
    except (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError, KeyError):
        return False, x, y


def real_le(lhs, rhs, env: Mapping, strict: bool = False) -> bool:
    """lhs <= rhs (< if ``strict``) exactly as ``dominance._gd_le`` decides it, False where a side
    is not a finite real number; sides of different signs, one of them exactly 0, or apart by more
    than 10^-25 relative are decided from their 40-digit values (``_gd_le``'s tolerance is
    absolute below 1: a tiny positive number against 0 would fall to exact arithmetic, at
    3^(10^9) slowly)."""
    return compare(lhs, rhs, env, strict)[0]


def holds(expr, env: Mapping) -> bool:
    """A named condition (a relation, or a conjunction / disjunction of them) at exact values by
    ``real_le``; False where a relation is not between real numbers (it says nothing there)."""
    if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
        return bool(expr)
    if isinstance(expr, (sympy.And, sympy.Or)):
        parts = (holds(a, env) for a in expr.args)
        return all(parts) if isinstance(expr, sympy.And) else any(parts)
    if not isinstance(expr, sympy.core.relational.Relational):
        return False
    lhs, rhs = expr.lhs, expr.rhs
    if isinstance(expr, (sympy.GreaterThan, sympy.StrictGreaterThan)):
        lhs, rhs = rhs, lhs
    if isinstance(expr, (sympy.Eq, sympy.Ne)):
        return False
    return real_le(lhs, rhs, env, strict=isinstance(expr, (sympy.StrictLessThan,
                                                           sympy.StrictGreaterThan)))


def value(expr, env: Mapping):
    """``dominance._mp_value`` at the caller's precision, nan where the formula is not a real
    number there (a complex power, a division by zero): every comparison with it fails."""
    try:
        v = _mp_value(expr, env)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError, KeyError):
        return mpmath.nan
    if isinstance(v, mpmath.mpc):
        return v.real if v.imag == 0 else mpmath.nan
    return v
