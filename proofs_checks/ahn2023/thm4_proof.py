"""ahn2023 App. B.2 (proof of Theorem 4), with the steps of App. B.3 that repeat it.

Step 1 (the loss through G, eq. (28)), Step 2 (G and dG/dt under X_0 -> U_Sigma X_0, eqs. (29),
(30); B.3's (39), (44), (46), (47), (50)-(52)), Step 3 (the averaged direction r_j Sigma^{-1})
and the S-constrained flow (25)-(27).  The pointwise steps are checked exactly at rational points
(Sigma = H^2, U_Sigma = H U H^{-1} rational) and in float64 at Gaussian ones; the derivative
steps with the kernel's d/dt f on S (``multilayer_proof.derivative_poly``).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import sympy

from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import NamedFormula

from .proof_moments import (directional, ew_loss, ew_value, gradient, haar2_average, haar_mc,
                            inner, mc_directional, projection, set_point)
from .proof_points import (IllTyped, NotReal, Point, Pointwise, Unevaluable, _exact_compare,
                           _float_compare, _merge, _rat, eye, g_matrix, judged, more_points, mul,
                           on_set_points, pointwise_checks, pointwise_truth, proof_setting,
                           run_layers, sizes_of, syms, tangent, tvalue, value)
from .one_layer import PAPER

SET_FORMULAS = (
    NamedFormula("S_A", "Inverse(Sigma)", syms("Sigma", "d"), equation="Thm. 4; App. B.2",
                 description="the direction of A_i in S: A_i = a_i S_A", shape=("d", "d"),
                 scale_free="S = {a S_A : a real} is the same set for every non-zero multiple",
                 sign_free="S = {a S_A : a real} is the same set for -S_A"),
    NamedFormula("S_B", "Identity(d)", syms("Sigma", "d"), equation="Thm. 5; App. B.3",
                 description="the direction of B_i in S: B_i = b_i S_B", shape=("d", "d"),
                 scale_free="S = {b S_B : b real} is the same set for every non-zero multiple",
                 sign_free="S = {b S_B : b real} is the same set for -S_B"),
)


def _rotated(p: Point, U_Sigma=None) -> Any:
    """U_Sigma X_0 (U_Sigma = H U H^{-1} unless given)."""
    T = p.U_Sigma if U_Sigma is None else U_Sigma
    return mul(T, p.X0, exact=p.exact)


# ================================================================================================
# Step 2: G (and X_i) under X_0 -> U_Sigma X_0 on S: eqs. (29), (39), (44), (46)
# ================================================================================================
EQ29_FORMULAS = SET_FORMULAS + (
    NamedFormula("A_conj", "U_Sigma.T*A*U_Sigma", syms("d", "U_Sigma", "A"),
                 equation="(29) (after)", shape=("d", "d"),
                 description="U_Sigma^T A_i U_Sigma, which the proof says is A_i on S"),
    NamedFormula("X_rot", "U_Sigma*X_i", syms("n", "d", "U_Sigma", "X_i"), equation="(39), (46)",
                 shape=("d", "n+1"), description="X_i(U_Sigma X_0, B_j) in terms of X_i(X_0, B_j)"),
    NamedFormula("G_rot", "U_Sigma*G", syms("n", "d", "U_Sigma", "G"),
                 equation="(29), (44), (46)", shape=("d", "n+1"),
                 description="G(U_Sigma X_0, .) in terms of G(X_0, .)"),
)


def eq29_sides(p: Point, F: Mapping) -> list:
    rot = _rotated(p)
    out = [("A_invariance", value(F, "A_conj", {**p.values(), "A": A}, p.exact), A)
           for A in p.A]
    # model (9): X_i = X_0, G = X_0 prod (I + M X_0^T A_i X_0)
    G9, G9r = g_matrix(p.X0, p.A, None, p.exact), g_matrix(rot, p.A, None, p.exact)
    out.append(("G_equivariance_9", G9r, value(F, "G_rot", {**p.values(), "G": G9}, p.exact)))
    # model (13)
    traj = run_layers(p.X0, p.X0[:1, :], p.A, p.B, p.exact)
    traj_r = run_layers(rot, rot[:1, :], p.A, p.B, p.exact)
    for (X, _), (Xr, _) in zip(traj, traj_r):
        out.append(("X_equivariance_13", Xr, value(F, "X_rot", {**p.values(), "X_i": X}, p.exact)))
    G13, G13r = g_matrix(p.X0, p.A, p.B, p.exact), g_matrix(rot, p.A, p.B, p.exact)
    out.append(("G_equivariance_13", G13r,
                value(F, "G_rot", {**p.values(), "G": G13}, p.exact)))
    return out


EQ29_SPEC = Pointwise(
    eq29_sides, *on_set_points(2),
    "X_i and G of (9), (13) under X_0 -> U_Sigma X_0 on S",
    steps=(step("Points", "", "Sigma = H^2 (H rational), U a Cayley rotation (or reflection), "
                "U_Sigma = H U H^{-1}; A_i = a_i S_A, B_i = b_i S_B from the formulas of S."),
           step("Forward passes", "", "X_i and G (row m: the label row from Y_0 = e_m^T X_0) "
                "through lsa_forward at X_0 and at U_Sigma X_0, compared with the formulas.")))
EQ29 = Claim(
    id="ahn2023.eq29",
    title="G and X_i under X_0 → U_Sigma X_0 on S (eqs. (29), (39), (44), (46))",
    paper=PAPER,
    statement=(r"For $A_i=a_i\Sigma^{-1}$ ($B_i=b_iI$): $U_\Sigma^\top A_iU_\Sigma=A_i$, and "
               r"$G(U_\Sigma X_0,\cdot)=U_\Sigma G(X_0,\cdot)$ for (9) (eq. (29)) and (13) (eq. "
               r"(44)), $X_i(U_\Sigma X_0,\cdot)=U_\Sigma X_i(X_0,\cdot)$ for (13) (eq. (39); "
               r"(46) for the A-perturbation), every orthogonal $U$."),
    assumptions=("U orthogonal, U_Sigma = Sigma^{1/2} U Sigma^{-1/2}", "(A, B) on S",
                 "the layers (9), (13) with the 1/n dropped"),
    formulas=EQ29_FORMULAS, checks=pointwise_checks(EQ29_SPEC),
    setting=proof_setting(), exact=pointwise_truth(EQ29_SPEC, EQ29_FORMULAS, more_points()))


# ================================================================================================
# Step 2: d/dt G and d/dt X_i under X_0 -> U_Sigma X_0, A-perturbation: (30), (47), (50)-(52)
# ================================================================================================
EQ30_FORMULAS = SET_FORMULAS + (
    NamedFormula("C_A", "U_Sigma.T*R_j*U_Sigma", syms("d", "U_Sigma", "R_j"),
                 equation="(30), (47), (50)", shape=("d", "d"),
                 description="the direction at X_0 that X_0 -> U_Sigma X_0 turns R_j into"),
    NamedFormula("dG_30", "U_Sigma*dG", syms("n", "d", "U_Sigma", "dG"), equation="(30)",
                 shape=("d", "n+1"),
                 description="d/dt G(U_Sigma X_0, A_j + tR_j) from dG = d/dt G(X_0, A_j + tC_A)"),
    NamedFormula("dX_47", "Inverse(U_Sigma)*dX", syms("n", "d", "U_Sigma", "dX"),
                 equation="(47)", shape=("d", "n+1"),
                 description="U_Sigma^{-1} d/dt X_i(U_Sigma X_0, A_j + tR_j)"),
    NamedFormula("dG_50", "Inverse(U_Sigma)*dG", syms("n", "d", "U_Sigma", "dG"),
                 equation="(50), (51), (52)", shape=("d", "n+1"),
                 description="U_Sigma^{-1} d/dt G(U_Sigma X_0, A_j + tR_j) (and of its parts)"),
    NamedFormula("heart", "X_0*G_lt*M*X_i.T*U_Sigma.T*R_j*U_Sigma*X_i*G_gt",
                 syms("n", "d", "X_0", "G_lt", "G_gt", "M", "X_i", "U_Sigma", "R_j"),
                 equation="(52)", shape=("d", "n+1"),
                 description="the part of U_Sigma^{-1} dG through A_j itself (X_i = X_j(X_0))"),
)


def _partial_products(p: Point, Xs, j: int) -> tuple:
    """prod_{i<j} and prod_{i>j} of (I + M X_i^T A_i X_i) (G_lt, G_gt of (52))."""
    M, I = p.M, eye(p.n + 1, p.exact)
    lt, gt = I, I
    for i, A in enumerate(p.A):
        X = Xs[i]
        f = I + mul(M, X.T, A, X, exact=p.exact)
        if i < j:
            lt = mul(lt, f, exact=p.exact)
        elif i > j:
            gt = mul(gt, f, exact=p.exact)
    return lt, gt


def eq30_sides(p: Point, F: Mapping) -> list:
    vals = p.values()
    rot = _rotated(p)
    C = value(F, "C_A", vals, p.exact)
    out = []
    for j in range(p.layers):
        t9r = tangent(rot, p.A, None, "A", j, p.R, p.exact)
        t9 = tangent(p.X0, p.A, None, "A", j, C, p.exact)
        out.append(("dG_equivariance_9 (30)", t9r.dG,
                    value(F, "dG_30", {**vals, "dG": t9.dG}, p.exact)))
        t13r = tangent(rot, p.A, p.B, "A", j, p.R, p.exact)
        t13 = tangent(p.X0, p.A, p.B, "A", j, C, p.exact)
        for dXr, dX in zip(t13r.dX, t13.dX):
            out.append(("dX_equivariance_13 (47)", value(F, "dX_47", {**vals, "dX": dXr},
                                                          p.exact), dX))
        out.append(("dG_equivariance_13 (50)", value(F, "dG_50", {**vals, "dG": t13r.dG},
                                                      p.exact), t13.dG))
        spade_r, spade = t13r.dG - t13r.dG_direct, t13.dG - t13.dG_direct
        out.append(("spade (51)", value(F, "dG_50", {**vals, "dG": spade_r}, p.exact), spade))
        lt, gt = _partial_products(p, t13.X, j)
        heart = value(F, "heart", {**vals, "G_lt": lt, "G_gt": gt, "X_i": t13.X[j]}, p.exact)
        out.append(("heart (52)", value(F, "dG_50", {**vals, "dG": t13r.dG_direct}, p.exact),
                    heart))
    return out


EQ30_SPEC = Pointwise(
    eq30_sides, *on_set_points(1),
    "d/dt X_i and d/dt G along A_j + tR_j under X_0 -> U_Sigma X_0 on S",
    steps=(step("Derivatives", "", "d/dt at t = 0 of the forward pass with A_j + tC (sympy diff "
                "with a symbol t; torch.func.jvp in float64), at U_Sigma X_0 with C = R_j and at "
                "X_0 with C = C_A; the heart of (52) with the token rows held fixed, the spade "
                "of (51) the rest."),))
EQ30 = Claim(
    id="ahn2023.eq30",
    title="d/dt G and d/dt X_i under X_0 → U_Sigma X_0, A-perturbation (eqs. (30), (47), "
          "(50)-(52))",
    paper=PAPER,
    statement=(r"On $\mathcal S$, with $C=U_\Sigma^\top R_jU_\Sigma$: "
               r"$\frac{d}{dt}G(U_\Sigma X_0,A_j+tR_j)=U_\Sigma\frac{d}{dt}G(X_0,A_j+tC)$ for (9) "
               r"(eq. (30)); for (13) $U_\Sigma^{-1}\frac{d}{dt}X_i(U_\Sigma X_0,A_j+tR_j)="
               r"\frac{d}{dt}X_i(X_0,A_j+tC)$ (47), the same for $G$ (50), for its parts through "
               r"the $X_i$ (51) and through $A_j$ itself, "
               r"$X_0\prod_{i<j}(\cdot)MX_j^\top CX_j\prod_{i>j}(\cdot)$ (52)."),
    assumptions=("U orthogonal, U_Sigma = Sigma^{1/2} U Sigma^{-1/2}", "(A, B) on S",
                 "derivatives at t = 0; layers of (9), (13) with the 1/n dropped"),
    formulas=EQ30_FORMULAS, checks=pointwise_checks(EQ30_SPEC),
    setting=proof_setting(), exact=pointwise_truth(EQ30_SPEC, EQ30_FORMULAS, more_points()))


# ================================================================================================
# Step 1: the loss through G (App. B.2 and B.3 Step 1 displays)
# ================================================================================================
def step1_formulas(model: str) -> tuple:
    X = "X_0" if model == "eq9" else "X_i"
    return (
        NamedFormula("G_factor", f"Identity(n+1) - M*{X}.T*A*{X}", syms("n", "d", X, "M", "A"),
                     equation="App. B.2 Step 1" if model == "eq9" else "App. B.3 Step 1",
                     shape=("n+1", "n+1"),
                     description="G(X, .) = X prod_i G_factor(A_i)" + (
                         "" if model == "eq9" else " with the X_i of (31)")),
        NamedFormula("line2",
                     "trace((Identity(n+1) - M)*G.T*w_star.T*w_star*G*(Identity(n+1) - M))",
                     syms("n", "d", "G", "M", "w_star"), equation="Step 1, second line",
                     description="the loss integrand once Y_{k+1} is written through G"),
        NamedFormula("line3", "trace((Identity(n+1) - M)*G.T*Inverse(Sigma)*G*(Identity(n+1) - M))",
                     syms("n", "d", "G", "M", "Sigma"), equation="Step 1, third line",
                     description="the integrand after E over w* ~ N(0, Sigma^{-1})"),
    )


def step1_sides(model: str):
    """Line 1 (the forward pass's squared query label of Zbar_k) against line 2 at the same
    (X_0, w*); E over w* of line 1 (the kernel, at this X_0) against line 3 and E of line 2."""
    def sides(p: Point, F: Mapping) -> list:
        Bs = None if model == "eq9" else p.B
        Y0 = mul(p.w.T, p.X0, exact=p.exact)
        traj = run_layers(p.X0, Y0, p.A, Bs, p.exact)
        Y = traj[-1][1]
        line1 = Y[0, p.n] ** 2
        G = p.X0
        for i, A in enumerate(p.A):
            X = p.X0 if model == "eq9" else traj[i][0]
            key = "X_0" if model == "eq9" else "X_i"
            G = mul(G, value(F, "G_factor", {**p.values(), key: X, "A": A}, p.exact),
                    exact=p.exact)
        vals = {**p.values(), "G": G}
        G_true = g_matrix(p.X0, p.A, Bs, p.exact)
        ew1 = ew_loss(p, G_true[:, p.n:])
        try:
            ew2 = ew_value(F["line2"], p, G)
        except Unevaluable as exc:
            raise Unevaluable(f"line2: {exc}") from exc
        return [("line1_equals_line2", value(F, "line2", vals, p.exact), line1),
                ("Ew_line2_equals_line3", ew2, ew1),
                ("line3_equals_Ew_line1", value(F, "line3", vals, p.exact), ew1)]
    return sides


def step1_claim(model: str, cid: str, item: str, title: str) -> Claim:
    spec = Pointwise(step1_sides(model), *on_set_points(2, on_set=False),
                     "the loss integrand through G, before and after E over w*",
                     steps=(step("Line 1", "", "The squared query label of the forward pass on "
                                 "Zbar_0 = [[X_0], [w*^T X_0]] (general weights)."),
                            step("E over w*", "", "At a fixed X_0, E over w* ~ N(0, Sigma^{-1}) "
                                 "of line 1 and of the formula of line 2 by the kernel.")))
    fs = step1_formulas(model)
    X = "X_0" if model == "eq9" else "X_i"
    fix = "(Identity(n+1) - M)"
    correction = Correction(
        "G's factors are I + M X_i^T A_i X_i (as in (22), (31)), and w* w*^T for w*^T w*",
        "Y_{k+1} = w*^T X_0 prod (I + M X_i^T A_i X_i) by (22)/(31), so Y^T Y = G^T w* w*^T G; "
        "with the minus sign G is the product at -A_i, and w*^T w* = |w*|^2 is a scalar",
        {"G_factor": f"Identity(n+1) + M*{X}.T*A*{X}",
         "line2": f"trace({fix}*G.T*w_star*w_star.T*G*{fix})"})
    return Claim(
        id=cid, title=title, paper=PAPER,
        statement=(r"$f(\cdot)=\mathbf E\,\mathrm{Tr}((I-M)Y_{k+1}^\top Y_{k+1}(I-M))="
                   r"\mathbf E\,\mathrm{Tr}((I-M)G^\top w_\star^\top w_\star G(I-M))="
                   r"\mathbf E\,\mathrm{Tr}((I-M)G^\top\Sigma^{-1}G(I-M))$ with "
                   r"$G(X,\cdot)=X\prod_i(I-MX_i^\top A_iX_i)$ (" + item + ")."),
        assumptions=("w* ~ N(0, Sigma^{-1}); any weights (the step holds off S too)",
                     "checked at each X_0 (the integrands' E over w* at that X_0)"),
        formulas=fs, checks=pointwise_checks(spec), setting=proof_setting(),
        correction=correction,
        exact=pointwise_truth(spec, fs, more_points(on_set=False), correction.formulas))


EQ_B2_STEP1 = step1_claim("eq9", "ahn2023.eq_b2_step1", "App. B.2 Step 1",
                          "The loss through G (App. B.2 Step 1)")


# ================================================================================================
# (28), (38): X_0 ~ U_Sigma X_0, and d/dt of the integrand
# ================================================================================================
EQ28_FORMULAS = (
    NamedFormula("U_Sigma", "Sigma_half*U*Inverse(Sigma_half)", syms("d", "Sigma_half", "U"),
                 equation="App. B.2 Step 1", shape=("d", "d"),
                 description="the transformation with X_0 ~ U_Sigma X_0"),
    NamedFormula("df", "2*trace((Identity(n+1) - M)*G.T*Inverse(Sigma)*dG*(Identity(n+1) - M))",
                 syms("n", "d", "G", "dG", "M", "Sigma"), equation="(28), (38)",
                 description="d/dt of the integrand Tr((I - M) G^T Sigma^{-1} G (I - M))"),
)


def eq28_sides(p: Point, F: Mapping) -> list:
    T = value(F, "U_Sigma", {"Sigma": p.Sigma, "Sigma_half": p.H, "U": p.U, "d": p.d}, p.exact)
    out = [("law_X0_as_U_Sigma_X0", mul(T, p.Sigma, T.T, exact=p.exact), p.Sigma)]
    rot = mul(T, p.X0, exact=p.exact)
    for model, kind, D in (("eq9", "A", p.R), ("eq13", "B", p.S)):
        for j in range(p.layers):
            tg = tangent(rot, p.A, None if model == "eq9" else p.B, kind, j, D, p.exact,
                         quad=p.Sigma_inv)
            df = value(F, "df", {**p.values(), "G": tg.G, "dG": tg.dG}, p.exact)
            out.append((f"derivative_{'28' if model == 'eq9' else '38'}", df, tg.dq))
    return out


EQ28_SPEC = Pointwise(
    eq28_sides, *on_set_points(2, on_set=False),
    "X_0 ~ U_Sigma X_0 and the derivative of the integrand (eqs. (28), (38))",
    steps=(step("Law", "", "x ~ N(0, Sigma) gives U_Sigma x ~ N(0, U_Sigma Sigma U_Sigma^T): the "
                "law is invariant iff U_Sigma Sigma U_Sigma^T = Sigma (U_Sigma from the formula)."),
           step("Derivative", "", "d/dt of g_q(t)^T Sigma^{-1} g_q(t) at U_Sigma X_0 by forward-"
                "mode differentiation of the forward pass, against the formula with G, dG.")))
EQ28 = Claim(
    id="ahn2023.eq28",
    title="X_0 ~ U_Sigma X_0 and the derivative of the loss integrand (eqs. (28), (38))",
    paper=PAPER,
    statement=(r"$U_\Sigma=\Sigma^{1/2}U\Sigma^{-1/2}$ leaves the law of $X_0$ unchanged, and "
               r"$\frac{d}{dt}\mathrm{Tr}((I-M)G^\top\Sigma^{-1}G(I-M))=2\,\mathrm{Tr}((I-M)"
               r"G^\top\Sigma^{-1}\frac{dG}{dt}(I-M))$ at $U_\Sigma X_0$, for (9) along "
               r"$A_j+tR_j$ (28) and (13) along $B_j+tS_j$ (38)."),
    assumptions=("x ~ N(0, Sigma); U orthogonal", "any weights; derivatives at t = 0",
                 "the derivative step is checked for each X_0 and U (the integrands agree)"),
    formulas=EQ28_FORMULAS, checks=pointwise_checks(EQ28_SPEC), setting=proof_setting(),
    exact=pointwise_truth(EQ28_SPEC, EQ28_FORMULAS, more_points(on_set=False)))


# ================================================================================================
# (25)-(27) and Step 3: the averaged direction and the S-constrained flow, on d/dt f of the kernel
# ================================================================================================
DERIV_SIZES = {"quick": {"n": 3, "d": 2, "layers": 2}, "default": {"n": 4, "d": 3, "layers": 2},
               "paper": {"n": 5, "d": 3, "layers": 3}}


def derivative_points(seeds: int = 1):
    """Points of S (a_i, b_i kept): ``seeds`` rational ones at the budget's sizes, at d = 1 with
    Sigma = 4 (tr Sigma^{-1} < 1) and 1/4, one with Sigma < I; float64 ones at the sizes."""
    def exact(ctx: Context, F) -> list:
        s = sizes_of(ctx, DERIV_SIZES)
        rng = ctx.rng("derivative-points")
        out = [set_point(rng, s["n"], s["d"], s["layers"], True, label=f"exact {k}")
               for k in range(seeds)]
        out.append(set_point(rng, 2, 1, s["layers"], True, spectrum=[sympy.Integer(2)],
                             label="exact d = 1, Sigma = 4"))
        out.append(set_point(rng, s["n"], s["d"], s["layers"], True,
                             spectrum=[sympy.Rational(1, k + 2) for k in range(s["d"])],
                             label="exact, Sigma < I"))
        out.append(set_point(rng, 2, 1, s["layers"], True, spectrum=[sympy.Rational(1, 2)],
                             label="exact d = 1, Sigma = 1/4"))
        return out

    def floats(ctx: Context, F) -> list:
        s = sizes_of(ctx, DERIV_SIZES)
        rng = ctx.rng("derivative-float-points")
        return [set_point(rng, s["n"], s["d"], s["layers"], False, label=f"float {k}")
                for k in range(3)]

    return exact, floats


def more_derivative_points(ctx: Context, F) -> list:
    """For ``pointwise_truth``: d = 1 (Sigma = 1/4 and 9) and d = 3, two layers (the layer count
    of the checks: three layers of (13) take the kernel minutes)."""
    rng = np.random.default_rng(23)
    return [set_point(rng, 2, 1, 2, True, spectrum=[sympy.Rational(1, 2)], label="judge d=1"),
            set_point(rng, 2, 1, 2, True, spectrum=[sympy.Integer(3)], label="judge d=1 big"),
            set_point(rng, 2, 3, 2, True, label="judge d=3")]


def _R_of(p: Point, i: int):
    """The direction of layer i in a whole-collection perturbation (R_0 = R_j, R_1 = S_j, ...)."""
    return p.R if i % 2 == 0 else p.S


def tilde_sides(model: str, kind: str, name: str, set_dir: str, layerwise: bool,
                equality: bool = False):
    """(25)/(27)/(34)/(36)/(37): the formula ``name`` (R-tilde of a direction R_j or S_j) lies in
    S (a multiple of Sigma^{-1} for A, of I for B) and d/dt f along it is <= d/dt f along the
    direction, for the direction and its negative (``layerwise``: one layer j at a time, else
    all layers at once); ``equality``: the Step 3/4/5 display's d/dt f(R) = d/dt f(R-tilde)."""
    sym = "R_j" if kind == "A" else "S_j"

    def sides(p: Point, F: Mapping) -> list:
        K = p.Sigma_inv if set_dir == "Sigma_inv" else eye(p.d, p.exact)
        out = []
        for sign in (1, -1):
            total_t, total = 0, 0
            for j in range(p.layers):
                R = _R_of(p, j) if not layerwise else (p.R if kind == "A" else p.S)
                R = R if sign == 1 else -R
                Rt = value(F, name, {**p.values(), sym: R}, p.exact)
                if sign == 1:
                    out.append(("in_S", Rt, projection(Rt, K, p.exact)))
                dt_, d_ = (directional(p, model, kind, j, Rt),
                           directional(p, model, kind, j, R))
                if layerwise:
                    out.append(("layerwise_inequality", dt_, d_, "<="))
                    if equality and sign == 1:
                        out.append(("display_equality", d_, dt_))
                total_t, total = total_t + dt_, total + d_
            if not layerwise:
                out.append(("inequality", total_t, total, "<="))
        return out
    return sides


def haar_finding(ctx: Context, F: Mapping, name_c: str, name_t: str, sym: str,
                 exact: bool) -> Finding:
    """E_U[C(U)] = R-tilde (Step 3, 4, 5): exact by the signed permutations (a 3-design of
    O(d)) at rational points, Monte Carlo over Haar U with a confidence interval in float64."""
    from moments.montecarlo import z_critical

    s = sizes_of(ctx, DERIV_SIZES)
    if exact:
        p = set_point(ctx.rng("haar-points"), s["n"], s["d"], 1, True)
        D = p.R if sym == "R_j" else p.S
        try:
            def c_of(u):
                T = value(F, "U_Sigma", {"Sigma": p.Sigma, "Sigma_half": p.H, "U": u, "d": p.d},
                          True)
                return value(F, name_c, {**p.values(), "U_Sigma": T, sym: D}, True)
            avg = haar2_average(c_of, p.d)
            want = value(F, name_t, {**p.values(), sym: D}, True)
        except Unevaluable as exc:
            return Finding("E_U_direction", None, {}, reason=f"not evaluable exactly: {exc}")
        if not all(sympy.simplify(e) == 0 for e in (avg - want)):
            return Finding("E_U_direction", False, {"points": 1},
                           {**p.describe(), "E_U": str(avg.tolist()),
                            "formula": str(want.tolist())}, f"E_U[{name_c}] differs from {name_t}")
        return Finding("E_U_direction", True, {"points": 1, "exact": True},
                       summary="E_U exact (signed permutations, a 3-design of O(d))")
    rng = ctx.mc_rng("haar-mc")  # the point and the sample: a redraw tests another point
    p = set_point(rng, s["n"], s["d"], 1, False)
    D = p.R if sym == "R_j" else p.S
    count = max(2000, ctx.budget.mc_samples // 10)
    try:
        def c_batch(U):
            T = tvalue(F["U_Sigma"], {"Sigma": p.Sigma, "Sigma_half": p.H, "U": U}, {"d": p.d})
            return tvalue(F[name_c], {**p.values(), "U_Sigma": T, sym: D},
                          {"n": p.n, "d": p.d}).numpy()
        mean, se = haar_mc(c_batch, p.d, count, rng)
        want = value(F, name_t, {**p.values(), sym: D}, False)
    except (IllTyped, NotReal) as exc:
        return Finding("E_U_direction", False, {}, {"error": str(exc)}, f"not evaluable: {exc}")
    except (Unevaluable, ValueError, KeyError, RuntimeError) as exc:
        decided = isinstance(exc, Unevaluable) and not exc.undecided
        return Finding("E_U_direction", False if decided else None, {},
                       {"error": str(exc)} if decided else None, f"not evaluable: {exc}")
    z = z_critical(0.999, mean.size)
    ok = bool(np.all(np.abs(mean - want) <= z * se + 1e-12 * (1 + np.abs(want))))
    return Finding("E_U_direction", ok, {"samples": count, "mean": mean.tolist(),
                                         "se": se.tolist(), "formula": want.tolist()},
                   None if ok else {"mean": mean.tolist(), "formula": want.tolist(),
                                    "se": se.tolist(), "seed": ctx.seed},
                   "" if ok else f"the Haar average of {name_c} differs from {name_t}",
                   sampled=True, summary=f"Monte Carlo over {count} Haar U within {z:.1f} se")


def mc_finding(ctx: Context, model: str, kind: str) -> Finding:
    """The kernel's d/dt f against Monte Carlo of the forward pass (a float point of S)."""
    from moments.montecarlo import z_critical

    s = sizes_of(ctx, DERIV_SIZES)
    rng = ctx.mc_rng("directional-mc")  # the point and the sample, as in ``haar_finding``
    p = set_point(rng, s["n"], s["d"], s["layers"], False)
    D = p.R if kind == "A" else p.S
    j = 0
    est = mc_directional(p, model, kind, j, D, ctx.budget.mc_samples, rng)
    derived = directional(p, model, kind, j, D)
    z = z_critical(0.999)
    ok = abs(est.mean - derived) <= z * est.se
    return Finding("derivative_vs_forward_pass", bool(ok),
                   {"sampled": est.as_dict(), "derived": derived},
                   None if ok else {"sampled": est.mean, "derived": derived, "seed": ctx.seed},
                   "" if ok else "the derived d/dt f disagrees with the sampled forward pass",
                   sampled=True, self_check=True,
                   summary=f"d/dt f: kernel {derived:.4g}, Monte Carlo {est.mean:.4g} +- "
                           f"{z * est.se:.2g}")


def invariance_finding(ctx: Context, F: Mapping, exact: bool) -> Finding:
    """Step 3/4/5 (i): U_Sigma^T Sigma^{-1} U_Sigma = Sigma^{-1} (U_Sigma from its formula), at
    a rational point (exact) or Gaussian ones (float64, rounding allowance)."""
    s = sizes_of(ctx, DERIV_SIZES)
    rng = ctx.rng("invariance-points")
    pts = [set_point(rng, s["n"], s["d"], 1, exact) for _ in range(1 if exact else 3)]
    worst = 0.0
    for p in pts:
        try:
            T = value(F, "U_Sigma", {"Sigma": p.Sigma, "Sigma_half": p.H, "U": p.U, "d": p.d},
                      p.exact)
        except Unevaluable as exc:
            return Finding("U_Sigma_keeps_Sigma_inv", None if exc.undecided else False, {},
                           None if exc.undecided else {"error": str(exc)}, str(exc))
        lhs, rhs = mul(T.T, p.Sigma_inv, T, exact=p.exact), p.Sigma_inv
        if p.exact:
            ok = all(e == 0 for e in (sympy.Matrix(lhs) - rhs).applyfunc(sympy.simplify))
            if not ok:
                return Finding("U_Sigma_keeps_Sigma_inv", False, {}, {
                    **p.describe(), "U_Sigma^T Sigma^-1 U_Sigma": str(sympy.Matrix(lhs).tolist())},
                    "U_Sigma^T Sigma^{-1} U_Sigma differs from Sigma^{-1}")
        else:
            gap = float(np.max(np.abs(np.asarray(lhs) - np.asarray(rhs))))
            allow = 1e4 * np.finfo(float).eps * (1 + float(np.max(np.abs(rhs))))
            if not np.isfinite(gap):  # gap > allow is False on a NaN: it would pass
                return Finding("U_Sigma_keeps_Sigma_inv", None, {"gap": gap},
                               reason="U_Sigma^T Sigma^{-1} U_Sigma - Sigma^{-1} is not a finite "
                                      "number at a Gaussian point: float64 decides nothing")
            if gap > allow:
                return Finding("U_Sigma_keeps_Sigma_inv", False, {},
                               {"gap": gap, "allowance": allow, "seed": ctx.seed},
                               "U_Sigma^T Sigma^{-1} U_Sigma differs from Sigma^{-1}")
            worst = max(worst, gap)
    return Finding("U_Sigma_keeps_Sigma_inv", True, {"points": len(pts), "max_gap": worst},
                   summary="U_Sigma^T Sigma^{-1} U_Sigma = Sigma^{-1}")


def haar_judge(name_c: str, name_t: str, sym: str) -> Callable:
    """``pointwise_truth``'s extra exact checks for a claim with a Haar average."""
    return lambda ctx: combine([haar_finding(ctx, ctx.formulas, name_c, name_t, sym, exact=True),
                                invariance_finding(ctx, ctx.formulas, True)])


def derivative_checks(spec: Pointwise, model: str, kind: str, haar: tuple | None = None,
                      where: str = "") -> dict:
    """Exact and float comparisons of ``spec``; the Haar average (``haar`` = (C formula,
    R-tilde formula, direction symbol)); the kernel against Monte Carlo (numeric); ``where``:
    the proof step (ii) whose affinity in C the symbolic tier reports (``affinity_finding``)."""
    def symbolic(ctx: Context) -> TierResult:
        res = _exact_compare(spec, ctx, ctx.formulas)
        if haar is None or res.status != "pass":
            return res
        return _with(res, haar_finding(ctx, ctx.formulas, *haar, exact=True),
                     invariance_finding(ctx, ctx.formulas, True))

    def numeric(ctx: Context) -> TierResult:
        res = _float_compare(spec, ctx, ctx.formulas)
        if res.status not in ("pass",):
            return res
        extra = [mc_finding(ctx, model, kind)]
        if haar is not None:
            extra += [haar_finding(ctx, ctx.formulas, *haar, exact=False),
                      invariance_finding(ctx, ctx.formulas, False)]
        return _with(res, *extra)

    return {"symbolic": _with_affinity(symbolic, model, kind, where) if where else symbolic,
            "numeric": numeric}


def _with_affinity(symbolic: Callable, model: str, kind: str, where: str) -> Callable:
    """``symbolic`` with the proof's step (ii) (``affinity_finding``) reported where it passes."""
    def checked(ctx: Context) -> TierResult:
        res = symbolic(ctx)
        if res.status != "pass":
            return res
        f = affinity_finding(ctx, model, kind, where)
        res.proof = list(res.proof) + [{"step": f.proof_step, "finding": f.name, "ok": f.ok,
                                        "what": f.reason or f.summary}]
        res.evidence[f.name] = {"ok": f.ok, **f.evidence}
        return res
    return checked


def _with(res: TierResult, *findings: Finding) -> TierResult:
    """``res`` with more findings (a failed one fails it)."""
    return _merge(res, combine(list(findings)))


_RT = "trace(Sigma_half*R_j*Sigma_half)/d"
D_STEPS = (step("Derivative", "", "d/dt f at t = 0 on S along any direction D: E[2 e e'] by "
                "Isserlis (e the query error, e' its change along D), model (9) with Sigma "
                "symbolic; evaluated at rational points of S (and d = 1, Sigma = 4)."),)

EQ25_FORMULAS = (
    NamedFormula("R_tilde", f"{_RT}*Identity(d)", syms("d", "Sigma", "Sigma_half", "R_j"),
                 equation="(25)",
                 shape=("d", "d"), description="the direction in S that (25) compares with R_i"),
)
EQ25_SPEC = Pointwise(tilde_sides("eq9", "A", "R_tilde", "Sigma_inv", layerwise=False),
                      *derivative_points(),
                      "(25): d/dt f(A + t R-tilde) <= d/dt f(A + tR), R-tilde in S",
                      D_STEPS)
EQ25 = judged(EQ25_SPEC, more_derivative_points, Claim(
    id="ahn2023.eq25", title="The direction R-tilde in S of (25) (proof of Thm. 4)", paper=PAPER,
    statement=(r"For $A\in\mathcal S$ and any $R$, $\tilde R_i:=r_iI$ with "
               r"$r_i=\frac1d\mathrm{Tr}(\Sigma^{1/2}R_i\Sigma^{1/2})$ is in $\mathcal S$ and "
               r"$\frac{d}{dt}f(A+t\tilde R)\le\frac{d}{dt}f(A+tR)$ at $t=0$ (eq. (25))."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}); parameters (9), 1/n dropped",
                 "A on S; R and -R arbitrary, one direction per layer"),
    formulas=EQ25_FORMULAS, checks=derivative_checks(EQ25_SPEC, "eq9", "A"),
    setting=proof_setting(DERIV_SIZES),
    correction=Correction(
        "R-tilde_i = r_i Sigma^{-1} (as (27) and Step 3 have it)",
        "r_i I is not in S unless Sigma is a multiple of I, and d/dt f along it is "
        "r_i c_i tr(Sigma) where d/dt f along R_i is r_i c_i d (the gradient is c_i Sigma)",
        {"R_tilde": f"{_RT}*Inverse(Sigma)"})))

EQ27_FORMULAS = (
    NamedFormula("R_tilde", f"{_RT}*Inverse(Sigma)", syms("d", "Sigma", "Sigma_half", "R_j"),
                 equation="(27), Step 3", shape=("d", "d"),
                 description="r_j Sigma^{-1}, r_j = Tr(Sigma^{1/2} R_j Sigma^{1/2}) / d"),
    EQ28_FORMULAS[0],
    NamedFormula("C_A", "U_Sigma.T*R_j*U_Sigma", syms("d", "U_Sigma", "R_j"),
                 equation="Step 3 (i)", shape=("d", "d"),
                 description="the direction after X_0 -> U_Sigma X_0, averaged over U"),
)
EQ27_SPEC = Pointwise(tilde_sides("eq9", "A", "R_tilde", "Sigma_inv", layerwise=True,
                                  equality=True),
                      *derivative_points(), "(27) and Step 3: d/dt f(A(tR_j, j)) = d/dt f(A(t r_j "
                      "Sigma^{-1}, j))", D_STEPS)
EQ27 = judged(EQ27_SPEC, more_derivative_points, Claim(
    id="ahn2023.eq27",
    title="Layer-wise: d/dt f along R_j equals d/dt f along r_j Σ⁻¹ ((27), Step 3)",
    paper=PAPER,
    statement=(r"For $A\in\mathcal S$, every layer $j$ and $R_j$: "
               r"$\tilde R_j=r_j\Sigma^{-1}\in\mathcal S$ with $r_j=\frac1d\mathrm{Tr}"
               r"(\Sigma^{1/2}R_j\Sigma^{1/2})$ satisfies $\frac{d}{dt}f(A(t\tilde R_j,j))\le"
               r"\frac{d}{dt}f(A(tR_j,j))$ (27), with equality (Step 3), and "
               r"$\mathbf E_U[U_\Sigma^\top R_jU_\Sigma]=r_j\Sigma^{-1}$."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}); parameters (9), 1/n dropped",
                 "U Haar on O(d); A on S; R_j and -R_j"),
    formulas=EQ27_FORMULAS,
    checks=derivative_checks(EQ27_SPEC, "eq9", "A", ("C_A", "R_tilde", "R_j"), "Step 3 (ii)"),
    setting=proof_setting(DERIV_SIZES)), haar_judge("C_A", "R_tilde", "R_j"))


def flow_sides(model: str, names: tuple):
    """(26)/(35): along the flow dA_i/dt = flow_A(grad_{A_i} f) (and dB_i/dt = flow_B(grad_{B_i}
    f)) the flow stays in S and d/dt f <= -sum ||grad||_F^2, the gradients of the kernel.  The
    last layer's B_k never acts on the prediction (its gradient is 0, its term 0 on both sides):
    it is left out, so a flow formula undefined at a zero gradient is judged on the others."""
    def sides(p: Point, F: Mapping) -> list:
        out, rate, bound = [], 0, 0
        I = eye(p.d, p.exact)
        for name, kind, sym, K in ((names[0], "A", "grad_A", p.Sigma_inv),
                                   *(((names[1], "B", "grad_B", I),) if len(names) > 1 else ())):
            for i in range(p.layers - (kind == "B")):
                g = gradient(p, model, kind, i)
                flow = value(F, name, {**p.values(), sym: g}, p.exact)
                out.append((f"{name}_in_S", flow, projection(flow, K, p.exact)))
                rate = rate + directional(p, model, kind, i, flow)
                bound = bound - inner(g, g, p.exact)
        out.append(("descent", rate, bound, "<="))
        return out
    return sides


EQ26_FORMULAS = (
    NamedFormula("flow_A", "-trace(Sigma_half*grad_A*Sigma_half)*Inverse(Sigma)",
                 syms("d", "Sigma", "Sigma_half", "grad_A"), equation="(26)", shape=("d", "d"),
                 description="dA_i/dt = -r_i(t) Sigma^{-1}, "
                             "r_i = Tr(Sigma^{1/2} grad Sigma^{1/2})"),
)
EQ26_SPEC = Pointwise(flow_sides("eq9", ("flow_A",)), *derivative_points(),
                      "(26): the S-constrained flow descends at rate >= sum ||grad||^2",
                      D_STEPS)
EQ26 = Claim(
    id="ahn2023.eq26", title="The S-constrained gradient flow of (26) (proof of Thm. 4)",
    paper=PAPER,
    statement=(r"Along $\frac{d}{dt}A_i=-r_i(t)\Sigma^{-1}$, "
               r"$r_i(t)=\mathrm{Tr}(\Sigma^{1/2}\nabla_{A_i}f\,\Sigma^{1/2})$, $A$ stays in "
               r"$\mathcal S$ and $\frac{d}{dt}f(A(t))\le-\sum_i\|\nabla_{A_i}f(A(t))\|_F^2$."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}); parameters (9), 1/n dropped",
                 "at points of S (the flow's velocity there); full-matrix gradients"),
    formulas=EQ26_FORMULAS, checks=derivative_checks(EQ26_SPEC, "eq9", "A"),
    setting=proof_setting(DERIV_SIZES),
    exact=pointwise_truth(EQ26_SPEC, EQ26_FORMULAS, more_derivative_points))


def affinity_finding(ctx: Context, model: str, kind: str, where: str) -> Finding:
    """The proof's (ii): "d/dt G(X_0, W_j + tC) is affine in C.  Thus E_U[G(X_0, W_j + tC_U)] =
    G(X_0, W_j + t E_U[C_U])".  Exact at a rational point of S: is G itself affine in C (what the
    "Thus" needs for t != 0), and is its t-derivative at 0 linear in C (what the step uses)?"""
    s = sizes_of(ctx, DERIV_SIZES)
    rng = ctx.rng("affinity")
    p = set_point(rng, s["n"], s["d"], max(2, s["layers"]), True)
    Bs = None if model == "eq9" else p.B
    C1 = p.R
    C2 = sympy.Matrix(p.d, p.d, lambda i, k: _rat(rng, (-2, -1, 1, 2)))
    j = 0

    def G(C):
        As, Bs_ = list(p.A), None if Bs is None else list(Bs)
        if kind == "A":
            As[j] = As[j] + C
        else:
            Bs_[j] = Bs_[j] + C
        return g_matrix(p.X0, As, Bs_, True)

    Z = sympy.zeros(p.d, p.d)
    second = (G(C1 + C2) - G(C1) - G(C2) + G(Z)).applyfunc(sympy.expand)
    affine = all(e == 0 for e in second)
    dG = lambda C: tangent(p.X0, p.A, Bs, kind, j, C, True).dG  # noqa: E731
    linear = all(e == 0 for e in (dG(C1 + C2) - dG(C1) - dG(C2)).applyfunc(sympy.expand))
    ev = {"G_affine_in_C": affine, "dG_linear_in_C": linear, "layer": j, "model": model}
    if affine:
        return Finding("step_ii_affine", True, ev, proof_step=where,
                       summary="G is affine in the direction: E_U passes inside exactly")
    return Finding("step_ii_affine", False if linear else None, ev, proof_step=where,
                   reason=("G(X_0, W_j + tC) is not affine in C (exact at a rational point), so "
                           "'E_U[G(X_0, W_j + tC_U)] = G(X_0, W_j + t E_U C_U)' does not follow "
                           "for t != 0; its t-derivative at 0, which the step uses, is linear in "
                           "C" if linear else "neither G nor dG/dt is affine in C"))


