"""Trend findings for figure claims: a sequence of values indexed by a size (loops L, heads H,
the dictionary size K, the layer i) that the paper says decreases, increases, is flat, or grows
linearly.

- Exact values (int, Fraction, sympy numbers, mpmath floats) are compared exactly, in their own
  arithmetic; a failure names the first violating step with its two values.
- Float values without standard errors (trained weights, a derived float) are compared as they
  are, within a stated relative tolerance.
- Estimates (Monte Carlo means, means over restarts) carry standard errors: a step decides
  "increases" / "decreases" only where its difference exceeds z standard errors of the
  difference; otherwise it is undecided, never a pass by default.
Non-finite values, and floats that underflowed (both below the float's resolution), decide
nothing.  Each check returns a ``verify.evidence.Finding`` with the numbers a reader needs.

Kinds: ``monotone`` (strictly / weakly decreasing or increasing, or eventually, from an index),
``flat`` (within a relative band of a reference, with the CI), ``linear_slope`` (a least-squares
slope with its CI against a derived slope), and, for exact expressions, ``exact_linear`` (a
named formula with one free slope equals a derived expression identically, both slopes > 0;
built from ``fit_slope`` and ``positive_at``).  ``z`` is the caller's critical value, with its
multiplicity correction (``moments.montecarlo.z_critical(level, comparisons)``)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Mapping, Sequence

import mpmath
import numpy as np
import sympy

from verify.evidence import Finding, resolution

Direction = Literal["decreasing", "increasing"]


@dataclass(frozen=True)
class Indexed:
    """One curve of a figure: ``values[i]`` at the size ``index[i]`` (named ``name`` as the paper
    writes it, "L_test"); ``se`` the standard errors of estimates (None: exact values or floats
    taken as they are); ``at`` the curve's other coordinates ({"n": 20}), repeated in a
    counterexample."""

    index: Sequence[Any]
    values: Sequence[Any]
    name: str = "index"
    se: Sequence[float] | None = None
    at: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.index) != len(self.values):
            raise ValueError(f"{len(self.index)} indices for {len(self.values)} values")
        if self.se is not None and len(self.se) != len(self.values):
            raise ValueError(f"{len(self.se)} standard errors for {len(self.values)} values")


@dataclass(frozen=True)
class Step:
    """The step from ``index[i]`` to ``index[i + 1]``: ``ok`` True (it goes the stated way),
    False (it goes the other way: a violation), None (undecided, ``why``); ``decided`` False for
    a step before the index a trend is claimed from (reported, not compared)."""

    before_index: Any
    after_index: Any
    before: Any
    after: Any
    difference: Any
    ok: bool | None
    why: str = ""
    z: float | None = None
    decided: bool = True


_EXACT = (int, Fraction, sympy.Basic, mpmath.mpf)


def _is_exact(v: Any) -> bool:
    return isinstance(v, _EXACT) and not isinstance(v, bool)


def _finite(v: Any) -> bool:
    """Whether ``v`` is a finite real number (sympy: not nan/zoo/oo; floats: np.isfinite)."""
    if isinstance(v, sympy.Basic):
        return bool(v.is_number and v.is_finite and v.is_real is not False
                    and not v.has(sympy.nan, sympy.zoo))
    if isinstance(v, mpmath.mpf):
        return bool(mpmath.isfinite(v))
    try:
        return bool(np.isfinite(float(v)))
    except (TypeError, ValueError, OverflowError):
        return False


def shown(v: Any, digits: int = 30) -> Any:
    """A value for evidence: exact numbers as a ``digits``-digit decimal string (an exact
    rational at 60-digit inputs is thousands of digits long), integers as integers, floats as
    floats."""
    if isinstance(v, (bool, str)) or v is None:
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, Fraction):
        v = sympy.Rational(v.numerator, v.denominator)
    if isinstance(v, mpmath.mpf):
        return mpmath.nstr(v, digits)
    if isinstance(v, sympy.Basic):
        if v.is_Integer:
            return int(v)
        return str(sympy.N(v, digits)) if v.is_number else str(v)
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return str(v)


def brief(v: Any) -> str:
    """A value in a sentence: three significant digits (exact values included)."""
    x = shown(v, 3)
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _sign(direction: Direction) -> int:
    if direction not in ("decreasing", "increasing"):
        raise ValueError(f"direction {direction!r} is neither 'decreasing' nor 'increasing'")
    return 1 if direction == "increasing" else -1


def step_verdict(before: Any, after: Any, direction: Direction, strict: bool = True,
                 rel_tol: float = 0.0, se: tuple[float, float] | None = None,
                 z: float = 3.0) -> tuple[bool | None, str, float | None]:
    """(ok, why, z-score) of one step ``before -> after`` of a ``direction`` trend.  Exact values:
    exactly (``rel_tol`` must be 0); floats: a step the wrong way by more than ``rel_tol``
    |before| is a violation, and ``strict`` needs the right way by more than that; estimates
    (``se`` of the two values): the difference over its standard error decides beyond ``z``
    either way, and is undecided within it (for a weak trend as for a strict one)."""
    s = _sign(direction)
    if not (_finite(before) and _finite(after)):
        return None, f"a value is not finite ({shown(before)} -> {shown(after)})", None
    if se is not None:
        sd = math.hypot(float(se[0]), float(se[1]))
        diff = float(after) - float(before)
        if not (math.isfinite(sd) and sd > 0):
            return None, "the standard error of the difference is not a positive number", None
        score = s * diff / sd
        if score > z:
            return True, "", score
        if score < -z:
            return False, "", score
        return None, (f"the step is within {z:.3g} standard errors ({score:+.3g}): the "
                      f"estimates do not tell its direction"), score
    if _is_exact(before) and _is_exact(after):
        if rel_tol:
            raise ValueError("exact values are compared exactly: rel_tol must be 0")
        gap = s * (after - before)  # > 0: the right way
        return bool(gap > 0) if strict else bool(gap >= 0), "", None
    a, b = float(before), float(after)
    tiny = resolution()
    if max(abs(a), abs(b)) < tiny:
        return None, (f"both values lie below the float's resolution {tiny:.3g} (they "
                      f"underflowed): the step says nothing"), None
    gap, allow = s * (b - a), rel_tol * abs(a)
    if gap < -allow:
        return False, "", None
    return (gap > allow if strict else True), "", None


def steps(seq: Indexed, direction: Direction, strict: bool = True, start: Any = None,
          rel_tol: float = 0.0, z: float = 3.0) -> list[Step]:
    """Every step of ``seq`` judged (``step_verdict``); steps from an index below ``start``
    (eventually monotone: the trend is claimed from ``start`` on) are reported, not decided."""
    out = []
    for i in range(len(seq.values) - 1):
        b, a = seq.values[i], seq.values[i + 1]
        se = None if seq.se is None else (seq.se[i], seq.se[i + 1])
        ok, why, score = step_verdict(b, a, direction, strict, rel_tol, se, z)
        try:
            diff = a - b
        except TypeError:
            diff = None
        decided = start is None or seq.index[i] >= start
        out.append(Step(seq.index[i], seq.index[i + 1], b, a, diff, ok if decided else None,
                        why if decided else f"before {seq.name} = {start}: not claimed",
                        score, decided))
    return out


def first_violation(seq: Indexed, direction: Direction, strict: bool = True, start: Any = None,
                    rel_tol: float = 0.0, z: float = 3.0) -> Step | None:
    """The first decided step of ``seq`` that goes against ``direction``, or None."""
    return next((s for s in steps(seq, direction, strict, start, rel_tol, z)
                 if s.ok is False), None)


def is_monotone(values: Sequence[Any], direction: Direction, strict: bool = True,
                rel_tol: float = 0.0) -> bool | None:
    """Whether ``values`` (taken as they are) go the ``direction`` way at every step: True,
    False, or None where a step is undecided (non-finite, underflowed)."""
    found = [s.ok for s in steps(Indexed(range(len(values)), list(values)), direction, strict,
                                 rel_tol=rel_tol)]
    return False if False in found else None if None in found else True


def _words(direction: Direction, strict: bool) -> str:
    return ("strictly " if strict else "weakly ") + direction


def monotone(name: str, curves: Sequence[Indexed], direction: Direction, strict: bool = True,
             start: Any = None, rel_tol: float = 0.0, z: float = 3.0,
             evidence: Mapping[str, Any] | None = None, reason: str = "") -> Finding:
    """Each curve goes the ``direction`` way in its index (from ``start`` on, if given).  Fails
    at the first violating step (the counterexample: the curve's ``at``, the two indices, the
    two values and their difference, and z for estimates); undecided where a step could not be
    decided and none failed; ``reason`` (or a default) explains a failure, formatted with
    ``name``, ``previous``, ``index`` (the step's indices), ``before`` and ``after`` (its values)."""
    rows, bad, undecided, n = [], None, [], 0
    for c in curves:
        judged = steps(c, direction, strict, start, rel_tol, z)
        n += sum(s.decided for s in judged)
        rows.append({**c.at, c.name: list(c.index), "values": [shown(v) for v in c.values],
                     "differences": [shown(s.difference) for s in judged],
                     **({"se": [float(x) for x in c.se]} if c.se is not None else {}),
                     **({"z": [s.z for s in judged]} if c.se is not None else {})})
        for s in judged:
            if s.ok is False and bad is None:
                bad = {**c.at, f"previous_{c.name}": s.before_index, c.name: s.after_index,
                       "previous_value": shown(s.before), "value": shown(s.after),
                       "difference": shown(s.difference), **({"z": s.z} if s.z is not None else {})}
                why = (reason or "the values go against the trend from {name} = {previous} "
                       "to {index} ({before} -> {after})").format(
                    name=c.name, previous=s.before_index, index=s.after_index,
                    before=brief(s.before), after=brief(s.after))
            elif s.ok is None and s.decided:
                undecided.append(f"{c.name} = {s.before_index} -> {s.after_index}: {s.why}")
    ev = {**dict(evidence or {}), "trend": _words(direction, strict)
          + (f" from {curves[0].name if curves else 'index'} = {start}" if start is not None
             else ""), "curves": rows,
          **({"rel_tol": rel_tol} if rel_tol else {}),
          **({"z": z} if any(c.se is not None for c in curves) else {})}
    if bad is not None:
        return Finding(name, False, ev, bad, why)
    if undecided:
        return Finding(name, None, ev, reason="undecided steps: " + "; ".join(undecided[:3])
                       + (f" (and {len(undecided) - 3} more)" if len(undecided) > 3 else ""))
    if n == 0:  # a trend over no step is no evidence
        return Finding(name, None, ev, reason="no step was compared (fewer than two values "
                                              "from the claimed index on)")
    return Finding(name, True, ev, summary=f"{_words(direction, strict)} at {n} steps"
                   + (f" of {len(curves)} curves" if len(curves) > 1 else ""))


def flat(name: str, curve: Indexed, reference: Any, band: float, z: float = 3.0,
         start: Any = None, evidence: Mapping[str, Any] | None = None) -> Finding:
    """From index ``start`` on (all of ``curve`` if None), every value lies within ``band``
    |reference| of ``reference``.  Exact values and floats are compared as they are; an
    estimate passes where its z-interval lies inside the band, fails where it lies outside,
    and is undecided otherwise."""
    if not _finite(reference) or not (math.isfinite(band) and band >= 0):
        return Finding(name, None, dict(evidence or {}),
                       reason=f"the reference {shown(reference)} or the band {band} is not finite")
    allow = band * abs(reference)
    rows, bad, undecided = [], None, []
    for i, (x, v) in enumerate(zip(curve.index, curve.values)):
        if start is not None and x < start:
            continue
        off = v - reference if _finite(v) else None
        se = float(curve.se[i]) if curve.se is not None else None
        if off is None or (se is not None and not math.isfinite(se)):
            ok = None
        elif se is not None:
            lo, hi = abs(float(off)) - z * se, abs(float(off)) + z * se
            ok = True if hi <= float(allow) else False if lo > float(allow) else None
        elif _is_exact(v) and _is_exact(reference):
            ok = bool(abs(off) <= allow)
        else:
            if max(abs(float(v)), abs(float(reference))) < resolution():
                ok = None
            else:
                ok = bool(abs(float(off)) <= float(allow))
        row = {curve.name: x, "value": shown(v), "offset": shown(off), "allowed": shown(allow),
               **({"se": se, "z": z} if se is not None else {})}
        rows.append(row)
        if ok is False and bad is None:
            bad, v_bad = {**curve.at, **row, "reference": shown(reference)}, v
        elif ok is None:
            undecided.append(f"{curve.name} = {x}")
    ev = {**dict(evidence or {}), "reference": shown(reference), "band": band,
          "from": start, "points": rows}
    if bad is not None:
        return Finding(name, False, ev, bad, f"{curve.name} = {bad[curve.name]}: "
                       f"{brief(v_bad)} lies off the band {band:g} around "
                       f"{brief(reference)}")
    if undecided:
        return Finding(name, None, ev, reason="not decided within the band at "
                       + ", ".join(undecided))
    if not rows:
        return Finding(name, None, ev, reason="no value at or after the index compared")
    return Finding(name, True, ev, summary=f"flat within {band:g} at {len(rows)} points")


def least_squares(x: Sequence[float], y: Sequence[float],
                  se: Sequence[float] | None = None) -> tuple[float, float, float]:
    """(slope, intercept, standard error of the slope) of y ~ a x + b: weighted by 1/se^2 when
    ``se`` is given (the slope's error from them), else ordinary (the error from the residuals,
    n - 2 degrees of freedom; 0 for an exact fit, nan with two points)."""
    X, Y = np.asarray(x, float), np.asarray(y, float)
    w = np.ones_like(X) if se is None else 1 / np.asarray(se, float) ** 2
    W = w.sum()
    xm, ym = (w * X).sum() / W, (w * Y).sum() / W
    sxx = (w * (X - xm) ** 2).sum()
    slope = float((w * (X - xm) * (Y - ym)).sum() / sxx)
    icpt = float(ym - slope * xm)
    if se is not None:
        return slope, icpt, float(math.sqrt(1 / sxx))
    dof = len(X) - 2
    resid = Y - (slope * X + icpt)
    s2 = float((resid ** 2).sum() / dof) if dof > 0 else math.nan
    return slope, icpt, float(math.sqrt(s2 / sxx)) if sxx > 0 else math.nan


def linear_slope(name: str, curve: Indexed, derived: float, z: float = 3.0,
                 evidence: Mapping[str, Any] | None = None) -> Finding:
    """The curve grows linearly with the derived slope: the least-squares slope's z-interval
    (weighted by the estimates' standard errors, or from the residuals) contains ``derived``.
    An interval that cannot be formed (non-finite values, two points without standard errors,
    no spread in the index) decides nothing."""
    vals = [float(v) if _finite(v) else math.nan for v in curve.values]
    ev = {**dict(evidence or {}), curve.name: [shown(x) for x in curve.index],
          "values": [shown(v) for v in curve.values], "derived_slope": shown(derived), "z": z}
    if not all(map(math.isfinite, vals)) or not _finite(derived) or len(vals) < 2 or len(
            set(map(float, curve.index))) < 2:
        return Finding(name, None, ev, reason="the values, the derived slope or the index "
                       "spread do not allow a finite least-squares slope")
    slope, icpt, err = least_squares([float(x) for x in curve.index], vals,
                                     None if curve.se is None else [float(s) for s in curve.se])
    ev.update({"slope": slope, "intercept": icpt, "slope_se": err})
    if not math.isfinite(err):
        return Finding(name, None, ev, reason="the slope's standard error is not finite (too "
                       "few points)")
    lo, hi = slope - z * err, slope + z * err
    ev["slope_ci"] = [lo, hi]
    ok = bool(lo <= float(derived) <= hi)
    return Finding(name, ok, ev, None if ok else {
        **curve.at, "slope": slope, "slope_ci": [lo, hi], "derived_slope": shown(derived)},
        "" if ok else f"the fitted slope {slope:.6g} (interval [{lo:.6g}, {hi:.6g}]) misses the "
                      f"derived slope {float(derived):.6g}",
        summary=f"slope {slope:.4g} +- {z * err:.2g} against the derived {float(derived):.4g}")


def fit_slope(formula: sympy.Expr, derived: sympy.Expr, slope: sympy.Symbol,
              at: Mapping) -> tuple[bool, dict, Any]:
    """Fit the named ``formula``'s free ``slope`` (matched by name) so that it equals ``derived``
    at the point ``at``, then compare the fitted formula with ``derived`` identically (a formula
    with no free slope is compared as it is).  (ok, evidence, the fitted slope or None)."""
    f = formula.xreplace({sympy.Symbol(slope.name): slope})
    sols = sympy.solve(sympy.Eq(f.subs(at), derived.subs(at)), slope) if f.has(slope) else [None]
    if not sols:
        return False, {"fit": "no slope matches at " + str(dict(at))}, None
    k = sols[0]
    fitted = f.subs(slope, k) if k is not None else f
    diff = sympy.cancel(fitted - derived)
    return diff == 0, {"fitted_slope": str(sympy.factor(k)) if k is not None else None,
                       "formula_fitted": str(sympy.factor(fitted)),
                       "derived": str(sympy.factor(derived)),
                       "difference": str(sympy.factor(diff))}, k


def positive_at(expr: Any, var: sympy.Symbol, points: Sequence[Any]) -> bool | None:
    """Whether ``expr`` is > 0 at every point ``var = p`` (exact): False at the first value
    <= 0; None where a value is not a finite real number (it decides nothing) and none failed."""
    undecided = False
    for p in points:
        v = sympy.sympify(expr).subs(var, p)
        if not _finite(v):
            undecided = True
            continue
        if not v > 0:
            return False
    return None if undecided else True


def all_of(oks: Sequence[bool | None]) -> bool | None:
    """The conjunction of decisions: False if any failed, else None if any is undecided."""
    return False if False in oks else None if None in oks else True


def exact_linear(formula: sympy.Expr, derived: sympy.Expr, growth: sympy.Expr,
                 slope: sympy.Symbol, at: Mapping, size: sympy.Symbol,
                 sizes: Sequence[Any]) -> tuple[bool | None, dict]:
    """Exact linear growth in ``growth`` (||w*||^2, beta^2): the derived slope k = derived /
    growth is > 0 at every size in ``sizes``, and the named ``formula``, its free
    ``slope`` fitted at ``at``, equals it identically, with a positive fitted slope (the paper
    says it grows).  (ok, evidence): ok False where the form or a sign fails, None where a sign
    could not be evaluated."""
    fits, info, k = fit_slope(formula, derived, slope, at)
    if not fits:
        return False, {**info, "slopes_positive": False}
    derived_slope = sympy.factor(sympy.cancel(derived / growth))
    pos = all_of([positive_at(derived_slope, size, sizes),
                  positive_at(derived_slope if k is None else k, size, sizes)])
    return pos, {**info, "derived_slope": str(derived_slope), "slopes_positive": pos}
