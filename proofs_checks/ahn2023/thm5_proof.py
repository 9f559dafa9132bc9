"""ahn2023 App. B.3 (proof of Theorem 5): the layers (13), the directions R-tilde, S-tilde and the
flow (34)-(37), the derivative recursions (41), (48), the B-perturbation under X_0 -> U_Sigma X_0
(40), (43), (45), the base cases (42) and Step 5's, the inductive step (49), and Steps 4-5.

Checked like ``thm4_proof``: forward passes of ``lsa_forward`` and their forward-mode derivatives
exactly at rational points and in float64; d/dt f on S by the kernel at Sigma = I with the change
of variables x = Sigma^{1/2} xi (``multilayer_proof.directional``), against Monte Carlo of the
forward pass at a general Sigma in the numeric tier.
"""
from __future__ import annotations

from typing import Mapping

from verify.claim import Claim, Correction
from verify.evidence import step
from verify.formulas import NamedFormula

from .proof_moments import directional, projection
from .proof_points import (Point, Pointwise, eye, inv, judged, more_points, mul, on_set_points,
                           pointwise_checks, pointwise_truth, proof_setting, run_layers, syms,
                           tangent, value)
from .one_layer import PAPER
from .thm4_proof import (DERIV_SIZES, EQ27_FORMULAS, SET_FORMULAS, _R_of, _rotated,
                         derivative_checks, derivative_points, flow_sides, haar_judge,
                         more_derivative_points, step1_claim, tilde_sides)

# ================================================================================================
# (31): the layers (13) with the 1/n absorbed
# ================================================================================================
EQ31_FORMULAS = (
    NamedFormula("A_absorbed", "A/n", syms("n", "d", "A"), equation="App. B.3 (prose)",
                 description="the recursion's A_i for the model (53)'s A_i: the 1/n absorbed",
                 shape=("d", "d")),
    NamedFormula("X_next", "X_i + B*X_i*M*X_i.T*A*X_i", syms("n", "d", "X_i", "B", "M", "A"),
                 equation="(31)", shape=("d", "n+1"), description="X_{i+1} under (13)"),
    NamedFormula("Y_next", "Y_i + Y_i*M*X_i.T*A*X_i", syms("n", "d", "X_i", "Y_i", "M", "A"),
                 equation="(31)", shape=("1", "n+1"), description="Y_{i+1} under (13)"),
    NamedFormula("factor", "Identity(n+1) + M*X_i.T*A*X_i", syms("n", "d", "X_i", "M", "A"),
                 equation="(31)", shape=("n+1", "n+1"),
                 description="Y_{i+1} = Y_0 prod_{l<=i} factor(X_l, A_l)"),
)


def eq31_sides(p: Point, F: Mapping) -> list:
    """The model (53) with parameters (13) and the 1/n kept (lsa_forward, divisor n) at the
    point's A_i, B_i, against (31) at the absorbed A_i: X, Y, and Y as Y_0 times the factors."""
    Y0 = mul(p.w.T, p.X0, exact=p.exact)
    traj = run_layers(p.X0, Y0, p.A, p.B, p.exact, divisor=p.n)
    vals = p.values()
    X, Y, prod = p.X0, Y0, Y0
    out = []
    for i, (A0, B) in enumerate(zip(p.A, p.B)):
        A = value(F, "A_absorbed", {**vals, "A": A0}, p.exact)
        prod = mul(prod, value(F, "factor", {**vals, "X_i": X, "A": A}, p.exact), exact=p.exact)
        Y = value(F, "Y_next", {**vals, "Y_i": Y, "X_i": X, "A": A}, p.exact)
        X = value(F, "X_next", {**vals, "X_i": X, "A": A, "B": B}, p.exact)
        Xm, Ym = traj[i + 1]
        out += [("X_next", X, Xm), ("Y_next", Y, Ym), ("product_form", prod, Ym)]
    return out


EQ31_SPEC = Pointwise(eq31_sides, *on_set_points(2, on_set=False),
                      "the layers (13) with the 1/n absorbed (eq. (31))",
                      (step("Forward pass", "", "lsa_forward with P_i = diag(B_i, 1), Q_i = "
                            "diag(A_i, 0) and the 1/n of (53), on Zbar_0 = [[X_0], [w*^T X_0]], "
                            "general A_i (symmetric), B_i; against the recursion (31) read from "
                            "the formulas at the absorbed A_i."),))
EQ31 = Claim(
    id="ahn2023.eq31", title="The layers (13) on Zbar_0 with the 1/n absorbed (eq. (31))",
    paper=PAPER,
    statement=(r"With the $1/n$ of (53) absorbed into the $A_i$, the parameters (13) give "
               r"$X_{i+1}=X_i+B_iX_iMX_i^\top A_iX_i$ and $Y_{i+1}=Y_i+Y_iMX_i^\top A_iX_i="
               r"Y_0\prod_{\ell=0}^i(I+MX_\ell^\top A_\ell X_\ell)$ (eq. (31))."),
    assumptions=("any prompt Zbar_0 (the identity is deterministic)",
                 "A_i symmetric, B_i any (eq. (13))"),
    formulas=EQ31_FORMULAS, checks=pointwise_checks(EQ31_SPEC), setting=proof_setting(),
    exact=pointwise_truth(EQ31_SPEC, EQ31_FORMULAS, more_points(on_set=False)))

EQ_B3_STEP1 = step1_claim("eq13", "ahn2023.eq_b3_step1", "App. B.3 Step 1",
                          "The loss through G with the X_i of (31) (App. B.3 Step 1)")


# ================================================================================================
# (41), (48): d/dt X_i along B_j + tC and A_j + tC (any weights)
# ================================================================================================
_STEP = "dX + B*dX*M*X_i.T*A*X_i + B*X_i*M*dX.T*A*X_i + B*X_i*M*X_i.T*A*dX"
DX_STEP = NamedFormula("dX_step", _STEP, syms("n", "d", "dX", "X_i", "B", "M", "A"),
                       equation="(41), (48) third line; (43), (49)", shape=("d", "n+1"),
                       description="d/dt X_{i+1} from d/dt X_i for i > j (the product rule)")
EQ41_FORMULAS = (
    NamedFormula("dX_before", "ZeroMatrix(d, n+1)", syms("n", "d"), equation="(41), (48)",
                 shape=("d", "n+1"), description="d/dt X_l for l <= j"),
    NamedFormula("dX_first_B", "C_j*X_i*M*X_i.T*A*X_i", syms("n", "d", "C_j", "X_i", "M", "A"),
                 equation="(41)", shape=("d", "n+1"),
                 description="d/dt X_{j+1} along B_j + tC (X_i = X_j)"),
    NamedFormula("dX_first_A", "B*X_i*M*X_i.T*C_j*X_i", syms("n", "d", "C_j", "X_i", "M", "B"),
                 equation="(48)", shape=("d", "n+1"),
                 description="d/dt X_{j+1} along A_j + tC (X_i = X_j)"),
    DX_STEP,
)


def eq41_sides(p: Point, F: Mapping) -> list:
    out = []
    for kind in ("B", "A"):
        for j in range(p.layers):
            tg = tangent(p.X0, p.A, p.B, kind, j, p.R, p.exact)
            vals = p.values()
            for l in range(j + 1):
                out.append(("dX_before", value(F, "dX_before", vals, p.exact), tg.dX[l]))
            first = value(F, f"dX_first_{kind}", {**vals, "C_j": p.R, "X_i": tg.X[j], "A": p.A[j],
                                                  "B": p.B[j]}, p.exact)
            out.append((f"dX_first_{kind}", first, tg.dX[j + 1]))
            for i in range(j + 1, p.layers):
                nxt = value(F, "dX_step", {**vals, "dX": tg.dX[i], "X_i": tg.X[i], "A": p.A[i],
                                           "B": p.B[i]}, p.exact)
                out.append((f"dX_step_{kind}", nxt, tg.dX[i + 1]))
    return out


EQ41_SPEC = Pointwise(eq41_sides, *on_set_points(2, on_set=False),
                      "the recursions (41), (48) of d/dt X_i",
                      (step("Derivatives", "", "d/dt X_i at t = 0 by forward-mode "
                            "differentiation of lsa_forward (layers (13), general weights), "
                            "against the recursions read from the formulas."),))
EQ41 = Claim(
    id="ahn2023.eq41", title="The derivative recursions (41) and (48) of the layers (13)",
    paper=PAPER,
    statement=(r"Along $B_j+tC$: $\frac{d}{dt}X_\ell=0$ ($\ell\le j$), $\frac{d}{dt}X_{j+1}="
               r"CX_jMX_j^\top A_jX_j$ (41); along $A_j+tC$: $\frac{d}{dt}X_{j+1}="
               r"B_jX_jMX_j^\top CX_j$ (48); then $\dot X_{i+1}=\dot X_i+B_i\dot X_iMX_i^\top "
               r"A_iX_i+B_iX_iM\dot X_i^\top A_iX_i+B_iX_iMX_i^\top A_i\dot X_i$."),
    assumptions=("the layers (13) with the 1/n dropped, any weights", "derivatives at t = 0"),
    formulas=EQ41_FORMULAS, checks=pointwise_checks(EQ41_SPEC), setting=proof_setting(),
    exact=pointwise_truth(EQ41_SPEC, EQ41_FORMULAS, more_points(on_set=False)))


# ================================================================================================
# (40), (43), (45): the B-perturbation under X_0 -> U_Sigma X_0, on S
# ================================================================================================
EQ40_FORMULAS = SET_FORMULAS + (
    NamedFormula("C_B", "Inverse(U_Sigma)*S_j*U_Sigma", syms("d", "U_Sigma", "S_j"),
                 equation="(40), (45)", shape=("d", "d"),
                 description="the direction at X_0 that X_0 -> U_Sigma X_0 turns S_j into"),
    NamedFormula("dX_40", "Inverse(U_Sigma)*dX", syms("n", "d", "U_Sigma", "dX"),
                 equation="(40), (43)", shape=("d", "n+1"),
                 description="U_Sigma^{-1} d/dt X_i(U_Sigma X_0, B_j + tS_j)"),
    NamedFormula("dG_45", "Inverse(U_Sigma)*dG", syms("n", "d", "U_Sigma", "dG"),
                 equation="(45)", shape=("d", "n+1"),
                 description="U_Sigma^{-1} d/dt G(U_Sigma X_0, B_j + tS_j)"),
    DX_STEP,
)


def eq40_sides(p: Point, F: Mapping) -> list:
    vals = p.values()
    rot = _rotated(p)
    C = value(F, "C_B", vals, p.exact)
    out = []
    for j in range(p.layers):
        tr = tangent(rot, p.A, p.B, "B", j, p.S, p.exact)
        t0 = tangent(p.X0, p.A, p.B, "B", j, C, p.exact)
        moved = [value(F, "dX_40", {**vals, "dX": dX}, p.exact) for dX in tr.dX]
        out += [("dX_equivariance (40)", m, dX) for m, dX in zip(moved, t0.dX)]
        for i in range(j + 1, p.layers):
            nxt = value(F, "dX_step", {**vals, "dX": moved[i], "X_i": t0.X[i], "A": p.A[i],
                                       "B": p.B[i]}, p.exact)
            out.append(("inductive_step (43)", nxt, moved[i + 1]))
        out.append(("dG_equivariance (45)", value(F, "dG_45", {**vals, "dG": tr.dG}, p.exact),
                    t0.dG))
    return out


EQ40_SPEC = Pointwise(eq40_sides, *on_set_points(1),
                      "d/dt X_i and d/dt G along B_j + tS_j under X_0 -> U_Sigma X_0 on S",
                      (step("Derivatives", "", "Forward-mode derivatives of lsa_forward at "
                            "U_Sigma X_0 along S_j and at X_0 along C_B."),))
EQ40 = Claim(
    id="ahn2023.eq40",
    title="d/dt X_i and d/dt G along B_j + tS_j under X_0 → U_Sigma X_0 ((40), (43), (45))",
    paper=PAPER,
    statement=(r"On $\mathcal S$, with $C=U_\Sigma^{-1}S_jU_\Sigma$: $U_\Sigma^{-1}\frac{d}{dt}"
               r"X_i(U_\Sigma X_0,B_j+tS_j)=\frac{d}{dt}X_i(X_0,B_j+tC)$ (40), these obey the "
               r"recursion (41) at $X_i(X_0)$ (43), and the same holds for $G$ (45)."),
    assumptions=("U orthogonal, U_Sigma = Sigma^{1/2} U Sigma^{-1/2}", "(A, B) on S",
                 "the layers (13) with the 1/n dropped; derivatives at t = 0"),
    formulas=EQ40_FORMULAS, checks=pointwise_checks(EQ40_SPEC), setting=proof_setting(),
    exact=pointwise_truth(EQ40_SPEC, EQ40_FORMULAS, more_points()))


# ================================================================================================
# (42) and Step 5's base case: d/dt X_{j+1} at U_Sigma X_0
# ================================================================================================
# the printed first lines end in "... X_j(U_Sigma X_0, .)^T A_j", a d x d matrix where the left
# side is d x (n+1): they are read with the trailing X_j(U_Sigma X_0) = U_Sigma X_j(X_0) that
# (41)/(48) put there (no d x (n+1) reading goes without it)
_BASE_B = "Inverse(U_Sigma)*S_j*U_Sigma*X_i*M*(U_Sigma*X_i).T*A*U_Sigma*X_i"
_BASE_A = "Inverse(U_Sigma)*B*U_Sigma*X_i*M*(U_Sigma*X_i).T*A*U_Sigma*X_i"
EQ42_FORMULAS = (
    NamedFormula("base_B", _BASE_B, syms("n", "d", "U_Sigma", "S_j", "X_i", "M", "A"),
                 equation="(42), first line", shape=("d", "n+1"),
                 description="U_Sigma^{-1} d/dt X_{j+1}(U_Sigma X_0, B_j + tS_j), X_i = X_j(X_0)"),
    NamedFormula("base_A", _BASE_A, syms("n", "d", "U_Sigma", "B", "X_i", "M", "A", "R_j"),
                 equation="App. B.3 Step 5 (base case), second line", shape=("d", "n+1"),
                 description="U_Sigma^{-1} d/dt X_{j+1}(U_Sigma X_0, A_j + tR_j), X_i = X_j(X_0)"),
    NamedFormula("at", "U_Sigma*X_0", syms("n", "d", "U_Sigma", "X_0"),
                 equation="(42) and Step 5, last lines", shape=("d", "n+1"),
                 description="the input at which the last lines take d/dt X_{j+1} along the "
                             "transformed direction"),
)


def eq42_sides(p: Point, F: Mapping) -> list:
    vals = p.values()
    rot = _rotated(p)
    at = value(F, "at", vals, p.exact)
    Ui = inv(p.U_Sigma, p.exact)
    C_B = mul(Ui, p.S, p.U_Sigma, exact=p.exact)
    C_A = mul(p.U_Sigma.T, p.R, p.U_Sigma, exact=p.exact)
    out = []
    for j in range(p.layers):
        X = tangent(p.X0, p.A, p.B, "B", j, p.S, p.exact).X[j]
        lhs_b = mul(Ui, tangent(rot, p.A, p.B, "B", j, p.S, p.exact).dX[j + 1], exact=p.exact)
        lhs_a = mul(Ui, tangent(rot, p.A, p.B, "A", j, p.R, p.exact).dX[j + 1], exact=p.exact)
        out.append(("first_line_B (42)", value(F, "base_B", {**vals, "X_i": X, "A": p.A[j]},
                                               p.exact), lhs_b))
        out.append(("base_case_A (Step 5)", value(F, "base_A", {**vals, "X_i": X, "A": p.A[j],
                                                                "B": p.B[j]}, p.exact), lhs_a))
        out.append(("last_line_B (42)", tangent(at, p.A, p.B, "B", j, C_B, p.exact).dX[j + 1],
                    lhs_b))
        out.append(("last_line_A (Step 5)", tangent(at, p.A, p.B, "A", j, C_A, p.exact).dX[j + 1],
                    lhs_a))
    return out


EQ42_SPEC = Pointwise(eq42_sides, *on_set_points(1), "the base cases of (40) and (47)",
                      (step("Derivative", "", "U_Sigma^{-1} d/dt X_{j+1} at U_Sigma X_0 by "
                            "forward-mode differentiation, against the printed lines; the last "
                            "lines' derivative taken at the formula's input along U_Sigma^{-1} "
                            "S_j U_Sigma (resp. U_Sigma^T R_j U_Sigma)."),))
EQ42 = judged(EQ42_SPEC, more_points(), Claim(
    id="ahn2023.eq42", title="The base cases (42) and of Step 5 (App. B.3)", paper=PAPER,
    statement=(r"$U_\Sigma^{-1}\frac{d}{dt}X_{j+1}(U_\Sigma X_0,B_j+tS_j)=U_\Sigma^{-1}S_jU_\Sigma "
               r"X_j(X_0)MX_j(U_\Sigma X_0)^\top A_j[X_j(U_\Sigma X_0)]=\frac{d}{dt}X_{j+1}"
               r"(U_\Sigma X_0,B_j+tU_\Sigma^{-1}S_jU_\Sigma)$ (42) and likewise "
               r"$U_\Sigma^{-1}B_jU_\Sigma X_j(X_0)MX_j(U_\Sigma X_0)^\top A_j[X_j(U_\Sigma X_0)]"
               r"=\frac{d}{dt}X_{j+1}(U_\Sigma X_0,A_j+tU_\Sigma^\top R_jU_\Sigma)$ (Step 5)."),
    assumptions=("(A, B) on S; U orthogonal", "the first lines read with the trailing "
                 "X_j(U_Sigma X_0) that makes them d x (n+1) (bracketed)",
                 "the last lines' direction read without the trailing X_j (a direction is d x d)"),
    formulas=EQ42_FORMULAS, checks=pointwise_checks(EQ42_SPEC), setting=proof_setting(),
    correction=Correction(
        "R_j for A_j in Step 5's first line, and X_0 for U_Sigma X_0 in the last lines",
        "d/dt X_{j+1} along A_j + tC is B_j X_j M X_j^T C X_j (48): the printed A_j is the "
        "weight, not the direction; the base case compares with the derivative at X_0 along the "
        "transformed direction, as (40) and (47) state it",
        {"base_A": "Inverse(U_Sigma)*B*U_Sigma*X_i*M*(U_Sigma*X_i).T*R_j*U_Sigma*X_i",
         "at": "X_0"})))


# ================================================================================================
# (49): the inductive step of (47) with its C
# ================================================================================================
EQ49_FORMULAS = (
    NamedFormula("C_49", "Inverse(U_Sigma)*S_j*U_Sigma", syms("d", "U_Sigma", "S_j", "R_j"),
                 equation="(49) (after)", shape=("d", "d"),
                 description="the C with which (49) matches the third line of (48)"),
)


def eq49_sides(p: Point, F: Mapping) -> list:
    rot, Ui = _rotated(p), inv(p.U_Sigma, p.exact)
    C = value(F, "C_49", p.values(), p.exact)
    out = []
    for j in range(p.layers):
        tr = tangent(rot, p.A, p.B, "A", j, p.R, p.exact)
        t0 = tangent(p.X0, p.A, p.B, "A", j, C, p.exact)
        out += [("matches_48", mul(Ui, a, exact=p.exact), b) for a, b in zip(tr.dX, t0.dX)]
    return out


EQ49_SPEC = Pointwise(eq49_sides, *on_set_points(1),
                      "U_Sigma^{-1} d/dt X_i(U_Sigma X_0, A_j + tR_j) = d/dt X_i(X_0, A_j + tC)")
EQ49 = judged(EQ49_SPEC, more_points(), Claim(
    id="ahn2023.eq49", title="The direction C of the inductive step (49) (App. B.3 Step 5)",
    paper=PAPER,
    statement=(r"$U_\Sigma^{-1}\frac{d}{dt}X_i(U_\Sigma X_0,A_j+tR_j)$ obeys the recursion (48) "
               r"with $C=U_\Sigma^{-1}SU_\Sigma$ (as printed after (49))."),
    assumptions=("(A, B) on S; U orthogonal; S_j the direction of the B-perturbation",),
    formulas=EQ49_FORMULAS, checks=pointwise_checks(EQ49_SPEC), setting=proof_setting(),
    correction=Correction(
        "C = U_Sigma^T R_j U_Sigma (as in (47))",
        "Step 5 perturbs A_j along R_j: U_Sigma^T R_j U_Sigma is its image (47); "
        "U_Sigma^{-1} S U_Sigma is Step 2's direction for B_j, copied",
        {"C_49": "U_Sigma.T*R_j*U_Sigma"})))


# ================================================================================================
# (34)-(37), Steps 4 and 5: the directions R-tilde, S-tilde and the flow for (13)
# ================================================================================================
_RT = "trace(Sigma_half*R_j*Sigma_half)/d"
_ST = "trace(Inverse(Sigma_half)*S_j*Sigma_half)/d"
R_TILDE = NamedFormula("R_tilde", f"{_RT}*Inverse(Sigma)",
                       syms("d", "Sigma", "Sigma_half", "R_j"),
                       equation="(36), Step 5", shape=("d", "d"),
                       description="r_j Sigma^{-1}, r_j = Tr(Sigma^{1/2} R_j Sigma^{1/2}) / d")
S_TILDE = NamedFormula("S_tilde", f"{_ST}*Identity(d)",
                       syms("d", "Sigma", "Sigma_half", "S_j"),
                       equation="(34), Step 4", shape=("d", "d"),
                       description="s_j I, s_j = Tr(Sigma^{-1/2} S_j Sigma^{1/2}) / d")
D13_STEPS = (step("Derivative", "", "d/dt f at t = 0 on S along any direction D of A_j or B_j: "
                  "E[2 e e'] by Isserlis at Sigma = I (a_i I, b_i I) and the change of variables "
                  "x = Sigma^{1/2} xi (D -> Sigma^{1/2} D Sigma^{1/2} for A, Sigma^{-1/2} D "
                  "Sigma^{1/2} for B); the numeric tier checks it against the sampled forward "
                  "pass at a general Sigma."),)


def eq34_sides(p: Point, F: Mapping) -> list:
    I = eye(p.d, p.exact)
    out = []
    for sign in (1, -1):
        tot_t, tot = 0, 0
        for j in range(p.layers):
            R, S = _R_of(p, j), _R_of(p, j + 1)
            R, S = (R, S) if sign == 1 else (-R, -S)
            Rt = value(F, "R_tilde", {**p.values(), "R_j": R}, p.exact)
            St = value(F, "S_tilde", {**p.values(), "S_j": S}, p.exact)
            if sign == 1:
                out += [("R_tilde_in_S", Rt, projection(Rt, p.Sigma_inv, p.exact)),
                        ("S_tilde_in_S", St, projection(St, I, p.exact))]
            tot_t = tot_t + directional(p, "eq13", "A", j, Rt) + directional(p, "eq13", "B", j, St)
            tot = tot + directional(p, "eq13", "A", j, R) + directional(p, "eq13", "B", j, S)
        out.append(("inequality", tot_t, tot, "<="))
    return out


EQ34_FORMULAS = (
    NamedFormula("R_tilde", f"{_RT}*Identity(d)", syms("d", "Sigma", "Sigma_half", "R_j"),
                 equation="(34)",
                 shape=("d", "d"), description="the direction in S that (34) compares with R_i"),
    S_TILDE,
)
EQ34_SPEC = Pointwise(eq34_sides, *derivative_points(),
                      "(34): d/dt f(A + tR~, B + tS~) <= d/dt f(A + tR, B + tS), (R~, S~) in S",
                      D13_STEPS)
EQ34 = judged(EQ34_SPEC, more_derivative_points, Claim(
    id="ahn2023.eq34", title="The directions (R-tilde, S-tilde) in S of (34) (proof of Thm. 5)",
    paper=PAPER,
    statement=(r"For $(A,B)\in\mathcal S$ and any $(R,S)$: $\tilde R_i:=r_iI$, $\tilde S_i=s_iI$ "
               r"with $r_i=\frac1d\mathrm{Tr}(\Sigma^{1/2}R_i\Sigma^{1/2})$, "
               r"$s_i=\frac1d\mathrm{Tr}(\Sigma^{-1/2}S_i\Sigma^{1/2})$ are in $\mathcal S$ and "
               r"$\frac{d}{dt}f(A+t\tilde R,B+t\tilde S)\le\frac{d}{dt}f(A+tR,B+tS)$ (34)."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}); parameters (13), 1/n dropped",
                 "(A, B) on S; (R, S) and -(R, S), one direction per layer"),
    formulas=EQ34_FORMULAS, checks=derivative_checks(EQ34_SPEC, "eq13", "B"),
    setting=proof_setting(DERIV_SIZES),
    correction=Correction(
        "R-tilde_i = r_i Sigma^{-1} (as (36) and Step 5 have it)",
        "r_i I is not in S unless Sigma is a multiple of I; d/dt f along A_i is c_i tr(Sigma D)",
        {"R_tilde": f"{_RT}*Inverse(Sigma)"})))

EQ35_FORMULAS = (
    NamedFormula("flow_A", "-trace(Sigma_half*grad_A*Sigma_half)*Inverse(Sigma)",
                 syms("d", "Sigma", "Sigma_half", "grad_A"), equation="(35)", shape=("d", "d"),
                 description="dA_i/dt = -r_i(t) Sigma^{-1}"),
    NamedFormula("flow_B", "-trace(Inverse(Sigma_half)*grad_B*Sigma_half)*Inverse(Sigma)",
                 syms("d", "Sigma", "Sigma_half", "grad_B"), equation="(35)", shape=("d", "d"),
                 description="dB_i/dt = -s_i(t) Sigma^{-1}, "
                             "s_i = Tr(Sigma^{-1/2} grad Sigma^{1/2})"),
)
EQ35_SPEC = Pointwise(flow_sides("eq13", ("flow_A", "flow_B")), *derivative_points(),
                      "(35): the S-constrained flow of (13) descends at rate >= sum ||grad||^2",
                      D13_STEPS)
EQ35 = judged(EQ35_SPEC, more_derivative_points, Claim(
    id="ahn2023.eq35", title="The S-constrained gradient flow of (35) (proof of Thm. 5)",
    paper=PAPER,
    statement=(r"Along $\frac{d}{dt}A_i=-r_i\Sigma^{-1}$, $\frac{d}{dt}B_i=-s_i\Sigma^{-1}$ "
               r"($r_i=\mathrm{Tr}(\Sigma^{1/2}\nabla_{A_i}f\Sigma^{1/2})$, "
               r"$s_i=\mathrm{Tr}(\Sigma^{-1/2}\nabla_{B_i}f\Sigma^{1/2})$), $(A,B)$ stays in "
               r"$\mathcal S$ and $\frac{d}{dt}f\le-\sum_i\|\nabla_{A_i}f\|_F^2+"
               r"\|\nabla_{B_i}f\|_F^2$ (35)."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}); parameters (13), 1/n dropped",
                 "at points of S (the flow's velocity there), d = 1 with Sigma = 4 among them"),
    formulas=EQ35_FORMULAS, checks=derivative_checks(EQ35_SPEC, "eq13", "B"),
    setting=proof_setting(DERIV_SIZES),
    correction=Correction(
        "dB_i/dt = -s_i(t) I",
        "B_i = b_i I on S, so a velocity along Sigma^{-1} leaves S; and with grad_{B_i} f = c_i I "
        "it gives d/dt f = -c_i^2 d tr(Sigma^{-1}) from B_i, above -||grad||^2 = -c_i^2 d "
        "where tr(Sigma^{-1}) < 1 (d = 1, Sigma = 4)",
        {"flow_B": "-trace(Inverse(Sigma_half)*grad_B*Sigma_half)*Identity(d)"})))

EQ36_FORMULAS = (R_TILDE, EQ27_FORMULAS[1], EQ27_FORMULAS[2])
EQ36_SPEC = Pointwise(tilde_sides("eq13", "A", "R_tilde", "Sigma_inv", layerwise=True,
                                  equality=True), *derivative_points(),
                      "(36) and Step 5: d/dt f(A(tR_j, j), B) = d/dt f(A(t r_j Sigma^{-1}, j), B)",
                      D13_STEPS)
EQ36 = Claim(
    id="ahn2023.eq36",
    title="Layer-wise for A in (13): R_j and r_j Σ⁻¹ ((36), Step 5)", paper=PAPER,
    statement=(r"For $(A,B)\in\mathcal S$, every $j$ and $R_j$: $\tilde R_j=r_j\Sigma^{-1}$ "
               r"satisfies $\frac{d}{dt}f(A(t\tilde R_j,j),B)\le\frac{d}{dt}f(A(tR_j,j),B)$ (36) "
               r"with equality (end of Step 5), and $\mathbf E_U[U_\Sigma^\top R_jU_\Sigma]="
               r"r_j\Sigma^{-1}$."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}); parameters (13), 1/n dropped",
                 "U Haar on O(d); (A, B) on S; R_j and -R_j"),
    formulas=EQ36_FORMULAS,
    checks=derivative_checks(EQ36_SPEC, "eq13", "A", ("C_A", "R_tilde", "R_j"), "Step 5 (ii)"),
    setting=proof_setting(DERIV_SIZES),
    exact=pointwise_truth(EQ36_SPEC, EQ36_FORMULAS, more_derivative_points,
                          extra=haar_judge("C_A", "R_tilde", "R_j")))

EQ37_FORMULAS = (
    NamedFormula("S_tilde", f"{_ST}*Inverse(Sigma)", syms("d", "Sigma", "Sigma_half", "S_j"),
                 equation="(37) (line 991)", shape=("d", "d"),
                 description="s_j Sigma^{-1}, the direction (37) compares with S_j"),
)
EQ37_SPEC = Pointwise(tilde_sides("eq13", "B", "S_tilde", "I", layerwise=True),
                      *derivative_points(), "(37): d/dt f(A, B(t S~_j, j)) <= d/dt f(A, B(tS_j, "
                      "j))", D13_STEPS)
EQ37 = judged(EQ37_SPEC, more_derivative_points, Claim(
    id="ahn2023.eq37", title="Layer-wise for B in (13): the direction S-tilde_j of (37)",
    paper=PAPER,
    statement=(r"For $(A,B)\in\mathcal S$, every $j$ and $S_j$: $\tilde S_j=s_j\Sigma^{-1}$ "
               r"(line 991), $s_j=\frac1d\mathrm{Tr}(\Sigma^{-1/2}S_j\Sigma^{1/2})$, is in "
               r"$\mathcal S$ and "
               r"$\frac{d}{dt}f(A,B(t\tilde S_j,j))\le\frac{d}{dt}f(A,B(tS_j,j))$."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}); parameters (13), 1/n dropped",
                 "(A, B) on S; S_j and -S_j"),
    formulas=EQ37_FORMULAS, checks=derivative_checks(EQ37_SPEC, "eq13", "B"),
    setting=proof_setting(DERIV_SIZES),
    correction=Correction(
        "S-tilde_j = s_j I (as Step 4 ends)",
        "B_j = b_j I on S; the gradient in B_j is c_j I, so d/dt f along s_j Sigma^{-1} is "
        "c_j s_j tr(Sigma^{-1}), not c_j s_j d = d/dt f along S_j",
        {"S_tilde": f"{_ST}*Identity(d)"})))

C_B = NamedFormula("C_B", "Inverse(U_Sigma)*S_j*U_Sigma", syms("d", "U_Sigma", "S_j"),
                   equation="Step 4 (i)", shape=("d", "d"),
                   description="the direction after X_0 -> U_Sigma X_0, averaged over U")
STEP4_FORMULAS = (S_TILDE, EQ27_FORMULAS[1], C_B)
STEP4_SPEC = Pointwise(tilde_sides("eq13", "B", "S_tilde", "I", layerwise=True, equality=True),
                       *derivative_points(),
                       "Step 4: d/dt f(A, B(tS_j, j)) = d/dt f(A, B(t s_j I, j))", D13_STEPS)
EQ_B3_STEP4 = Claim(
    id="ahn2023.eq_b3_step4", title="Step 4 of App. B.3: S_j averages to s_j I", paper=PAPER,
    statement=(r"$\frac{d}{dt}f(A,B(tS_j,j))=\frac{d}{dt}f(A,B(ts_jI,j))$ at $t=0$ with "
               r"$s_j=\frac1d\mathrm{Tr}(\Sigma^{-1/2}S_j\Sigma^{1/2})$, and "
               r"$\mathbf E_U[U_\Sigma^{-1}S_jU_\Sigma]=s_jI$ (the printed $tS_jI$ read as "
               r"$ts_jI$, as the last line has it)."),
    assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}); parameters (13), 1/n dropped",
                 "U Haar on O(d); (A, B) on S"),
    formulas=STEP4_FORMULAS,
    checks=derivative_checks(STEP4_SPEC, "eq13", "B", ("C_B", "S_tilde", "S_j"), "Step 4 (ii)"),
    setting=proof_setting(DERIV_SIZES),
    exact=pointwise_truth(STEP4_SPEC, STEP4_FORMULAS, more_derivative_points,
                          extra=haar_judge("C_B", "S_tilde", "S_j")))

