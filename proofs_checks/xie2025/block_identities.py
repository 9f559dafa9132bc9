"""Two exact block-matrix identities of the forward pass: concatenated heads projected by W^O are
a sum of per-head projections (Sec. 3, after eq. (6)), and App. B.1's product V W^M (K^T Q) with
the GD weights of eq. (7).

Both are identities in the prompt, so the symbolic tier checks them with every entry of the data a
symbol (d = 2, C = 3) and the numeric tier in float64 on sampled prompts.
"""
from __future__ import annotations

import numpy as np
import sympy
import torch

from models.device import randn as device_randn
from models.multihead import head_products, multihead_forward, sample_tasks
from models.lsa import mask_matrix, transpose
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, settle_le, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from .common import finish
from .gd_claims import EQ7, eq7_numbers
from .setting import SETTING

PAPER = "xie2025"
D = FormulaSymbol("d")
C = FormulaSymbol("C")
DP1 = ("d+1", "d+1")
_O1 = FormulaSymbol("O_1", "matrix", DP1)
_O2 = FormulaSymbol("O_2", "matrix", DP1)
WSTAR = FormulaSymbol("w_star", "matrix", ("d", "1"))
X = FormulaSymbol("X", "matrix", ("C", "d"))
Y = FormulaSymbol("y", "matrix", ("C", "1"))
XQ = FormulaSymbol("x_q", "matrix", ("d", "1"))
TOL = 1e-10  # float64 forward passes of O(1) entries agree to ~1e-14 relative


def symbolic_prompt(d: int, C: int) -> tuple[sympy.Matrix, dict]:
    """E = [[X^T, x_q], [y^T, y_q]] with every entry a symbol (X is C x d, paper notation)."""
    Xs = sympy.Matrix(C, d, lambda i, a: sympy.Symbol(f"x{i}_{a}"))
    ys = sympy.Matrix(C, 1, lambda i, _: sympy.Symbol(f"y{i}"))
    xq = sympy.Matrix(d, 1, lambda a, _: sympy.Symbol(f"xq{a}"))
    yq = sympy.Symbol("yq")
    E = sympy.zeros(d + 1, C + 1)
    E[:d, :C], E[:d, C], E[d, :C], E[d, C] = Xs.T, xq, ys.T, yq
    return E, {"X": Xs, "y": ys, "x_q": xq, "y_q": yq}


def sympy_mask(C: int) -> sympy.Matrix:
    M = sympy.zeros(C + 1, C + 1)
    M[:C, :C] = sympy.eye(C)
    return M


def _rational_matrix(rows: int, cols: int, rng: np.random.Generator) -> sympy.Matrix:
    return sympy.Matrix(rows, cols, lambda i, j: sympy.Rational(int(rng.integers(-5, 6)),
                                                                 int(rng.integers(1, 4))))


def _first_difference(A: sympy.Matrix, B: sympy.Matrix):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            diff = sympy.expand(A[i, j] - B[i, j])
            if diff != 0:
                return (i, j), diff
    return None, 0


# ==============================================================================================
# Sec. 3: Concat(head_1, ..., head_H) W^O = sum_h W^P_h head_h
# ==============================================================================================
CONCAT_FORMULAS = (
    NamedFormula("WP_1", "O_1", (D, _O1, _O2), "head 1's projection W^P_1 after absorbing "
                 "W^O = [O_1, O_2]", "Sec. 3, after eq. (6)", DP1),
    NamedFormula("WP_2", "O_2", (D, _O1, _O2), "head 2's projection W^P_2 after absorbing "
                 "W^O = [O_1, O_2]", "Sec. 3, after eq. (6)", DP1),
)


def _value_heads(E, WV, WK, WQ, mask, C):
    """The unprojected outputs U_h = (1/C) W^V_h E W^M (E^T (W^K_h)^T W^Q_h E) of the heads."""
    return [V @ E @ mask @ (transpose(E) @ K.T @ Q @ E) / C for V, K, Q in zip(WV, WK, WQ)]


def concat_symbolic(ctx: Context) -> TierResult:
    """Exact rational arithmetic, d = 2, C = 3, two heads with rational weights, at two random
    rational prompts: E + W^O [U_1; U_2] against models.multihead's E + sum_h (1/C) P_h E W^M
    (E^T Q_h E) with P_h = W^P_h W^V_h, W^P_h the named projections (the identity is linear in
    each head's output, so a wrong projection shows at any generic prompt)."""
    F = ctx.formulas
    d, C = 2, 3
    rng = ctx.rng("concat")
    for _ in range(2):
        f = _concat_at(F, _rational_matrix(d + 1, C + 1, rng), d, C, rng)
        if f.ok is not True:
            break
    steps = [step("Concatenated heads", r"E + W^O\begin{bmatrix}U_1\\U_2\end{bmatrix},\quad "
                  r"U_h = \tfrac1C W^V_hEW^M(E^\top (W^K_h)^\top W^Q_hE)",
                  "Standard multi-head attention (columns as tokens): the heads' outputs stacked "
                  "and projected by W^O = [O_1, O_2]."),
             step("Sum of heads (6)", r"E + \sum_h \tfrac1C W^P_hW^V_hEW^M(E^\top (W^K_h)^\top "
                  r"W^Q_hE)", "models.multihead with the named W^P_h, in exact rational "
                  "arithmetic.")]
    return finish([f], steps=steps)


def _concat_at(F, E: sympy.Matrix, d: int, C: int, rng: np.random.Generator) -> Finding:
    mask = sympy_mask(C)
    WV = [_rational_matrix(d + 1, d + 1, rng) for _ in range(2)]
    WK = [_rational_matrix(d + 1, d + 1, rng) for _ in range(2)]
    WQ = [_rational_matrix(d + 1, d + 1, rng) for _ in range(2)]
    O1, O2 = _rational_matrix(d + 1, d + 1, rng), _rational_matrix(d + 1, d + 1, rng)
    U = _value_heads(E, WV, WK, WQ, mask, C)
    concat = E + sympy.Matrix.hstack(O1, O2) * sympy.Matrix.vstack(*U)
    WP = [sympy.Matrix(formula_value(F[n], {"d": d, "O_1": O1, "O_2": O2}))
          for n in ("WP_1", "WP_2")]
    summed = multihead_forward(E, [head_products(P, V, K, Q) for P, V, K, Q in
                                   zip(WP, WV, WK, WQ)], mask, C)
    entry, diff = _first_difference(concat, summed)
    ok = entry is None
    ce = None if ok else {"sizes": {"d": d, "C": C}, "heads": 2, "entry": list(entry),
                          "concat_minus_sum": str(diff), "O_1": str(O1.tolist()),
                          "O_2": str(O2.tolist()), "E": str(E.tolist())}
    return Finding("concat_equals_sum_of_heads", ok, {
        "exact_in": "rational arithmetic at two random rational prompts (d = 2, C = 3), two "
                    "heads, rational weights"}, ce,
        "" if ok else "W^O [head_1; head_2] differs from sum_h W^P_h head_h with the named W^P_h")


def concat_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = SETTING.instance(ctx.budget.name, ctx.sizes)
    d, C = inst.d, inst.C
    gen = torch.Generator().manual_seed(ctx.seed_for("concat-numeric"))
    t = sample_tasks(inst.w_star_torch(), C, 32, gen)
    E = t.E(device_randn(32, generator=gen, dtype=torch.float64))
    mask = mask_matrix(C, E)
    W = [device_randn(d + 1, d + 1, generator=gen, dtype=torch.float64) / np.sqrt(d + 1)
         for _ in range(8)]
    WV, WK, WQ, (O1, O2) = W[0:2], W[2:4], W[4:6], W[6:8]
    U = _value_heads(E, WV, WK, WQ, mask, C)
    concat = E + torch.cat([O1, O2], dim=1) @ torch.cat(U, dim=-2)
    vals = {"O_1": O1.numpy(), "O_2": O2.numpy()}
    WP = [torch.tensor(np.array(formula_value(F[n], {"d": d, **{
        k: sympy.Matrix(v) for k, v in vals.items()}}), dtype=float)) for n in ("WP_1", "WP_2")]
    summed = multihead_forward(E, [head_products(P, V, K, Q) for P, V, K, Q in
                                   zip(WP, WV, WK, WQ)], mask, C)
    gap = float((concat - summed).abs().max())
    scale = float(concat.abs().max())
    ok, why = settle_le(gap, TOL * scale)
    return finish([Finding("concat_vs_sum_float64", ok, {
        "max_abs_difference": gap, "allowance": TOL * scale, "prompts": 32,
        "instance": inst.as_dict()}, None if ok is not False else {
        "instance": inst.as_dict(), "max_abs_difference": gap, "seed": ctx.seed},
        why or ("" if ok else "the concatenated heads differ from the sum of heads"))])


CONCAT = Claim(
    id="xie2025.eq6_concat",
    title="Concatenated heads with W^O are a sum of per-head projections",
    paper=PAPER,
    statement=(r"$\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_H)W^O=\sum_h W^P_h\,"
               r"\mathrm{head}_h$ after absorbing $W^O$ into per-head projections: with "
               r"$W^O=[O_1,O_2]$, $W^P_h=O_h$ (Sec. 3, after eq. (6))."),
    assumptions=("columns as tokens: the concatenation stacks the heads' outputs and W^O "
                 "multiplies on the left", "checked with two heads of value dimension d+1"),
    formulas=CONCAT_FORMULAS,
    checks={"symbolic": concat_symbolic, "numeric": concat_numeric},
    setting=SETTING,
    notes="The identity is blockwise, one head at a time; two heads show every block's role.",
)


# ==============================================================================================
# App. B.1: V W^M (K^T Q) with the weights of eq. (7)
# ==============================================================================================
_EQ7_FIXED = {f.name: f.parse() for f in EQ7}
B1_FORMULAS = (
    NamedFormula("VMKQ", "BlockMatrix([[ZeroMatrix(d, C), ZeroMatrix(d, 1)], "
                 "[(w_star.T*X.T - y.T)*X*X.T, (w_star.T*X.T - y.T)*X*x_q]])",
                 (D, C, WSTAR, X, Y, XQ), "V W^M (K^T Q) with V = W^V E, K = Q = W^Q E and the "
                 "weights (7)", "App. B.1", ("d+1", "C+1")),
)


def _b1_product(E, W: dict, mask):
    V, K, Q = W["W_V"] * E, W["W_K"] * E, W["W_Q"] * E
    return V * mask * (K.T * Q)


def b1_symbolic(ctx: Context) -> TierResult:
    """Exact in symbolic data and w* (d = 2, C = 3): the product from the weights (7) (as
    printed; W^P does not enter) against the named display."""
    F = ctx.formulas
    d, C = 2, 3
    E, data = symbolic_prompt(d, C)
    ws = sympy.Matrix(d, 1, lambda a, _: sympy.Symbol(f"ws{a}"))
    W = eq7_numbers(_EQ7_FIXED, d, C, sympy.Symbol("eta"), ws)
    derived = _b1_product(E, W, sympy_mask(C))
    paper = sympy.Matrix(formula_value(F["VMKQ"], {"d": d, "C": C, "w_star": ws, "X": data["X"],
                                                   "y": data["y"], "x_q": data["x_q"]}))
    entry, diff = (None, 0) if paper.shape != derived.shape else _first_difference(derived, paper)
    ok = paper.shape == derived.shape and entry is None
    ce = None if ok else {"sizes": {"d": d, "C": C}, "entry": list(entry) if entry else None,
                          "derived_minus_display": str(diff), "shape": list(paper.shape)}
    steps = [step("Keys, queries, values", r"K = Q = W^QE = \begin{bmatrix}X^\top & x_q\\0&0"
                  r"\end{bmatrix},\quad V = W^VE",
                  "The weights of eq. (7) as printed (xie2025.eq8) applied to a prompt whose "
                  "entries are all symbols."),
             step("Product", r"VW^M(K^\top Q)", "Multiplied out exactly and compared entry by "
                  "entry with App. B.1's display.")]
    return finish([Finding("B1_product", ok, {"exact_in": "symbolic X, y, x_q, y_q, w* "
                                                           "(d = 2, C = 3)"}, ce,
                            "" if ok else "App. B.1's V W^M (K^T Q) differs from the product of "
                                          "the weights (7)")], steps=steps)


def b1_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = SETTING.instance(ctx.budget.name, ctx.sizes)
    d, C = inst.d, inst.C
    rng = ctx.rng("b1-numeric")
    W = {k: np.array(v.evalf(), dtype=float) for k, v in eq7_numbers(
        _EQ7_FIXED, d, C, sympy.Integer(1), inst.w_star_exact).items()}
    worst, scale = 0.0, 0.0
    for _ in range(8):
        Xm = rng.standard_normal((C, d))
        y = Xm @ (inst.w_star + rng.standard_normal(d))
        xq, yq = rng.standard_normal(d), rng.standard_normal()
        E = np.zeros((d + 1, C + 1))
        E[:d, :C], E[:d, C], E[d, :C], E[d, C] = Xm.T, xq, y, yq
        mask = np.diag([1.0] * C + [0.0])
        derived = (W["W_V"] @ E) @ mask @ ((W["W_K"] @ E).T @ (W["W_Q"] @ E))
        paper = np.array(formula_value(F["VMKQ"], {
            "d": d, "C": C, "w_star": sympy.Matrix(inst.w_star), "X": sympy.Matrix(Xm),
            "y": sympy.Matrix(y), "x_q": sympy.Matrix(xq)}), dtype=float)
        if paper.shape != derived.shape:
            return finish([Finding("B1_product_float64", False, {}, {
                "instance": inst.as_dict(), "shape": list(paper.shape)},
                "App. B.1's display has the wrong shape")])
        worst = max(worst, float(np.abs(derived - paper).max()))
        scale = max(scale, float(np.abs(derived).max()))
    ok, why = settle_le(worst, TOL * scale)
    return finish([Finding("B1_product_float64", ok, {
        "max_abs_difference": worst, "allowance": TOL * scale, "prompts": 8,
        "instance": inst.as_dict()}, None if ok is not False else {
        "instance": inst.as_dict(), "max_abs_difference": worst, "seed": ctx.seed},
        why or ("" if ok else "App. B.1's display differs from the product"))])


B1 = Claim(
    id="xie2025.eq8_b1",
    title="App. B.1: the product V W^M (K^T Q) of the GD weights (7)",
    paper=PAPER,
    statement=(r"With the weights (7), $VW^M(K^\top Q)=\begin{bmatrix}0&0\\(w_\star^\top X^\top-"
               r"y^\top)XX^\top&(w_\star^\top X^\top-y^\top)Xx_q\end{bmatrix}$ (App. B.1)."),
    assumptions=("K = W^K E, Q = W^Q E, V = W^V E with W^V, W^K, W^Q of eq. (7)",
                 "any prompt E = [[X^T, x_q], [y^T, y_q]] (the identity is deterministic)"),
    formulas=B1_FORMULAS,
    checks={"symbolic": b1_symbolic, "numeric": b1_numeric},
    setting=SETTING,
)
