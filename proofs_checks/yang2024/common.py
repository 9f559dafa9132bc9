"""The helpers yang2024's claims share: formulas' type checks and values, Monte Carlo and exact
comparisons, the formula symbols, and the probes that compare a printed bound with the bound a
proof (or a search) gives.  The matrix-formula evaluator itself is ``proofs_checks.kit.matrices``."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import sympy

from moments.montecarlo import estimate
from verify.claim import Context
from verify.evidence import Finding
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


def float_scalar(expr: sympy.Basic, values: Mapping[str, Any]) -> float:
    """Float64 value of a scalar (or 1x1) formula."""
    return float(np.asarray(float_value(expr, values)).reshape(-1)[0])


def error_finding(name: str, exc: Exception) -> Finding:
    """A failed finding for a formula that cannot be evaluated at concrete sizes (ill-typed)."""
    return Finding(name, False, {"error": str(exc)}, {"error": str(exc)}, str(exc))


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
    """A Monte Carlo mean against exact values; the ``decide`` ones must lie in the interval
    (a test of a sample drawn through ``Context.mc_seed``/``mc_rng``)."""
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
                      f"interval [{lo:.6g}, {hi:.6g}]", sampled=True)


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
_A = FormulaSymbol("A", "matrix", ("N", "K"))
_y = FormulaSymbol("y", "matrix", ("N", "1"))

G_TEXT = "(Z.T*Z + m*tau*Identity(N))"
A_TEXT = f"Inverse{G_TEXT}*(Z.T*Zhat + m*tau*J)"


def _in_symbols_of(expr: sympy.Expr, other: sympy.Expr) -> sympy.Expr:
    """expr with each free symbol replaced by the symbol of the same name in other (assumptions
    differ between the derivations' symbols and the formulas')."""
    by_name = {s.name: s for s in other.free_symbols}
    return expr.xreplace({s: by_name[s.name] for s in expr.free_symbols if s.name in by_name})
