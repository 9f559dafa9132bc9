"""ahn2023 Secs. 5.2-6.1: the prose statements around Theorems 4 and 5, each re-derived.

- Sec. 5.2, distorted view (``thm4_distorted``): w* := Sigma^{-1/2} wbar* gives y = <x, w*>;
- Sec. 5.2 (``thm4_hessian``): the Hessian of R_{w*} is (1/2n) X X^T;
- Sec. 5.2 (``thm4_newton``): Newton's method is A_i ~ (X X^T)^{-1}; Sigma^{-1} = E[X X^T]^{-1};
- Sec. 5.2 after Thm. 4 (``thm4_no_tradeoff``): with w* ~ N(0, Sigma^{-1}) no robustness
  trade-off (the optimum is proportional to Sigma^{-1});
- Sec. 5.3 (``fig1_dist``): Dist(M, I) is attained at alpha = tr(M)/d;
- footnote 3 (``fig3_b2``): the objective does not depend on B_2;
- Sec. 6.1 observation 1 (``fig4_update``): X_{k+1} = X_k + B_k X_k M X_k^T A_k X_k.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import sympy

from models.lsa import attention
from moments.spectral import LAMBDA
from moments.tensor import gaussian_matrix, matrix, vector
from moments.wick import expectation
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from ..kit.layer_optimum import n_sym
from ..kit.linear_icl import cayley_orthogonal, make_instance
from . import sparse
from .one_layer import PAPER, _D, _N
from .single_layer_proof import (first_difference, optimal_top_block, own_sigma, sym_matrix,
                                 top_block_at)

R = sympy.Rational
_SIGMA = FormulaSymbol("Sigma", "matrix", ("d", "d"), symmetric=True)


def _rational(rng, r: int, c: int) -> sympy.Matrix:
    return sympy.Matrix(r, c, lambda i, j: R(int(rng.integers(-4, 5)), int(rng.integers(1, 4))))


def _mismatch(name: str, diff: sympy.Matrix, where: dict, why: str) -> Finding | None:
    bad = [(i, j) for i in range(diff.rows) for j in range(diff.cols)
           if sympy.expand(diff[i, j]) != 0]
    if not bad:
        return None
    i, j = bad[0]
    return Finding(name, False, {}, {**where, "entry": [i, j],
                                     "difference": str(sympy.factor(diff[i, j]))}, why)


def _passed(names_and_summaries, evidence=None) -> list[Finding]:
    return [Finding(n, True, evidence or {}, summary=s) for n, s in names_and_summaries]


# ==============================================================================================
# Sec. 5.2: linear regression with a distorted view of the data
# ==============================================================================================
_W = FormulaSymbol("W", "matrix", ("d", "d"))
_WBAR = FormulaSymbol("w_bar", "matrix", ("d", "1"))
DISTORTED_FORMULAS = (
    NamedFormula("w_star_def", "(W*W.T)**(-1/2)*w_bar", (_W, _WBAR, _D), equation="Sec. 5.2",
                 shape=("d", "1"), description="w* := Sigma^{-1/2} wbar*, Sigma = W W^T"),
)


def _distortions(rng):
    """W = s Sigma^{1/2} R with Sigma^{1/2} = Q D Q^T rational (Q, R exactly orthogonal), so
    that W W^T has a rational square root: R random (W not symmetric), s = -1 (W with negative
    eigenvalues), and R = I, s = 1 (W = Sigma^{1/2}, where w* = Sigma^{-1/2} wbar* is right)."""
    out = []
    for d, kind in ((2, "rotated"), (3, "rotated"), (2, "negative"), (3, "root")):
        Q = sympy.Matrix(cayley_orthogonal(d, rng))
        half = Q * sympy.diag(*[R(1, 2), 2, R(3, 2)][:d]) * Q.T
        Rot = sympy.eye(d) if kind == "root" else sympy.Matrix(cayley_orthogonal(d, rng))
        out.append(((-1 if kind == "negative" else 1) * half * Rot, kind))
    return out


def psd_power(base: sympy.Matrix, p: sympy.Rational) -> sympy.Matrix:
    """base^p for a symmetric positive definite base, p not an integer (Sigma^{-1/2} is the
    positive definite root): sum over eigenspaces of lambda^p times the exact projector.  A base
    that is not symmetric positive definite has no such root: ValueError."""
    if not base.is_symmetric():
        raise ValueError("a fractional power of a matrix that is not symmetric")
    out = sympy.zeros(*base.shape)
    for lam, _, vecs in base.eigenvects():
        if not sympy.sympify(lam).is_positive:
            raise ValueError(f"a fractional power of a matrix with eigenvalue {lam} <= 0")
        V = sympy.Matrix.hstack(*vecs)
        out += lam ** p * V * (V.T * V).inv() * V.T
    return out.applyfunc(sympy.nsimplify if out.free_symbols else sympy.simplify)


def value_with_roots(expr: sympy.Basic, values: dict):
    """``formula_value`` with every non-integer matrix power taken as the positive definite
    root (``psd_power``)."""
    sub = {}
    for node in expr.atoms(sympy.MatPow):
        if not node.exp.is_integer:
            base = sympy.Matrix(formula_value(node.base, values))
            sub[node] = sympy.ImmutableMatrix(psd_power(base, node.exp))
    return formula_value(expr.xreplace(sub) if sub else expr, values)


def distorted_symbolic(ctx: Context) -> TierResult:
    """With xbar, wbar symbols and w* = F(W) wbar the named map: (i) the labels are unchanged,
    <W xbar, w*> = <xbar, wbar> for all xbar, wbar (i.e. W^T F = I); (ii) w* ~ N(0, Sigma^{-1}):
    F F^T = (W W^T)^{-1}.  Exact at non-symmetric W (d = 2, 3), at a W with negative
    eigenvalues, and at W = Sigma^{1/2}."""
    F = ctx.formulas
    findings, rows = [], []
    for W, kind in _distortions(ctx.rng("distortion")):
        d = W.shape[0]
        wbar, xbar = sym_matrix("wb", d, 1), sym_matrix("xb", d, 1)
        try:
            w_star = sympy.Matrix(value_with_roots(F["w_star_def"], {"W": W, "w_bar": wbar,
                                                                     "d": d}))
        except ValueError as exc:
            return combine([Finding("labels", False, {}, {"d": d, "W": str(W.tolist()),
                                                          "error": str(exc)},
                                    f"w* is not defined here: {exc}")])
        where = {"d": d, "W": str(W.tolist()), "W_kind": kind}
        labels = _mismatch("labels", sympy.Matrix([((W * xbar).T * w_star - xbar.T * wbar)[0, 0]]),
                           where, "<W xbar, w*> != <xbar, wbar>: y^(i) = <x^(i), w*> fails")
        Fm = w_star.jacobian(list(wbar))
        law = _mismatch("law", (Fm * Fm.T - (W * W.T).inv()).applyfunc(sympy.simplify), where,
                        "Cov(w*) != Sigma^{-1}")
        rows.append({**where, "labels": labels is None, "law": law is None})
        findings += [f for f in (labels, law) if f is not None
                     and not any(g.name == f.name for g in findings)]
    if not findings:
        findings = _passed((("labels", "<W xbar, w*> = <xbar, wbar> exactly (4 W: rotated, "
                                       "negative, Sigma^{1/2})"),
                            ("law", "Cov(w*) = (W W^T)^{-1} = Sigma^{-1} exactly")), {"rows": rows})
    return combine(findings, {"rows": rows})


THM4_DISTORTED = Claim(
    id="ahn2023.thm4_distorted",
    title="Sec. 5.2: the distorted view, w* := Σ^{-1/2} wbar* gives y = <x, w*>",
    paper=PAPER,
    statement=(r"With $x^{(i)}=W\bar x^{(i)}$, $\Sigma:=WW^\top\succ0$ and $w_\star:=\Sigma^{-1/2}"
               r"\bar w_\star$: $y^{(i)}=\langle x^{(i)},w_\star\rangle$, $x^{(i)}\sim\mathcal N(0,"
               r"\Sigma)$ and $w_\star\sim\mathcal N(0,\Sigma^{-1})$."),
    assumptions=("xbar^(i), wbar* ~ N(0, I) independent, y^(i) = <xbar^(i), wbar*>; W invertible",),
    formulas=DISTORTED_FORMULAS,
    checks={"symbolic": distorted_symbolic},
    setting=own_sigma("Sigma = W W^T comes from the distortions W it draws (with rational "
                      "square roots)"),
    correction=Correction(
        description="w* := W^{-T} wbar* (equal to Sigma^{-1/2} wbar* only for W = Sigma^{1/2})",
        reason="<W xbar, w*> = <xbar, W^T w*> is <xbar, wbar*> for all xbar iff W^T w* = wbar*; "
               "W^T Sigma^{-1/2} = I only when W = Sigma^{1/2} (symmetric positive definite).  "
               "W^{-T} wbar* has the law "
               "N(0, Sigma^{-1}) too, so the prompt law of Thm. 4 is unchanged",
        formulas={"w_star_def": "Inverse(W.T)*w_bar"}),
)


# ==============================================================================================
# Sec. 5.2: the Hessian of R_{w*}
# ==============================================================================================
_XDN = FormulaSymbol("X", "matrix", ("d", "n"))
HESSIAN_FORMULAS = (
    NamedFormula("hess_R", "X*X.T/(2*n)", (_XDN, _N, _D), equation="Sec. 5.2", shape=("d", "d"),
                 description="the Hessian of R_{w*}(w) = (1/2n) sum_i (w^T x_i - w*^T x_i)^2 "
                             "((10)), X = [x^(1) ... x^(n)]"),
)
_SIZES = ((2, 2), (2, 3), (3, 2))


def least_squares(X: sympy.Matrix, w: sympy.Matrix, w_star: sympy.Matrix) -> sympy.Expr:
    """R_{w*}(w) of (10): (1/2n) sum_i (w^T x_i - w*^T x_i)^2, x_i the columns of X."""
    n = X.shape[1]
    return sum(((w.T * X[:, i])[0, 0] - (w_star.T * X[:, i])[0, 0]) ** 2
               for i in range(n)) / (2 * n)


def hessian_symbolic(ctx: Context) -> TierResult:
    """sympy's Hessian in w of R from (10), every entry of X, w, w* a symbol, at (d, n) =
    (2, 2), (2, 3), (3, 2), against the named formula."""
    findings = []
    for d, n in _SIZES:
        X, w, ws = sym_matrix("x", d, n), sym_matrix("w", d, 1), sym_matrix("v", d, 1)
        H = sympy.hessian(least_squares(X, w, ws), list(w))
        stated = sympy.Matrix(formula_value(ctx.formulas["hess_R"], {"X": X, "n": n, "d": d}))
        bad = _mismatch("hessian", (H - stated).expand(), {"d": d, "n": n},
                        "the stated Hessian differs from the Hessian of (10)")
        if bad is not None:
            bad.counterexample["derived"] = str(H[bad.counterexample["entry"][0],
                                                   bad.counterexample["entry"][1]])
            return combine([bad])
    return combine(_passed((("hessian", "the Hessian of (10) = the formula exactly (symbolic X; "
                                        "(d, n) = (2, 2), (2, 3), (3, 2))"),)))


THM4_HESSIAN = Claim(
    id="ahn2023.thm4_hessian",
    title="Sec. 5.2: the Hessian of R_{w*} is (1/2n) X Xᵀ",
    paper=PAPER,
    statement=(r"Under this loss, the Hessian matrix $\nabla^2R_{w_\star}(w)=\frac1{2n}XX^\top$ "
               r"(at least in the case of large $n$)."),
    assumptions=("R_{w*} of (10); X = [x^(1) ... x^(n)] (Sec. 5.2)",),
    formulas=HESSIAN_FORMULAS,
    checks={"symbolic": hessian_symbolic},
    setting=own_sigma("an identity in X for every covariance (X symbolic)"),
    correction=Correction(
        description="the Hessian is (1/n) X X^T, exactly and for every n",
        reason="R = (1/2n)(w - w*)^T X X^T (w - w*) is quadratic: its Hessian is twice the "
               "matrix of the form",
        formulas={"hess_R": "X*X.T/n"}),
)


# ==============================================================================================
# Sec. 5.2: Newton's method and E[X X^T]
# ==============================================================================================
NEWTON_FORMULAS = (
    NamedFormula("newton_A", "Inverse(X*X.T)", (_XDN, _D), equation="Sec. 5.2", shape=("d", "d"),
                 scale_free="the paper says A_i is proportional to (X X^T)^{-1}",
                 sign_free="the paper says A_i is proportional to (X X^T)^{-1}",
                 description="Newton's method: A_i proportional to (X X^T)^{-1}"),
    NamedFormula("E_XXT", "Sigma", (_SIGMA, _N, _D), equation="Sec. 5.2", shape=("d", "d"),
                 description="E[X X^T], which Sigma^{-1} = E[X X^T]^{-1} makes Sigma"),
)


@lru_cache(maxsize=None)
def gram_mean():
    """u^T E[X X^T] v by Isserlis (X = [x^(1) ... x^(n)], x ~ N(0, Sigma))."""
    X = gaussian_matrix("X", "d", "n", row_cov=matrix("Sigma", symmetric=True))
    return expectation(vector("u").T @ X @ X.T @ vector("v")).simplify()


def newton_symbolic(ctx: Context) -> TierResult:
    """(i) Newton's step for (10): A = -(grad^2 R)^{-1} (sympy's Hessian) reaches w* in one step;
    the named A times grad^2 R must be one constant multiple of I (the same at two random
    rational X of each size).  (ii) E[X X^T] by Isserlis against the named formula at rational
    Sigma (n symbolic)."""
    F = ctx.formulas
    rng = ctx.rng("newton")
    findings, rows = [], []
    for d, n in ((2, 2), (2, 3), (3, 4)):
        w, ws = sym_matrix("w", d, 1), sym_matrix("v", d, 1)
        ratios = []
        for _ in range(2):
            X = _rational(rng, d, n)
            while X.rank() < d:  # X X^T invertible (n >= d)
                X = _rational(rng, d, n)
            Rw = least_squares(X, w, ws)
            H = sympy.hessian(Rw, list(w))
            grad = sympy.Matrix([sympy.diff(Rw, x) for x in w])
            step_ok = (w - H.inv() * grad - ws).expand().is_zero_matrix
            stated = sympy.Matrix(formula_value(F["newton_A"], {"X": X, "d": d}))
            prod = stated * H
            c = prod[0, 0]
            ratios.append(c)
            scalar_ok = (prod - c * sympy.eye(d)).is_zero_matrix and c != 0
            rows.append({"d": d, "n": n, "newton_reaches_w*": step_ok, "A H": str(prod.tolist())})
            if not (scalar_ok and step_ok):
                findings.append(Finding("newton", False, {}, {
                    "d": d, "n": n, "X": str(X.tolist()), "A_stated_times_hessian": str(
                        prod.tolist())}, "the stated A is not proportional to (grad^2 R)^{-1}"))
                break
        if len(set(ratios)) > 1 and not findings:
            findings.append(Finding("newton", False, {}, {"d": d, "n": n, "ratios": [
                str(r) for r in ratios]}, "the stated A is not one multiple of (X X^T)^{-1}"))
    mean = gram_mean()
    for inst in (make_instance(7, 2, None, rng), make_instance(7, 3, None, rng)):
        S, d = inst.sigma_exact, inst.d
        e = lambda i: sympy.Matrix([int(t == i) for t in range(d)])  # noqa: E731
        derived = sympy.Matrix(d, d, lambda i, j: sympy.simplify(mean.evaluate(
            {"Sigma": S, "u": e(i), "v": e(j)}, {"n": n_sym}, exact=True)))
        stated = sympy.Matrix(formula_value(F["E_XXT"], {"Sigma": S, "n": n_sym, "d": d}))
        where = first_difference(stated - derived)
        rows.append({"d": d, "Sigma": inst.as_dict()["Sigma"], "E[XX^T] agrees": where is None})
        if where is not None and not any(f.name == "E_XXT" for f in findings):
            i, j = where
            findings.append(Finding("E_XXT", False, {}, {
                "Sigma": inst.as_dict()["Sigma"], "entry": [i, j], "derived": str(derived[i, j]),
                "stated": str(stated[i, j])}, "E[X X^T] differs from the formula"))
    if not findings:
        findings = _passed((("newton", "Newton's step for (10) reaches w* and the stated A is "
                                       "one constant times (grad^2 R)^{-1}"),
                            ("E_XXT", "E[X X^T] = the formula exactly (n symbolic)")),
                           {"rows": rows})
    return combine(findings, {"rows": rows}, steps=[step(
        "Isserlis", r"u^\top\mathbb E[XX^\top]v = " + mean.latex(), "")])


THM4_NEWTON = Claim(
    id="ahn2023.thm4_newton",
    title="Sec. 5.2: Newton's method is A_i ~ (XXᵀ)⁻¹; Σ⁻¹ = E[XXᵀ]⁻¹",
    paper=PAPER,
    statement=(r"For any fixed prompt, Newton's method corresponds to $A_i\propto(XX^\top)^{-1}$; "
               r"the choice $A_i\propto\Sigma^{-1}=\mathbf E[XX^\top]^{-1}$ (Thm. 4)."),
    assumptions=("R_{w*} of (10); X = [x^(1) ... x^(n)], x ~ N(0, Sigma) (Sec. 5.2)",),
    formulas=NEWTON_FORMULAS,
    checks={"symbolic": newton_symbolic},
    setting=own_sigma("it is checked at random rational X and rational Sigma of its own"),
    correction=Correction(
        description="E[X X^T] = n Sigma, so Sigma^{-1} = n E[X X^T]^{-1} (A_i proportional to "
                    "Sigma^{-1} is proportional to E[X X^T]^{-1}, as meant)",
        reason="X X^T sums n outer products of covariance Sigma",
        formulas={"E_XXT": "n*Sigma"}),
)


# ==============================================================================================
# Sec. 5.2 after Thm. 4: with w* ~ N(0, Sigma^{-1}) no trade-off with statistical robustness
# ==============================================================================================
TRADEOFF_FORMULAS = (
    NamedFormula("A_opt_inv_prior", "Inverse(Sigma)", (_SIGMA, _D), equation="Sec. 5.2 "
                 "(after Thm. 4)", shape=("d", "d"),
                 scale_free="the remark says the optimum is Sigma^{-1} up to scaling (Thm. 4's "
                            "A_i = a_i Sigma^{-1}), with no trace regulariser",
                 sign_free="the remark says the optimum is Sigma^{-1} up to scaling (Thm. 4's "
                           "A_i = a_i Sigma^{-1}), with no trace regulariser",
                 description="the one-layer optimal A for w* ~ N(0, Sigma^{-1}), up to a scalar"),
)


def tradeoff_symbolic(ctx: Context) -> TierResult:
    """The one-layer optimal top block under w* ~ N(0, Sigma^{-1}) (derived stationarity,
    b = e_{d+1}) against the named direction: stated * derived^{-1} must be one scalar multiple
    of I at two rational Sigma of each d (n symbolic).  Beside it: under w* ~ N(0, I) (Thm. 1)
    the optimum is not proportional to Sigma^{-1}; both tend to -Sigma^{-1} as n -> oo."""
    F = ctx.formulas
    g_inv, _ = optimal_top_block("sigma_inverse")
    g_id, _ = optimal_top_block("identity")
    rng = ctx.rng("tradeoff")
    findings, rows = [], []
    for d in (2, 3):
        ratios = []
        for _ in range(2):
            inst = make_instance(7, d, None, rng)
            g_d = g_inv.subs(sympy.Symbol("d", positive=True, integer=True), d)
            # the derived optimum U diag(g) U^T, applied through its inverse U diag(1/g) U^T
            derived_inv = top_block_at(1 / g_d, inst.U_exact, inst.eigs_exact, n_sym)
            stated = sympy.Matrix(formula_value(F["A_opt_inv_prior"],
                                                {"Sigma": inst.sigma_exact, "d": d}))
            M = (stated * derived_inv).applyfunc(sympy.cancel)
            c = M[0, 0]
            scalar = (M - c * sympy.eye(d)).applyfunc(sympy.cancel).is_zero_matrix
            thm1 = top_block_at(g_id, inst.U_exact, inst.eigs_exact, n_sym)
            K = (thm1 * inst.sigma_exact).applyfunc(sympy.cancel)
            rows.append({"d": d, "Sigma": inst.as_dict()["Sigma"], "stated/derived": str(c),
                         "proportional": scalar, "thm1_optimum_proportional_to_Sigma^-1":
                             (K - K[0, 0] * sympy.eye(d)).applyfunc(sympy.cancel).is_zero_matrix})
            if not scalar:
                findings.append(Finding("proportional", False, {}, rows[-1],
                                        "the stated direction is not the derived optimum's"))
                break
            ratios.append(sympy.cancel(c))
        if findings:
            break
        if len(set(ratios)) > 1:
            findings.append(Finding("proportional", False, {}, {"d": d, "ratios": [
                str(r) for r in ratios]}, "the ratio depends on Sigma"))
            break
    if not findings:
        findings = _passed((("proportional", f"the optimum for w* ~ N(0, Sigma^{{-1}}) is "
                                             f"g Sigma^{{-1}}, g = {sympy.factor(g_inv * LAMBDA)} "
                                             f"(no trace term)"),), {"rows": rows})
    return combine(findings, {"rows": rows, "g_sigma_inverse_prior": str(g_inv),
                              "g_identity_prior": str(g_id),
                              "limits_n_to_oo": [str(sympy.limit(g, n_sym, sympy.oo))
                                                 for g in (g_inv, g_id)]})


THM4_NO_TRADEOFF = Claim(
    id="ahn2023.thm4_no_tradeoff",
    title="Sec. 5.2: with w* ~ N(0, Σ⁻¹) there is no trade-off with statistical robustness",
    paper=PAPER,
    statement=(r"The proposed $A_i$ of Thm. 4 are similar to Thm. 1's for large $n$; in contrast "
               r"to Thm. 1 there is no trade-off with statistical robustness, because $w_\star$ "
               r"has covariance $\Sigma^{-1}$ (the one-layer optimum is then proportional to "
               r"$\Sigma^{-1}$)."),
    assumptions=("one layer, b = e_{d+1}, A's last row 0; x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1})",),
    formulas=TRADEOFF_FORMULAS,
    checks={"symbolic": tradeoff_symbolic},
    setting=own_sigma("it is checked at rational Sigma of its own (d = 2, 3; n symbolic)",
                      w_prior="sigma_inverse"),
)


# ==============================================================================================
# Sec. 5.3: Dist(M, I) = min_alpha ||M - alpha I||_F / ||M||_F, attained at alpha = tr(M)/d
# ==============================================================================================
_M = FormulaSymbol("M", "matrix", ("d", "d"))
DIST_FORMULAS = (
    NamedFormula("alpha_star", "trace(M)/d", (_M, _D), equation="Sec. 5.3",
                 description="the minimising alpha of ||M - alpha I||_F"),
)


def dist_symbolic(ctx: Context) -> TierResult:
    """argmin_alpha ||M - alpha I||_F^2 by sympy (a convex quadratic in alpha: its stationary
    point), every entry of M a symbol, d = 2, 3, 4, against the named alpha."""
    alpha = sympy.Symbol("alpha")
    for d in (2, 3, 4):
        M = sym_matrix("m", d, d)
        obj = sum(e ** 2 for e in (M - alpha * sympy.eye(d)))
        sol = sympy.solve(sympy.diff(obj, alpha), alpha)
        convex = sympy.diff(obj, alpha, 2) > 0
        stated = sympy.sympify(formula_value(ctx.formulas["alpha_star"], {"M": M, "d": d}))
        if len(sol) != 1 or not convex or sympy.simplify(sol[0] - stated) != 0:
            return combine([Finding("argmin", False, {}, {
                "d": d, "derived": str(sol[0]) if sol else "none", "stated": str(stated)},
                "the stated alpha is not the minimiser of ||M - alpha I||_F")])
    return combine(_passed((("argmin", "alpha* = the minimiser of ||M - alpha I||_F exactly "
                                       "(symbolic M, d = 2, 3, 4)"),)))


FIG1_DIST = Claim(
    id="ahn2023.fig1_dist",
    title="Sec. 5.3: Dist(M, I) is attained at α = tr(M)/d",
    paper=PAPER,
    statement=(r"$\mathrm{Dist}(M,I):=\min_\alpha\frac{\|M-\alpha I\|_F}{\|M\|_F}$, equivalent to "
               r"choosing $\alpha:=\frac1d\sum_iM[i,i]$."),
    assumptions=("M in R^{d x d}, M != 0",),
    formulas=DIST_FORMULAS,
    checks={"symbolic": dist_symbolic},
    setting=own_sigma("no covariance enters: an identity in M"),
)


# ==============================================================================================
# Footnote 3: the objective does not depend on B_2
# ==============================================================================================
B2_FORMULAS = (
    NamedFormula("unused_B", "2", (), equation="footnote 3",
                 description="the index i of the B_i the three-layer objective (A_0..A_2, "
                             "B_0..B_2, eq. (13)) does not depend on"),
)
B2_LAYERS = 3


def _last_row_free_of_B() -> bool:
    """One layer of (13) on a generic Z (every entry a symbol, d = 2, n = 2): the last row of
    Z + (1/n) P Z M Z^T Q Z does not contain B (P = [[B, 0], [0, 1]])."""
    d, n = 2, 2
    Z = sym_matrix("z", d + 1, n + 1)
    B = sym_matrix("B", d, d)
    A = sympy.Matrix(d, d, lambda i, j: sympy.Symbol(f"A_{min(i, j)}_{max(i, j)}"))
    P = sympy.diag(B, 1)
    Q = sympy.diag(A, 0)
    M = sympy.diag(*([1] * n + [0]))
    out = Z + attention(Z, P, Q, M) / n
    return not (out[d, :].free_symbols & set(B))


def loss_on_S(a: list, b: list, n: int, d: int) -> Fraction:
    """g(a, b) = E tr s(W/n)^2, the exact loss of (13) on S (``sparse``: e = w*^T s(W) x_q),
    with s's vanishing top coefficients dropped so that only the Wishart moments it needs are
    computed."""
    s = sparse.s_coefficients(a, b)
    while len(s) > 1 and s[-1] == 0:
        s = s[:-1]
    s2 = [sum(s[i] * s[k - i] for i in range(len(s)) if 0 <= k - i < len(s))
          for k in range(2 * len(s) - 1)]
    mu = sparse.scaled_trace_moments(n, d, len(s2) - 1)
    return sum((c * m for c, m in zip(s2, mu)), Fraction(0))


def b2_symbolic(ctx: Context) -> TierResult:
    """Which B_i the three-layer objective depends on: none of the last layer's (its B only
    changes the covariate rows of Z_3, and the prediction reads the label row), and each of
    B_0, B_1 (the exact loss on S, g(a, b), changes with b_0 and with b_1 at Sec. 6.1's
    n = 10, d = 5)."""
    stated = sympy.sympify(ctx.formulas["unused_B"])
    structural = _last_row_free_of_B()
    n, d = 10, 5  # Sec. 6.1's sizes
    F = Fraction
    # points of S where the b_i in question matters at low degree in W (a zero a_i switches a
    # layer off): b_0 with a_2 = 0, b_1 with a_0 = 0
    points = {0: ([F(-1, 2), F(-3, 2), F(0)], [F(1, 3), F(0)]),
              1: ([F(0), F(-3, 2), F(-1)], [F(1, 3), F(2, 3)])}
    used = []
    for i, (a, b) in points.items():
        moved = list(b)
        moved[i] += F(1, 2)
        if loss_on_S(a, moved, n, d) != loss_on_S(a, b, n, d):
            used.append(i)
    unused = [i for i in range(B2_LAYERS) if i not in used and (i < B2_LAYERS - 1 or structural)]
    evidence = {"last_layer_B_absent_from_prediction": structural, "B_the_loss_depends_on":
                used, "unused": unused, "stated": str(stated)}
    ok = stated.is_integer and int(stated) in unused and len(unused) == 1
    return combine([Finding("unused_B", ok, evidence, None if ok else evidence,
                            "" if ok else f"the objective depends on B_{stated}, or the model has "
                                          f"no such B (B_0..B_{B2_LAYERS - 1})",
                            summary="the objective does not depend on B_2 and depends on B_0, "
                                    "B_1")])


FIG3_B2 = Claim(
    id="ahn2023.fig3_b2",
    title="Footnote 3: the objective does not depend on B_2",
    paper=PAPER,
    statement=r"Note that the objective function does not depend on $B_2$.",
    assumptions=("three layers of (13) (A_0..A_2, B_0..B_2), Sec. 6.1",),
    formulas=B2_FORMULAS,
    checks={"symbolic": b2_symbolic},
    setting=own_sigma("on S the loss does not depend on Sigma (Thm. 5's setting); the structural "
                      "part holds for every input", w_prior="sigma_inverse", n=10, d=5),
)


# ==============================================================================================
# Sec. 6.1, observation 1: the covariate update
# ==============================================================================================
_XK = FormulaSymbol("X", "matrix", ("d", "n+1"))
_MASK = FormulaSymbol("M", "matrix", ("n+1", "n+1"), symmetric=True)
_AK = FormulaSymbol("A", "matrix", ("d", "d"), symmetric=True)
_BK = FormulaSymbol("B", "matrix", ("d", "d"))
_SA, _SB = FormulaSymbol("a_k"), FormulaSymbol("b_k")
UPDATE_FORMULAS = (
    NamedFormula("X_next", "X + B*X*M*X.T*A*X", (_XK, _MASK, _AK, _BK, _N, _D),
                 equation="Sec. 6.1 (observation 1)", shape=("d", "n+1"),
                 description="X_{k+1}, the first d rows of Z_{k+1}, under (13)"),
    NamedFormula("X_next_S", "X*(Identity(n+1) - Abs(a_k*b_k)*M*X.T*X)",
                 (_XK, _MASK, _SA, _SB, _N, _D), equation="Sec. 6.1 (observation 1)",
                 shape=("d", "n+1"),
                 description="X_{k+1} on S (A_k = a_k Sigma^{-1}, B_k = b_k I) at Sigma = I, "
                             "a_k b_k < 0"),
)


def update_symbolic(ctx: Context) -> TierResult:
    """One layer of (13) on Z = [[X], [y^T, 0]] (every entry of X (query column included), y,
    A (symmetric), B a symbol): the first d rows of the output against X_next; at A = a I,
    B = b I (Sigma = I, a b < 0, rational) against X_next_S.  (d, n) = (2, 2), (1, 3)."""
    F = ctx.formulas
    findings = []
    for d, n in ((2, 2), (1, 3)):
        X = sym_matrix("x", d, n + 1)
        y = sym_matrix("y", 1, n)
        Z = sympy.Matrix.vstack(X, sympy.Matrix.hstack(y, sympy.zeros(1, 1)))
        mask = sympy.diag(*([1] * n + [0]))
        A = sympy.Matrix(d, d, lambda i, j: sympy.Symbol(f"A_{min(i, j)}_{max(i, j)}"))
        B = sym_matrix("B", d, d)
        env = {"X": X, "M": mask, "n": n, "d": d}
        out = Z + attention(Z, sympy.diag(B, 1), sympy.diag(A, 0), mask) / n
        stated = sympy.Matrix(formula_value(F["X_next"], {**env, "A": A, "B": B}))
        bad = _mismatch("X_next", (out[:d, :] - stated).expand(), {"d": d, "n": n},
                        "X_next differs from the first d rows of the layer's output")
        if bad is not None and not any(f.name == "X_next" for f in findings):
            findings.append(bad)
        for a, b in ((R(-1, 2), R(3, 2)), (2, R(-1, 3))):
            out = Z + attention(Z, sympy.diag(b * sympy.eye(d), 1),
                                sympy.diag(a * sympy.eye(d), 0), mask) / n
            stated = sympy.Matrix(formula_value(F["X_next_S"], {**env, "a_k": a, "b_k": b}))
            bad = _mismatch("X_next_S", (out[:d, :] - stated).expand(),
                            {"d": d, "n": n, "a_k": str(a), "b_k": str(b)},
                            "X_next_S differs from the layer's output on S at Sigma = I")
            if bad is not None and not any(f.name == "X_next_S" for f in findings):
                findings.append(bad)
    if not findings:
        findings = _passed((("X_next", "X_next = the first d rows of the layer's output exactly "
                                       "((d, n) = (2, 2), (1, 3))"),
                            ("X_next_S", "X_next_S = the layer's output on S at Sigma = I, "
                                         "a_k b_k < 0")))
    return combine(findings)


FIG4_UPDATE = Claim(
    id="ahn2023.fig4_update",
    title="Sec. 6.1 observation 1: the update of the covariates X_k",
    paper=PAPER,
    statement=(r"$X_{k+1}=X_k+B_kX_kMX_k^\top A_kX_k\approx X_k(I-|a_kb_k|MX_k^\top X_k)$."),
    assumptions=("one layer of (13) (eq. (4)); X_k the first d rows of Z_k",
                 "the approximation on S at Sigma = I with a_k b_k < 0 (where it is exact)"),
    formulas=UPDATE_FORMULAS,
    checks={"symbolic": update_symbolic},
    setting=own_sigma("an identity for every input; the approximation is checked at Sigma = I, "
                      "where it is exact"),
    correction=Correction(
        description="both sides carry the 1/n of (4): X_{k+1} = X_k + (1/n) B_k X_k M X_k^T A_k "
                    "X_k = X_k (I - |a_k b_k|/n M X_k^T X_k) on S at Sigma = I, a_k b_k < 0",
        reason="the layer (4) is Z + (1/n) Attn; App. B drops the 1/n by absorbing it into A_k, "
               "which Sec. 6.1 does not say.  For Sigma != I the approximation also drops the "
               "Sigma^{-1} of A_k = a_k Sigma^{-1}",
        formulas={"X_next": "X + B*X*M*X.T*A*X/n",
                  "X_next_S": "X*(Identity(n+1) - Abs(a_k*b_k)/n*M*X.T*X)"}),
    notes="The text calls X_k in R^{d x n}; with the mask M in R^{(n+1) x (n+1)} it is "
          "d x (n+1) (query column included).",
)


CLAIMS = [THM4_DISTORTED, THM4_HESSIAN, THM4_NEWTON, THM4_NO_TRADEOFF, FIG1_DIST, FIG3_B2,
          FIG4_UPDATE]
