"""The helpers yang2024's claims share: formulas' type checks and values, Monte Carlo and exact
comparisons, the formula symbols, and the probes that compare a printed bound with the bound a
proof (or a search) gives.  The matrix-formula evaluator itself is ``proofs_checks.kit.matrices``."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy

from moments.montecarlo import estimate
from verify.claim import Context
from verify.evidence import Closest, Finding, Margin
from verify.formulas import FormulaSymbol

from ..kit.matrices import evaluate, shape_errors
from .setting import LEVEL, TAU_SYM


# ----------------------------------------------------------------------------------------------
# Formulas: type checks, exact and float values (evaluated by kit.matrices)
# ----------------------------------------------------------------------------------------------
def dimension_finding(ctx: Context, names: Sequence[str]) -> Finding:
    """A finding that fails when a named formula does not type-check (sizes symbolic)."""
    report, bad = {}, {}
    for name in names:
        errs = shape_errors(ctx.formulas[name])
        report[name] = "type-checks" if not errs else errs
        if errs:
            bad[name] = {"formula": ctx.formula_texts[name], "errors": errs}
    ok = not bad
    return Finding("dimensions", ok, {"formulas": report,
                                      "rule": "sums need equal shapes, products equal inner sizes; "
                                              "m, N, K, d, H are distinct symbols"},
                   None if ok else {"ill_typed": bad},
                   "" if ok else f"{', '.join(bad)} does not type-check: {next(iter(bad.values()))['errors'][0]}")


def float_value(expr: sympy.Basic, values: Mapping[str, Any]) -> Any:
    """Float64 value of a formula on numpy arrays (sizes, scalars and matrices from ``values``)."""
    return evaluate(expr, values, exact=False)


def exact_value(expr: sympy.Basic, values: Mapping[str, Any]) -> Any:
    """Exact value of a formula on sympy matrices (symbols such as tau may stay symbolic).

    A 1x1 result is returned as a scalar.
    """
    v = evaluate(expr, values, exact=True)
    if isinstance(v, sympy.MatrixBase) and v.shape == (1, 1):
        return v[0, 0]
    return v


def _safe_exact(expr, values):
    """Exact value, or (None, reason) when the formula cannot be evaluated (shape errors)."""
    try:
        return exact_value(expr, values), ""
    except Exception as exc:  # sympy raises ShapeError / TypeError for ill-typed formulas
        return None, f"{type(exc).__name__}: {exc}"


# ----------------------------------------------------------------------------------------------
# Small shared helpers
# ----------------------------------------------------------------------------------------------
def _rational_str(x) -> str:
    return str(sympy.nsimplify(x)) if isinstance(x, sympy.Basic) else str(x)


def _first_nonzero(M: sympy.Matrix) -> tuple[int, int] | None:
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if sympy.cancel(sympy.together(M[i, j])) != 0:
                return i, j
    return None


def _at_tau(x, tau=sympy.Rational(1, 4)):
    return sympy.nsimplify(sympy.sympify(x).subs(TAU_SYM, tau))


def _mc_compare(name: str, samples: np.ndarray, targets: Mapping[str, float], comparisons: int,
                decide: Sequence[str], extra: dict | None = None) -> Finding:
    """A Monte Carlo mean against exact values; the ``decide`` ones must lie in the interval."""
    est = estimate(samples)
    lo, hi = est.interval(LEVEL, comparisons)
    rows = {k: {"value": float(v), "z": est.z_score(float(v)),
                "inside": bool(est.agrees(float(v), LEVEL, comparisons))} for k, v in targets.items()}
    ok = all(rows[k]["inside"] for k in decide)
    ev = {"monte_carlo": est.as_dict(LEVEL, comparisons), "targets": rows, **(extra or {})}
    bad = [k for k in decide if not rows[k]["inside"]]
    return Finding(name, ok, ev, None if ok else {
        "monte_carlo_mean": est.mean, "ci": [lo, hi], **{k: rows[k]["value"] for k in bad}, **(extra or {})},
        "" if ok else f"{', '.join(bad)} = {rows[bad[0]]['value']:.6g} lies outside the Monte Carlo "
                      f"interval [{lo:.6g}, {hi:.6g}]")


def _is_zero_expr(x) -> bool:
    """Exact zero test; a non-zero value at a random rational point settles it quickly."""
    x = sympy.expand(x)
    if x == 0:
        return True
    syms = sorted(x.free_symbols, key=str)
    for seed in (1, 2):
        point = {s: sympy.Rational((7 * i + 3 * seed) % 11 - 5, 3 + (i + seed) % 4) for i, s in enumerate(syms)}
        if abs(sympy.N(x.subs(point), 30)) > 1e-20:
            return False
    return sympy.simplify(x) == 0


# ==============================================================================================
# Formula symbols shared by the claims (what each is: DEFINITIONS, definitions.py)
# ==============================================================================================
_m = FormulaSymbol("m")
_N = FormulaSymbol("N")
_K = FormulaSymbol("K")
_H = FormulaSymbol("H")
_d = FormulaSymbol("d")
_tau = FormulaSymbol("tau", positive=True)
_Z = FormulaSymbol("Z", "matrix", ("m", "N"))
_Zhat = FormulaSymbol("Zhat", "matrix", ("m", "K"))
_J = FormulaSymbol("J", "matrix", ("N", "K"))
_zk = FormulaSymbol("z_k", "matrix", ("m", "1"))
# one-hot: e_1 stands for every e_k (the formulas are equivariant under permuting the tokens)
_ek = FormulaSymbol("e_k", "matrix", ("N", "1"), equals="eye(N)[:, 0]")
# a prompt token's feature is a column of Z: z_k = Z e_k (k <= N)
_zk_prompt = FormulaSymbol("z_k", "matrix", ("m", "1"), equals="Z*e_k")
_DELTA_SIGN = "Lemma 5 uses delta_k only through ||Zbar delta_k||^2"
_ak = FormulaSymbol("Ahat_k", "matrix", ("N", "1"))
_Ahat = FormulaSymbol("Ahat", "matrix", ("N", "K"))
_y = FormulaSymbol("y", "matrix", ("N", "1"))

G_TEXT = "(Z.T*Z + m*tau*Identity(N))"
A_TEXT = f"Inverse{G_TEXT}*(Z.T*Zhat + m*tau*J)"


# ==============================================================================================
# Bounds: a printed bound against the bound its proof or a search gives (ratio >= 1)
# ==============================================================================================
Admits = Callable[[dict], bool]  # a claim's hypotheses on a probe point ({name: value})


def _worst_margin(measure: str, used, at: Mapping | None) -> Margin | None:
    """A search's largest ratio measured / allowed as a margin (None where it is not a number)."""
    near = Closest(measure)
    near.see(used, dict(at or {}))
    return near.margin


def _proof_margin(ratio: sympy.Expr, rng: np.random.Generator, smallest: dict | None = None,
                  admits: "Admits | None" = None) -> Margin | None:
    """How near a printed bound comes to the bound its proof gives: ratio = printed / proof, and
    the margin is proof / printed at the smallest ratio (exact when the ratio is a constant, else
    the smallest of _smallest_ratio's probes, or ``smallest`` where the caller has it)."""
    measure = "the proof's bound over the printed bound"
    ratio = _simplified(ratio)
    if not ratio.free_symbols:
        value = sympy.N(ratio, 30)
        return _worst_margin(measure, 1 / value, {}) if value.is_positive else None
    found = smallest if smallest is not None else _smallest_ratio(ratio, rng, admits=admits)
    low = found.get("ratio_float")
    return _worst_margin(measure, 1 / low, found.get("at")) if low and low > 0 else None


@lru_cache(maxsize=64)
def _simplified(ratio: sympy.Expr) -> sympy.Expr:
    """sympy.simplify, once per ratio: the probe and the margin of a chain both need it, and it is
    most of their cost (seconds for Thm 1's L^2)."""
    return sympy.simplify(ratio)


def _ratio_at_least_one(ratio: sympy.Expr, rng: np.random.Generator,
                        admits: Admits | None = None) -> tuple[bool, dict | None]:
    """Is ratio >= 1 for all positive values of its symbols?  Exact when constant, else probed at
    200 points spread over 12 orders of magnitude; a point with ratio < 1 is confirmed at the same
    rational point in 60-digit arithmetic (ratio < 1 - 10^-40)."""
    ratio = _simplified(ratio)
    if not ratio.free_symbols:
        if ratio.is_extended_real is False:  # a bound that is not a real number bounds nothing
            return False, {"ratio": str(ratio), "not_a_real_number": True}
        return bool(ratio >= 1), None if ratio >= 1 else {"ratio": str(ratio)}
    syms = sorted(ratio.free_symbols, key=str)
    f = sympy.lambdify(syms, ratio, "math")
    for _ in range(200):
        point = _probe_point(syms, rng, admits)
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
        if val < 1 - 1e-12:
            exact, r = _at_60_digits(ratio, syms, point)
            if r < 1 - 1e-40:
                return False, {"at": {str(k): str(v) for k, v in exact.items()},
                               "ratio": str(sympy.Float(r, 30)), "ratio_float": float(r)}
    return True, None


def _probe_point(syms: list, rng: np.random.Generator, admits: Admits | None = None,
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


def _at_60_digits(ratio: sympy.Expr, syms: list, point: dict) -> tuple[dict, Any]:
    """ratio at the rational point nearest ``point`` (denominators <= 10^12), in 60-digit mpmath
    arithmetic (sympy's exact comparison of nested radicals inside Max can take minutes)."""
    import mpmath

    exact = {s: sympy.Rational(v).limit_denominator(10 ** 12) for s, v in point.items()}
    g = sympy.lambdify(syms, ratio, "mpmath")
    with mpmath.workdps(60):
        return exact, g(*[mpmath.mpf(exact[s].p) / exact[s].q for s in syms])


def _smallest_ratio(ratio: sympy.Expr, rng: np.random.Generator, count: int = 400,
                    admits: Admits | None = None) -> dict:
    """The smallest value of ratio found at count points of _ratio_at_least_one's grid (60
    digits), among the points the claim's hypotheses ``admits``."""
    syms = sorted(ratio.free_symbols, key=str)
    f = sympy.lambdify(syms, ratio, "math")
    best = None
    for _ in range(count):
        point = _probe_point(syms, rng, admits)
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
    exact, r = _at_60_digits(ratio, syms, best[1])
    return {"at": {str(k): str(v) for k, v in exact.items()}, "ratio_float": float(r)}


def _in_symbols_of(expr: sympy.Expr, other: sympy.Expr) -> sympy.Expr:
    """expr with each free symbol replaced by the symbol of the same name in other (assumptions
    differ between the derivations' symbols and the formulas')."""
    by_name = {s.name: s for s in other.free_symbols}
    return expr.xreplace({s: by_name[s.name] for s in expr.free_symbols if s.name in by_name})
