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
from verify.claim import Claim, Correction
from verify.evidence import step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit.pointwise import Pointwise, pointwise_checks
from .points import Point, exact_zero, formula, prompt, symbol_matrix, sympy_mask
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


def _setup(ctx, F) -> list[Point]:
    """A random rational context (X, w_hat), symbolic x_q and parameters b, A, v; the y_q-LSA
    prompt E_v = [[X, x_q], [y^T, v^T x_q]] and the error of its forward pass."""
    rng = np.random.default_rng(ctx.seed_for("b3-risk"))
    d, C = D0, C0
    X = sympy.Matrix(d, C, lambda a, i: sympy.Rational(int(rng.integers(-4, 5)),
                                                       int(rng.integers(1, 3))))
    wh = sympy.Matrix(d, 1, lambda a, _: sympy.Rational(int(rng.integers(-4, 5)), 2))
    xq, b, v = symbol_matrix("xq", d, 1), symbol_matrix("b", d + 1, 1), symbol_matrix("v", d, 1)
    A = symbol_matrix("A", d + 1, d + 1)
    y, yq = X.T * wh, (v.T * xq)[0, 0]
    P = sympy.zeros(d + 1, d + 1)
    P[d, :] = b.T
    pred = sympy.expand(multihead_prediction(prompt(X.T, y, xq, yq, True), [(P, A)],
                                             sympy_mask(C), C))
    Z = sympy.Matrix.vstack(X, y.T)
    return [Point({"d": d, "C": C, "X": X, "w_hat": wh, "x_q": xq, "b": b, "A": A, "v": v,
                   "y_q": sympy.Matrix([[yq]]), "z_q": sympy.Matrix.vstack(xq, sympy.Matrix(
                       [[yq]])), "a_last": A[:, d], "A_d": A[:, :d], "G": Z * Z.T / C,
                   "pred": pred, "err": sympy.expand(pred - (wh.T * xq)[0, 0])}, True,
                  f"rational context, d = {d}, C = {C}", ("d", "C", "X", "w_hat"))]


def _ex(x) -> sympy.Matrix:
    return sympy.Matrix(x).applyfunc(sympy.expand) if isinstance(x, sympy.MatrixBase) \
        else sympy.Matrix([[sympy.expand(x)]])


def risk_sides(p: Point, F) -> list:
    """Lines 755 and 759 against the forward pass's prediction and error; sum_j t_j x_q[j]
    against the error (t_j is free of x_q, so E[error^2] = sum_j E[t_j^2]); the partial
    derivatives of the derived t_j = d error / d x_q[j]."""
    d, err, A = D0, p["err"], p["A"]
    out = [("risk_integrand_755", _ex(formula(F, "pred_755", p)), _ex(p["pred"])),
           ("error_759", _ex(formula(F, "err_759", p)), _ex(err))]
    total, partials = sympy.Integer(0), []
    for j in range(d):
        at = {"a_j": A[:, j], "v_j": p["v"][j], "w_hat_j": p["w_hat"][j]}
        total += _ex(formula(F, "t_j", p, **at))[0, 0] * p["x_q"][j]
        tj = sympy.expand(sympy.diff(err, p["x_q"][j]))
        derived = {"dt_db": [sympy.diff(tj, x) for x in p["b"]],
                   "dt_daj": [sympy.diff(tj, A[i, j]) for i in range(d + 1)],
                   "dt_dalast": [sympy.diff(tj, A[i, d]) for i in range(d + 1)],
                   "dt_dvj": [sympy.diff(tj, p["v"][j])]}
        partials += [("partial_derivatives_775", _ex(formula(F, name, p, **at)),
                      _ex(sympy.Matrix(der))) for name, der in derived.items()]
    return out + [("error_is_sum_t_j_x_q_j", _ex(total), _ex(err))] + partials


def _explain(name: str, p: Point, F, lhs, rhs) -> dict:
    """A failed display's difference, factored; for line 755 also its value read with y_q = 0
    in E (then the b^T G a_{d+1} v^T x_q term of line 759 is lost)."""
    diff = str((lhs - rhs).applyfunc(sympy.factor)[0, 0] if lhs.shape == (1, 1)
               else (lhs - rhs).applyfunc(sympy.factor).tolist())
    if name != "risk_integrand_755":
        return {"named_minus_derived": diff}
    return {"line_755_minus_forward_pass": diff, "reading": "E = E_v (Def. 3: y_q = v^T x_q in "
            "the prompt)", "with_y_q=0_in_E_instead": str(sympy.factor(_ex(formula(
                F, "pred_755", p, y_q=sympy.zeros(1, 1), z_q=sympy.Matrix.vstack(
                    p["x_q"], sympy.zeros(1, 1))))[0, 0] - p["pred"]))}


RISK_SPEC = Pointwise(
    risk_sides, _setup, lambda ctx, F: [], what="App. B.3, lines 755-800", explain=_explain,
    zero=exact_zero,
    steps=(step("Forward pass of y_q-LSA", r"f = [E_v + \tfrac1C P E_v W^M(E_v^\top A E_v)]"
                r"_{-1,-1},\ E_v = \begin{bmatrix}X & x_q\\ y^\top & v^\top x_q\end{bmatrix}",
                "P = [0; b^T], A = (W^K)^T W^Q: models.multihead at a rational context, x_q, b, "
                "A, v symbolic."),
           step("Rewriting", r"f - \hat w^\top x_q = \sum_j t_j\,x_q[j],\quad t_j = b^\top Ga_j"
                r" + v_j\,b^\top Ga_{d+1} + v_j - \hat w_j", "Line 759's first member and t_j of "
                "line 765; line 760 between them drops the square (a typo)."),
           step("Partial derivatives", r"\partial_b t_j = Ga_j + v_jGa_{d+1},\ \partial_{a_j}t_j"
                r" = G^\top b,\ \partial_{v_j}t_j = b^\top Ga_{d+1} + 1", "Of the derived "
                "t_j = d(error)/d x_q[j], exactly.")))

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
    checks={"symbolic": pointwise_checks(RISK_SPEC)["symbolic"]},  # an identity in symbols
    setting=SETTING,
    correction=Correction(
        description="line 755 without the added v^T x_q: (E_v + Att(E_v)/C)_{C+1,C+1} - "
                    "w_hat^T x_q",
        reason="y_q-LSA already carries y_q = v^T x_q in the corner of its prompt (Def. 3); "
               "adding v^T x_q outside counts it twice (and with y_q = 0 in E the term "
               "b^T G a_{d+1} v^T x_q of line 759 would be lost)",
        formulas={"pred_755": "y_q + b.T*G*A*z_q"}),
)
