"""Stationary points that do not minimise the multi-head risk (Sec. 3 after Lemma 1; App. A.3).

The prediction of H heads is y_q + sum_h b_h^T G A_h z_q, bilinear in each head's (b_h, A_h), so
at b_h = 0, A_h = 0 for every head each term of the gradient carries a zero factor: the point is
stationary for every C (and as C -> oo).  There the risk is E[y^2] = ||w*||^2 + d, above the
saturated optimum R*, and along b = t e_{d+1}, A = t [[I, 0], [0, 0]] it falls like
1 - 2 t^2 + O(t^4): a saddle, not a minimum.  Everything is exact in (C, d, s = ||w*||^2) at the
structured points of ``structured.value_at``.
"""
from __future__ import annotations

import sympy

from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from . import derive, saturated as sat
from .common import finish
from .setting import C_SYM, D_SYM, S_SYM, SETTING
from .structured import Value, limit_inf, value_at

PAPER = "xie2025"
D = FormulaSymbol("d")
ZERO_POINT = {"b_x": (0, None), "A_xx": (0, None), "a_xy": (0, None), "a_yx": (0, None),
              "w_star": (1, "w")}
ZERO_SCALARS = {"b_y": 0, "a_yy": 0}
D0, C0, W0 = 2, 6, (2, 2)  # where the optimum R* is solved exactly

SADDLE_FORMULAS = (
    NamedFormula("grad_b", "ZeroMatrix(d + 1, 1)", (D,), "the gradient of the risk in a head's "
                 "b_h (last row of W^P_h W^V_h) at the stationary point", "Sec. 3, after Lemma 1",
                 ("d+1", "1")),
    NamedFormula("grad_A", "ZeroMatrix(d + 1, d + 1)", (D,), "the gradient of the risk in a "
                 "head's A_h = (W^K_h)^T W^Q_h at the stationary point", "Sec. 3, after Lemma 1",
                 ("d+1", "d+1")),
)


def explicit(v: Value, d: int, w: sympy.Matrix) -> sympy.Matrix:
    """A structured value (scalar, a w*, or a I + b w* w*^T) at d and w*, explicitly."""
    p = v.parts
    sub = {D_SYM: d, S_SYM: (w.T * w)[0, 0]}
    f = {k: sympy.sympify(x).subs(sub) for k, x in p.items()}
    if v.shape == "scalar":
        return sympy.Matrix([[f.get("1", 0)]])
    if v.shape == "vector":
        return f.get("w", 0) * w
    return f.get("I", 0) * sympy.eye(d) + f.get("ww", 0) * w * w.T


def zero_point_gradient(d: int, w: sympy.Matrix) -> tuple[sympy.Matrix, sympy.Matrix]:
    """grad_b (d+1) and grad_A ((d+1) x (d+1)) of the derived single-head risk (y_q = 0) at
    b = 0, A = 0, exact in C; with several heads each head's gradient is this one (the pairwise
    terms E[phi_h phi_h'] vanish with either head)."""
    R = derive.single_head_risk("zero")
    g = {n: value_at(R.diff(n), ZERO_POINT, ZERO_SCALARS) for n in ("b_x", "A_xx", "a_xy", "a_yx")}
    g.update({n: value_at(R.diff_scalar(sympy.Symbol(n)), ZERO_POINT, ZERO_SCALARS)
              for n in ("b_y", "a_yy")})
    gb = sympy.Matrix.vstack(explicit(g["b_x"], d, w), explicit(g["b_y"], d, w))
    gA = sympy.zeros(d + 1, d + 1)
    gA[:d, :d] = explicit(g["A_xx"], d, w)
    gA[:d, d] = explicit(g["a_xy"], d, w)
    gA[d, :d] = explicit(g["a_yx"], d, w).T
    gA[d, d] = explicit(g["a_yy"], d, w)[0, 0]
    return gb, gA


def _stationary(F) -> Finding:
    rows, bad = [], None
    for d, w in ((2, sympy.Matrix([2, 2])), (3, sympy.Matrix([1, -2, 3]))):
        gb, gA = zero_point_gradient(d, w)
        for name, derived in (("grad_b", gb), ("grad_A", gA)):
            named = sympy.Matrix(formula_value(F[name], {"d": d}))
            same = named.shape == derived.shape and (named - derived).applyfunc(
                sympy.cancel) == sympy.zeros(*derived.shape)
            rows.append({"d": d, "w_star": list(w), "formula": name,
                         "derived": str(derived.tolist()), "named": str(named.tolist())})
            if not same and bad is None:
                bad = {"d": d, "w_star": list(w), "formula": name, "C": "symbolic",
                       "derived_gradient": str(derived.tolist()), "named": str(named.tolist())}
    ok = bad is None
    return Finding("zero_heads_stationary", ok, {"rows": rows, "exact_in": "C (symbolic)"}, bad,
                   "" if ok else "the named gradient is not the derived gradient at the point")


def _not_global() -> tuple[Finding, Finding]:
    R = derive.single_head_risk("zero")
    r0 = value_at(R, ZERO_POINT, ZERO_SCALARS).simplify().parts.get("1", 0)
    sol = sat.optimum(D0, C0, W0)
    r0_here = sympy.sympify(r0).subs({D_SYM: D0, S_SYM: sum(x * x for x in W0)})
    above = bool(r0_here > sol.R_star)
    t = sympy.Symbol("t")
    ray = dict(ZERO_POINT, A_xx=(t, "I"))
    Rt = sympy.expand(value_at(R, ray, {"b_y": t, "a_yy": 0}).simplify().parts.get("1", 0))
    curv = sympy.factor(sympy.diff(Rt, t, 2).subs(t, 0))
    descent = bool(sympy.simplify(curv + 4 * (D_SYM + S_SYM)) == 0)  # -4 (d + s) < 0
    lim = limit_inf(curv, C_SYM)
    ev = {"risk_at_point": str(r0), "R_star_(d=2,C=6,w*=(2,2))": str(sol.R_star),
          "risk_at_point_there": str(r0_here)}
    f1 = Finding("not_a_global_minimum", above, ev, None if above else ev,
                 "" if above else "the stationary point reaches the optimal risk")
    ev2 = {"ray": "b = t e_{d+1}, A = t [[I, 0], [0, 0]] (other heads zero)",
           "risk_along_ray": str(sympy.factor(Rt)), "second_derivative_at_0": str(curv),
           "as_C_to_infinity": str(lim)}
    f2 = Finding("saddle_not_minimum", descent, ev2, None if descent else ev2,
                 "" if descent else "the risk does not decrease along the ray")
    return f1, f2


def saddle_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    f0 = _stationary(F)
    f1, f2 = _not_global()
    steps = [
        step("Gradient at zero heads", r"\nabla_{b_h}\mathcal R = 2\mathbb E[e\,G A_h z_q] = 0,"
             r"\quad \nabla_{A_h}\mathcal R = 2\mathbb E[e\,G^\top b_h z_q^\top] = 0",
             "Exact in C, d and s from the derived risk; stationary at every C and as C → ∞, so "
             "not created by the O(1/C) term of App. A.3."),
        step("Not a minimum", r"\mathcal R(t) = (d+s)\Big(1 - 2t^2 + \tfrac{C+d+1}{C}t^4\Big)",
             "The risk at the point, ‖w*‖² + d, exceeds R*, and falls along the GD ray: a "
             "saddle point."),
    ]
    return finish([f0, f1, f2], {"point": "every head zero: b_h = 0, A_h = 0 (any H)",
                                 "also_stationary": "the saturated optimum, at every finite C "
                                                    "(xie2025.thm2's evidence): a global one"},
                  steps=steps)


SADDLE = Claim(
    id="xie2025.lemma1_saddle",
    title="Stationary points need not minimise the multi-head risk",
    paper=PAPER,
    statement=(r"By non-convexity, stationary points of $\mathcal R(f_{H\text{-}\mathsf{LSA}})$ "
               r"(local minima or saddle points) need not minimise the risk, also at finite $C$ "
               r"(Sec. 3 after Lemma 1, App. A.3): at $b_h=0$, $A_h=0$ the gradient is $0$ and "
               r"the risk is not minimal."),
    assumptions=("y_q = 0; x ~ N(0, I), w_hat ~ N(w*, I); gradients in each head's b_h (last "
                 "row of W^P_h W^V_h) and A_h = (W^K_h)^T W^Q_h",
                 "the point (every head zero) is the check's witness"),
    formulas=SADDLE_FORMULAS,
    checks={"symbolic": saddle_symbolic},
    setting=SETTING,
)
