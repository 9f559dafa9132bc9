"""App. B.3, line 897: the two cases of E[w^T (sum_i x_i x_i[j]) (sum_k x_k x_k^T) w] added up.

For a fixed w and x_1, ..., x_C ~ N(0, I_d) independent, the expectation is the d-vector
E[X X^T w w^T X X^T e_j] (X = [x_1, ..., x_C], d x C).  Derived here with the moment kernel
(``moments.wick``: Isserlis over the data matrix, symbolic in C and d), and, separately, the two
cases the paper splits it into: the C(C-1) pairs i != k (E[x_1 x_1^T w w^T x_2 x_2^T e_j]) and the
C diagonal terms (E[x x^T w w^T x x^T e_j]).  Line 897 prints their sum as
C(C-1) w_j ||w||^2 + C(2 w_j w + ||w||^2 e_j): its first term is a scalar (w_j ||w||^2) where the
i != k case contributes the vector C(C-1) w_j w (line 875), so the display adds a scalar to
d-vectors.  The named formula keeps that: ||w||^2 is ``w.T*w`` (a 1 x 1 matrix: the parser takes no
scalar-plus-matrix sum), and the printed first term is written after the second (the parser types a
sum by its first term; the order of the terms is not the finding).

The symbolic tier type-checks the printed sum with the sizes symbolic and compares a well-typed
text with the derived sum exactly (C and w symbolic, d = 2, 3, j = 1 and j = d); the numeric tier
compares it with a Monte Carlo estimate of the expectation (confidence interval per coordinate).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy

from moments.montecarlo import Estimate, streaming_estimate, z_critical
from moments.tensor import gaussian_matrix, gaussian_vector, vector
from moments.wick import expectation
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from ..kit.matrices import evaluate, shape_errors
from .common import finish
from .setting import SETTING

PAPER = "xie2025"
DV = ("d", "1")
_D, _C = FormulaSymbol("d"), FormulaSymbol("C")
# w is App. B.3's w = w_hat - w*, held fixed here (the expectation is over the x_i only; the
# identity holds for every fixed w); e is e_j; w_j = w[j] (the paper's definitions)
_W = FormulaSymbol("w", "matrix", DV)
_E = FormulaSymbol("e", "matrix", DV)
_WJ = FormulaSymbol("w_j", equals="trace(e.T*w)")

PRINTED = "C*(2*w_j*w + e*w.T*w) + C*(C - 1)*w_j*w.T*w"
FIXED = "C*(2*w_j*w + e*w.T*w) + C*(C - 1)*w_j*w"

FORMULAS = (
    NamedFormula("case_sum", PRINTED, (_D, _C, _W, _WJ, _E),
                 "line 897's right-hand side: the i = k case C(2 w_j w + ||w||^2 e_j) plus the "
                 "printed i != k term C(C-1) w_j ||w||^2 (||w||^2 = w^T w; terms in the other "
                 "order)", "App. B.3, line 897", DV),
)

SIZES = ((2, 0), (2, 1), (3, 0), (3, 2))  # (d, j) with j 0-based: j = 1 and j = d
MC_D, MC_C, MC_J = 3, 4, 1  # the numeric tier's instance (j = 2)


# ----------------------------------------------------------------------------------------------
# The derivation: the expectation and its two cases, from the moment kernel
# ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def derived() -> dict:
    """E[X X^T w w^T X X^T e] (X: d x C with N(0, I) columns), and the two cases: the i = k term
    E[x x^T w w^T x x^T e] and the i != k term E[x1 x1^T w w^T x2 x2^T e], symbolic in C and d;
    ``probe``: a^T E[X X^T w w^T X X^T e] for a fixed a (its value at a = e_k is coordinate k)."""
    X = gaussian_matrix("X", "d", "C")
    w, e, a = vector("w", "d"), vector("e", "d"), vector("a", "d")
    total = expectation(X @ X.T @ w @ w.T @ X @ X.T @ e)
    probe = expectation(a.T @ X @ X.T @ w @ w.T @ X @ X.T @ e)
    x, x1, x2 = (gaussian_vector(n, "d") for n in ("x", "x1", "x2"))
    diag = expectation(x @ x.T @ w @ w.T @ x @ x.T @ e)
    cross = expectation(x1 @ x1.T @ w @ w.T @ x2 @ x2.T @ e)
    (C,) = total.coefficient_symbols()  # the kernel's size symbol of the context space
    by_cases = diag.scale(C) + cross.scale(C * (C - 1))
    return {"total": total, "probe": probe, "diag": diag, "cross": cross, "C": C,
            "cases_add_up": (total - by_cases).simplify().is_zero()}


def _exact_vector(w: sympy.Matrix, e: sympy.Matrix, C) -> sympy.Matrix:
    """The derived expectation at exact w, e_j (C may be a symbol), coordinate by coordinate
    (``Poly.evaluate`` adds scalar terms; a vector-valued polynomial's sum starts at 0)."""
    probe, d = derived()["probe"], w.shape[0]
    return sympy.Matrix([sympy.expand(probe.evaluate(
        {"w": w, "e": e, "a": sympy.Matrix([1 if i == k else 0 for i in range(d)])},
        {"C": C, "d": d}, exact=True)) for k in range(d)])


def _values(d: int, j: int, w, C) -> dict:
    e = sympy.Matrix([1 if k == j else 0 for k in range(d)])
    return {"d": d, "C": C, "w": w, "e": e, "w_j": w[j]}


# ----------------------------------------------------------------------------------------------
# Symbolic tier
# ----------------------------------------------------------------------------------------------
def _d1_reading(F, C) -> dict:
    """At d = 1 the printed shapes agree (1 x 1 + 1 x 1): the value there, against the derived
    one (information: the first term is cubic in w, the expectation quadratic)."""
    der = derived()
    u = sympy.Symbol("w1")
    vals = _values(1, 0, sympy.Matrix([u]), C)
    try:
        printed = sympy.expand(sympy.Matrix(formula_value(F["case_sum"], vals))[0, 0])
    except Exception as exc:  # noqa: BLE001 - a text that cannot be evaluated even at d = 1
        return {"error": f"{type(exc).__name__}: {exc}"}
    exact = _exact_vector(vals["w"], vals["e"], C)[0, 0]
    at = {C: 2, u: 2}
    return {"printed": str(sympy.factor(printed)), "derived": str(sympy.factor(exact)),
            "at_C=2_w=2": {"printed": str(printed.subs(at)), "derived": str(exact.subs(at))}}


def case_sum_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    der = derived()
    if not der["cases_add_up"]:  # the kernel's two cases must add up to its total
        raise RuntimeError("moment kernel: C(C-1) E[i != k] + C E[i = k] != E[total]")
    C = der["C"]
    derivation = {"E[X X^T w w^T X X^T e_j]": str(der["total"]),
                  "case_i=k (C terms)": str(der["diag"]),
                  "case_i!=k (C(C-1) terms)": str(der["cross"]),
                  "cases_add_up": True}
    errs = shape_errors(F["case_sum"])
    findings = [Finding("types", not errs, {"rule": "sums need equal shapes, products equal inner "
                                                    "sizes; d is a symbol (not 1)",
                                            "errors": errs},
                        None if not errs else {
                            "formula": ctx.formula_texts["case_sum"], "errors": errs,
                            "derived_sum": f"C*(C - 1)*[{der['cross']}] + C*[{der['diag']}] = "
                                           f"{der['total']}",
                            "even_at_d=1": _d1_reading(F, C)},
                        "" if not errs else "line 897 adds a scalar (a 1 x 1 term) to d-vectors: "
                                            + errs[0])]
    if not errs:
        rows, bad = [], None
        for d, j in SIZES:
            w = sympy.Matrix(sympy.symbols(f"w1:{d + 1}"))
            vals = _values(d, j, w, C)
            exact = _exact_vector(w, vals["e"], C)
            named = sympy.Matrix(formula_value(F["case_sum"], vals))
            same = named.shape == exact.shape and (named - exact).applyfunc(
                sympy.expand) == sympy.zeros(*exact.shape)
            rows.append({"d": d, "j": j + 1, "agree": same})
            if not same and bad is None:
                bad = {"d": d, "j": j + 1, "C": "symbolic", "w": "symbolic",
                       "derived": str(exact.applyfunc(sympy.factor).tolist()),
                       "named": str(named.applyfunc(sympy.factor).tolist())}
        findings.append(Finding("derived_sum", bad is None, {"instances": rows}, bad,
                                "" if bad is None else "the formula differs from the derived "
                                                       "expectation",
                                summary=f"exact at {len(rows)} (d, j), C and w symbolic"))
    steps = [
        step("The expectation", r"\mathbb E\Big[w^\top\big(\textstyle\sum_i x_ix_i[j]\big)"
             r"\big(\sum_k x_kx_k^\top\big)w\Big] = \mathbb E[XX^\top ww^\top XX^\top]e_j",
             "Isserlis over the data matrix X (moment kernel), C and d symbolic."),
        step("The two cases", r"C(C-1)\,\mathbb E[x_1x_1^\top ww^\top x_2x_2^\top]e_j + "
             r"C\,\mathbb E[xx^\top ww^\top xx^\top]e_j = C(C-1)\,w_jw + C(2w_jw + \|w\|^2e_j)",
             "Each case from the kernel; their sum equals the total above."),
        step("Line 897", r"C(C-1)\,w_j\|w\|^2 + C(2w_jw+\|w\|^2e_j)",
             "Type-checked with d symbolic; a well-typed text is compared exactly at d = 2, 3."),
    ]
    return finish(findings, {"derivation": derivation}, steps=steps)


# ----------------------------------------------------------------------------------------------
# Numeric tier: Monte Carlo of the expectation
# ----------------------------------------------------------------------------------------------
def case_sum_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    d, c, j = MC_D, MC_C, MC_J
    rng = ctx.rng("b3-case-sum")
    w = np.round(rng.uniform(-2, 2, d), 2)
    w[j] = w[j] if abs(w[j]) > 0.5 else 1.0  # w_j away from 0, so that w_j w shows
    e = np.eye(d)[:, j]
    vals = {"d": d, "C": c, "w": w[:, None], "e": e[:, None], "w_j": float(w[j])}
    instance = {"d": d, "C": c, "j": j + 1, "w": w.tolist(), "seed": ctx.seed}
    try:
        named = np.asarray(evaluate(F["case_sum"], vals, exact=False), dtype=float).reshape(-1)
        if named.shape != (d,):
            raise ValueError(f"the formula has {named.size} entries, not d = {d}")
    except Exception as exc:  # noqa: BLE001 - an ill-typed formula has no value
        why = f"{type(exc).__name__}: {exc}"
        return finish([Finding("monte_carlo", False, {"error": why}, {**instance, "error": why},
                               f"the formula cannot be evaluated at d = {d}: {why}")], instance)
    mc_rng = np.random.default_rng(ctx.mc_seed("b3-case-sum-mc"))

    def draw(k: int) -> np.ndarray:
        x = mc_rng.standard_normal((k, c, d))       # x_i ~ N(0, I_d), i = 1..C
        xw = x @ w                                   # (k, C): w^T x_i
        left = (xw * x[:, :, j]).sum(1)              # w^T sum_i x_i x_i[j]
        right = (x * xw[:, :, None]).sum(1)          # sum_k x_k x_k^T w
        return left[:, None] * right

    samples = ctx.budget.mc_samples
    mean, se = streaming_estimate(draw, samples)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(se)) and np.all(np.isfinite(named))):
        return finish([Finding("monte_carlo", None, {"mean": mean.tolist()},
                               reason="non-finite estimate or formula value")], instance)
    level, zc = 0.999, z_critical(0.999, d)
    rows, worst = [], None
    for a in range(d):
        est = Estimate(float(mean[a]), float(se[a]), samples)
        z = est.z_score(float(named[a]))
        rows.append({"coordinate": a + 1, "formula": float(named[a]),
                     **est.as_dict(level, d), "z": z})
        if worst is None or abs(z) > abs(worst["z"]):
            worst = rows[-1]
    ok = abs(worst["z"]) <= zc
    return finish([Finding("monte_carlo", ok, {"coordinates": rows, "z_critical": zc},
                           None if ok else {**instance, **worst},
                           "" if ok else f"coordinate {worst['coordinate']}: the formula "
                                         f"{worst['formula']:.4g} is outside the Monte Carlo "
                                         f"interval {worst['ci']}", sampled=True,
                           summary=f"{samples} prompts, {d} coordinates at level {level} "
                                   f"(Bonferroni)")], instance)


B3_CASE_SUM = Claim(
    id="xie2025.eq_b3_case_sum",
    title="Thm. 4's proof (App. B.3, line 897): the two cases of E[wᵀ (sum_i x_i x_i[j]) "
          "(sum_k x_k x_kᵀ) w] added",
    paper=PAPER,
    statement=(r"For fixed $w$ and $x_1,\dots,x_C\sim\mathcal N(0,I_d)$ independent, adding the "
               r"cases $i\ne k$ and $i=k$: $\mathbb E[w^\top(\sum_{i=1}^C x_ix_i[j])"
               r"(\sum_{k=1}^C x_kx_k^\top)w] = C(C-1)w_j\|w\|^2 + C(2w_jw + \|w\|^2e_j)$."),
    assumptions=("x_1, ..., x_C ~ N(0, I_d) independent; w fixed (the expectation is over the "
                 "x_i), w_j = w[j], e_j the j-th basis vector",
                 "symbolic: sizes symbolic for the types, exact at d = 2, 3 (j = 1, d), C and w "
                 "symbolic; numeric: Monte Carlo at d = 3, C = 4, j = 2"),
    formulas=FORMULAS,
    checks={"symbolic": case_sum_symbolic, "numeric": case_sum_numeric},
    setting=SETTING,
    correction=Correction(
        description="the i != k case contributes C(C-1) w_j w (a vector), not C(C-1) w_j ||w||^2",
        reason="E[w^T x_i x_i[j] x_k^T w x_k] = E[w^T x_i x_i[j]] E[x_k x_k^T w] = w_j w for "
               "i != k (line 875): the factor is the vector w, as the first member of line 879 "
               "writes; with it the sum is C(C+1) w_j w + C ||w||^2 e_j, line 901",
        formulas={"case_sum": FIXED}),
)
