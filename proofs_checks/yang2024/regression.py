"""yang2024 Lemma 4 and eqs. (26), (27): the regressions (24) and (25) are equivalent, the optimum's
noise-free limit (tau -> 0, N >= m), and the optimum as ridge regression."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy

from moments.poly import Poly
from moments.tensor import gaussian_matrix, matrix, vector
from moments.wick import canonical, expectation
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit.matrices import to_mat
from .setting import (ExactInstance, PAPER, SETTING, SIZE, TAU_SYM, _loss_steps, budget_and_paper_instances,
                      exact_instances, exact_optimum, float_quadratic, make_instance)
from .common import (A_TEXT, _A, _J, _K, _N, _Z, _Zhat, _first_nonzero, _m, _mc_compare, _safe_exact,
                     _tau, _y, dimension_finding, error_finding, float_scalar, float_value)
from .deterministic_loss import _compare_exact_matrix, _exact_matrix_values, _float_matrix_values


# ==============================================================================================
# Lemma 4: the equivalence of the regressions (24) and (25), eq. (32)
# ==============================================================================================
_lam = FormulaSymbol("lam", "matrix", ("m", "1"))
LEMMA4_FORMULAS = (
    NamedFormula("rhs", "(y - Z.T*lam).T*(y - Z.T*lam)/(2*N) + tau/2*lam.T*lam",
                 (_m, _N, _tau, _y, _Z, _lam), equation="(32)", shape=("1", "1"),
                 description="(1/2N) sum_i (y_i - lambda^T f(v_i))^2 + (tau/2)||lambda||^2"),
)


@lru_cache(maxsize=None)
def _lemma4_derived() -> Poly:
    """E_eps[(1/2N) sum_i (y_i - lambda^T(f(v_i) + eps_i))^2] with y, lambda fixed."""
    Ep = gaussian_matrix("Eps", "m", "N", latex="\\varepsilon/\\sqrt{\\tau}")
    Z = matrix("Z", "m", "N")
    lam = vector("lam", "m")
    y = vector("y", "N")
    r = y - (Z + Ep * sympy.sqrt(TAU_SYM)).T @ lam
    return expectation(r.T @ r).scale(1 / (2 * SIZE["N"])).simplify()


def _ridge_minimiser(reg) -> tuple[Poly, Poly]:
    """The objective (1/2N)||y - Z^T lambda||^2 + (reg/2)||lambda||^2 and its gradient in lambda."""
    Z = matrix("Z", "m", "N")
    lam = vector("lam", "m")
    y = vector("y", "N")
    r = y - Z.T @ lam
    obj = (canonical(r.T @ r).scale(1 / (2 * SIZE["N"])) + canonical(lam.T @ lam).scale(reg / 2)).simplify()
    return obj, obj.diff("lam").simplify()


def lemma4_symbolic(ctx: Context) -> TierResult:
    derived = _lemma4_derived()
    findings = [dimension_finding(ctx, ["rhs"])]
    try:
        paper = canonical(to_mat(ctx.formulas["rhs"])).simplify()
        diff = (paper - derived).simplify()
        ok = diff.is_zero()
        ce = None if ok else {"paper_minus_derived": str(diff), "derived": str(derived),
                              "paper": str(paper)}
        findings.append(Finding("expectation_identity", ok, {"derived": str(derived),
                                                             "paper": str(paper)}, ce,
                                "" if ok else "(32) differs from the derived expectation"))
    except NotImplementedError as exc:
        findings.append(Finding("expectation_identity", None, reason=str(exc)))
    obj25, grad25 = _ridge_minimiser(TAU_SYM)
    obj20, grad20 = _ridge_minimiser(SIZE["m"] * TAU_SYM / SIZE["N"])
    steps = [
        step("Expectation over the noise", r"\mathbb E_\varepsilon\Big[\frac1{2N}\|y-(Z+\varepsilon)^\top"
             r"\lambda\|^2\Big] = " + derived.latex(), "Wick with eps_i ~ N(0, tau I_m) i.i.d."),
        step("Ridge (25)", r"\nabla_\lambda = " + grad25.latex() + r"\ \Rightarrow\ \hat\lambda_\tau = "
             r"(ZZ^\top + N\tau I_m)^{-1}Zy", "the minimiser of (24), by (32)."),
        step("Ridge (20)", r"\nabla_\lambda = " + grad20.latex() + r"\ \Rightarrow\ \hat\lambda = "
             r"(ZZ^\top + m\tau I_m)^{-1}Zy", "eq. (67): the same ridge with tau replaced by m tau / N."),
    ]
    return combine(findings, {"derived": str(derived)}, steps=steps)


def lemma4_numeric(ctx: Context) -> TierResult:
    inst = make_instance(ctx)
    rng = ctx.mc_rng("lemma4")  # y, lambda and the sample: a redraw tests other ones
    Z = inst.dictionary.Z.numpy()
    y = rng.standard_normal((inst.N, 1))
    lam = rng.standard_normal((inst.m, 1))
    try:
        paper = float_scalar(ctx.formulas["rhs"], {"y": y, "Z": Z, "lam": lam, "m": inst.m, "N": inst.N,
                                                   "tau": inst.tau})
    except Exception as exc:  # ill-typed
        return combine([error_finding("monte_carlo", exc)])
    n = ctx.budget.mc_samples
    eps = math.sqrt(inst.tau) * rng.standard_normal((n, inst.m, inst.N))
    r = y.reshape(1, -1) - np.einsum("m,bmn->bn", lam.ravel(), Z[None] + eps)
    samples = (r ** 2).sum(-1) / (2 * inst.N)
    derived = float(_lemma4_derived().evaluate({"Z": Z, "y": y, "lam": lam},
                                                {"m": inst.m, "N": inst.N, "tau": inst.tau}))
    return combine([_mc_compare("monte_carlo", samples, {"paper": paper, "derived": derived}, 2,
                                ["paper", "derived"], {"instance": inst.as_dict(), "seed": ctx.seed})])


LEMMA4 = Claim(
    id="yang2024.lemma4",
    title="Equivalence of the regression problems (24) and (25) (Lemma 4, eq. (32))",
    paper=PAPER,
    statement=(r"$\mathbb E_\epsilon[\frac1{2N}\sum_i(y_i-\lambda^\top(f(v_i)+\epsilon_i))^2]="
               r"\frac1{2N}\sum_i(y_i-\lambda^\top f(v_i))^2+\frac\tau2\|\lambda\|_2^2$."),
    assumptions=("eps_i ~ N(0, tau I_m) i.i.d.; y and lambda fixed",),
    formulas=LEMMA4_FORMULAS,
    checks={"symbolic": lemma4_symbolic, "numeric": lemma4_numeric},
    setting=SETTING,
)



# ==============================================================================================
# Eq. (26): the noise-free limit tau = 0 with N >= m
# ==============================================================================================
PINV = "Transpose(Z)*Inverse(Z*Transpose(Z))"  # Z^dagger for a full-row-rank Z (N >= m)
EQ26_FORMULAS = (
    NamedFormula("A_limit", f"{PINV}*Zhat", (_m, _N, _K, _Z, _Zhat, _J), equation="Sec. 3.3",
                 shape=("N", "K"), description="'A becomes Z^dagger Zhat' when tau = 0 and N >= m "
                 "(Z^dagger = Z^T (Z Z^T)^{-1} for a full-row-rank Z)"),
    NamedFormula("labels", f"Transpose({PINV}*Zhat)*y", (_m, _N, _K, _Z, _Zhat, _y), equation="(26)",
                 shape=("K", "1"), description="y_k = <y, Z^dagger Zhat_{:,k}> for every token k, "
                                               "noise-free labels y = Z^T lambda"),
)
EQ26_CORRECTION = Correction(
    description="the tau -> 0 limit of A is (I_N, Z^dagger Z^Q) = Z^dagger Zhat + (I_N - Z^dagger Z) J",
    reason="for N > m, eps (Z^T Z + eps I)^{-1} tends to the projector I_N - Z^dagger Z onto the null "
           "space of Z, not to 0 (eq. (66) at tau = 0).  (26) itself holds: noise-free labels "
           "y = Z^T lambda are orthogonal to that null space",
    formulas={"A_limit": f"J + {PINV}*(Zhat - Z*J)"},
)


def eq26_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx, shapes=((2, 3), (2, 2)))   # N > m and N = m
    findings = [dimension_finding(ctx, ["A_limit", "labels"])]
    fail, rows, why = None, [], ""
    for inst in insts:
        if inst.Z.rank() < inst.m:
            continue
        Astar, _ = exact_optimum(inst)
        limit = Astar.applyfunc(lambda x: sympy.limit(x, TAU_SYM, 0, "+"))
        val, why = _safe_exact(F["A_limit"], _exact_matrix_values(inst))
        if val is None:
            break
        f = _compare_exact_matrix("A_limit_vs_derived", val, limit, inst, "the tau -> 0 limit of (34)")
        rows.append({"m": inst.m, "N": inst.N, "agree": f is None})
        if f and fail is None:
            f.counterexample["derived_limit"] = [[str(v) for v in r] for r in limit.tolist()]
            f.counterexample["paper_limit"] = [[str(v) for v in r] for r in sympy.Matrix(val).tolist()]
            fail = f
    if why and val is None:
        findings.append(Finding("A_limit_vs_derived", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(fail or Finding("A_limit_vs_derived", True, {"instances": rows}))
    # (26): noise-free labels are reproduced
    lam = sympy.Matrix(sympy.symbols("lam0:3")[:2])
    bad, rows = None, []
    for inst in insts:
        y = inst.Z.T * lam
        val, why = _safe_exact(F["labels"], {**_exact_matrix_values(inst), "y": y})
        if val is None:
            break
        truth = inst.Zhat.T * lam
        diff = (sympy.Matrix(val) - truth).applyfunc(sympy.cancel)
        ok = diff == sympy.zeros(inst.K, 1)
        rows.append({"m": inst.m, "N": inst.N, "agree": ok})
        if not ok and bad is None:
            i = _first_nonzero(diff)[0]
            bad = {"instance": inst.as_dict(), "token": i + 1, "paper": str(val[i]), "label": str(truth[i])}
    if val is None:
        findings.append(Finding("noise_free_labels", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(Finding("noise_free_labels", bad is None, {"instances": rows}, bad,
                                "" if bad is None else "(26) does not reproduce the noise-free labels"))
    steps = _loss_steps()[-2:] + [
        step("Limit", r"\lim_{\tau\to0^+} A = \lim_{\tau\to 0^+}(Z^\top Z+m\tau I_N)^{-1}(Z^\top\hat Z + "
             r"m\tau(I_N,0)) = (I_N,\ Z^\dagger Z^Q)",
             "Entrywise limits of the derived optimum (rational functions of tau), for N > m and "
             "N = m; for N > m the first block is I_N, not Z^dagger Z."),
        step("Noise-free labels", r"y = Z^\top\lambda\ \Rightarrow\ (Z^\dagger\hat Z)^\top y = "
             r"\hat Z^\top\lambda", "with a symbolic lambda."),
    ]
    return combine(findings, {"instances": [i.as_dict() for i in insts]}, steps=steps)


def eq26_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    sizes = dict(SETTING.resolve(ctx.budget.name, ctx.sizes))
    if sizes["N"] < sizes["m"]:
        sizes["m"], sizes["N"] = sizes["N"], sizes["m"]
    if sizes["N"] == sizes["m"]:
        sizes["N"] += 1
    sizes["K"] = max(sizes["K"], sizes["N"] + 1)
    findings = []
    for tau in (1e-4, 1e-6):
        inst = make_instance(ctx, "eq26", sizes, tau)
        fq = float_quadratic(inst)
        vals = _float_matrix_values(inst)
        try:
            lim = np.asarray(float_value(F["A_limit"], vals))
        except Exception as exc:  # ill-typed
            findings.append(error_finding(f"A_at_tau_{tau:g}", exc))
            continue
        err = float(np.abs(lim - fq.A).max())
        scale = max(1.0, float(np.abs(fq.A).max()))
        tol = 1e2 * tau * scale + 1e2 * float(np.linalg.cond(fq.G)) * np.finfo(float).eps * scale
        ok = bool(err <= tol)
        findings.append(Finding(f"A_at_tau_{tau:g}", ok, {
            "max_abs_difference": err, "tolerance": tol, "why_tolerance": "A(tau) - A(0) = O(tau), plus rounding of a solve with cond(Z^T Z + m tau I)",
            "sizes": dict(inst.sizes)},
            None if ok else {"instance": inst.as_dict(), "max_abs_difference": err,
                             "block": "prompt columns" if np.abs(lim - fq.A)[:, :inst.N].max() >= err
                             else "query columns"},
            "" if ok else f"A at tau = {tau:g} is {err:.3g} away from the claimed limit"))
    return combine(findings)


EQ26 = Claim(
    id="yang2024.eq26",
    title="Noise-free limit: A becomes Z† Ẑ and y_k = <y, Z† Ẑ_{:,k}> (eq. (26))",
    paper=PAPER,
    statement=(r"When $\tau=0$ and $N\ge m$, $A$ becomes $Z^\dagger\hat Z$, and the label of each "
               r"token is $y_k=\langle y,Z^\dagger\hat Z_{:,k}\rangle$ (26)."),
    assumptions=("tau -> 0+, N >= m, Z of full row rank m", "noise-free labels y = Z^T lambda"),
    formulas=EQ26_FORMULAS,
    checks={"symbolic": eq26_symbolic, "numeric": eq26_numeric},
    setting=SETTING,
    correction=EQ26_CORRECTION,
)

# ==============================================================================================
# Eq. (27) with (20), (22), (67): the optimum implements ridge regression
# ==============================================================================================
EQ27_FORMULAS = (
    NamedFormula("A", A_TEXT, (_m, _N, _K, _tau, _Z, _Zhat, _J), equation="(34)", shape=("N", "K"),
                 description="the optimal Ahat"),
    NamedFormula("lambda_hat", "Inverse(m*tau*Identity(m) + Z*Z.T)*Z*y", (_m, _N, _tau, _Z, _y),
                 equation="(67)", shape=("m", "1"), description="the minimiser of the ridge problem (20)"),
    NamedFormula("yhat_star", "Transpose(A)*y", (_N, _K, _A, _y), equation="(27)", shape=("K", "1"),
                 description="yhat*_k = <y, A_{:,k}>"),
)


def poly_minimiser(obj: Poly, Z: sympy.Matrix, y: sympy.Matrix, m: int, N: int, tau) -> sympy.Matrix:
    """The minimiser in lam of a derived objective quadratic in lam (a ridge), exactly: -H^{-1} g(0)."""
    ls = sympy.symbols(f"l0:{m}")
    val = sympy.expand(obj.evaluate({"Z": Z, "y": y, "lam": sympy.Matrix(ls)}, {"m": m, "N": N, "tau": tau},
                                    exact=True))
    Hs = sympy.hessian(val, ls)
    g0 = sympy.Matrix([sympy.diff(val, l) for l in ls]).subs({l: 0 for l in ls})
    return -(Hs.inv() * g0)


def _exact_ridge(inst: ExactInstance, y: sympy.Matrix, reg) -> sympy.Matrix:
    """The minimiser of the derived ridge objective (1/2N)||y - Z^T l||^2 + (reg/2)||l||^2."""
    return poly_minimiser(_ridge_minimiser(reg)[0], inst.Z, y, inst.m, inst.N, TAU_SYM).applyfunc(sympy.cancel)


def eq27_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx)
    findings = [dimension_finding(ctx, ["A", "lambda_hat", "yhat_star"])]
    fail_l, fail_y, why = None, None, ""
    for inst in insts:
        y = sympy.Matrix(sympy.symbols(f"y0:{inst.N}"))
        lam_derived = _exact_ridge(inst, y, SIZE["m"] * TAU_SYM / SIZE["N"])     # (20)
        vals = {**_exact_matrix_values(inst), "y": y}
        lam_paper, why = _safe_exact(F["lambda_hat"], vals)
        if lam_paper is None:
            break
        f = _compare_exact_matrix("lambda_hat_vs_ridge_20", lam_paper, lam_derived, inst, "(67)")
        fail_l = fail_l or f
        ystar = sympy.Matrix.vstack(y, inst.Zhat[:, inst.N:].T * lam_derived)   # (22)
        A, why = _safe_exact(F["A"], vals)
        if A is None:
            break
        yv, why = _safe_exact(F["yhat_star"], {**vals, "A": A})
        if yv is None:
            break
        f = _compare_exact_matrix("yhat_star_vs_22", yv if isinstance(yv, sympy.MatrixBase)
                                  else sympy.Matrix([yv]), ystar, inst, "(27)")
        fail_y = fail_y or f
    if why:
        findings.append(Finding("ridge", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(fail_l or Finding("lambda_hat_vs_ridge_20", True, {"instances": len(insts)}))
        findings.append(fail_y or Finding("yhat_star_vs_22", True, {"instances": len(insts)}))
    _, grad20 = _ridge_minimiser(SIZE["m"] * TAU_SYM / SIZE["N"])
    steps = [
        step("Ridge (20)", r"\nabla_\lambda\Big[\frac1{2N}\|y-Z^\top\lambda\|^2 + \frac{m\tau}{2N}"
             r"\|\lambda\|^2\Big] = " + grad20.latex(),
             "The derived gradient; solved exactly with symbolic y (tau symbolic)."),
        step("Prediction (22)", r"\hat y^\star = \begin{pmatrix} y \\ (Z^Q)^\top\hat\lambda\end{pmatrix}",
             "compared with A^T y, A from (34), entrywise as rational functions."),
    ]
    return combine(findings, {"instances": [i.as_dict() for i in insts]}, steps=steps)


def eq27_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings = []
    gen = ctx.rng("eq27")
    for tag, inst in budget_and_paper_instances(ctx).items():
        D = inst.dictionary
        Z, ZQ = D.Z.numpy(), D.ZQ.numpy()
        y = gen.standard_normal((inst.N, 1))
        vals = {**_float_matrix_values(inst), "y": y}
        try:
            lam = np.asarray(float_value(F["lambda_hat"], vals))
            A = np.asarray(float_value(F["A"], vals))
            ystar = np.asarray(float_value(F["yhat_star"], {**vals, "A": A})).reshape(-1)
        except Exception as exc:  # ill-typed
            findings.append(error_finding(tag, exc))
            continue
        # independent solves: ridge normal equations and the derived optimum
        lam_ref = np.linalg.lstsq(np.vstack([Z.T, np.sqrt(inst.m * inst.tau) * np.eye(inst.m)]),
                                  np.vstack([y, np.zeros((inst.m, 1))]), rcond=None)[0]
        ref = np.concatenate([y.ravel(), (ZQ.T @ lam_ref).ravel()])
        e1 = float(np.abs(lam - lam_ref).max() / np.abs(lam_ref).max())
        e2 = float(np.abs(ystar - ref).max() / np.abs(ref).max())
        fq = float_quadratic(inst)
        e3 = float(np.abs(fq.A.T @ y.ravel() - ref).max() / np.abs(ref).max())
        tol = 1e-8
        ok = max(e1, e2, e3) <= tol
        findings.append(Finding(tag, ok, {"lambda_hat_rel_error": e1, "yhat_star_rel_error": e2,
                                          "derived_optimum_rel_error": e3, "tolerance": tol,
                                          "sizes": dict(inst.sizes), "tau": inst.tau},
                                None if ok else {"instance": inst.as_dict(), "errors": [e1, e2, e3]},
                                "" if ok else "the ridge solution differs"))
    return combine(findings)


EQ27 = Claim(
    id="yang2024.eq27",
    title="At the optimum the transformer performs ridge regression: ŷ*_k = <y, A_{:,k}> (eq. (27))",
    paper=PAPER,
    statement=(r"$\hat y^\star_k=\langle y,A_{:,k}\rangle$ with $\hat y^\star=(y;(Z^Q)^\top\hat\lambda)$ "
               r"(22) and $\hat\lambda=(m\tau I_m+ZZ^\top)^{-1}Zy$ (67) the ridge solution of (20)."),
    assumptions=("A of eq. (34)",),
    formulas=EQ27_FORMULAS,
    checks={"symbolic": eq27_symbolic, "numeric": eq27_numeric},
    setting=SETTING,
)
