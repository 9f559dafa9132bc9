"""Exact comparisons of named formulas at exact points (sizes as integers, values as rationals or
algebraic constants), fast where the sides are far apart and exact where they are close.

- ``mp_value``: a formula's value in mpmath at the caller's precision (lambdified once per formula);
- ``decide_le``: lhs <= rhs decided at 80, 400 or 2000 digits where the relative gap exceeds
  10^(30 - digits), exactly (``looped_icl.exact_sign``) otherwise: sympy would factor 300-digit
  rationals raised to rational powers, and d^(1/n) at n = 10^100 exactly exhausts memory;
- ``compare``: the same with the engine's rule for sides that are not real numbers: a side that
  is complex, nan or cannot be evaluated at an admitted point is no bound there, so the comparison
  fails; an infinite side is compared as an extended real (x <= +oo holds, +oo <= y fails for
  finite y); a sign no precision settles is undecided (None), never a verdict;
- ``real_le``: ``compare`` as a bool for a conclusion, raising ``Undecidable`` where the sign is
  not settled (the tier stops undecided, never reads it as a violation);
- ``holds``: a named condition (a relation, or a conjunction / disjunction of them) at exact
  values, False where a relation is not between real numbers or its sign is not settled (it
  admits nothing there);
  ``decide`` the same by ``decide_le`` alone, raising where that cannot decide."""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Mapping

import mpmath
import sympy

from .looped_icl import exact_sign

_EVAL_ERRORS = (ZeroDivisionError, ValueError, TypeError, OverflowError, ArithmeticError, KeyError)


@lru_cache(maxsize=None)
def _mp_function(expr: sympy.Expr) -> tuple[Callable, tuple[str, ...]]:
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    return sympy.lambdify(syms, expr, "mpmath"), tuple(s.name for s in syms)


def mpf(x) -> mpmath.mpf:
    """An exact number (int, Rational, radical) as an mpf at the caller's precision."""
    x = sympy.sympify(x)
    if x.is_Rational:
        return mpmath.mpf(int(x.p)) / int(x.q)
    if x in (sympy.oo, -sympy.oo):
        return mpmath.inf if x == sympy.oo else -mpmath.inf
    return mpmath.mpf(str(sympy.N(x, mpmath.mp.dps + 10)))


def mp_value(expr, env: Mapping) -> mpmath.mpf:
    """``expr`` at the exact values ``env`` ({symbol name: value}) in mpmath (an mpc where it is
    not real; KeyError where a symbol has no value)."""
    fn, names = _mp_function(sympy.sympify(expr))
    return fn(*[mpf(env[k]) for k in names])


def exact_at(expr, env: Mapping) -> sympy.Expr:
    """``expr`` with its symbols replaced by the exact values ``env``."""
    expr = sympy.sympify(expr)
    return expr.subs({s: env[s.name] for s in expr.free_symbols})


def decide_le(lhs, rhs, env: Mapping, strict: bool = False) -> bool:
    """lhs <= rhs (< if ``strict``) at exact values; raises ArithmeticError where no precision
    and no exact computation settles the sign."""
    for digits in (80, 400, 2000):
        with mpmath.workdps(digits):
            x, y = mp_value(lhs, env), mp_value(rhs, env)
            if abs(y - x) > mpmath.mpf(10) ** (30 - digits) * max(1, abs(x), abs(y)):
                return bool(x < y)
    sgn = exact_sign(exact_at(rhs, env) - exact_at(lhs, env))
    return sgn > 0 or (sgn == 0 and not strict)


def finite_real(x):
    """x as a finite mpf, or None when it is complex, nan or infinite."""
    if isinstance(x, mpmath.mpc):
        if x.imag != 0:
            return None
        x = x.real
    return x if mpmath.isfinite(x) else None


def finite_value(expr, env: Mapping):
    """The value of ``expr`` at ``env`` at 40 digits, or None when it is not a finite real."""
    try:
        with mpmath.workdps(40):
            return finite_real(mp_value(expr, env))
    except _EVAL_ERRORS:
        return None


def extended_value(expr, env: Mapping):
    """The value of ``expr`` at ``env`` at 40 digits as an extended real (+-oo kept), or None
    when it is complex, nan or cannot be evaluated."""
    try:
        with mpmath.workdps(40):
            x = mp_value(expr, env)
    except _EVAL_ERRORS:
        return None
    if isinstance(x, mpmath.mpc):
        if x.imag != 0:
            return None
        x = x.real
    return None if mpmath.isnan(x) else x


def compare(lhs, rhs, env: Mapping, strict: bool = False) -> tuple[bool | None, object, object]:
    """(lhs <= rhs, lhs value, rhs value) at 40 digits: False where a side is not a real number
    (or both are the same infinity); sides of different signs, one of them exactly 0, or apart by
    more than 10^-25 relative are decided from their 40-digit values (``decide_le``'s tolerance is
    absolute below 1: a tiny positive number against 0 would fall to exact arithmetic, at
    3^(10^9) slowly); closer sides by ``decide_le``; None where even that cannot decide."""
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
        return decide_le(lhs, rhs, env, strict=strict), x, y
    except ArithmeticError:
        return None, x, y
    except _EVAL_ERRORS:
        return False, x, y


def _short(expr, limit: int = 120) -> str:
    try:
        text = str(expr)
    except ValueError:  # an integer too long to print
        return "a formula"
    return text if len(text) <= limit else text[:limit] + " ..."


class Undecidable(ArithmeticError):
    """No precision and no exact computation settles the sign of a comparison."""


def real_le(lhs, rhs, env: Mapping, strict: bool = False) -> bool:
    """``compare``'s decision as a bool; raises ``Undecidable`` where it has none, so that a tier
    stops undecided there instead of reading the comparison as a violation."""
    ok = compare(lhs, rhs, env, strict)[0]
    if ok is None:
        raise Undecidable(f"cannot decide the sign of {_short(rhs)} - ({_short(lhs)}) at "
                          f"{', '.join(sorted(env))} (no precision settles it)")
    return ok


def _le_form(expr) -> tuple[sympy.Expr, sympy.Expr, bool] | None:
    """A relation as (lhs, rhs, strict) with lhs <= rhs (< if strict); None for = and !=."""
    if not isinstance(expr, sympy.core.relational.Relational) or \
            isinstance(expr, (sympy.Eq, sympy.Ne)):
        return None
    lhs, rhs = expr.lhs, expr.rhs
    if isinstance(expr, (sympy.GreaterThan, sympy.StrictGreaterThan)):
        lhs, rhs = rhs, lhs
    return lhs, rhs, isinstance(expr, (sympy.StrictLessThan, sympy.StrictGreaterThan))


def _condition(expr, env: Mapping, relation: Callable) -> bool:
    """A condition (True/False, a relation, a conjunction / disjunction of them) with each
    relation decided by ``relation(expr, env)``."""
    if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
        return bool(expr)
    if isinstance(expr, (sympy.And, sympy.Or)):
        parts = (_condition(a, env, relation) for a in expr.args)
        return all(parts) if isinstance(expr, sympy.And) else any(parts)
    return relation(expr, env)


def _holds_relation(expr, env: Mapping) -> bool:
    form = _le_form(expr)
    return form is not None and compare(form[0], form[1], env, strict=form[2])[0] is True


def holds(expr, env: Mapping) -> bool:
    """A named condition (a relation, or a conjunction / disjunction of them) at exact values by
    ``compare``; False where a relation is not between real numbers or no precision settles it
    (it admits nothing there)."""
    return _condition(expr, env, _holds_relation)


def _digits_relation(digits: int) -> Callable:
    def relation(expr, env: Mapping) -> bool:
        form = _le_form(expr)
        if form is None:
            return False
        with mpmath.workdps(digits):
            x, y = value(form[0], env), value(form[1], env)
            return bool(mpmath.isfinite(x) and mpmath.isfinite(y) and x <= y)
    return relation


def holds_at_digits(expr, env: Mapping, digits: int = 60) -> bool:
    """A named condition at ``digits``-digit values, strict relations read as <= (fast, for a
    bisection whose end point is then checked by ``holds``)."""
    return _condition(expr, env, _digits_relation(digits))


def _decide_relation(expr, env: Mapping) -> bool:
    lhs, rhs = expr.lhs, expr.rhs
    if isinstance(expr, (sympy.GreaterThan, sympy.StrictGreaterThan)):
        lhs, rhs = rhs, lhs
    return decide_le(lhs, rhs, env, strict=isinstance(expr, (sympy.StrictLessThan,
                                                             sympy.StrictGreaterThan)))


def decide(expr, env: Mapping) -> bool:
    """A named condition at exact values by ``decide_le`` itself: raises (TypeError,
    ArithmeticError) where a side is not a real number or no precision settles the sign, for a
    caller whose tier must stop there rather than read the point as not admitted."""
    return _condition(expr, env, _decide_relation)


def value(expr, env: Mapping):
    """``mp_value`` at the caller's precision, nan where the formula is not a real number there
    (a complex power, a division by zero): every comparison with it fails."""
    try:
        v = mp_value(expr, env)
    except _EVAL_ERRORS:
        return mpmath.nan
    if isinstance(v, (mpmath.mpc, complex)):
        return mpmath.mpf(v.real) if v.imag == 0 else mpmath.nan
    try:  # a constant formula gives an int or a float
        return v if isinstance(v, mpmath.mpf) else mpmath.mpf(v)
    except (TypeError, ValueError):
        return mpmath.nan


def digits_text(x, digits: int = 40) -> str:
    """An exact number (hundreds of digits at n = 10^100) to ``digits`` significant digits; the
    exact inputs next to it reproduce it."""
    with mpmath.workdps(digits + 10):
        return mpmath.nstr(mpf(x), digits)


def size_text(n: int) -> str:
    """A size as a reader writes it: 10^k for a power of ten, else its digits."""
    k = len(str(n)) - 1
    return f"10^{k}" if n == 10 ** k else str(n)


def relation_values(expr, env: Mapping) -> list[str]:
    """Each relation of a (conjunction of) condition(s) with both sides to 6 digits."""
    parts = expr.args if isinstance(expr, sympy.And) else [expr]
    out = []
    with mpmath.workdps(30):
        for r in parts:
            if hasattr(r, "lhs"):
                out.append(f"{mpmath.nstr(value(r.lhs, env), 6)} {r.rel_op} "
                           f"{mpmath.nstr(value(r.rhs, env), 6)}")
    return out
