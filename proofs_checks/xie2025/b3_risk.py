"""App. B.3, the y_q-LSA risk and Step 1 of Thm. 4's proof: the risk's integrand (line 755), its
rewriting through t_j (lines 759-765) and the partial derivatives of t_j (lines 775-800).

y_q-LSA (Def. 3, eqs. (11)-(12)) puts y_q = v^T x_q into the prompt, so one head predicts
f = y_q + b^T G A z_q, z_q = [x_q; y_q] (App. A.2's reduction), and the error is
f - w_hat^T x_q = sum_j t_j x_q[j] with t_j independent of x_q.  Every display is an identity in
the data, checked exactly: the forward pass of ``models.multihead`` at a random rational context
with the query input x_q and the parameters (b, A, v) left symbolic (d = 2, C = 3).
"""
from __future__ import annotations

import numpy as np
import sympy

from models.multihead import multihead_prediction
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from .block_identities import sympy_mask
from .common import finish
from .setting import SETTING

PAPER = "xie2025"
DP1, V1, DV = ("d+1", "d+1"), ("d+1", "1"), ("d", "1")
D = FormulaSymbol("d")
_YQ = FormulaSymbol("y_q", "matrix", ("1", "1"))
_B = FormulaSymbol("b", "matrix", V1)
_G = FormulaSymbol("G", "matrix", DP1, symmetric=True)
_A = FormulaSymbol("A", "matrix", DP1)
_ZQ = FormulaSymbol("z_q", "matrix", V1)
_V = FormulaSymbol("v", "matrix", DV)
_XQ = FormulaSymbol("x_q", "matrix", DV)
_AL = FormulaSymbol("a_last", "matrix", V1)
_AJ = FormulaSymbol("a_j", "matrix", V1)
_AD = FormulaSymbol("A_d", "matrix", ("d+1", "d"))
_WH = FormulaSymbol("w_hat", "matrix", DV)
_VJ, _WHJ = FormulaSymbol("v_j"), FormulaSymbol("w_hat_j")
D0, C0 = 2, 3

RISK_FORMULAS = (
    NamedFormula("pred_755", "y_q + b.T*G*A*z_q + v.T*x_q", (D, _YQ, _B, _G, _A, _ZQ, _V, _XQ),
                 "the prediction inside the risk of line 755, (E + Att(E)/C)_{C+1,C+1} + v^T x_q "
                 "with the corner written by App. A.2's reduction", "App. B.3", ("1", "1")),
    NamedFormula("err_759", "(Identity(1) + b.T*G*a_last)*y_q + (b.T*G*A_d - w_hat.T)*x_q",
                 (D, _B, _G, _AL, _YQ, _AD, _WH, _XQ), "the prediction error of line 759",
                 "App. B.3", ("1", "1")),
    NamedFormula("t_j", "b.T*G*a_j + v_j*b.T*G*a_last + (v_j - w_hat_j)*Identity(1)",
                 (D, _B, _G, _AJ, _AL, _VJ, _WHJ), "t_j, the coefficient of x_q[j] in the error",
                 "App. B.3", ("1", "1")),
    NamedFormula("dt_db", "G*a_j + v_j*G*a_last", (D, _G, _AJ, _AL, _VJ), "d t_j / d b",
                 "App. B.3", V1),
    NamedFormula("dt_daj", "G.T*b", (D, _G, _B), "d t_j / d a_j", "App. B.3", V1),
    NamedFormula("dt_dalast", "v_j*G.T*b", (D, _G, _B, _VJ), "d t_j / d a_{d+1}", "App. B.3", V1),
    NamedFormula("dt_dvj", "b.T*G*a_last + Identity(1)", (D, _B, _G, _AL),
                 "d t_j / d v[j]", "App. B.3", ("1", "1")),
)


def _setup(seed: int) -> dict:
    """A random rational context (X, w_hat), symbolic x_q and parameters b, A, v; the y_q-LSA
    prompt E_v and the error of its forward pass."""
    rng = np.random.default_rng(seed)
    d, C = D0, C0
    X = sympy.Matrix(d, C, lambda a, i: sympy.Rational(int(rng.integers(-4, 5)),
                                                       int(rng.integers(1, 3))))
    wh = sympy.Matrix(d, 1, lambda a, _: sympy.Rational(int(rng.integers(-4, 5)), 2))
    xq = sympy.Matrix(d, 1, lambda a, _: sympy.Symbol(f"xq{a}"))
    b = sympy.Matrix(d + 1, 1, lambda i, _: sympy.Symbol(f"b{i}"))
    A = sympy.Matrix(d + 1, d + 1, lambda i, j: sympy.Symbol(f"A{i}{j}"))
    v = sympy.Matrix(d, 1, lambda a, _: sympy.Symbol(f"v{a}"))
    y = X.T * wh
    yq = (v.T * xq)[0, 0]
    E = sympy.zeros(d + 1, C + 1)
    E[:d, :C], E[d, :C], E[:d, C], E[d, C] = X, y.T, xq, yq
    P = sympy.zeros(d + 1, d + 1)
    P[d, :] = b.T
    pred = sympy.expand(multihead_prediction(E, [(P, A)], sympy_mask(C), C))
    Z = sympy.Matrix.vstack(X, y.T)
    return {"X": X, "w_hat": wh, "x_q": xq, "b": b, "A": A, "v": v, "y_q": yq, "pred": pred,
            "err": sympy.expand(pred - (wh.T * xq)[0, 0]), "G": Z * Z.T / C,
            "z_q": sympy.Matrix.vstack(xq, sympy.Matrix([[yq]]))}


def _scalar(v) -> sympy.Expr:
    v = sympy.sympify(v)
    return sympy.expand(v[0, 0] if isinstance(v, sympy.MatrixBase) else v)


def _identity_findings(F, s: dict) -> list[Finding]:
    d = D0
    base = {"d": d, "G": s["G"], "b": s["b"], "x_q": s["x_q"], "v": s["v"], "w_hat": s["w_hat"],
            "y_q": sympy.Matrix([[s["y_q"]]]), "A": s["A"], "z_q": s["z_q"],
            "a_last": s["A"][:, d], "A_d": s["A"][:, :d]}
    out = []
    p755 = _scalar(formula_value(F["pred_755"], base))
    diff = sympy.factor(p755 - s["pred"])
    corner0 = _scalar(formula_value(F["pred_755"], {
        **base, "y_q": sympy.zeros(1, 1), "z_q": sympy.Matrix.vstack(s["x_q"], sympy.zeros(1, 1))}))
    out.append(Finding("risk_integrand_755", diff == 0, {
        "reading": "E = E_v (Def. 3: y_q = v^T x_q in the prompt)",
        "with_y_q=0_in_E_instead": str(sympy.factor(corner0 - s["pred"]))},
        None if diff == 0 else {"sizes": {"d": d, "C": C0},
                                "line_755_minus_forward_pass": str(diff),
                                "X": str(s["X"].tolist()), "w_hat": str(list(s["w_hat"]))},
        "" if diff == 0 else "line 755's prediction differs from y_q-LSA's forward pass (eq. "
                             "(12)): v^T x_q is already the corner y_q of E_v"))
    e759 = _scalar(formula_value(F["err_759"], base))
    diff = sympy.factor(e759 - s["err"])
    out.append(Finding("error_759", diff == 0, {}, None if diff == 0 else {
        "sizes": {"d": d, "C": C0}, "line_759_minus_forward_pass_error": str(diff)},
        "" if diff == 0 else "line 759's integrand differs from the forward pass's error"))
    return out


def _tj_findings(F, s: dict) -> list[Finding]:
    """sum_j t_j x_q[j] = error (so E[error^2] = sum_j E[t_j^2]: t_j does not involve x_q), and
    the partial derivatives of the derived t_j = d error / d x_q[j]."""
    d, A, b = D0, s["A"], s["b"]
    total, bad_t, bad_d, rows = sympy.Integer(0), None, None, []
    for j in range(d):
        vals = {"d": d, "G": s["G"], "b": b, "a_j": A[:, j], "a_last": A[:, d],
                "v_j": s["v"][j], "w_hat_j": s["w_hat"][j]}
        tj = _scalar(formula_value(F["t_j"], vals))
        total += tj * s["x_q"][j]
        derived = sympy.expand(sympy.diff(s["err"], s["x_q"][j]))
        parts = {"dt_db": sympy.Matrix([sympy.diff(derived, x) for x in b]),
                 "dt_daj": sympy.Matrix([sympy.diff(derived, A[i, j]) for i in range(d + 1)]),
                 "dt_dalast": sympy.Matrix([sympy.diff(derived, A[i, d]) for i in range(d + 1)]),
                 "dt_dvj": sympy.Matrix([[sympy.diff(derived, s["v"][j])]])}
        for name, der in parts.items():
            named = sympy.Matrix(formula_value(F[name], vals))
            same = named.shape == der.shape and (named - der).applyfunc(sympy.expand) == \
                sympy.zeros(*der.shape)
            rows.append({"j": j + 1, "partial": name, "agrees": same})
            if not same and bad_d is None:
                bad_d = {"sizes": {"d": d, "C": C0}, "j": j + 1, "partial": name,
                         "derived": str(der.applyfunc(sympy.factor).tolist()),
                         "named": str(named.applyfunc(sympy.factor).tolist())}
    diff = sympy.factor(sympy.expand(total - s["err"]))
    if diff != 0:
        bad_t = {"sizes": {"d": d, "C": C0}, "sum_j_t_j_x_q[j]_minus_error": str(diff)}
    return [
        Finding("error_is_sum_t_j_x_q_j", bad_t is None, {"note": "t_j is free of x_q, so "
                "E[error^2] = sum_j E[t_j^2] (x_q ~ N(0, I) independent of G, w_hat)"}, bad_t,
                "" if bad_t is None else "sum_j t_j x_q[j] is not the forward pass's error"),
        Finding("partial_derivatives_775", bad_d is None, {"rows": rows}, bad_d,
                "" if bad_d is None else "a named partial derivative of t_j differs from the "
                                         "derived one"),
    ]


def risk_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    s = _setup(ctx.seed_for("b3-risk"))
    findings = _identity_findings(F, s) + _tj_findings(F, s)
    steps = [
        step("Forward pass of y_q-LSA", r"f = [E_v + \tfrac1C P E_v W^M(E_v^\top A E_v)]_{-1,-1},"
             r"\ E_v = \begin{bmatrix}X & x_q\\ y^\top & v^\top x_q\end{bmatrix}",
             "P = [0; b^T], A = (W^K)^T W^Q: models.multihead at a rational context, x_q, b, A, "
             "v symbolic."),
        step("Rewriting", r"f - \hat w^\top x_q = \sum_j t_j\,x_q[j],\quad t_j = b^\top Ga_j + "
             r"v_j\,b^\top Ga_{d+1} + v_j - \hat w_j", "Line 759's first member and t_j of line "
             "765; line 760 between them drops the square (a typo)."),
        step("Partial derivatives", r"\partial_b t_j = Ga_j + v_jGa_{d+1},\ \partial_{a_j}t_j = "
             r"G^\top b,\ \partial_{v_j}t_j = b^\top Ga_{d+1} + 1", "Of the derived t_j = "
             "d(error)/d x_q[j], exactly."),
    ]
    return finish(findings, {"instance": {"d": D0, "C": C0}}, steps=steps)


B3_RISK = Claim(
    id="xie2025.thm4_risk",
    title="Thm. 4's proof, Step 1: the y_q-LSA risk, t_j and its partial derivatives (App. B.3)",
    paper=PAPER,
    statement=(r"$\mathcal R(f_{y_q\text{-}\mathsf{LSA}})=\mathbb E[((E+\frac1C\mathrm{Att}(E))"
               r"_{C+1,C+1}+v^\top x_q-\hat w^\top x_q)^2]=\mathbb E[((1+b^\top Ga_{d+1})y_q+"
               r"(b^\top GA_{:d}-\hat w^\top)x_q)^2]=\sum_j\mathbb E[t_j^2]$ with $t_j=b^\top Ga_j"
               r"+v_jb^\top Ga_{d+1}+v_j-\hat w_j$, and $\partial_bt_j=Ga_j+v_jGa_{d+1}$, "
               r"$\partial_{a_j}t_j=G^\top b$, $\partial_{a_{d+1}}t_j=v_jG^\top b$, "
               r"$\partial_{v_j}t_j=b^\top Ga_{d+1}+1$ (App. B.3, lines 755-800)."),
    assumptions=("y_q-LSA (eqs. (11)-(12)): y_q = v^T x_q is the corner of the prompt",
                 "one head: b the last row of W^P W^V, A = (W^K)^T W^Q; any data"),
    formulas=RISK_FORMULAS,
    checks={"symbolic": risk_symbolic},
    setting=SETTING,
    correction=Correction(
        description="line 755 without the added v^T x_q: (E_v + Att(E_v)/C)_{C+1,C+1} - "
                    "w_hat^T x_q",
        reason="y_q-LSA already carries y_q = v^T x_q in the corner of its prompt (Def. 3); "
               "adding v^T x_q outside counts it twice (and with y_q = 0 in E the term "
               "b^T G a_{d+1} v^T x_q of line 759 would be lost)",
        formulas={"pred_755": "y_q + b.T*G*A*z_q"}),
)
