"""App. B.3, Step 2 of Thm. 4's proof: the quantities at the point b = [-w*; 1], a_j = [e_j; 0],
a_{d+1} = 0, v = w* (w = w_hat - w*), and the moments the gradients are built from.

Derived independently: b^T G a_j and t_j from the prompt (symbolic data, d = 2, C = 3); the
moments E[...] exactly over the Gaussian coordinates at C = 1, 2, 3 (``gaussian_poly``); the
gradient of the y_q-LSA risk in a_j and v_j from the moment kernel (``derive``) at the point.
Lines 807, 846 and 929 print a wrong display between right ones: b^T G a_j without its 1/C, the
a_j-gradient without its factor 2, and the v_j-gradient with b^T G a_j where b^T G a_{d+1} (= 0)
belongs (the spurious term is 2(d+1)/C, not 0).
"""
from __future__ import annotations

from functools import lru_cache

import sympy

from models.multihead import multihead_prediction
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from . import derive
from .points import sympy_mask
from .common import finish
from .gaussian_poly import expect, gaussian_prompt
from .saddle_points import explicit
from .setting import C_SYM, SETTING
from .structured import value_at

PAPER = "xie2025"
V1, DV = ("d+1", "1"), ("d", "1")
D, C = FormulaSymbol("d"), FormulaSymbol("C")
WSTAR = FormulaSymbol("w_star", "matrix", DV)
X = FormulaSymbol("X", "matrix", ("C", "d"))
Y = FormulaSymbol("y", "matrix", ("C", "1"))
_E = FormulaSymbol("e", "matrix", DV)
_W = FormulaSymbol("w", "matrix", DV)
_WJ = FormulaSymbol("w_j", equals="trace(e.T*w)")
_ETGB = FormulaSymbol("E_tGb", "matrix", V1)
_ET, _ETBGA, _ETBGL = FormulaSymbol("E_t"), FormulaSymbol("E_tbGa"), FormulaSymbol("E_tbGalast")
D0, W0, J0 = 2, (1, 2), 0  # d = 2, w* = (1, 2), coordinate j = 1
MOMENT_CS = (1, 2, 3)  # the moments exactly at these context sizes
GRAD_CS = (2, 3)

_BGA_FIRST = ("BlockMatrix([[-w_star.T, Identity(1)]])*BlockMatrix([[X.T*X, X.T*y], "
              "[y.T*X, y.T*y]])*BlockMatrix([[e], [ZeroMatrix(1, 1)]])")
MOMENT_FORMULAS = (
    NamedFormula("bGa_first", _BGA_FIRST, (D, C, WSTAR, X, Y, _E), "b^T G a_j at the point, "
                 "first member of line 807 ([-w*^T, 1] sum_i [[x_i x_i^T, x_i y_i], [y_i x_i^T, "
                 "y_i^2]] [e_j; 0])", "App. B.3", ("1", "1")),
    NamedFormula("bGa_j", "w.T*X.T*X*e/C", (D, C, X, _W, _E), "b^T G a_j at the point, "
                 "(1/C) sum_i w^T x_i x_i[j]", "App. B.3", ("1", "1")),
    NamedFormula("t_j_pt", "w.T*X.T*X*e/C - w_j*Identity(1)", (D, C, X, _W, _WJ, _E),
                 "t_j at the point", "App. B.3", ("1", "1")),
    NamedFormula("piece_x", "ZeroMatrix(d, 1)", (D,), "E[-w[j] (1/C) sum_i x_i x_i[j]]",
                 "App. B.3", DV),
    NamedFormula("piece_y", "-1", (), "E[-w[j] (1/C) sum_i y_i x_i[j]]", "App. B.3"),
    NamedFormula("piece_wx", "ZeroMatrix(d, 1)", (D,), "E[(1/C) sum_i w^T x_i x_i[j] (1/C) "
                 "sum_k x_k x_k[j]]", "App. B.3", DV),
    NamedFormula("sum_sq", "C*(C - 1) + C*(d + 2)", (D, C), "E[(sum_i x_i[j] x_i^T)(sum_k "
                 "x_k[j] x_k)]", "App. B.3"),
    NamedFormula("isserlis", "2*w_j*w + trace(w*w.T)*e", (D, _W, _WJ, _E),
                 "E[(w^T x)^2 x[j] x] for x ~ N(0, I_d), w fixed", "App. B.3", DV),
    NamedFormula("sum_ik", "C*(C - 1)*w_j*w", (D, C, _W, _WJ, _E), "sum_{i != k} "
                 "E[w^T x_i x_i[j] x_k^T w x_k] for w fixed", "App. B.3", DV),
    NamedFormula("grad_aj", "E_tGb", (D, _ETGB), "the gradient in a_j, second member of line "
                 "846: E[t_j (1/C) sum_i [x_i x_i^T w; y_i x_i^T w]] = E[t_j G^T b]", "App. B.3",
                 V1),
    NamedFormula("grad_vj", "2*(E_tbGa + E_t)", (_ET, _ETBGA, _ETBGL), "the gradient in v[j] as "
                 "line 929 expands 2 E[t_j (b^T G a_{d+1} + 1)]", "App. B.3"),
)


def _ej(d: int) -> sympy.Matrix:
    return sympy.Matrix([1 if k == J0 else 0 for k in range(d)])


def _point(d: int) -> tuple[sympy.Matrix, sympy.Matrix, sympy.Matrix]:
    """b = [-w*; 1], A = [[I, 0], [0, 0]] (a_j = [e_j; 0], a_{d+1} = 0), v = w*."""
    ws = sympy.Matrix(W0)
    b = sympy.Matrix.vstack(-ws, sympy.Matrix([[1]]))
    A = sympy.zeros(d + 1, d + 1)
    A[:d, :d] = sympy.eye(d)
    return b, A, ws


# ----------------------------------------------------------------------------------------------
# Pointwise: b^T G a_j and t_j (line 807), symbolic data at d = 2, C = 3
# ----------------------------------------------------------------------------------------------
def _pointwise(F) -> list[Finding]:
    d, c = D0, 3  # C != d, so that a C <-> d swap shows
    gp = gaussian_prompt(d, c, W0)
    b, A, v = _point(d)
    G = gp.gram()
    e = _ej(d)
    bGa = sympy.expand((b.T * G * A[:, J0])[0, 0])
    w = gp.w_hat - sympy.Matrix(W0)
    Xp = gp.X.T  # the paper's C x d
    vals = {"d": d, "C": c, "w_star": sympy.Matrix(W0), "X": Xp, "y": gp.y, "e": e, "w": w,
            "w_j": w[J0]}
    out = []
    for name in ("bGa_first", "bGa_j"):
        named = sympy.expand(sympy.Matrix(formula_value(F[name], vals))[0, 0])
        diff = sympy.factor(named - bGa)
        out.append(Finding(f"{name}_807", diff == 0, {}, None if diff == 0 else {
            "sizes": {"d": d, "C": c}, "named": str(sympy.factor(named)),
            "derived_b^T_G_a_j": str(sympy.factor(bGa)), "ratio": str(sympy.cancel(named / bGa))},
            "" if diff == 0 else f"line 807's {name} differs from b^T G a_j at the point"))
    # t_j: the coefficient of x_q[j] in the forward pass's error at the point (v = w*)
    E = gp.E((v.T * gp.x_q)[0, 0])
    P = sympy.zeros(d + 1, d + 1)
    P[d, :] = b.T
    err = multihead_prediction(E, [(P, A)], sympy_mask(c), c) - (gp.w_hat.T * gp.x_q)[0, 0]
    tj = sympy.expand(sympy.diff(sympy.expand(err), gp.x_q[J0]))
    named = sympy.expand(sympy.Matrix(formula_value(F["t_j_pt"], vals))[0, 0])
    diff = sympy.factor(named - tj)
    out.append(Finding("t_j_807", diff == 0, {}, None if diff == 0 else {
        "sizes": {"d": d, "C": c}, "named_minus_derived": str(diff)},
        "" if diff == 0 else "line 807's t_j differs from the forward pass's coefficient of "
                             "x_q[j] at the point"))
    return out


# ----------------------------------------------------------------------------------------------
# Moments (lines 817-905), exactly at C = 1, 2, 3
# ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _moments(c: int) -> dict:
    """The expectations lines 817-837 and 875-889 state, at d = 2, context size c."""
    d = D0
    gp = gaussian_prompt(d, c, W0)
    P = gp.poly
    X, e = gp.X, _ej(d)
    w = gp.w_hat - sympy.Matrix(W0)
    sx = X * X.T * e  # sum_i x_i x_i[j]
    wj = P(w[J0])
    wx = P((w.T * sx)[0, 0]) * sympy.Rational(1, c)  # (1/C) sum_i w^T x_i x_i[j]
    out = {
        "piece_x": sympy.Matrix([expect(-wj * P(x) * sympy.Rational(1, c), gp.means)
                                 for x in sx]),
        "piece_y": expect(-wj * P((e.T * X * gp.y)[0, 0]) * sympy.Rational(1, c), gp.means),
        "piece_wx": sympy.Matrix([expect(wx * P(x) * sympy.Rational(1, c), gp.means)
                                  for x in sx]),
        "sum_sq": expect(P((sx.T * sx)[0, 0]), gp.means),
    }
    # fixed w (constants): E over the x_i only
    wf = sympy.Matrix(d, 1, lambda a, _: sympy.Symbol(f"u{a}"))
    xmeans = {s: 0 for s in X}
    x0 = X[:, 0]
    out["isserlis"] = sympy.Matrix([expect(((wf.T * x0)[0, 0]) ** 2 * x0[J0] * x0[a], xmeans)
                                    for a in range(d)])
    cross = sympy.zeros(d, 1)
    for i in range(c):
        for k in range(c):
            if i != k:
                xi, xk = X[:, i], X[:, k]
                cross += ((wf.T * xi)[0, 0] * xi[J0] * (xk.T * wf)[0, 0]) * xk
    out["sum_ik"] = cross.applyfunc(lambda x: expect(x, xmeans))
    out["w_fixed"] = wf
    return out


def _moment_findings(F) -> list[Finding]:
    d, e = D0, _ej(D0)
    rows, bad = [], {}
    for c in MOMENT_CS:
        m = _moments(c)
        wf = m["w_fixed"]
        for name in ("piece_x", "piece_y", "piece_wx", "sum_sq", "isserlis", "sum_ik"):
            named = formula_value(F[name], {"d": d, "C": c, "e": e, "w": wf, "w_j": wf[J0]})
            named = sympy.Matrix(named) if isinstance(named, sympy.MatrixBase) else \
                sympy.Matrix([[sympy.sympify(named)]])
            derived = m[name] if isinstance(m[name], sympy.MatrixBase) else \
                sympy.Matrix([[m[name]]])
            same = named.shape == derived.shape and (named - derived).applyfunc(
                sympy.expand) == sympy.zeros(*derived.shape)
            rows.append({"C": c, "formula": name, "derived": str(derived.tolist()),
                         "named": str(named.tolist())})
            if not same and name not in bad:
                bad[name] = {"d": d, "C": c, "w_star": list(W0), "j": J0 + 1,
                             "derived": str(derived.tolist()), "named": str(named.tolist())}
    ok = not bad
    first = next(iter(bad.values())) if bad else None
    return [Finding("moments_817_905", ok, {"rows": rows, "w_fixed": "u = (u0, u1) symbolic"},
                    None if ok else {"formulas": list(bad), **first},
                    "" if ok else f"{', '.join(bad)} differs from the exact moment")]


# ----------------------------------------------------------------------------------------------
# The gradients in a_j (line 846) and v_j (line 929)
# ----------------------------------------------------------------------------------------------
# The point of App. B.3 is (alpha, beta, gamma) = (0, 0, 1): a_{d+1} = [alpha w*; beta],
# v = gamma w*.  Line 929's first member, 2 E[t_j (b^T G a_{d+1} + 1)], holds at every point; the
# second point (a_{d+1} != 0, v != w*) is where E[t_j] and E[t_j b^T G a_{d+1}] are not 0, so
# their coefficients are seen.
POINTS = ((0, 0, 1), (1, 1, sympy.Rational(1, 2)))


@lru_cache(maxsize=None)
def _risk_gradients(point: tuple) -> dict:
    """grad of the derived y_q-LSA risk at b = [-w*; 1], A = [[I, alpha w*], [0, beta]],
    v = gamma w*, exact in (C, d, s)."""
    alpha, beta, gamma = point
    pt = {"b_x": (-1, "w"), "A_xx": (1, "I"), "a_xy": (alpha, "w" if alpha else None),
          "a_yx": (0, None), "v": (gamma, "w" if gamma else None), "w_star": (1, "w")}
    R = derive.single_head_risk("linear")
    return {n: value_at(R.diff(n), pt, {"b_y": 1, "a_yy": beta}) for n in ("A_xx", "a_yx", "v")}


@lru_cache(maxsize=None)
def _t_moments(c: int, point: tuple) -> dict:
    """E[t_j G b], E[t_j], E[t_j b^T G a_j], E[t_j b^T G a_{d+1}] at the point, context size c."""
    d = D0
    alpha, beta, gamma = point
    gp = gaussian_prompt(d, c, W0)
    P = gp.poly
    b, A, ws = _point(d)
    A[:d, d] = alpha * ws
    A[d, d] = beta
    G = gp.gram()
    bGa = P((b.T * G * A[:, J0])[0, 0])
    bGl = P((b.T * G * A[:, d])[0, 0])
    v = gamma * ws
    tj = bGa + bGl * v[J0] + P(v[J0] - gp.w_hat[J0])
    return {"E_tGb": sympy.Matrix([expect(tj * P(x), gp.means) for x in G.T * b]),
            "E_t": expect(tj, gp.means), "E_tbGa": expect(tj * bGa, gp.means),
            "E_tbGalast": expect(tj * bGl, gp.means)}


def _gradient_findings(F) -> list[Finding]:
    d, ws = D0, sympy.Matrix(W0)
    rows, bad_a, bad_v = [], None, None
    for point in POINTS:
        g = _risk_gradients(point)
        for c in GRAD_CS:
            sub = {C_SYM: c}
            GA = explicit(g["A_xx"].subs(sub), d, ws)
            ga = explicit(g["a_yx"].subs(sub), d, ws)
            derived_a = sympy.Matrix.vstack(GA[:, J0], ga[J0:J0 + 1, :])
            derived_v = explicit(g["v"].subs(sub), d, ws)[J0, 0]
            t = _t_moments(c, point)
            named_v = sympy.sympify(formula_value(F["grad_vj"], {k: t[k] for k in (
                "E_t", "E_tbGa", "E_tbGalast")}))
            row = {"point_(alpha,beta,gamma)": [str(x) for x in point], "C": c,
                   "derived_grad_v_j": str(derived_v), "named_grad_v_j": str(named_v),
                   "E[t_j]": str(t["E_t"]), "E[t_j b^T G a_j]": str(t["E_tbGa"]),
                   "E[t_j b^T G a_(d+1)]": str(t["E_tbGalast"])}
            if bad_v is None and sympy.simplify(named_v - derived_v) != 0:
                bad_v = {"d": d, "C": c, "w_star": list(W0), "j": J0 + 1,
                         "point_(alpha,beta,gamma)": row["point_(alpha,beta,gamma)"],
                         "derived_gradient_in_v_j": str(derived_v), "line_929": str(named_v),
                         "E[t_j b^T G a_j]": str(t["E_tbGa"])}
            if point == POINTS[0]:  # line 846 is stated at App. B.3's point
                named_a = sympy.Matrix(formula_value(F["grad_aj"], {"d": d, "E_tGb": t["E_tGb"]}))
                row.update({"derived_grad_a_j": str(derived_a.tolist()),
                            "named_grad_a_j": str(named_a.tolist()),
                            "E[t_j G^T b]": str(t["E_tGb"].tolist())})
                if bad_a is None and (named_a.shape != derived_a.shape or (
                        named_a - derived_a).applyfunc(sympy.simplify) != sympy.zeros(
                        *derived_a.shape)):
                    bad_a = {"d": d, "C": c, "w_star": list(W0), "j": J0 + 1,
                             "derived_gradient_in_a_j": str(derived_a.tolist()),
                             "line_846": str(named_a.tolist()),
                             "E[t_j G^T b]": str(t["E_tGb"].tolist())}
            rows.append(row)
    return [
        Finding("gradient_a_j_846", bad_a is None, {"rows": rows}, bad_a,
                "" if bad_a is None else "line 846's second member differs from the derived "
                                         "gradient in a_j (which is 2 E[t_j G^T b])"),
        Finding("gradient_v_j_929", bad_v is None, {
            "points": "App. B.3's (0, 0, 1) and (1, 1, 1/2), where line 929's first member "
                      "2 E[t_j (b^T G a_(d+1) + 1)] holds as well"}, bad_v,
                "" if bad_v is None else "line 929's expansion differs from the derived gradient "
                                         "in v_j (0 at App. B.3's point for every C: "
                                         "b^T G a_{d+1} = 0 there)"),
    ]


def moments_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings = _pointwise(F) + _moment_findings(F) + _gradient_findings(F)
    steps = [
        step("At the point", r"b^\top Ga_j = \tfrac1C\sum_i w^\top x_i\,x_i[j],\quad t_j = "
             r"\tfrac1C\sum_i w^\top x_i\,x_i[j] - w[j]", "From the prompt with symbolic data "
             "(d = 2, C = 3); line 807's first member omits the 1/C of G."),
        step("Moments", r"\mathbb E\Big[\big(\textstyle\sum_i x_i[j]x_i\big)^\top\big(\sum_k "
             r"x_k[j]x_k\big)\Big] = C(C-1) + C(d+2)", "Exact over the Gaussian coordinates at "
             "C = 1, 2, 3 (and the pieces of lines 817-823, 875, 889)."),
        step("Gradients", r"\partial_{a_j}\mathcal R = 2\,\mathbb E[t_jG^\top b] = \tfrac{2(d+1)}C"
             r"\begin{bmatrix}e_j\\ w_\star[j]\end{bmatrix},\quad \partial_{v_j}\mathcal R = 0",
             "The derived risk's gradient at the point (moment kernel) against lines 846 and "
             "929; line 929's b^T G a_j term is 2(d+1)/C, not 0."),
    ]
    return finish(findings, {"instance": {"d": D0, "w_star": list(W0), "j": J0 + 1}},
                  steps=steps)


B3_MOMENTS = Claim(
    id="xie2025.thm4_moments",
    title="Thm. 4's proof, Step 2: bᵀ G a_j, t_j, the moments and the a_j, v_j gradients at "
          "the GD point (App. B.3)",
    paper=PAPER,
    statement=(r"At $b=[-w_\star;1]$, $a_j=[e_j;0]$, $a_{d+1}=0$, $v=w_\star$ "
               r"($w=\hat w-w_\star$): $b^\top Ga_j=[-w_\star^\top,1]\sum_i[\dots][e_j;0]="
               r"\frac1C\sum_iw^\top x_ix_i[j]$, "
               r"$t_j=\frac1C\sum_iw^\top x_ix_i[j]-w[j]$ (807); the pieces $0$, $-1$, $0$ and "
               r"$C(C-1)+C(d+2)$ (817-837); $\mathbb E[(w^\top x)^2x[j]x]=2w_jw+\|w\|^2e_j$ (889), "
               r"the $i\ne k$ sum $C(C-1)w_jw$ (875); $\partial_{a_j}f=2\mathbb E[t_jG^\top b]="
               r"\mathbb E[t_j\frac1C\sum_i[\dots]]$ (846); $\partial_{v_j}f=2\mathbb E[t_j(b^\top "
               r"Ga_j+1)]$ (929)."),
    assumptions=("y_q-LSA, one head; x ~ N(0, I), w_hat ~ N(w*, I)",
                 "checked at d = 2, w* = (1, 2), j = 1; C = 1, 2, 3 (moments), 2, 3 (gradients)"),
    formulas=MOMENT_FORMULAS,
    checks={"symbolic": moments_symbolic},
    setting=SETTING,
    correction=Correction(
        description="line 807's first member with its 1/C, line 846 with its factor 2, line 929 "
                    "with b^T G a_{d+1}",
        reason="G = (1/C) sum_i z_i z_i^T; the second member of line 846 drops the 2 of its "
               "first; at a_{d+1} = 0 the v[j]-gradient is 2 E[t_j] (b^T G a_{d+1} = 0), while "
               "line 929's b^T G a_j term is 2 E[t_j b^T G a_j] = 2(d+1)/C",
        formulas={"bGa_first": _BGA_FIRST + "/C", "grad_aj": "2*E_tGb",
                  "grad_vj": "2*(E_tbGalast + E_t)"}),
)
