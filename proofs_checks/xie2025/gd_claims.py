"""The GD construction (eqs. (7)-(10)) and y_q-LSA as a linear transformer block (Lemma 3).

Eqs. (8) and (9) are identities in every d and C (``kit.size_identity``: the forward pass and the
named formulas as moment-kernel polynomials, symbolic in d and C, with the exact points at
d = 2, C = 3 where a formula has no kernel form); Lemma 3's construction has an inverse, so it is
exact at d = 2, C = 3 with every data entry a symbol (``kit.pointwise``)."""
from __future__ import annotations

import numpy as np
import sympy

from models.multihead import head_products, multihead_forward, multihead_prediction
from verify.claim import Claim, Correction
from verify.evidence import step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from ..kit.pointwise import Pointwise, pointwise_checks
from ..kit.size_identity import SizeIdentity, size_identity
from .points import (Point, cat, corner, exact_zero, formula, gaussian_data, grad, mask,
                     prompt, rational_matrix, symbol_matrix, symbolic_entries)
from .setting import C_SYM, SETTING, prompt_with_guess, symbolic_prompt, w_star_letter
from .translate import to_mat

PAPER = "xie2025"

D = FormulaSymbol("d")
C = FormulaSymbol("C")
ETA = FormulaSymbol("eta")
WSTAR = FormulaSymbol("w_star", "matrix", ("d", "1"))
X = FormulaSymbol("X", "matrix", ("C", "d"))
Y = FormulaSymbol("y", "matrix", ("C", "1"))
XQ = FormulaSymbol("x_q", "matrix", ("d", "1"))
YQ = FormulaSymbol("y_q", "matrix", ("1", "1"))
W = FormulaSymbol("w", "matrix", ("d", "1"))
D0, C0 = 2, 3  # the exact points' sizes

_KQ = "BlockMatrix([[Identity(d), ZeroMatrix(d, 1)], [ZeroMatrix(1, d), ZeroMatrix(1, 1)]])"
EQ7 = (
    NamedFormula("W_V", "BlockMatrix([[ZeroMatrix(d, d), ZeroMatrix(d, 1)], [w_star.T, -Identity(1)]])",
                 (D, WSTAR), "value weights of the GD transformer", "(7)", ("d+1", "d+1")),
    NamedFormula("W_K", _KQ, (D,), "key weights of the GD transformer", "(7)", ("d+1", "d+1")),
    NamedFormula("W_Q", _KQ, (D,), "query weights of the GD transformer", "(7)", ("d+1", "d+1")),
    NamedFormula("W_P", "-eta/C*Identity(d+1)", (D, C, ETA), "projection weights", "(7)",
                 ("d+1", "d+1")),
)
EQ7_CORRECTED_WP = "-eta*Identity(d+1)"
_EQ7_GD = {**{f.name: f.parse() for f in EQ7[:3]}, "W_P": EQ7[3].parse(EQ7_CORRECTED_WP)}


def eq7_heads(F, bindings: dict, scalars: dict | None = None):
    """(P, Q) = (W^P W^V, (W^K)^T W^Q) of the named eq. (7) weights, as kernel block matrices."""
    Wm = {k: to_mat(F[k], bindings, scalars) for k in ("W_V", "W_K", "W_Q", "W_P")}
    return head_products(Wm["W_P"], Wm["W_V"], Wm["W_K"], Wm["W_Q"])


def eq7_numbers(F, d: int, C: int, eta, w_star) -> dict:
    """The named eq. (7) matrices at concrete sizes (exact sympy)."""
    vals = {"d": d, "C": C, "eta": eta, "w_star": sympy.Matrix(w_star)}
    return {k: sympy.Matrix(formula_value(F[k], vals)) for k in ("W_V", "W_K", "W_Q", "W_P")}


def _paper_bindings(sp) -> dict:
    """Paper symbols -> kernel letters: X (C x d) is the prompt's X^T, y = X^T w, ..."""
    return {"w_star": w_star_letter(), "X": sp.X.T, "y": sp.X.T @ sp.w, "x_q": sp.xq,
            "y_q": sp.yq}


def _lsa(F, p: Point):
    """f_LSA(E) = [E + (1/C) W^P W^V E W^M (E^T (W^K)^T W^Q E)]_{-1,-1} (eq. (3)), the weights
    (7) read from ``F`` at the point."""
    P, Q = head_products(*(formula(F, k, p) for k in ("W_P", "W_V", "W_K", "W_Q")))
    return corner(multihead_forward(p["E"], [(P, Q)], mask(p["C"], p.exact), p["C"]))


def _point(ctx, guess: str, exact: bool, rng=None, data: dict | None = None) -> Point:
    """A prompt: exact at d = 2, C = 3 with every entry of X, y, x_q, y_q, w*, eta a symbol (or
    the values ``data``), or Gaussian at the budget's sizes (eta = 1/2).  ``guess`` "w_star":
    y_q = w*^T x_q (eqs. (9)-(10))."""
    if data:
        v = dict(data)
    elif exact:
        v = {**symbolic_entries(D0, C0)[1], "d": D0, "C": C0, "eta": sympy.Symbol("eta"),
             "w_star": symbol_matrix("ws", D0, 1)}
    else:
        v = {**gaussian_data(ctx, rng), "eta": 0.5}
    if guess == "w_star":
        v["y_q"] = (v["w_star"].T * v["x_q"])[0, 0] if exact else (v["w_star"].T @ v["x_q"]).item()
    v["E"] = prompt(v["X"], v["y"], v["x_q"], v["y_q"], exact)
    v["y_q"] = sympy.Matrix([[v["y_q"]]]) if exact else np.full((1, 1), v["y_q"])
    return Point(v, exact, f"d = {v['d']}, C = {v['C']}" + (
        ", every entry a symbol" if exact and not data else ""), ("d", "C"))


def _floats(ctx, guess: str, k: int = 32) -> list[Point]:
    rng = ctx.rng(f"{guess}-prompts")
    return [_point(ctx, guess, False, rng=rng) for _ in range(k)]


# ==============================================================================================
# eq. (8): the LSA with the weights (7) outputs y_q - (eta/C)(w*^T X^T - y^T) X x_q
# ==============================================================================================
EQ8_FORMULAS = EQ7 + (
    NamedFormula("f8", "y_q - eta/C*(w_star.T*X.T - y.T)*X*x_q", (D, C, ETA, WSTAR, X, Y, XQ, YQ),
                 "the LSA output with the weights (7)", "(8)", ("1", "1")),
)


def eq8_letters(F) -> list:
    """f_LSA - f_8 in kernel letters, d and C symbolic, any query guess y_q = v^T x_q + beta."""
    sp = symbolic_prompt("affine")
    bind = _paper_bindings(sp)
    P, Q = eq7_heads(F, bind)
    return [("forward_pass_equals_eq8", multihead_prediction(sp.E, [(P, Q)], sp.mask, C_SYM),
             to_mat(F["f8"], bind))]


def eq8_sides(p: Point, F) -> list:
    """f_LSA(E) against eq. (8); at the exact point also App. B.1's K = W^K E = Q = W^Q E =
    [[X^T, x_q], [0, 0]] and V = W^V E = [[0, 0], [w*^T X^T - y^T, w*^T x_q - y_q]]."""
    if not p.exact:
        return [("torch_forward_pass_vs_eq8", _lsa(F, p), formula(F, "f8", p))]
    E, d, c, ws = p["E"], p["d"], p["C"], p["w_star"]
    KQ = cat([E[:d, :], sympy.zeros(1, c + 1)], 0, True)
    V = cat([sympy.zeros(d, c + 1), cat([ws.T * p["X"].T - p["y"].T, ws.T * p["x_q"] -
                                        p["y_q"]], 1, True)], 0, True)
    return [("forward_pass_equals_eq8", _lsa(F, p), formula(F, "f8", p))] + [
        ("B1_keys_queries_values", formula(F, k, p) * E, want)
        for k, want in (("W_K", KQ), ("W_Q", KQ), ("W_V", V))]


def _eq8_exact(F) -> tuple[bool, dict]:
    """f_LSA(E) - f_8 at the exact point (symbolic data, d = 2, C = 3): the fallback of weights
    the kernel cannot read, which tests compare with the kernel path."""
    _, model, f8 = eq8_sides(_point(None, "any", True), F)[0]
    diff = sympy.expand(model[0, 0] - f8[0, 0])
    return diff == 0, {"difference": str(diff), "exact_in": f"symbolic data at d = {D0}, C = {C0}"}


def _eq8_counterexample(ctx, F, name: str) -> dict:
    """A small integer prompt (d = 2, C = 3, eta = 1, w* = (1, -1), y = X w) where eq. (8)
    fails."""
    rng = ctx.rng("eq8-counterexample")

    def ints(r: int, k: int, a: int = 3) -> sympy.Matrix:
        return sympy.Matrix(rng.integers(-a, a + 1, (r, k)).tolist())
    X = ints(C0, D0)
    p = _point(ctx, "any", True, data={
        "d": D0, "C": C0, "eta": sympy.Integer(1), "w_star": sympy.Matrix([1, -1]), "X": X,
        "x_q": ints(D0, 1), "y_q": sympy.Rational(int(rng.integers(-5, 6)), 2),
        "y": X * ints(D0, 1, 2)})
    _, model, f8 = eq8_sides(p, F)[0]
    return {"sizes": {"d": p["d"], "C": p["C"]}, "eta": 1, "w_star": [1, -1],
            "X_rows": p["X"].tolist(), "y": p["y"].T.tolist()[0], "x_q": p["x_q"].T.tolist()[0],
            "y_q": str(p["y_q"][0, 0]), "forward_pass": str(model[0, 0]),
            "paper_eq8": str(f8[0, 0])}


EQ8_SPEC = SizeIdentity(eq8_letters, Pointwise(
    eq8_sides, lambda ctx, F: [_point(ctx, "any", True)],
    lambda ctx, F: _floats(ctx, "eq8"), what="the LSA with the weights (7) against (8)",
    zero=exact_zero,
    steps=(step("Forward pass (3)", r"f_{\mathsf{LSA}}(E) = \big[E + \tfrac1C W^PW^VEW^M(E^\top "
                r"(W^K)^\top W^QE)\big]_{-1,-1}", "models.multihead with the named weights (7) "
                "on E = [[X^T, x_q], [y^T, y_q]], any y_q."),
           step("App. B.1", r"K = Q = \begin{bmatrix}X^\top & x_q\\0&0\end{bmatrix},\ V = "
                r"\begin{bmatrix}0&0\\w_\star^\top X^\top - y^\top & w_\star^\top x_q - y_q"
                r"\end{bmatrix}", "Exact at d = 2, C = 3, every entry a symbol."))),
    counterexample=_eq8_counterexample)

EQ8 = Claim(
    id="xie2025.eq8",
    title="The LSA with the GD weights (7) outputs eq. (8)",
    paper=PAPER,
    statement=(r"With $W^V=\begin{bmatrix}0&0\\w_\star^\top&-1\end{bmatrix}$, "
               r"$W^K=W^Q=\begin{bmatrix}I_d&0\\0&0\end{bmatrix}$, $W^P=-\frac{\eta}{C}I_{d+1}$ "
               r"(eq. (7)), the LSA (3) outputs "
               r"$f_{\mathsf{LSA}}(E)=y_q-\frac{\eta}{C}(w_\star^\top X^\top-y^\top)Xx_q$ (eq. (8))."),
    assumptions=("f_LSA(E) = [E + (1/C) W^P W^V E W^M (E^T (W^K)^T W^Q E)]_{-1,-1} (eq. (3))",
                 "any prompt E = [[X^T, x_q], [y^T, y_q]] (the identity is deterministic)"),
    formulas=EQ8_FORMULAS,
    checks=size_identity(EQ8_SPEC),
    setting=SETTING,
    correction=Correction(
        description="W^P = -eta I_{d+1} in eq. (7)",
        reason="eq. (3) already divides the attention by C; with W^P = -(eta/C) I the output is "
               "y_q - (eta/C^2)(w*^T X^T - y^T) X x_q (App. B.1 drops the 1/C of eq. (3))",
        formulas={"W_P": EQ7_CORRECTED_WP}),
    notes="Checked as an identity of canonical forms, symbolic in d and C, for any query guess.",
)


# ==============================================================================================
# eqs. (9)-(10): with y_q = w*^T x_q the output is one GD step from w*
# ==============================================================================================
EQ9_FORMULAS = (
    NamedFormula("f9", "(w_star - eta/C*X.T*(X*w_star - y)).T*x_q", (D, C, ETA, WSTAR, X, Y, XQ),
                 "eq. (8) with y_q = w*^T x_q (and eq. (10))", "(9), (10)", ("1", "1")),
    NamedFormula("L_ls", "(X*w - y).T*(X*w - y)/(2*C)", (D, C, X, Y, W),
                 "the least-squares loss whose gradient is the red term of (9)", "(9)", ("1", "1")),
)


def eq9_letters(F) -> list:
    """With y_q = w*^T x_q and W^P = -eta I (xie2025.eq8's correction): f_LSA - f_9 and f_9 -
    <x_q, w* - eta grad L_ls(w*)>, grad by sympy's matrix derivative of the named L_ls."""
    sp = prompt_with_guess(w_star_letter().T @ symbolic_prompt("zero").xq)
    bind = _paper_bindings(sp)
    P, Q = eq7_heads(_EQ7_GD, bind)
    w = sympy.MatrixSymbol("w", sympy.Symbol("d", positive=True, integer=True), 1)
    ws, xq = sympy.MatrixSymbol("w_star", w.shape[0], 1), sympy.MatrixSymbol("x_q", w.shape[0], 1)
    gd = (ws - sympy.Symbol("eta") * F["L_ls"].diff(w).xreplace({w: ws})).T * xq
    f9 = to_mat(F["f9"], bind)
    return [("forward_pass_equals_eq9", multihead_prediction(sp.E, [(P, Q)], sp.mask, C_SYM), f9),
            ("eq9_is_one_gd_step", f9, to_mat(gd, bind))]


def eq9_sides(p: Point, F) -> list:
    """The same at a point: grad L_ls(w*) differentiated exactly or by autograd."""
    w1 = p["w_star"] - p["eta"] * grad(F, "L_ls", "w", p, p["w_star"])
    gd = w1.T * p["x_q"] if p.exact else w1.T @ p["x_q"]
    f9 = formula(F, "f9", p)
    names = ("forward_pass_equals_eq9", "eq9_is_one_gd_step") if p.exact else (
        "torch_forward_pass_vs_eq9", "eq9_vs_gd_step")
    return [(names[0], _lsa(_EQ7_GD, p), f9), (names[1], f9, gd)]


EQ9_SPEC = SizeIdentity(eq9_letters, Pointwise(
    eq9_sides, lambda ctx, F: [_point(ctx, "w_star", True)],
    lambda ctx, F: _floats(ctx, "w_star"), what="eq. (9) as one GD step from w*",
    zero=exact_zero,
    steps=(step("Prompt with y_q = w*^T x_q", r"E = \begin{bmatrix} X^\top & x_q\\ y^\top & "
                r"w_\star^\top x_q\end{bmatrix}", "The initial guess of eqs. (9)-(10); W^P = "
                "-eta I_{d+1} (eq. (7) as corrected in xie2025.eq8)."),
           step("Gradient of the least-squares loss", r"w_1 = w_\star - \eta\nabla_w L(w_\star)",
                "Differentiated from the named L_ls (sympy's matrix derivative, entrywise or "
                "autograd at points), never read from a formula."))))

EQ9 = Claim(
    id="xie2025.eq9",
    title="With y_q = w*ᵀ x_q the GD transformer is one GD step from the prior mean (eqs. (9), (10))",
    paper=PAPER,
    statement=(r"With $y_q=w_\star^\top x_q$, eq. (8) reads "
               r"$f_{\mathsf{LSA}}(E)=\big(w_\star-\frac{\eta}{C}X^\top(Xw_\star-y)\big)^\top x_q$ "
               r"(eqs. (9), (10)), where $\frac1C X^\top(Xw_\star-y)$ is the gradient of the "
               r"least-squares loss at $w_\star$: one GD step from $w_\star$."),
    assumptions=("weights (7) with W^P = -eta I_{d+1} (the correction of xie2025.eq8)",
                 "y_q = w*^T x_q; any data (X, y, x_q)"),
    formulas=EQ9_FORMULAS,
    checks=size_identity(EQ9_SPEC),
    setting=SETTING,
    notes="Eq. (10) is the same expression as eq. (9); both are checked here.",
)


# ==============================================================================================
# Lemma 3: y_q-LSA is a linear transformer block (App. B.2)
# ==============================================================================================
DP1 = ("d+1", "d+1")
_WK = FormulaSymbol("W_K", "matrix", DP1)
_WQ = FormulaSymbol("W_Q", "matrix", DP1)
_WV = FormulaSymbol("W_V", "matrix", DP1)
_WP = FormulaSymbol("W_P", "matrix", DP1)
_W1 = FormulaSymbol("W_1", "matrix", DP1)
_W3 = FormulaSymbol("W_3", "matrix", DP1)
_CC = FormulaSymbol("c")

LEMMA3_FORMULAS = (
    NamedFormula("W_1", "BlockMatrix([[Identity(d), w], [w.T, c*Identity(1)]])", (D, W, _CC),
                 "the first MLP matrix", "(31)", DP1),
    NamedFormula("W_2", "Identity(d+1)", (D,), "the second MLP matrix", "App. B.2", DP1),
    NamedFormula("W_3", "BlockMatrix([[Identity(d), ZeroMatrix(d, 1)], [w.T, ZeroMatrix(1, 1)]])",
                 (D, W), "maps E to E_w on the query column", "App. B.2", DP1),
    NamedFormula("WK_new", "W_K*W_3", (D, _WK, _W3), "(W^K)' of the LTB", "App. B.2", DP1),
    NamedFormula("WQ_new", "W_Q*W_3", (D, _WQ, _W3), "(W^Q)' of the LTB", "App. B.2", DP1),
    NamedFormula("WV_new", "W_V*W_3", (D, _WV, _W3), "(W^V)' of the LTB", "App. B.2", DP1),
    NamedFormula("WP_new", "Inverse(W_1)*W_P", (D, _WP, _W1), "(W^P)' of the LTB", "App. B.2",
                 DP1),
)


_WEIGHTS = ("W_K", "W_Q", "W_V", "W_P")


def lemma3_sides(p: Point, F) -> list:
    """f_yq-LSA(X, y, x_q) = f_LSA(E_w) (E_w: E with y_q = w^T x_q) against f_LTB(E) =
    [W_2^T W_1 (E + (1/C) W^P' W^V' E W^M E^T (W^K')^T W^Q' E)]_{-1,-1} (eq. (30)) with the named
    construction; the point may carry a non-symmetric W_1 of the same last row (then (W^P)' =
    W_1^{-1} W^P must cancel it).  At the first exact point also eq. (31) (W_1 is singular
    exactly at c = ||w||^2) and W_3 E = E_w on prompts with y = X w."""
    general = "W_1" in p.values
    W1 = p["W_1"] if general else formula(F, "W_1", p)
    new = {k: formula(F, k, p, W_1=W1, W_3=formula(F, "W_3", p))
           for k in ("WP_new", "WV_new", "WK_new", "WQ_new")}
    Xm, y, xq, c, M, x = p["X"], p["y"], p["x_q"], p["C"], mask(p["C"], p.exact), p.exact
    wxq = (p["w"].T * xq)[0, 0] if x else (p["w"].T @ xq).item()
    lsa = corner(multihead_forward(prompt(Xm, y, xq, wxq, x), [head_products(
        *(p[k] for k in ("W_P", "W_V", "W_K", "W_Q")))], M, c))
    ltb = corner(formula(F, "W_2", p).T @ W1 @ multihead_forward(prompt(Xm, y, xq, 0, x), [
        head_products(*new.values())], M, c))
    if not x:
        return [("torch_yq_lsa_vs_ltb", lsa, ltb)]
    out = [("yq_lsa_equals_ltb", lsa, ltb)]
    if not general:
        cs, w = sympy.Symbol("c"), p["w"]
        det = sympy.factor(formula(F, "W_1", p, c=cs).det())
        roots = sympy.Matrix([sympy.nsimplify(r) for r in sympy.solve(det, cs)]) if det.has(
            cs) else sympy.zeros(0, 1)
        yw = Xm * w  # App. B.2: W_3 E = E_w "by using X w = y"
        out += [("W1_singular_exactly_at_c_equal_norm2", roots, w.T * w),
                ("W3_E_equals_E_w_when_y_is_Xw", formula(F, "W_3", p) * prompt(Xm, yw, xq, 0, x),
                 prompt(Xm, yw, xq, (w.T * xq)[0, 0], x))]
    return out


def _lemma3_points(ctx, F) -> list[Point]:
    """Two draws of rational weights, w (w[0] != 0) and c = ||w||^2 + 1 + k at symbolic data
    (d = 2, C = 3); the second with a non-symmetric W_1 of the same last row (w^T, c)."""
    rng, out = ctx.rng("lemma3"), []
    _, data = symbolic_entries(D0, C0)
    for k in range(2):
        w = sympy.Matrix([sympy.Rational(int(rng.integers(-3, 4)), 2) for _ in range(D0)])
        w[0] = w[0] or 1
        vals = {"d": D0, "C": C0, **data, "w": w, "c": (w.T * w)[0, 0] + 1 + k,
                **{n: rational_matrix(D0 + 1, D0 + 1, rng) for n in _WEIGHTS}}
        if k == 1:
            top = rational_matrix(D0, D0 + 1, rng) + 3 * sympy.eye(D0, D0 + 1)
            vals["W_1"] = cat([top, cat([w.T, sympy.Matrix([[vals["c"]]])], 1, True)], 0, True)
        out.append(Point(vals, True, f"draw {k + 1}, symbolic data", (
            "d", "C", "w", "c", *_WEIGHTS, *(("W_1",) if k else ()))))
    return out


def _lemma3_float_points(ctx, F) -> list[Point]:
    """32 Gaussian prompts (y = X w_hat) at the budget's sizes, one rational draw of weights."""
    points, rng = _floats(ctx, "lemma3"), ctx.rng("lemma3-numeric")
    d = points[0]["d"]
    w = np.array([[int(rng.integers(-3, 4)) / 2] for _ in range(d)])
    W = {n: np.array(rational_matrix(d + 1, d + 1, rng), dtype=float) for n in _WEIGHTS}
    return [Point({**p.values, **W, "w": w, "c": (w.T @ w).item() + 1}, False, p.label,
                  ("d", "C", "w", "c")) for p in points]


LEMMA3_SPEC = Pointwise(
    lemma3_sides, _lemma3_points, _lemma3_float_points, what="y_q-LSA against the LTB of App. B.2",
    zero=exact_zero,
    steps=(step("y_q-LSA", r"f_{y_q\text{-}\mathsf{LSA}}(X,y,x_q) = f_{\mathsf{LSA}}(E_w),\ "
                r"E_w = \begin{bmatrix}X^\top & x_q\\ y^\top & w^\top x_q\end{bmatrix}",
                "eqs. (11)-(12); the labels y are arbitrary (the lemma is about functions of the "
                "prompt, not about the data law)."),
           step("LTB", r"f_{\mathsf{LTB}}(E) = \big[W_2^\top W_1(E + \tfrac1C W^{P\prime} "
                r"W^{V\prime} E W^M E^\top (W^{K\prime})^\top W^{Q\prime} E)\big]_{-1,-1}",
                "eq. (30) with the named construction, on E with y_q = 0, expanded exactly as a "
                "polynomial in the data for two rational weight draws."),
           step("W_1 and W_3", r"\det W_1 = 0 \iff c = \|w\|^2,\qquad W_3E = E_w\ (y = Xw)",
                "eq. (31)'s invertibility condition (det in c, exact) and W_3 E = E_w on prompts "
                "with y = X w (symbolic X, x_q).")))


LEMMA3 = Claim(
    id="xie2025.lemma3",
    title="y_q-LSA is a linear transformer block (construction of App. B.2)",
    paper=PAPER,
    statement=(r"$f_{y_q\text{-}\mathsf{LSA}}\in\mathcal F_{\mathsf{LTB}}$: with "
               r"$W_1=\begin{bmatrix}I&w\\w^\top&c\end{bmatrix}$ ($c\ne\|w\|^2$), $W_2=I$, "
               r"$W_3=\begin{bmatrix}I&0\\w^\top&0\end{bmatrix}$, $(W^K)'=W^KW_3$, "
               r"$(W^Q)'=W^QW_3$, $(W^V)'=W^VW_3$, $(W^P)'=W_1^{-1}W^P$, "
               r"$f_{y_q\text{-}\mathsf{LSA}}(X,y,x_q)=f_{\mathsf{LTB}}(E)$."),
    assumptions=("E has y_q = 0; f_LTB as eq. (30); any data (X, y, x_q)",),
    formulas=LEMMA3_FORMULAS,
    checks=pointwise_checks(LEMMA3_SPEC),
    setting=SETTING,
    correction=Correction(
        description="(W^K)' = W^K and (W^V)' = W^V (only the query weights take W_3)",
        reason="W_3 E equals E_w only on the query column; on the context columns it replaces y "
               "by X w, so keys and values must act on E itself: then "
               "(E^T (W^K)^T W^Q W_3 E) has E_w's query column and E's (= E_w's) context columns",
        formulas={"WK_new": "W_K", "WV_new": "W_V"}),
)
