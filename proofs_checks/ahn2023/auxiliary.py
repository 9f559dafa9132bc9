"""ahn2023 App. C: the layer dynamics (54) (App. C.1) and the steps of the proof of Lemma 2
(App. C.2): the label dynamics (56)-(58), the context labels (60) and their dynamics (61), and
the rewriting of the query's update before (63).

Every check runs the forward pass ``models.lsa.lsa_forward`` with the 1/n of (53) kept (App. C
keeps it), exactly at rational prompts and weights and in float64 at Gaussian ones
(``multilayer_proof.Pointwise``), and compares the rows it produces with the formulas.  theta_l
is derived from the forward pass too: g(x, 0, l) is the query label after l layers with query
x and query label 0, so theta_l[m] = g(e_m, 0, l) (facts 1-2 of App. C.2).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import sympy

from verify.claim import Claim, Correction
from verify.evidence import step
from verify.formulas import FormulaSymbol, NamedFormula

from .proof_points import (SYM, Point, Pointwise, judged, more_points, mul, on_set_points,
                           pointwise_checks, pointwise_truth, proof_setting, run_layers, value)
from .one_layer import PAPER

C_SYM = {
    **SYM,
    "Xbar": FormulaSymbol("Xbar", "matrix", ("d", "n")),
    "Ybar": FormulaSymbol("Ybar", "matrix", ("1", "n")),
    "Ybar_0": FormulaSymbol("Ybar_0", "matrix", ("1", "n")),
    "x_q": FormulaSymbol("x_q", "matrix", ("d", "1")),
    "y_q": FormulaSymbol("y_q", "matrix", ("1", "1")),
    "x_i": FormulaSymbol("x_i", "matrix", ("d", "1")),
    "y_i": FormulaSymbol("y_i", "matrix", ("1", "1")),
    "theta": FormulaSymbol("theta", "matrix", ("d", "1")),
}


def csyms(*names: str) -> tuple:
    return tuple(C_SYM[n] for n in names)


def _prompt_labels(p: Point):
    """Y_0 = [w*^T Xbar, y] with a query label y of its own (the dynamics hold for any)."""
    Y0 = mul(p.w.T, p.X0, exact=p.exact)
    Y0 = Y0.copy() if not p.exact else sympy.Matrix(Y0)
    Y0[0, p.n] = p.R[0, 1] - 2 * p.R[1, 0] if p.d > 1 else p.R[0, 0] + 1
    return Y0


def _c_values(p: Point, Y) -> dict:
    """Xbar, x_q, Ybar, y_q of a label row Y at this point."""
    n = p.n
    return {**p.values(), "Xbar": p.X0[:, :n], "x_q": p.X0[:, n:], "Ybar": Y[:, :n],
            "y_q": Y[:, n:]}


_POINTS = on_set_points(2, on_set=False)  # every step of App. C holds off S too


# ================================================================================================
# (54): the layers (13) with the 1/n kept
# ================================================================================================
EQ54_FORMULAS = (
    NamedFormula("X_next", "X_i + B*X_i*M*X_i.T*A*X_i/n", csyms("n", "d", "X_i", "B", "M", "A"),
                 equation="(54)", shape=("d", "n+1"), description="X_{i+1} under (53), (13)"),
    NamedFormula("Y_next", "Y_i + Y_i*M*X_i.T*A*X_i/n", csyms("n", "d", "X_i", "Y_i", "M", "A"),
                 equation="(54)", shape=("1", "n+1"), description="Y_{i+1} under (53), (13)"),
)


def eq54_sides(p: Point, F: Mapping) -> list:
    Y0 = _prompt_labels(p)
    traj = run_layers(p.X0, Y0, p.A, p.B, p.exact, divisor=p.n)
    out = []
    for i, (A, B) in enumerate(zip(p.A, p.B)):
        X, Y = traj[i]
        vals = {**p.values(), "X_i": X, "Y_i": Y, "A": A, "B": B}
        out += [("X_next", value(F, "X_next", vals, p.exact), traj[i + 1][0]),
                ("Y_next", value(F, "Y_next", vals, p.exact), traj[i + 1][1])]
    return out


EQ54_SPEC = Pointwise(eq54_sides, *_POINTS, "the dynamics (54) of (53) under (13)",
                      (step("Forward pass", "", "lsa_forward with P_i = diag(B_i, 1), Q_i = "
                            "diag(A_i, 0) and the 1/n of (53), general weights; each layer's "
                            "rows against the formulas at the layer's input."),))
EQ54 = Claim(
    id="ahn2023.eq54", title="The layer dynamics (54) of (53) under the parameters (13)",
    paper=PAPER,
    statement=(r"Under (13), $Z_{i+1}=Z_i+\frac1nP_iZ_iMZ_i^\top Q_iZ_i$ is "
               r"$X_{i+1}=X_i+\frac1nB_iX_iMX_i^\top A_iX_i$, "
               r"$Y_{i+1}=Y_i+\frac1nY_iMX_i^\top A_iX_i$ (eq. (54))."),
    assumptions=("any prompt and weights (the identity is deterministic); A_i symmetric",),
    formulas=EQ54_FORMULAS, checks=pointwise_checks(EQ54_SPEC), setting=proof_setting(),
    exact=pointwise_truth(EQ54_SPEC, EQ54_FORMULAS, more_points(on_set=False)))


# ================================================================================================
# (56)-(58): the label row, the context labels and the query label under (9)
# ================================================================================================
EQ56_FORMULAS = (
    NamedFormula("Y_next", "Y_i + Y_i*M*X_0.T*A*X_0/n", csyms("n", "d", "X_0", "Y_i", "M", "A"),
                 equation="(56)", shape=("1", "n+1"), description="Y_{l+1} under (9)"),
    NamedFormula("ctx_next", "Ybar + (Xbar.T*A*Xbar*Ybar.T).T/n",
                 csyms("n", "d", "Xbar", "Ybar", "A"), equation="(57)", shape=("1", "n"),
                 description="y_{l+1}^(i) = y_l^(i) + (1/n) sum_j x^(i)T A_l x^(j) y_l^(j), "
                             "i <= n"),
    NamedFormula("q_next", "y_q + x_q.T*A*Xbar*Ybar.T/n",
                 csyms("n", "d", "Xbar", "Ybar", "x_q", "y_q", "A"), equation="(58)",
                 shape=("1", "1"),
                 description="y_{l+1}^(n+1) = y_l^(n+1) + (1/n) sum_j x^(n+1)T A_l x^(j) y_l^(j)"),
)


def eq56_sides(p: Point, F: Mapping) -> list:
    Y0 = _prompt_labels(p)
    traj = run_layers(p.X0, Y0, p.A, None, p.exact, divisor=p.n)
    n = p.n
    out = []
    for l, A in enumerate(p.A):
        Y, Y1 = traj[l][1], traj[l + 1][1]
        vals = {**_c_values(p, Y), "Y_i": Y, "A": A}
        out += [("label_row (56)", value(F, "Y_next", vals, p.exact), Y1),
                ("context_labels (57)", value(F, "ctx_next", vals, p.exact), Y1[:, :n]),
                ("query_label (58)", value(F, "q_next", vals, p.exact), Y1[:, n:])]
    return out


EQ56_SPEC = Pointwise(eq56_sides, *_POINTS, "the label dynamics (56)-(58) under (9)",
                      (step("Forward pass", "", "lsa_forward with the parameters (9) and the "
                            "1/n, on Z_0 = [[Xbar, x_q], [w*^T Xbar, y]] (any query label y), "
                            "general symmetric A_l."),))
EQ56 = Claim(
    id="ahn2023.eq56", title="The label dynamics (56)-(58) of the proof of Lemma 2 (App. C.2)",
    paper=PAPER,
    statement=(r"Under (9): $Y_{\ell+1}=Y_\ell+\frac1nY_\ell MX_0^\top A_\ell X_0$ (56); for "
               r"$i\le n$, $y_{\ell+1}^{(i)}=y_\ell^{(i)}+\frac1n\sum_{j\le n}x^{(i)\top}A_\ell "
               r"x^{(j)}y_\ell^{(j)}$ (57) and $y_{\ell+1}^{(n+1)}=y_\ell^{(n+1)}+\frac1n"
               r"\sum_{j\le n}x^{(n+1)\top}A_\ell x^{(j)}y_\ell^{(j)}$ (58)."),
    assumptions=("any prompt and symmetric A_l (deterministic identities)",
                 "(58) read with x^(n+1)T, the transpose its text lost (as in (57))"),
    formulas=EQ56_FORMULAS, checks=pointwise_checks(EQ56_SPEC), setting=proof_setting(),
    exact=pointwise_truth(EQ56_SPEC, EQ56_FORMULAS, more_points(on_set=False)))


# ================================================================================================
# (60), and the query's update before (63)
# ================================================================================================
def thetas(p: Point) -> list:
    """theta_l, l = 0..L, from the forward pass: theta_l[m] = g(e_m, 0, l), the query label after
    l layers with query e_m and query label 0 (the context as at the point)."""
    n, d = p.n, p.d
    cols = []
    for m in range(d):
        X0 = p.X0.copy() if not p.exact else sympy.Matrix(p.X0)
        for r in range(d):
            X0[r, n] = 1 if r == m else 0
        Y0 = mul(p.w.T, X0, exact=p.exact)
        Y0 = Y0.copy() if not p.exact else sympy.Matrix(Y0)
        Y0[0, n] = 0
        cols.append([Y[0, n] for _, Y in run_layers(X0, Y0, p.A, None, p.exact, divisor=n)])
    out = []
    for l in range(len(p.A) + 1):
        col = [cols[m][l] for m in range(d)]
        out.append(sympy.Matrix(col) if p.exact else np.array(col, dtype=float).reshape(d, 1))
    return out


EQ60_FORMULAS = (
    NamedFormula("y_60", "theta.T*x_i + y_i", csyms("d", "theta", "x_i", "y_i"),
                 equation="(60)", shape=("1", "1"),
                 description="y_l^(i) = <theta_l, x^(i)> + y^(i) (y^(i) the initial label)"),
    NamedFormula("q_line1", "y_q + (A*Xbar*Ybar.T).T*x_q/n",
                 csyms("n", "d", "A", "Xbar", "Ybar", "x_q", "y_q"), equation="before (63)",
                 shape=("1", "1"),
                 description="y_{l+1}^(n+1) = y_l^(n+1) + <A_l Xbar Ybar_l^T, x>/n"),
    NamedFormula("q_line2", "y_q + (A*Xbar*(Xbar.T*theta + Ybar_0.T)).T*x_q/n",
                 csyms("n", "d", "A", "Xbar", "Ybar_0", "theta", "x_q", "y_q"),
                 equation="before (63)", shape=("1", "1"),
                 description="the same with Ybar_l^T = Xbar^T theta_l + Ybar_0^T by (60)"),
    NamedFormula("q_line3", "y_q + (A*Xbar*Xbar.T*(theta + w_star)).T*x_q/n",
                 csyms("n", "d", "A", "Xbar", "theta", "w_star", "x_q", "y_q"),
                 equation="before (63)", shape=("1", "1"),
                 description="the same with y^(i) = <x^(i), w*>"),
)


def eq60_sides(p: Point, F: Mapping) -> list:
    Y0 = _prompt_labels(p)
    traj = run_layers(p.X0, Y0, p.A, None, p.exact, divisor=p.n)
    th = thetas(p)
    n = p.n
    out = []
    for l, (_, Y) in enumerate(traj):
        for i in range(n + 1):
            vals = {"d": p.d, "theta": th[l], "x_i": p.X0[:, i:i + 1], "y_i": Y0[:, i:i + 1]}
            out.append(("labels (60)", value(F, "y_60", vals, p.exact), Y[:, i:i + 1]))
        if l < len(p.A):
            vals = {**_c_values(p, Y), "A": p.A[l], "theta": th[l], "Ybar_0": Y0[:, :n]}
            nxt = traj[l + 1][1][:, n:]
            out += [(f"query_update_{k}", value(F, f"q_line{k}", vals, p.exact), nxt)
                    for k in (1, 2, 3)]
    return out


EQ60_SPEC = Pointwise(eq60_sides, *_POINTS,
                      "the labels after l layers (60) and the query's update before (63)",
                      (step("theta", "", "theta_l[m]: the query label after l layers of (9) run "
                            "with query e_m and query label 0 (the context unchanged)."),
                       step("Labels", "", "Every label of the forward pass on Z_0 = [[Xbar, "
                            "x_q], [w*^T Xbar, y]] after each layer, against the formulas.")))
EQ60 = Claim(
    id="ahn2023.eq60", title="The labels after l layers (60) and the query update before (63)",
    paper=PAPER,
    statement=(r"Under (9), $y_\ell^{(i)}=\langle\theta_\ell,x^{(i)}\rangle+y^{(i)}$ for every "
               r"$i\le n+1$ (60), and $y_{\ell+1}^{(n+1)}=y_\ell^{(n+1)}+\frac1n\langle A_\ell"
               r"\bar X\bar Y_\ell^\top,x^{(n+1)}\rangle=y_\ell^{(n+1)}+\frac1n\langle A_\ell\bar X"
               r"(\bar X^\top\theta_\ell+\bar Y_0^\top),x^{(n+1)}\rangle=y_\ell^{(n+1)}+\frac1n"
               r"\langle A_\ell\bar X\bar X^\top(\theta_\ell+w_\star),x^{(n+1)}\rangle$."),
    assumptions=("y^(i) = <w*, x^(i)> for i <= n; any query label; symmetric A_l",
                 "theta_l defined by g(x, 0, l) = <theta_l, x> (facts 1-2), derived from the "
                 "forward pass"),
    formulas=EQ60_FORMULAS, checks=pointwise_checks(EQ60_SPEC), setting=proof_setting(),
    exact=pointwise_truth(EQ60_SPEC, EQ60_FORMULAS, more_points(on_set=False)))


# ================================================================================================
# (61): the context labels' dynamics as printed
# ================================================================================================
EQ61_FORMULAS = (
    NamedFormula("ctx_61", "y_i + x_q.T*A*Xbar*Ybar.T/n",
                 csyms("n", "d", "x_q", "x_i", "y_i", "A", "Xbar", "Ybar"), equation="(61)",
                 shape=("1", "1"),
                 description="y_{l+1}^(i) from y_l^(i) and the context labels Ybar_l, i <= n"),
)


def eq61_sides(p: Point, F: Mapping) -> list:
    Y0 = _prompt_labels(p)
    traj = run_layers(p.X0, Y0, p.A, None, p.exact, divisor=p.n)
    out = []
    for l, A in enumerate(p.A):
        Y, Y1 = traj[l][1], traj[l + 1][1]
        for i in range(p.n):
            vals = {**_c_values(p, Y), "A": A, "x_i": p.X0[:, i:i + 1], "y_i": Y[:, i:i + 1]}
            out.append(("context_label (61)", value(F, "ctx_61", vals, p.exact),
                        Y1[:, i:i + 1]))
    return out


EQ61_SPEC = Pointwise(eq61_sides, *_POINTS, "the context labels' dynamics (61)")
EQ61 = judged(EQ61_SPEC, more_points(on_set=False), Claim(
    id="ahn2023.eq61", title="The context labels' dynamics (61) (proof of (60))", paper=PAPER,
    statement=(r"For $i\le n$: $y_{\ell+1}^{(i)}=y_\ell^{(i)}+\frac1n\sum_{j\le n}x^{(n+1)\top}"
               r"A_\ell x^{(j)}y_\ell^{(j)}$ (61, as printed)."),
    assumptions=("under (9), 1/n kept; any prompt, symmetric A_l",),
    formulas=EQ61_FORMULAS, checks=pointwise_checks(EQ61_SPEC), setting=proof_setting(),
    correction=Correction(
        "x^(i) for x^(n+1) (as in (57))",
        "the context label i is updated by x^(i)T A_l sum_j x^(j) y_l^(j) / n (57); with "
        "x^(n+1) it is the query's increment (58), which the proof then compares with it",
        {"ctx_61": "y_i + x_i.T*A*Xbar*Ybar.T/n"})))
