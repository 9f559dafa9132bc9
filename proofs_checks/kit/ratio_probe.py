"""A printed bound against the bound its proof gives, as a ratio printed / proof that must be
at least 1 wherever the claim's hypotheses hold: exact where the ratio is a constant, else a
closest-approach probe over positive values of its symbols spread over 12 orders of magnitude
(integer symbols rounded), a point below 1 confirmed at the nearest rational point in 60-digit
arithmetic.  A probe's pass says no counterexample was found, not that the bound holds.

- ``ratio_at_least_one``: the probe, with the counterexample it found (None: nothing compared);
- ``probed``: whether a pass rests on the probe alone (no ``positivity`` certificate): a
  search, ``Finding(search=True)``;
- ``smallest_ratio`` / ``proof_margin``: the smallest ratio found, as the finding's margin;
- ``worst_margin``: one measured / allowed ratio as a ``Margin``;
- ``Admits``: a claim's hypotheses on a probe point ({name: value}); a bound is never probed
  outside them."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping

import mpmath
import numpy as np
import sympy

from verify.evidence import Closest, Margin

from .positivity import at_least_one

Admits = Callable[[dict], bool]  # a claim's hypotheses on a probe point ({name: value})


def worst_margin(measure: str, used, at: Mapping | None) -> Margin | None:
    """A search's largest ratio measured / allowed as a margin (None where it is not a number)."""
    near = Closest(measure)
    near.see(used, dict(at or {}))
    return near.margin


def proof_margin(ratio: sympy.Expr, rng: np.random.Generator, smallest: dict | None = None,
                 admits: "Admits | None" = None) -> Margin | None:
    """How near a printed bound comes to the bound its proof gives: ratio = printed / proof, and
    the margin is proof / printed at the smallest ratio (exact when the ratio is a constant, else
    the smallest of smallest_ratio's probes, or ``smallest`` where the caller has it)."""
    measure = "the proof's bound over the printed bound"
    ratio = simplified(ratio)
    if not ratio.free_symbols:
        value = sympy.N(ratio, 30)
        return worst_margin(measure, 1 / value, {}) if value.is_positive else None
    found = smallest if smallest is not None else smallest_ratio(ratio, rng, admits=admits)
    low = found.get("ratio_float")
    return worst_margin(measure, 1 / low, found.get("at")) if low and low > 0 else None


@lru_cache(maxsize=64)
def simplified(ratio: sympy.Expr) -> sympy.Expr:
    """sympy.simplify, once per ratio: the probe and the margin of a chain both need it, and it is
    most of their cost (seconds for Thm 1's L^2)."""
    return sympy.simplify(ratio)


def probed(ratio: sympy.Expr) -> bool:
    """Whether a pass of ``ratio_at_least_one`` on ``ratio`` rests on the probe alone: the ratio
    has symbols and ``positivity.at_least_one`` finds no certificate of ratio >= 1 on the
    probe's domain.  Such a pass is a search's "no counterexample found"
    (``Finding(search=True)``), which no verdict leans on as a proof."""
    r = simplified(ratio)
    return bool(r.free_symbols) and not at_least_one(r)


def ratio_at_least_one(ratio: sympy.Expr, rng: np.random.Generator,
                       admits: Admits | None = None) -> tuple[bool | None, dict | None]:
    """Is ratio >= 1 for all positive values of its symbols?  Exact when constant, else probed at
    200 points spread over 12 orders of magnitude; a point with ratio < 1 is confirmed at the same
    rational point in 60-digit arithmetic (ratio < 1 - 10^-40).  None (undecided, with why) where
    no probe point was compared: the hypotheses admitted none, or the ratio overflowed at all."""
    ratio = simplified(ratio)
    if not ratio.free_symbols:
        if ratio.is_extended_real is False:  # a bound that is not a real number bounds nothing
            return False, {"ratio": str(ratio), "not_a_real_number": True}
        return bool(ratio >= 1), None if ratio >= 1 else {"ratio": str(ratio)}
    syms = sorted(ratio.free_symbols, key=str)
    f = sympy.lambdify(syms, ratio, "math")
    compared = 0
    for _ in range(200):
        point = probe_point(syms, rng, admits)
        if point is None:
            break
        try:
            val = f(*[point[s] for s in syms])
        except (OverflowError, ZeroDivisionError):
            continue
        except ValueError:  # a math domain error: the square root of a negative number, say
            v = complex(ratio.subs(point).evalf(30))
            if abs(v.imag) > 1e-12 * abs(v):
                return False, {"at": {str(k): str(x) for k, x in point.items()}, "ratio": str(v),
                               "not_a_real_number": True}
            continue
        compared += 1
        if val < 1 - 1e-12:
            exact, r = at_60_digits(ratio, syms, point)
            if r < 1 - 1e-40:
                return False, {"at": {str(k): str(v) for k, v in exact.items()},
                               "ratio": str(sympy.Float(r, 30)), "ratio_float": float(r)}
    if not compared:  # nothing compared is no evidence that the ratio is >= 1
        return None, {"why": "no probe point was compared (the hypotheses admitted none, or the "
                             "ratio could not be evaluated at any)"}
    return True, None


def probe_point(syms: list, rng: np.random.Generator, admits: Admits | None = None,
                 tries: int = 100) -> dict | None:
    """A point of the probe grid: each symbol 10^{-6, -2, 0, 2, 6} times a factor in [0.5, 2],
    integer symbols rounded (at least 1); with ``admits``, a point that meets the claim's
    hypotheses (None if ``tries`` draws found none: a bound is never probed outside them)."""
    for _ in range(tries):
        point = {s: float(rng.choice([1e-6, 1e-2, 1.0, 1e2, 1e6])) * float(rng.uniform(0.5, 2.0))
                 for s in syms}
        point.update({s: float(max(1, round(point[s]))) for s in syms if s.is_integer})
        if admits is None or admits({str(k): v for k, v in point.items()}):
            return point
    return None


def at_60_digits(ratio: sympy.Expr, syms: list, point: dict) -> tuple[dict, Any]:
    """ratio at the rational point nearest ``point`` (denominators <= 10^12), in 60-digit mpmath
    arithmetic (sympy's exact comparison of nested radicals inside Max can take minutes)."""
    exact = {s: sympy.Rational(v).limit_denominator(10 ** 12) for s, v in point.items()}
    g = sympy.lambdify(syms, ratio, "mpmath")
    with mpmath.workdps(60):
        return exact, g(*[mpmath.mpf(exact[s].p) / exact[s].q for s in syms])


def smallest_ratio(ratio: sympy.Expr, rng: np.random.Generator, count: int = 400,
                    admits: Admits | None = None) -> dict:
    """The smallest value of ratio found at count points of ratio_at_least_one's grid (60
    digits), among the points the claim's hypotheses ``admits``."""
    syms = sorted(ratio.free_symbols, key=str)
    f = sympy.lambdify(syms, ratio, "math")
    best = None
    for _ in range(count):
        point = probe_point(syms, rng, admits)
        if point is None:
            break
        try:
            val = f(*[point[s] for s in syms])
        except (OverflowError, ZeroDivisionError, ValueError):
            continue
        if best is None or val < best[0]:
            best = (val, point)
    if best is None:
        return {}
    exact, r = at_60_digits(ratio, syms, best[1])
    return {"at": {str(k): str(v) for k, v in exact.items()}, "ratio_float": float(r)}
