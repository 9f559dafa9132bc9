"""Lemmas 1 and 2: the risks of multi-head LSA and of y_q-LSA are not convex in their parameters.

Each is decided by an explicit pair of parameter points and their midpoint, exactly: the paper's
GD weights (eq. (7); for y_q-LSA the point of App. B.3) with the step size that minimises the risk
along their ray, and their twin with W^P and W^K negated (the same products W^P W^V and
(W^K)^T W^Q, so the same risk); the midpoint has W^P = W^K = 0, i.e. no attention at all.
"""
from __future__ import annotations

import numpy as np
import sympy

from models.multihead import head_products
from moments.montecarlo import z_critical
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from . import derive
from .common import MC_LEVEL, as_float, finish, heads_risk, mc_compare, mc_finding
from .gd_claims import EQ7, eq7_numbers
from .saturated import lifted_problem
from .setting import C_SYM, D_SYM, S_SYM, SETTING, Instance, symbolic_dims
from .stationary_claims import THM4_FORMULAS, _thm4_point, _thm4_point_floats
from .structured import leading_text, value_at
from .tensors import probe_tensor

PAPER = "xie2025"
D = FormulaSymbol("d")
WSTAR = FormulaSymbol("w_star", "matrix", ("d", "1"))
_UX = FormulaSymbol("u_x", "matrix", ("d", "1"))
_U = FormulaSymbol("u")
ETA = sympy.Symbol("eta")
T_SYM = sympy.Symbol("t")


def _positive_for_C_at_least_1(expr) -> bool:
    """Whether a rational function of C is > 0 for every real C >= 1 (exact: no sign change of
    numerator or denominator on [1, oo), and positive at C = 1)."""
    num, den = sympy.fraction(sympy.cancel(sympy.together(expr)))
    for p in (num, den):
        poly = sympy.Poly(p, C_SYM)
        if poly.degree() > 0 and poly.count_roots(1, None) > 0:
            return False
    return bool(expr.subs(C_SYM, 1) > 0)


def _minimise_quadratic(R: sympy.Expr, x: sympy.Symbol) -> tuple[sympy.Expr, sympy.Expr]:
    """(argmin, min) of a quadratic in x with a positive leading coefficient (exact)."""
    poly = sympy.Poly(sympy.expand(sympy.numer(sympy.together(R))), x)
    if poly.degree() <= 0:  # the ray does not move the risk (e.g. no attention at all)
        return sympy.Integer(0), sympy.factor(sympy.cancel(R))
    if poly.degree() != 2:
        raise ValueError(f"risk along the ray is not quadratic in {x}")
    a, b, _ = poly.all_coeffs()
    x_star = sympy.factor(sympy.cancel(-b / (2 * a)))
    return x_star, sympy.factor(sympy.cancel(R.subs(x, x_star)))


# ==============================================================================================
# Lemma 1
# ==============================================================================================
# The witness weights are the check's choice, not part of Lemma 1's statement (the lemma says
# nothing about eq. (7)); they are fixed here, not named formulas of the claim.
_EQ7_FIXED = {f.name: f.parse() for f in EQ7}

LEMMA1_FORMULAS = (
    NamedFormula("uMu", "(u_x + u*w_star).T*(u_x + u*w_star) + d*u**2*Identity(1)",
                 (D, WSTAR, _UX, _U), "[u; u]^T M [u; u] with M = E[z z^T] (eq. (22)): M is "
                 "positive semi-definite, so the risk is convex in (M_1, ..., M_{d+1})", "App. A.4",
                 ("1", "1")),
)


def _eq7_witness(F, d: int, w_entry: int, C) -> dict:
    """Risk along the eq. (7) ray (eta free), its minimiser, and the convexity defect, exact."""
    W = eq7_numbers(F, d, C, ETA, [w_entry] * d)
    P, Q = head_products(W["W_P"], W["W_V"], W["W_K"], W["W_Q"])
    fixed = {"w_star": sympy.Matrix([w_entry] * d)}
    sc = {"C": C, "d": d}
    R_ray = sympy.cancel(heads_risk([P], [Q], "zero", fixed, sc, exact=True))
    R0 = sympy.cancel(derive.base_risk("zero").evaluate(fixed, sc, exact=True))
    eta_star, R1 = _minimise_quadratic(R_ray, ETA)
    defect = sympy.factor(sympy.cancel(R0 - R1))
    return {"d": d, "w_star": [w_entry] * d, "risk_along_ray": str(sympy.factor(R_ray)),
            "eta_star": str(eta_star), "R(theta_1)=R(theta_2)": str(R1), "R(midpoint)": str(R0),
            "convexity_defect": str(defect), "_defect": defect, "_eta": eta_star}


def lemma1_symbolic(ctx: Context) -> TierResult:
    F = {**ctx.formulas, **_EQ7_FIXED}
    findings = []
    # App. A.4: u^T M u (derived from E[p^T G q] with p = q = u) against the named form
    bad = None
    for d in symbolic_dims(ctx.budget.name):
        ws = sympy.Matrix(sympy.symbols(f"sigma0:{d}"))
        u = sympy.Matrix(sympy.symbols(f"u0:{d + 1}"))
        M = probe_tensor(derive.mean_gram(), ("p", "q"), d, {"w_star": list(ws)}, {"C": C_SYM})
        derived = sympy.expand(sum(u[i] * u[j] * M.get((i, j), 0) for i in range(d + 1)
                                   for j in range(d + 1)))
        pv = formula_value(F["uMu"], {"d": d, "w_star": ws, "u_x": u[:d, :], "u": u[d]})
        pv = sympy.expand(pv[0, 0] if isinstance(pv, sympy.MatrixBase) else pv)
        if sympy.expand(derived - pv) != 0:
            bad = {"d": d, "derived": str(derived), "paper": str(pv)}
            break
    findings.append(Finding("A4_quadratic_form", bad is None, {
        "checked": "d in " + str(symbolic_dims(ctx.budget.name)) + ", symbolic u and w*"},
        bad, "" if bad is None else "App. A.4's quadratic form differs from u^T E[z z^T] u"))
    # convex in T: the Gram matrix of the lifted features is positive definite
    pd_rows, pd_ok = [], True
    for d in symbolic_dims(ctx.budget.name):
        for C in (1, 10):
            K = lifted_problem(d, C, sympy.Matrix([2] * d)).K_ctx
            ok = K.is_positive_definite
            pd_ok &= bool(ok)
            pd_rows.append({"d": d, "C": C, "K_ctx_positive_definite": bool(ok)})
    findings.append(Finding("convex_in_T", pd_ok, {"rows": pd_rows}, None if pd_ok else
                            {"rows": pd_rows}, "" if pd_ok else "the lifted risk is not convex"))
    # not convex in the heads' parameters: the eq. (7) pair and its midpoint
    rows, ok_all, ce, last = [], True, None, None
    for d in symbolic_dims(ctx.budget.name):
        w = _eq7_witness(F, d, 2, C_SYM)
        last = w["_defect"]
        pos = _positive_for_C_at_least_1(w["_defect"]) if w["_defect"] != 0 else False
        rows.append({k: v for k, v in w.items() if not k.startswith("_")} | {
            "defect_positive_for_all_C>=1": pos})
        if not pos and ce is None:
            ok_all = False
            ce = {"d": d, "w_star": [2] * d, "eta_star": w["eta_star"],
                  "R(midpoint)": w["R(midpoint)"], "R(theta_1)": w["R(theta_1)=R(theta_2)"],
                  "defect": w["convexity_defect"]}
    findings.append(Finding("not_convex_in_parameters", ok_all, {
        "pair": "theta_1 = eq. (7) weights with the risk-minimising eta, theta_2 = theta_1 with "
                "W^P and W^K negated (same products, same risk); midpoint: W^P = W^K = 0",
        "heads": "any H: the other heads are zero in all three points", "rows": rows}, ce,
        "" if ok_all else "the eq. (7) pair does not violate convexity"))
    d0 = symbolic_dims(ctx.budget.name)[-1]
    steps = [
        step("The pair", r"\theta_1 = (W^P, W^V, W^K, W^Q)_{(7)},\quad \theta_2 = (-W^P, W^V, -W^K,"
             r" W^Q),\quad \tfrac{\theta_1+\theta_2}{2} = (0, W^V, 0, W^Q)",
             "Both have W^P W^V and (W^K)^T W^Q equal, hence the same risk; the midpoint has no "
             "attention and predicts y_q = 0."),
        step("Defect", r"\mathcal R\big(\tfrac{\theta_1+\theta_2}2\big) - \tfrac{\mathcal R(\theta_1)"
             r"+\mathcal R(\theta_2)}2 = " + sympy.latex(last),
             f"Exact in C at d = {d0}, w* = 2 (1, ..., 1), with the risk-minimising step size; "
             "positive for every C >= 1."),
    ]
    return finish(findings, {"setting": "y_q = 0, w* = 2 (1, ..., 1)"}, steps=steps)


def lemma1_numeric(ctx: Context) -> TierResult:
    F = {**ctx.formulas, **_EQ7_FIXED}
    inst = SETTING.instance(ctx.budget.name, ctx.sizes)
    d = inst.d
    w = _eq7_witness(F, d, inst.w_entry, inst.C)
    eta = w["_eta"]
    W = eq7_numbers(F, d, inst.C, eta, [inst.w_entry] * d)
    Wf = {k: np.array(v.evalf(), dtype=float) for k, v in W.items()}
    pts = {"theta_1": (Wf["W_P"], Wf["W_K"]), "theta_2": (-Wf["W_P"], -Wf["W_K"]),
           "midpoint": (0 * Wf["W_P"], 0 * Wf["W_K"])}
    exact = {"theta_1": as_float(sympy.sympify(w["R(theta_1)=R(theta_2)"])),
             "theta_2": as_float(sympy.sympify(w["R(theta_1)=R(theta_2)"])),
             "midpoint": as_float(sympy.sympify(w["R(midpoint)"]))}
    found = _risks_vs_mc(ctx, inst, "lemma1", {
        label: ((WP @ Wf["W_V"])[None], (WK.T @ Wf["W_Q"])[None], exact[label])
        for label, (WP, WK) in pts.items()})
    defect = exact["midpoint"] - (exact["theta_1"] + exact["theta_2"]) / 2
    return finish([found], {"instance": inst.as_dict(), "eta_star": str(eta),
                            "convexity_defect_exact": str(w["convexity_defect"]),
                            "convexity_defect": defect, "z_critical": z_critical(MC_LEVEL, 3)})


def _risks_vs_mc(ctx: Context, inst: Instance, tag: str, points: dict,
                 guess: tuple | None = None) -> Finding:
    """The pair and its midpoint (label -> (P, Q, exact risk)) against Monte Carlo of the real
    forward pass."""
    ok, rows = mc_compare([(label, P, Q, ex, inst, ctx.mc_seed(tag, label), guess)
                           for label, (P, Q, ex) in points.items()], ctx.budget.mc_samples)
    return mc_finding("risks_vs_monte_carlo", ok, rows, inst, ctx.seed,
                      "the derived risks are outside the Monte Carlo intervals")


LEMMA1 = Claim(
    id="xie2025.lemma1",
    title="The multi-head LSA risk is not convex in its parameters",
    paper=PAPER,
    statement=(r"For any $H$, $\mathcal R(f)$, $f\in\mathcal F_{H\text{-}\mathsf{LSA}}$, is not "
               r"convex in $\{W^K_h,W^Q_h,W^V_h,W^P_h\}_h$ (it is convex in "
               r"$(M_1,\dots,M_{d+1})$, App. A.4)."),
    assumptions=("y_q = 0; x ~ N(0, I), w_hat ~ N(w*, I)",
                 "witness (fixed, not part of the statement): the GD weights of eq. (7) as "
                 "printed, W^P = -(eta/C) I with the risk-minimising eta",),
    formulas=LEMMA1_FORMULAS,
    checks={"symbolic": lemma1_symbolic, "numeric": lemma1_numeric},
    setting=SETTING,
    notes="The witness pair is built from the paper's GD weights (7); the step size is the "
          "exact minimiser of the risk along their ray.",
)


# ==============================================================================================
# Lemma 2
# ==============================================================================================
# The witness point is the check's choice (Lemma 2 says nothing about it): the App. B.3 point of
# Thm. 4 as printed, fixed here rather than named formulas of the claim.
_THM4_FIXED = {f.name: f.parse() for f in THM4_FORMULAS if f.name != "EWwwW"}
LEMMA2_FORMULAS: tuple = ()


def _yq_witness(F) -> dict | None:
    """Risk of y_q-LSA at the App. B.3 point with b scaled by t, exact in (C, d, s)."""
    pt = _thm4_point(F)
    if pt is None:
        return None
    point, scal = pt
    ray = dict(point)
    ray["b_x"] = (point["b_x"][0] * T_SYM, point["b_x"][1])
    R = derive.single_head_risk("linear")
    R_ray = value_at(R, ray, {"b_y": scal["b_y"] * T_SYM, "a_yy": scal["a_yy"]}).simplify()
    R_ray = R_ray.parts.get("1", 0)
    mid = dict(point)
    mid.update({"b_x": (0, None), "A_xx": (0, None), "a_xy": (0, None), "a_yx": (0, None)})
    R0 = value_at(R, mid, {"b_y": 0, "a_yy": 0}).simplify().parts.get("1", 0)
    t_star, R1 = _minimise_quadratic(R_ray, T_SYM)
    defect = sympy.factor(sympy.cancel(R0 - R1))
    return {"risk_along_ray": str(sympy.factor(R_ray)), "t_star": str(t_star),
            "R(theta_1)=R(theta_2)": str(R1), "R(midpoint)": str(R0),
            "convexity_defect": str(defect), "defect_leading": leading_text(defect, C_SYM),
            "_defect": defect, "_t": t_star, "_R1": R1, "_R0": R0}


def lemma2_symbolic(ctx: Context) -> TierResult:
    F = _THM4_FIXED
    w = _yq_witness(F)
    if w is None:
        return finish([Finding("not_convex_in_parameters", None, {},
                                reason="the named point is not built from I and w*")])
    defect = w["_defect"]
    rows = []
    ok = True
    for dd in (1, 2, 3, 10):
        for ss in (0, 1, 4 * dd):
            val = defect.subs({D_SYM: dd, S_SYM: ss})
            pos = val != 0 and _positive_for_C_at_least_1(val)
            ok &= bool(pos)
            rows.append({"d": dd, "s": ss, "defect": str(sympy.factor(val)), "positive": pos})
    ce = None if ok else {"rows": [r for r in rows if not r["positive"]][:3],
                          "defect": w["convexity_defect"]}
    ev = {k: v for k, v in w.items() if not k.startswith("_")}
    findings = [Finding("not_convex_in_parameters", ok, {
        "pair": "theta_1 = App. B.3 point with b scaled by the risk-minimising t; theta_2: W^P and "
                "W^K negated (P -> -P, Q -> -Q, same risk); midpoint: no attention, y_q = v^T x_q",
        **ev, "checked": rows}, ce, "" if ok else "the pair does not violate convexity")]
    steps = [
        step("Risk along the ray", r"\mathcal R(t) = " + sympy.latex(sympy.sympify(
            w["risk_along_ray"])), "b = t [-w*; 1], A = [[I, 0], [0, 0]], v = w*; exact in C, d "
                                   "and s = ||w*||^2."),
        step("Defect", r"\mathcal R(\text{mid}) - \mathcal R(t^\star) = " + sympy.latex(defect),
             f"t* = {w['t_star']}; positive for every C >= 1, d >= 1."),
    ]
    extra = {"proof_note": "App. B.4 writes W E = E_w 'by using X w = y'; the context labels are "
                           "y = X w_hat with the task vector, not with the trainable w, so W E has "
                           "w^T X^T where E_w has y^T (the lemma holds nonetheless, by this pair)"}
    return finish(findings, extra, steps=steps)


def lemma2_numeric(ctx: Context) -> TierResult:
    F = _THM4_FIXED
    inst = SETTING.instance(ctx.budget.name, ctx.sizes)
    d = inst.d
    w = _yq_witness(F)
    if w is None:
        return finish([Finding("risks_vs_monte_carlo", None, {}, reason="no structured point")])
    subs = {D_SYM: d, S_SYM: inst.s, C_SYM: inst.C}
    t_star = w["_t"].subs(subs)
    b, A, v = _thm4_point_floats(F, d, inst.w_star_exact)
    P = np.zeros((1, d + 1, d + 1))
    P[0, d] = float(t_star) * b
    exact1 = as_float(w["_R1"].subs(subs))
    exact0 = as_float(w["_R0"].subs(subs))
    found = _risks_vs_mc(ctx, inst, "lemma2", {
        "theta_1": (P, A[None], exact1), "theta_2": (-P, -A[None], exact1),
        "midpoint": (0 * P, 0 * A[None], exact0)}, guess=(v, 0.0))
    return finish([found], {"instance": inst.as_dict(), "t_star": str(t_star),
                            "convexity_defect": exact0 - exact1})


LEMMA2 = Claim(
    id="xie2025.lemma2",
    title="The y_q-LSA risk is not convex",
    paper=PAPER,
    statement=r"The ICL risk of $y_q$-LSA, $\mathcal R(f_{y_q\text{-}\mathsf{LSA}})$, is not convex.",
    assumptions=("y_q = v^T x_q with v trainable; x ~ N(0, I), w_hat ~ N(w*, I)",
                 "witness (fixed, not part of the statement): the App. B.3 point of Thm. 4 as "
                 "printed, b = t [-w*; 1], A = [[I, 0], [0, 0]], v = w*",),
    formulas=LEMMA2_FORMULAS,
    checks={"symbolic": lemma2_symbolic, "numeric": lemma2_numeric},
    setting=SETTING,
    notes="The witness pair is the point of App. B.3 (Thm. 4) with b scaled by the exact "
          "minimiser t* along its ray, and its sign-flipped twin.",
)
