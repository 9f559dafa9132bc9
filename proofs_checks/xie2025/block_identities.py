"""Two exact block-matrix identities of the forward pass, checked by ``kit.pointwise``:
concatenated heads projected by W^O are a sum of per-head projections (Sec. 3, after eq. (6)),
and App. B.1's product V W^M (K^T Q) with the GD weights of eq. (7).

Exact at rational (concat) or fully symbolic (B.1) prompts at d = 2, C = 3; float64 at Gaussian
prompts of the budget's sizes.
"""
from __future__ import annotations

import numpy as np
import sympy

from models.lsa import transpose
from models.multihead import head_products, multihead_forward
from verify.claim import Claim
from verify.evidence import step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit.pointwise import Pointwise, pointwise_checks
from .gd_claims import EQ7
from .points import (Point, cat, exact_zero, formula, gaussian_data, mask, prompt,
                     rational_matrix, symbolic_entries)
from .setting import SETTING

PAPER = "xie2025"
D, C = FormulaSymbol("d"), FormulaSymbol("C")
DP1 = ("d+1", "d+1")
_O1 = FormulaSymbol("O_1", "matrix", DP1)
_O2 = FormulaSymbol("O_2", "matrix", DP1)
WSTAR = FormulaSymbol("w_star", "matrix", ("d", "1"))
X = FormulaSymbol("X", "matrix", ("C", "d"))
Y = FormulaSymbol("y", "matrix", ("C", "1"))
XQ = FormulaSymbol("x_q", "matrix", ("d", "1"))
D0, C0 = 2, 3  # the exact points' sizes


# ==============================================================================================
# Sec. 3: Concat(head_1, ..., head_H) W^O = sum_h W^P_h head_h
# ==============================================================================================
CONCAT_FORMULAS = (
    NamedFormula("WP_1", "O_1", (D, _O1, _O2), "head 1's projection W^P_1 after absorbing "
                 "W^O = [O_1, O_2]", "Sec. 3, after eq. (6)", DP1),
    NamedFormula("WP_2", "O_2", (D, _O1, _O2), "head 2's projection W^P_2 after absorbing "
                 "W^O = [O_1, O_2]", "Sec. 3, after eq. (6)", DP1),
)
_WEIGHTS = ("W_V1", "W_V2", "W_K1", "W_K2", "W_Q1", "W_Q2", "O_1", "O_2")


def concat_sides(p: Point, F) -> list:
    """W^O [U_1; U_2] against models.multihead's sum_h (1/C) W^P_h W^V_h E W^M (E^T Q_h E),
    U_h = (1/C) W^V_h E W^M (E^T (W^K_h)^T W^Q_h E), W^P_h the named projections."""
    E, c, x = p["E"], p["C"], p.exact
    M = mask(c, x)
    heads = [(p[f"W_V{h}"], p[f"W_K{h}"], p[f"W_Q{h}"]) for h in (1, 2)]
    U = [V @ E @ M @ (transpose(E) @ transpose(K) @ Q @ E) / c for V, K, Q in heads]
    concat = E + cat([p["O_1"], p["O_2"]], 1, x) @ cat(U, 0, x)
    summed = multihead_forward(E, [head_products(formula(F, f"WP_{h}", p), V, K, Q)
                                   for h, (V, K, Q) in zip((1, 2), heads)], M, c)
    return [("concat_equals_sum_of_heads" if x else "concat_vs_sum_float64", concat, summed)]


def _concat_points(ctx, F) -> list[Point]:
    """Two rational prompts and rational weights, two heads, d = 2, C = 3."""
    rng = ctx.rng("concat")
    return [Point({"d": D0, "C": C0, "E": rational_matrix(D0 + 1, C0 + 1, rng),
                   **{n: rational_matrix(D0 + 1, D0 + 1, rng) for n in _WEIGHTS}}, True,
                  f"rational prompt {k + 1}") for k in range(2)]


def _concat_float_points(ctx, F) -> list[Point]:
    """16 Gaussian prompts at the budget's sizes, Gaussian weights of variance 1/(d+1)."""
    rng, out = ctx.rng("concat-numeric"), []
    for k in range(16):
        v = gaussian_data(ctx, rng)
        n = v["d"] + 1
        out.append(Point({**v, "E": prompt(v["X"], v["y"], v["x_q"], v["y_q"], False), **{
            w: rng.standard_normal((n, n)) / np.sqrt(n) for w in _WEIGHTS}}, False,
            f"Gaussian prompt {k + 1}", ("d", "C", "O_1", "O_2")))
    return out


CONCAT_SPEC = Pointwise(
    concat_sides, _concat_points, _concat_float_points,
    what="W^O [head_1; head_2] against sum_h W^P_h head_h",
    zero=exact_zero,
    steps=(step("Concatenated heads", r"E + W^O\begin{bmatrix}U_1\\U_2\end{bmatrix},\quad "
                r"U_h = \tfrac1C W^V_hEW^M(E^\top (W^K_h)^\top W^Q_hE)",
                "Standard multi-head attention (columns as tokens), W^O = [O_1, O_2]."),
           step("Sum of heads (6)", r"E + \sum_h \tfrac1C W^P_hW^V_hEW^M(E^\top (W^K_h)^\top "
                r"W^Q_hE)", "models.multihead with the named W^P_h, exact at two rational "
                "prompts (d = 2, C = 3, two heads, rational weights).")))

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
    checks=pointwise_checks(CONCAT_SPEC),
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


def b1_sides(p: Point, F) -> list:
    """(W^V E) W^M ((W^K E)^T (W^Q E)) from the weights (7) as printed (W^P does not enter)
    against App. B.1's display."""
    E = p["E"]
    V, K, Q = (formula(_EQ7_FIXED, n, p) @ E for n in ("W_V", "W_K", "W_Q"))
    derived = V @ mask(p["C"], p.exact) @ (transpose(K) @ Q)
    return [("B1_product" if p.exact else "B1_product_float64", derived,
             formula(F, "VMKQ", p))]


def _b1_points(ctx, F) -> list[Point]:
    """Every entry of X, y, x_q, y_q, w* and eta a symbol (d = 2, C = 3)."""
    E, data = symbolic_entries(D0, C0)
    return [Point({"d": D0, "C": C0, "E": E, **data, "eta": sympy.Symbol("eta"),
                   "w_star": sympy.Matrix(D0, 1, lambda a, _: sympy.Symbol(f"ws{a}"))},
                  True, "symbolic data, d = 2, C = 3", ("d", "C"))]


def _b1_float_points(ctx, F) -> list[Point]:
    """8 Gaussian prompts at the budget's sizes (eta = 1)."""
    rng = ctx.rng("b1-numeric")
    return [Point({**v, "eta": 1.0, "E": prompt(v["X"], v["y"], v["x_q"], v["y_q"], False)},
                  False, f"Gaussian prompt {k + 1}", ("d", "C", "X", "y", "x_q"))
            for k, v in enumerate(gaussian_data(ctx, rng) for _ in range(8))]


B1_SPEC = Pointwise(
    b1_sides, _b1_points, _b1_float_points, what="App. B.1's V W^M (K^T Q)",
    zero=exact_zero,
    steps=(step("Keys, queries, values", r"K = Q = W^QE = \begin{bmatrix}X^\top & x_q\\0&0"
                r"\end{bmatrix},\quad V = W^VE",
                "The weights of eq. (7) as printed (xie2025.eq8) applied to a prompt whose "
                "entries are all symbols."),
           step("Product", r"VW^M(K^\top Q)", "Multiplied out exactly and compared entry by "
                "entry with App. B.1's display.")))

B1 = Claim(
    id="xie2025.eq8_b1",
    title="App. B.1: the product V W^M (Kᵀ Q) of the GD weights (7)",
    paper=PAPER,
    statement=(r"With the weights (7), $VW^M(K^\top Q)=\begin{bmatrix}0&0\\(w_\star^\top X^\top-"
               r"y^\top)XX^\top&(w_\star^\top X^\top-y^\top)Xx_q\end{bmatrix}$ (App. B.1)."),
    assumptions=("K = W^K E, Q = W^Q E, V = W^V E with W^V, W^K, W^Q of eq. (7)",
                 "any prompt E = [[X^T, x_q], [y^T, y_q]] (the identity is deterministic)"),
    formulas=B1_FORMULAS,
    checks=pointwise_checks(B1_SPEC),
    setting=SETTING,
)
