"""Gaussian expectations inside the appendix proofs: eq. (17) (proof of Lemma A.2, x ~ N(0, I))
and the expectation over w* in the proof of Lemma A.3 (line 482, w* ~ N(0, Sigma*^{-1})).

The symbolic tiers take the expectation with the moment kernel (``moments.wick``, Isserlis) and
evaluate it at random rational instances; the numeric tiers compare the named formulas with
Monte Carlo means (99.99% normal intervals, seeds printed)."""
from __future__ import annotations

import numpy as np
import sympy

from moments.tensor import gaussian_vector, matrix, vector
from moments.wick import expectation
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, settle_le, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from ..kit import looped_icl as li
from .common import _A, _D, _SIGMA_STAR, _XQ, PAPER, _mat, _setting

GAUSS_SETTING = _setting({"n": 10, "d": 3, "L": 2})
_V = _mat("v", ("d", "1"))
_ALPHA = FormulaSymbol("alpha")
_MPROD = _mat("M_prod")
_Z = 3.89  # two-sided normal quantile at 1e-4


def _rational(rng, shape) -> sympy.Matrix:
    return sympy.Matrix(*shape, lambda i, j: sympy.Rational(int(rng.integers(-4, 5)),
                                                            int(rng.integers(1, 4))))


def _spd(rng, d: int) -> sympy.Matrix:
    B = _rational(rng, (d, d))
    return B * B.T + sympy.eye(d)


def _explicit(value, d: int) -> sympy.Matrix:
    v = sympy.sympify(value)
    if isinstance(v, sympy.MatrixBase):
        return sympy.Matrix(v)
    return sympy.Matrix([[v]])


def _exact_rows(F, cases, kernel: dict, instance) -> Finding:
    """cases: (formula name, expectation Poly, scalar factor name or None); instance yields
    (values, sizes, label)."""
    bad, count = None, 0
    for values, sizes, label in instance:
        for name, poly, factor in cases:
            # numpy object arrays of exact entries (the kernel adds a scalar trace to 0)
            env = {k: np.array(sympy.Matrix(values[v]).tolist(), dtype=object)
                   for k, v in kernel.items() if v in values}
            if "e" in poly.letters:  # a matrix-valued E[...] e, column by column
                cols = [np.array(sympy.eye(sizes["d"])[:, j].tolist(), dtype=object)
                        for j in range(sizes["d"])]
                derived = sympy.Matrix.hstack(*[sympy.Matrix(np.atleast_2d(
                    poly.evaluate({**env, "e": c}, sizes)).tolist()) for c in cols])
            else:
                derived = _explicit(sympy.Matrix(np.atleast_2d(poly.evaluate(env, sizes))
                                                 .tolist()), sizes["d"])
            if factor is not None:
                derived = derived * values[factor]
            named = _explicit(formula_value(F[name], {**values, **sizes}), sizes["d"])
            count += 1
            if (derived.shape != named.shape or sympy.simplify(derived - named)
                    != sympy.zeros(*derived.shape)) and bad is None:
                bad = {"formula": name, **label, "derived": str(derived.tolist()),
                       "named": str(named.tolist())}
    return Finding("exact_instances", bad is None, {"comparisons": count}, bad,
                   "" if bad is None else f"E[...] differs from the named {bad['formula']}")


def _mc_finding(pairs: list) -> Finding:
    """pairs: (label, samples (N, ...) array, named value): |mean - named| <= z se + 1e-12 (a
    test of samples drawn through ``Context.mc_rng``; a named value of the wrong shape fails
    outright)."""
    bad, undecided, worst, shaped = None, [], 0.0, True
    for label, samples, named in pairs:
        named = np.asarray(named, dtype=float)
        mean = samples.mean(axis=0)
        if mean.shape != named.shape:
            bad = bad or {**label, "mean_shape": mean.shape, "named_shape": named.shape}
            shaped = False
            continue
        se = samples.std(axis=0, ddof=1) / np.sqrt(len(samples))
        allowance = _Z * se + 1e-12 * (1 + np.abs(mean))
        ok, why = settle_le(np.abs(mean - named), allowance)
        worst = max(worst, float(np.max(np.abs(mean - named) / allowance)))  # evidence only
        if ok is None:
            undecided.append(why)
        elif not ok and bad is None:
            bad = {**label, "monte_carlo_mean": mean.tolist(), "standard_error": se.tolist(),
                   "named": named.tolist()}
    ok = False if bad is not None else (None if undecided or not pairs else True)  # a NaN anywhere decides nothing
    return Finding("monte_carlo", ok, {"comparisons": len(pairs), "worst_over_allowance": worst,
                                       "z": _Z}, bad,
                   (undecided[0] if undecided else "nothing compared") if ok is None else
                   "" if bad is None else "the Monte Carlo mean is outside its interval around "
                   "the named value", sampled=shaped)


# ----- eq. (17) ---------------------------------------------------------------------------------
def _eq17_cases():
    """(formula, E[...] by Isserlis, scalar factor outside the expectation or None)."""
    x, A, v = gaussian_vector("x"), matrix("A"), vector("v")
    return [("quad", expectation(x.T @ A @ x), None), ("xvx", expectation(x @ v.T @ x), None),
            ("xtvxt", expectation(x.T @ v @ x.T), None),
            # E[x alpha x^T] = alpha E[x x^T], column j = E[x x^T e_j] (the kernel gives an
            # identity-valued term no matrix, so the columns are taken one by one)
            ("xax", expectation(x @ x.T @ vector("e")), "alpha")]


def _eq17_instances(rng):
    for d in (1, 2, 3):
        alpha = sympy.Rational(int(rng.integers(-5, 6)), 3)
        values = {"A": _rational(rng, (d, d)), "v": _rational(rng, (d, 1)), "alpha": alpha}
        yield values, {"d": d}, {"d": d, **{k: str(v) for k, v in values.items()}}


def _eq17_symbolic(ctx: Context) -> TierResult:
    return combine([_exact_rows(ctx.formulas, _eq17_cases(),
                                {"A": "A", "v": "v"},
                                _eq17_instances(ctx.rng("eq17")))],
                   steps=[step("Isserlis", r"\mathbb E[x_ix_j]=\delta_{ij}",
                               "moments.wick.expectation of each product, x ~ N(0, I_d)")])


def _eq17_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    rng = ctx.mc_rng("eq17-mc")
    N = li.by_budget(ctx, 20000, 200000)
    pairs = []
    d = 3
    A, v, alpha = rng.standard_normal((d, d)), rng.standard_normal((d, 1)), 0.7
    x = rng.standard_normal((N, d, 1))
    xt = np.swapaxes(x, 1, 2)
    samples = {"quad": (xt @ A @ x)[:, 0, 0], "xvx": x @ np.swapaxes(v, 0, 1) @ x,
               "xtvxt": xt @ v @ xt, "xax": alpha * x @ xt}
    vals = {"A": sympy.Matrix(A), "v": sympy.Matrix(v), "alpha": alpha, "d": d}
    for name, s in samples.items():
        named = np.array(sympy.Matrix(_explicit(formula_value(F[name], vals), d)).tolist(),
                         dtype=float)
        pairs.append(({"formula": name, "d": d, "samples": N, "seed": ctx.seed},
                      s if s.ndim > 1 else s[:, None, None], named))
    return combine([_mc_finding(pairs)])


_EQ17_SYMBOLS = (_D, _A, _V, _ALPHA)
EQ17 = Claim(
    id="gatmiry2024.eq17", title="Eq. (17): second moments of x ~ N(0, I)", paper=PAPER,
    statement=r"For $x\sim\mathcal N(0,I)$: $\mathbb E[x^\top Ax]=\mathrm{tr}A$, "
              r"$\mathbb E[xv^\top x]=v$, $\mathbb E[x^\top vx^\top]=v^\top$, "
              r"$\mathbb E[x\alpha x^\top]=\alpha I$.",
    assumptions=("x ~ N(0, I_d)", "A, v, alpha fixed"),
    formulas=(NamedFormula("quad", "trace(A)", _EQ17_SYMBOLS, equation="(17)",
                           description="E[x^T A x]"),
              NamedFormula("xvx", "v", _EQ17_SYMBOLS, equation="(17)", shape=("d", "1"),
                           description="E[x v^T x]"),
              NamedFormula("xtvxt", "v.T", _EQ17_SYMBOLS, equation="(17)", shape=("1", "d"),
                           description="E[x^T v x^T]"),
              NamedFormula("xax", "alpha*Identity(d)", _EQ17_SYMBOLS, equation="(17)",
                           shape=("d", "d"), description="E[x alpha x^T]")),
    checks={"symbolic": _eq17_symbolic, "numeric": _eq17_numeric}, setting=GAUSS_SETTING,
)


# ----- line 482 ---------------------------------------------------------------------------------
def _a3_case():
    w = gaussian_vector("w", cov=matrix("Sinv", symmetric=True))
    M, x = matrix("M"), vector("x")
    return [("w_moment", expectation((w.T @ M @ x) @ (w.T @ M @ x)), None)]


def _a3_instances(rng):
    for d in (2, 3):
        S, M, x = _spd(rng, d), _rational(rng, (d, d)), _rational(rng, (d, 1))
        yield ({"Sigma_star": S, "Sinv": S.inv(), "M_prod": M, "x_q": x}, {"d": d},
               {"d": d, "Sigma_star": str(S.tolist()), "M_prod": str(M.tolist()),
                "x_q": str(x.T.tolist())})


def _a3_symbolic(ctx: Context) -> TierResult:
    return combine([_exact_rows(ctx.formulas, _a3_case(), {"Sinv": "Sinv", "M": "M_prod",
                                                           "x": "x_q"},
                                _a3_instances(ctx.rng("a3-w")))],
                   steps=[step("Expectation over w*", r"\mathbb E_w[(w^\top Mx_q)^2]=x_q^\top "
                               r"M^\top\Sigma^{*-1}Mx_q", "moments.wick, w* ~ N(0, Sigma*^{-1}); "
                               "M non-symmetric (a product of I - Sigma A^(i))")])


def _a3_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    rng = ctx.mc_rng("a3-mc")
    N = li.by_budget(ctx, 20000, 200000)
    pairs = []
    for d in (2, 3):
        B = rng.standard_normal((d, d))
        S = B @ B.T + np.eye(d)
        M, x = rng.standard_normal((d, d)), rng.standard_normal((d, 1))
        w = rng.multivariate_normal(np.zeros(d), np.linalg.inv(S), size=N)
        samples = ((w @ M @ x)[:, 0] ** 2)[:, None, None]
        named = np.array(_explicit(formula_value(F["w_moment"], {
            "Sigma_star": sympy.Matrix(S), "M_prod": sympy.Matrix(M), "x_q": sympy.Matrix(x),
            "d": d}), d).tolist(), dtype=float)
        pairs.append(({"d": d, "samples": N, "seed": ctx.seed}, samples, named))
    return combine([_mc_finding(pairs)])


LEMMA_A3_W_EXPECTATION = Claim(
    id="gatmiry2024.lemma_a3_w_expectation",
    title="Proof of Lemma A.3 (line 482): the expectation over w*", paper=PAPER,
    statement=r"$\mathbb E_{w^*}[(w^{*\top}\prod_{i=0}^{L-1}(I-\Sigma A^{(i)})x_q)^2]=x_q^\top"
              r"(\prod_{i=0}^{L-1}(I-\Sigma A^{(i)}))^2x_q$.",
    assumptions=("w* ~ N(0, Sigma*^{-1}) independent of X, x_q",
                 "M_prod = prod_i (I - Sigma A^(i)): any d x d matrix (not symmetric)"),
    formulas=(NamedFormula("w_moment", "x_q.T*M_prod*M_prod*x_q", (_D, _XQ, _MPROD, _SIGMA_STAR),
                           equation="proof of Lemma A.3", shape=("1", "1"),
                           description="E_w[(w*^T M x_q)^2]"),),
    checks={"symbolic": _a3_symbolic, "numeric": _a3_numeric}, setting=GAUSS_SETTING,
    correction=Correction(
        description="x_q^T M^T Sigma*^{-1} M x_q",
        reason="E[w* w*^T] = Sigma*^{-1}, and M = prod (I - Sigma A^(i)) is not symmetric: "
               "E_w[(w*^T M x_q)^2] = x_q^T M^T Sigma*^{-1} M x_q (Lemma A.3's correction, the "
               "outer Sigma*^{-1/2}, Sigma*^{1/2}, follows from it)",
        formulas={"w_moment": "x_q.T*M_prod.T*Inverse(Sigma_star)*M_prod*x_q"}),
)
