"""The GD construction (eqs. (7)-(10)) and y_q-LSA as a linear transformer block (Lemma 3)."""
from __future__ import annotations

import numpy as np
import sympy
import torch

from models.device import randn
from models.lsa import mask_matrix, readout
from models.multihead import head_products, multihead_forward, multihead_prediction, sample_tasks
from moments.wick import canonical
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, step
from verify.formulas import FormulaSymbol, NamedFormula, compile_formula, formula_value

from .common import finish
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


def _sympy_prompt(d: int, C: int, rng: np.random.Generator, yq=None):
    """An exact prompt with small integer data: (E, X (d x C), y, x_q, y_q, w)."""
    Xm = sympy.Matrix(d, C, lambda i, j: int(rng.integers(-3, 4)))
    w = sympy.Matrix(d, 1, lambda i, j: int(rng.integers(-2, 3)))
    xq = sympy.Matrix(d, 1, lambda i, j: int(rng.integers(-3, 4)))
    y = Xm.T * w
    yq = sympy.Rational(int(rng.integers(-5, 6)), 2) if yq is None else yq
    E = sympy.zeros(d + 1, C + 1)
    E[:d, :C] = Xm
    E[:d, C] = xq
    E[d, :C] = y.T
    E[d, C] = yq
    return E, Xm, y, xq, yq, w


def _sympy_mask(C: int) -> sympy.Matrix:
    M = sympy.zeros(C + 1, C + 1)
    M[:C, :C] = sympy.eye(C)
    return M


def _scalar(v) -> sympy.Expr:
    return v[0, 0] if isinstance(v, sympy.MatrixBase) else sympy.sympify(v)


# ==============================================================================================
# eq. (8): the LSA with the weights (7) outputs y_q - (eta/C)(w*^T X^T - y^T) X x_q
# ==============================================================================================
EQ8_FORMULAS = EQ7 + (
    NamedFormula("f8", "y_q - eta/C*(w_star.T*X.T - y.T)*X*x_q", (D, C, ETA, WSTAR, X, Y, XQ, YQ),
                 "the LSA output with the weights (7)", "(8)", ("1", "1")),
)


def _symbolic_data(d: int, C: int) -> dict:
    """A prompt with symbolic entries (paper notation: X is C x d) and symbolic w*, eta."""
    X = sympy.Matrix(C, d, lambda i, j: sympy.Symbol(f"x{i}_{j}"))
    y = sympy.Matrix(C, 1, lambda i, j: sympy.Symbol(f"y{i}"))
    xq = sympy.Matrix(d, 1, lambda i, j: sympy.Symbol(f"xq{i}"))
    yq = sympy.Symbol("yq")
    ws = sympy.Matrix(d, 1, lambda i, j: sympy.Symbol(f"ws{i}"))
    E = sympy.zeros(d + 1, C + 1)
    E[:d, :C], E[:d, C], E[d, :C], E[d, C] = X.T, xq, y.T, yq
    return {"X": X, "y": y, "x_q": xq, "y_q": yq, "w_star": ws, "E": E, "eta": sympy.Symbol("eta")}


def _b1_intermediates(F, d: int = 2, C: int = 3) -> Finding:
    """App. B.1's displays: K = W^K E = Q = W^Q E = [[X^T, x_q], [0, 0]] and V = W^V E =
    [[0, 0], [w*^T X^T - y^T, w*^T x_q - y_q]], exact in symbolic data at d = 2, C = 3."""
    s = _symbolic_data(d, C)
    E = s["E"]
    W = eq7_numbers(F, d, C, s["eta"], s["w_star"])
    KQ = sympy.zeros(d + 1, C + 1)
    KQ[:d, :] = E[:d, :]
    V = sympy.zeros(d + 1, C + 1)
    V[d, :C] = s["w_star"].T * s["X"].T - s["y"].T
    V[d, C] = (s["w_star"].T * s["x_q"])[0, 0] - s["y_q"]
    bad = {}
    for name, got, want in (("K = W^K E", W["W_K"] * E, KQ), ("Q = W^Q E", W["W_Q"] * E, KQ),
                            ("V = W^V E", W["W_V"] * E, V)):
        diff = (got - want).applyfunc(sympy.expand)
        if diff != sympy.zeros(*diff.shape):
            bad[name] = {"derived": str(got.tolist()), "App. B.1": str(want.tolist())}
    ok = not bad
    return Finding("B1_keys_queries_values", ok, {"exact_in": "symbolic data, d = 2, C = 3"},
                   None if ok else {"sizes": {"d": d, "C": C}, **bad},
                   "" if ok else f"the weights (7) do not give App. B.1's {', '.join(bad)}")


def _eq8_exact(F, d: int = 2, C: int = 3) -> tuple[bool, dict]:
    """f_LSA(E) - f_8 with symbolic data at d = 2, C = 3 (for weights the kernel cannot read)."""
    s = _symbolic_data(d, C)
    W = eq7_numbers(F, d, C, s["eta"], s["w_star"])
    P, Q = head_products(W["W_P"], W["W_V"], W["W_K"], W["W_Q"])
    model = multihead_prediction(s["E"], [(P, Q)], _sympy_mask(C), C)
    paper = _scalar(formula_value(F["f8"], {"d": d, "C": C, **{k: s[k] for k in (
        "eta", "w_star", "X", "y", "x_q")}, "y_q": sympy.Matrix([[s["y_q"]]])}))
    diff = sympy.expand(model - paper)
    return diff == 0, {"difference": str(diff), "exact_in": f"symbolic data at d = {d}, C = {C}"}


def eq8_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    sp = symbolic_prompt("affine")
    bind = _paper_bindings(sp)
    try:
        P, Q = eq7_heads(F, bind)
    except ValueError as exc:  # e.g. a ones matrix: no kernel letter; decide exactly at d = 2
        ok, info = _eq8_exact(F)
        f = Finding("forward_pass_equals_eq8", ok, {**info, "why": str(exc)},
                    None if ok else _eq8_counterexample(F, ctx),
                    "" if ok else "the forward pass with the weights (7) differs from eq. (8)")
        return finish([f, _b1_intermediates(F)], {"method": "exact at d = 2, C = 3 (" + str(exc)
                                                  + ")"})
    pred = multihead_prediction(sp.E, [(P, Q)], sp.mask, C_SYM)
    f8 = to_mat(F["f8"], bind)
    diff = canonical(pred - f8).simplify()
    ok = diff.is_zero()
    ce = None
    if not ok:
        ce = _eq8_counterexample(F, ctx)
    steps = [
        step("Weights (7)", r"W^PW^V = " + _block_tex(P) + r",\quad (W^K)^\top W^Q = " + _block_tex(Q),
             "The named W^V, W^K, W^Q, W^P multiplied as eq. (5) uses them."),
        step("Forward pass (3)", r"f_{\mathsf{LSA}}(E) = " + canonical(pred).simplify().latex(),
             "The single-head forward pass of models.multihead on the symbolic prompt "
             "E = [[X^T, x_q], [y^T, y_q]] with y = X w and y_q = v^T x_q + beta (any y_q): "
             "exact in d and C."),
        step("Difference with (8)", r"f_{\mathsf{LSA}}(E) - f_8 = " + (diff.latex() or "0"),
             "Canonical forms of both sides; zero iff eq. (8) holds for every prompt."),
    ]
    return finish([Finding("forward_pass_equals_eq8", ok, {
        "difference": str(diff), "difference_latex": diff.latex() or "0",
        "exact_in": "d and C (symbolic)"}, ce,
        "" if ok else "the forward pass with the weights (7) differs from eq. (8)"),
        _b1_intermediates(F)],
        {"method": "canonical form of forward pass minus eq. (8), symbolic d and C"}, steps=steps)


def _block_tex(B) -> str:
    rows = []
    for row in B.blocks:
        rows.append(" & ".join(canonical(b).simplify().latex() or "0" for b in row))
    return r"\begin{bmatrix}" + r"\\".join(rows) + r"\end{bmatrix}"


def _eq8_counterexample(F, ctx: Context) -> dict:
    d, C, eta = 2, 3, sympy.Integer(1)
    rng = ctx.rng("eq8-counterexample")
    ws = sympy.Matrix([1, -1])
    E, Xm, y, xq, yq, w = _sympy_prompt(d, C, rng)
    Wn = eq7_numbers(F, d, C, eta, ws)
    P, Q = head_products(Wn["W_P"], Wn["W_V"], Wn["W_K"], Wn["W_Q"])
    model = multihead_prediction(E, [(P, Q)], _sympy_mask(C), C)
    paper = _scalar(formula_value(F["f8"], {"d": d, "C": C, "eta": eta, "w_star": ws, "X": Xm.T,
                                            "y": y, "x_q": xq, "y_q": sympy.Matrix([[yq]])}))
    return {"sizes": {"d": d, "C": C}, "eta": 1, "w_star": [1, -1], "X_rows": Xm.T.tolist(),
            "w": w.T.tolist()[0], "x_q": xq.T.tolist()[0], "y_q": str(yq),
            "forward_pass": str(model), "paper_eq8": str(paper)}


def eq8_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = SETTING.instance(ctx.budget.name, ctx.sizes)
    d, C, eta = inst.d, inst.C, 0.5
    Wn = eq7_numbers(F, d, C, sympy.Rational(1, 2), inst.w_star_exact)
    Wt = {k: torch.tensor(np.array(v.evalf(), dtype=float)) for k, v in Wn.items()}
    P, Q = head_products(Wt["W_P"], Wt["W_V"], Wt["W_K"], Wt["W_Q"])
    gen = torch.Generator().manual_seed(ctx.seed_for("eq8-prompts"))
    t = sample_tasks(inst.w_star_torch(), C, 64, gen)
    yq = randn(64, generator=gen, dtype=torch.float64)
    E = t.E(yq)
    model = readout(multihead_forward(E, [(P, Q)], mask_matrix(C, E), C)).numpy()
    f8 = compile_formula(F["f8"], {"d": d, "C": C})
    paper = np.array([float(np.ravel(f8(**_vals(f8, {
        "eta": eta, "w_star": inst.w_star.reshape(-1, 1), "X": t.X[b].numpy().T,
        "y": t.y[b].numpy().reshape(-1, 1), "x_q": t.xq[b].numpy().reshape(-1, 1),
        "y_q": np.array([[float(yq[b])]])})))[0]) for b in range(64)])
    rel = float(np.abs(model - paper).max() / (np.abs(model).max() + 1e-300))
    tol = 1e-10
    ok = rel <= tol
    b = int(np.abs(model - paper).argmax())
    return finish([Finding("torch_forward_pass_vs_eq8", ok, {
        "max_relative_difference": rel, "tolerance": tol, "prompts": 64, "eta": eta,
        "why_tolerance": "float64 forward pass against float64 evaluation of eq. (8)"},
        None if ok else {"instance": inst.as_dict(), "prompt": b, "forward_pass": float(model[b]),
                         "paper_eq8": float(paper[b]), "eta": eta, "seed": ctx.seed},
        "" if ok else "the torch forward pass with the weights (7) differs from eq. (8)")],
        {"instance": inst.as_dict()})


def _vals(fn, values: dict) -> dict:
    return {k: values[k] for k in fn.arg_names}


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
    checks={"symbolic": eq8_symbolic, "numeric": eq8_numeric},
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


def _gd_prediction(F, bind: dict, eta) -> object:
    """<x_q, w* - eta grad L_ls(w*)> from sympy's derivative of the named L_ls, as a kernel Mat."""
    w_sym = sympy.MatrixSymbol("w", sympy.Symbol("d", positive=True, integer=True), 1)
    grad = F["L_ls"].diff(w_sym)
    ws = sympy.MatrixSymbol("w_star", w_sym.shape[0], 1)
    xq = sympy.MatrixSymbol("x_q", w_sym.shape[0], 1)
    pred_expr = (ws - eta * grad.xreplace({w_sym: ws})).T * xq
    return to_mat(pred_expr, bind), grad


def eq9_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    sp = prompt_with_guess(w_star_letter().T @ symbolic_prompt("zero").xq)
    bind = _paper_bindings(sp)
    eta = sympy.Symbol("eta")
    corrected = dict(F)
    corrected["W_P"] = EQ7[3].parse(EQ7_CORRECTED_WP)
    for f in EQ7[:3]:
        corrected[f.name] = f.parse()
    P, Q = eq7_heads(corrected, bind)
    pred = multihead_prediction(sp.E, [(P, Q)], sp.mask, C_SYM)
    f9 = to_mat(F["f9"], bind)
    gd, grad = _gd_prediction(F, bind, eta)
    d1 = canonical(pred - f9).simplify()
    d2 = canonical(f9 - gd).simplify()
    findings = [
        Finding("forward_pass_equals_eq9", d1.is_zero(), {"difference": str(d1)},
                None if d1.is_zero() else {"difference": str(d1)},
                "" if d1.is_zero() else "the LSA with y_q = w*^T x_q does not output eq. (9)"),
        Finding("eq9_is_one_gd_step", d2.is_zero(), {
            "gradient_of_L_ls": str(grad), "difference": str(d2)},
            None if d2.is_zero() else {"gradient_of_L_ls": str(grad), "difference": str(d2)},
            "" if d2.is_zero() else "eq. (9) is not <x_q, w* - eta grad L_ls(w*)>"),
    ]
    steps = [
        step("Prompt with y_q = w*^T x_q", r"E = \begin{bmatrix} X^\top & x_q\\ y^\top & "
             r"w_\star^\top x_q\end{bmatrix}", "The initial guess of eqs. (9)-(10)."),
        step("Forward pass with the weights (7)", r"f_{\mathsf{LSA}}(E) = "
             + canonical(pred).simplify().latex(),
             "W^P = -eta I_{d+1} (eq. (7) as corrected in xie2025.eq8), symbolic d and C."),
        step("Gradient of the least-squares loss", r"\nabla_w L(w) = " + sympy.latex(grad),
             "sympy's matrix derivative of the named L_ls; w_1 = w* - eta grad L(w*)."),
        step("Identities", r"f_{\mathsf{LSA}}(E) - f_9 = " + (d1.latex() or "0") +
             r",\qquad f_9 - \langle x_q, w_1\rangle = " + (d2.latex() or "0"),
             "Canonical forms; both zero means the forward pass is one GD step from w*."),
    ]
    return finish(findings, {"method": "canonical forms, symbolic d and C"}, steps=steps)


def eq9_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = SETTING.instance(ctx.budget.name, ctx.sizes)
    d, C, eta = inst.d, inst.C, 0.5
    Wn = eq7_numbers({**{f.name: f.parse() for f in EQ7[:3]},
                      "W_P": EQ7[3].parse(EQ7_CORRECTED_WP)}, d, C, sympy.Rational(1, 2),
                     inst.w_star_exact)
    Wt = {k: torch.tensor(np.array(v.evalf(), dtype=float)) for k, v in Wn.items()}
    P, Q = head_products(Wt["W_P"], Wt["W_V"], Wt["W_K"], Wt["W_Q"])
    gen = torch.Generator().manual_seed(ctx.seed_for("eq9-prompts"))
    t = sample_tasks(inst.w_star_torch(), C, 64, gen)
    E = t.E(t.xq @ inst.w_star_torch())
    model = readout(multihead_forward(E, [(P, Q)], mask_matrix(C, E), C)).numpy()
    f9 = compile_formula(F["f9"], {"d": d, "C": C})
    w_sym = sympy.MatrixSymbol("w", sympy.Symbol("d", positive=True, integer=True), 1)
    grad = compile_formula(F["L_ls"].diff(w_sym), {"d": d, "C": C})
    paper, gd = [], []
    for b in range(64):
        vals = {"eta": eta, "w_star": inst.w_star.reshape(-1, 1), "X": t.X[b].numpy().T,
                "y": t.y[b].numpy().reshape(-1, 1), "x_q": t.xq[b].numpy().reshape(-1, 1),
                "w": inst.w_star.reshape(-1, 1)}
        paper.append(float(np.ravel(f9(**_vals(f9, vals)))[0]))
        w1 = inst.w_star - eta * np.ravel(grad(**_vals(grad, vals)))
        gd.append(float(w1 @ t.xq[b].numpy()))
    paper, gd = np.array(paper), np.array(gd)
    scale = np.abs(model).max() + 1e-300
    r1 = float(np.abs(model - paper).max() / scale)
    r2 = float(np.abs(paper - gd).max() / scale)
    tol = 1e-10
    findings = [
        Finding("torch_forward_pass_vs_eq9", r1 <= tol, {"max_relative_difference": r1,
                                                         "tolerance": tol},
                None if r1 <= tol else {"instance": inst.as_dict(), "seed": ctx.seed,
                                        "max_relative_difference": r1},
                "" if r1 <= tol else "the forward pass differs from eq. (9)"),
        Finding("eq9_vs_gd_step", r2 <= tol, {"max_relative_difference": r2, "tolerance": tol},
                None if r2 <= tol else {"instance": inst.as_dict(), "seed": ctx.seed,
                                        "max_relative_difference": r2},
                "" if r2 <= tol else "eq. (9) differs from one GD step on L_ls"),
    ]
    return finish(findings, {"instance": inst.as_dict(), "prompts": 64, "eta": eta})


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
    checks={"symbolic": eq9_symbolic, "numeric": eq9_numeric},
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


def _ltb_construction(F, d: int, weights: dict, w, c) -> dict:
    base = {"d": d, "w": w, "c": c, **weights}
    W1 = sympy.Matrix(formula_value(F["W_1"], base))
    W3 = sympy.Matrix(formula_value(F["W_3"], base))
    vals = {**base, "W_1": W1, "W_3": W3}
    out = {k: sympy.Matrix(formula_value(F[k], vals)) for k in ("WK_new", "WQ_new", "WV_new",
                                                                 "WP_new")}
    out.update({"W_1": W1, "W_2": sympy.Matrix(formula_value(F["W_2"], base)), "W_3": W3})
    return out


def _yq_lsa(E, weights: dict, w, C: int):
    """f_yq-LSA(X, y, x_q) = f_LSA(E_w): E with its query guess replaced by w^T x_q."""
    d = E.shape[0] - 1
    Ew = E.copy()
    Ew[d, C] = (w.T * E[:d, C])[0, 0]
    P, Q = head_products(weights["W_P"], weights["W_V"], weights["W_K"], weights["W_Q"])
    return multihead_prediction(Ew, [(P, Q)], _sympy_mask(C), C)


def _ltb(E, new: dict, C: int):
    """f_LTB(E) = [W_2^T W_1 (E + (1/C) W^P' W^V' E W^M E^T (W^K')^T W^Q' E)]_{-1,-1} (eq. (30))."""
    P, Q = head_products(new["WP_new"], new["WV_new"], new["WK_new"], new["WQ_new"])
    out = new["W_2"].T * new["W_1"] * multihead_forward(E, [(P, Q)], _sympy_mask(C), C)
    return out[-1, -1]


def _general_w1(W1: sympy.Matrix, rng: np.random.Generator) -> sympy.Matrix:
    """W_1 with its top d rows replaced by random rationals (not symmetric): the construction
    needs only W_1's last row (w^T, c) and its invertibility, since W_1 (W^P)' = W^P."""
    G = W1.copy()
    d = G.shape[0] - 1
    for i in range(d):
        for j in range(d + 1):
            G[i, j] = sympy.Rational(int(rng.integers(-4, 5)), int(rng.integers(1, 4))) + \
                (3 if i == j else 0)
    return G


def _w1_singular_set(F, d: int, w) -> tuple[list, sympy.Expr]:
    """The corners c where the named W_1 is singular, and det W_1 (exact in c)."""
    c = sympy.Symbol("c")
    W1 = sympy.Matrix(formula_value(F["W_1"], {"d": d, "w": w, "c": c}))
    det = sympy.factor(W1.det())
    roots = sympy.solve(det, c) if det.has(c) else ([] if det != 0 else ["every c"])
    return roots, det


def _w3_is_e_w(F, d: int, C: int, w) -> tuple[bool, dict]:
    """App. B.2's W_3 E = E_w 'by using X w = y': exact for symbolic X with y = X w."""
    Xs = sympy.Matrix(d, C, lambda i, j: sympy.Symbol(f"x{j}_{i}"))
    xq = sympy.Matrix(d, 1, lambda i, j: sympy.Symbol(f"xq{i}"))
    y = Xs.T * w
    E = sympy.zeros(d + 1, C + 1)
    E[:d, :C], E[:d, C], E[d, :C] = Xs, xq, y.T
    Ew = E.copy()
    Ew[d, C] = (w.T * xq)[0, 0]
    W3 = sympy.Matrix(formula_value(F["W_3"], {"d": d, "w": w}))
    diff = (W3 * E - Ew).applyfunc(sympy.expand)
    ok = diff == sympy.zeros(d + 1, C + 1)
    return ok, {"W_3": str(W3.tolist()), "W_3 E - E_w": str(diff.tolist())}


def _random_weights(d: int, rng: np.random.Generator) -> dict:
    def mat():
        return sympy.Matrix(d + 1, d + 1, lambda i, j: sympy.Rational(int(rng.integers(-4, 5)),
                                                                       int(rng.integers(1, 4))))
    return {"W_K": mat(), "W_Q": mat(), "W_V": mat(), "W_P": mat()}


def lemma3_symbolic(ctx: Context) -> TierResult:
    """Exact identity in the data: symbolic X (d x C), y, x_q; rational weights, d = 2, C = 3."""
    F = ctx.formulas
    d, C = 2, 3
    rng = ctx.rng("lemma3")
    Xs = sympy.Matrix(d, C, lambda i, j: sympy.Symbol(f"x{j}_{i}"))
    ys = sympy.Matrix(C, 1, lambda i, j: sympy.Symbol(f"y{i}"))
    xq = sympy.Matrix(d, 1, lambda i, j: sympy.Symbol(f"xq{i}"))
    E = sympy.zeros(d + 1, C + 1)
    E[:d, :C], E[:d, C], E[d, :C] = Xs, xq, ys.T
    findings, draws = [], []
    for k in range(2):
        weights = _random_weights(d, rng)
        w = sympy.Matrix([sympy.Rational(int(rng.integers(-3, 4)), 2) for _ in range(d)])
        c = (w.T * w)[0, 0] + 1 + k
        new = _ltb_construction(F, d, weights, w, c)
        if k == 1:  # a W_1 that is not symmetric (same last row): (W^P)' must be W_1^{-1} W^P
            G = _general_w1(new["W_1"], rng)
            vals = {"d": d, "W_1": G, "W_P": weights["W_P"]}
            new = {**new, "W_1": G, "WP_new": sympy.Matrix(formula_value(F["WP_new"], vals))}
        diff = sympy.expand(_yq_lsa(E, weights, w, C) - _ltb(E, new, C))
        ok = diff == 0
        draws.append({"draw": k, "w": [str(x) for x in w], "c": str(c), "identity": ok,
                      "det_W1": str(new["W_1"].det())})
        if not ok:
            num = {s: int(rng.integers(-2, 3)) for s in sorted(diff.free_symbols, key=str)}
            Ez = E.subs(num)
            findings.append(Finding("yq_lsa_equals_ltb", False, {"draws": draws}, {
                "sizes": {"d": d, "C": C}, "weights": {n: m.tolist() for n, m in weights.items()},
                "w": [str(x) for x in w], "c": str(c), "prompt": Ez.tolist(),
                "yq_lsa": str(_yq_lsa(Ez, weights, w, C)), "ltb": str(_ltb(Ez, new, C))},
                "the LTB built in App. B.2 does not reproduce y_q-LSA"))
            break
    else:
        findings.append(Finding("yq_lsa_equals_ltb", True, {"draws": draws,
                                                            "exact_in": "the data X, y, x_q"}))
    # eq. (31): W_1 is invertible exactly when c != ||w||^2 (the proof: (c - ||w||^2) u = 0)
    w = sympy.Matrix([sympy.Rational(int(rng.integers(-3, 4)), 2) for _ in range(d)])
    w[0] = w[0] or 1
    norm2 = (w.T * w)[0, 0]
    roots, det = _w1_singular_set(F, d, w)
    ok_det = [sympy.nsimplify(r) for r in roots] == [norm2] if roots != ["every c"] else False
    findings.append(Finding("W1_singular_exactly_at_c_equal_norm2", ok_det, {
        "w": [str(x) for x in w], "det_W1": str(det), "singular_at_c": [str(r) for r in roots],
        "norm2": str(norm2)}, None if ok_det else {
        "sizes": {"d": d}, "w": [str(x) for x in w], "det_W1": str(det),
        "singular_at_c": [str(r) for r in roots], "paper": f"c = ||w||^2 = {norm2}"},
        "" if ok_det else "the named W_1 is not singular exactly at c = ||w||^2 (eq. (31))"))
    # App. B.2: W_3 E = E_w when y = X w
    ok3, info3 = _w3_is_e_w(F, d, C, w)
    findings.append(Finding("W3_E_equals_E_w_when_y_is_Xw", ok3, {"w": [str(x) for x in w]},
                            None if ok3 else {"sizes": {"d": d, "C": C},
                                              "w": [str(x) for x in w], **info3},
                            "" if ok3 else "W_3 E differs from E_w on prompts with y = X w"))
    steps = [
        step("y_q-LSA", r"f_{y_q\text{-}\mathsf{LSA}}(X,y,x_q) = f_{\mathsf{LSA}}(E_w),\ "
             r"E_w = \begin{bmatrix}X^\top & x_q\\ y^\top & w^\top x_q\end{bmatrix}",
             "eqs. (11)-(12); the labels y are arbitrary (the lemma is about functions of the "
             "prompt, not about the data law)."),
        step("LTB", r"f_{\mathsf{LTB}}(E) = \big[W_2^\top W_1(E + \tfrac1C W^{P\prime} W^{V\prime} "
             r"E W^M E^\top (W^{K\prime})^\top W^{Q\prime} E)\big]_{-1,-1}",
             "eq. (30) with the named construction, on E with y_q = 0."),
        step("Identity", r"f_{y_q\text{-}\mathsf{LSA}} - f_{\mathsf{LTB}} \equiv 0",
             "Expanded exactly as a polynomial in the data for two rational weight draws (the "
             "second with a non-symmetric W_1 of the same last row: (W^P)' = W_1^{-1} W^P "
             "cancels any invertible W_1)."),
        step("W_1 and W_3", r"\det W_1 = 0 \iff c = \|w\|^2,\qquad W_3E = E_w\ (y = Xw)",
             "The two properties the proof states: eq. (31)'s invertibility condition (det in "
             "c, exact) and W_3 E = E_w on prompts with y = X w (symbolic X, x_q)."),
    ]
    extra = {"note": "App. B.2 writes W_3 E = E_w 'by using Xw = y'; for the context columns "
                     "this needs y = X w with the trainable w, which prompts do not satisfy"}
    return finish(findings, extra, steps=steps)


def lemma3_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = SETTING.instance(ctx.budget.name, ctx.sizes)
    d, C = inst.d, inst.C
    rng = ctx.rng("lemma3-numeric")
    weights = _random_weights(d, rng)
    w = sympy.Matrix([sympy.Rational(int(rng.integers(-3, 4)), 2) for _ in range(d)])
    c = (w.T * w)[0, 0] + 1
    new = _ltb_construction(F, d, weights, w, c)
    tw = {k: torch.tensor(np.array(v.evalf(), dtype=float)) for k, v in {**weights, **new}.items()}
    wt = torch.tensor(np.array(w.evalf(), dtype=float).ravel())
    t = sample_tasks(inst.w_star_torch(), C, 64, torch.Generator().manual_seed(
        ctx.seed_for("lemma3-prompts")))
    E0 = t.E()
    Ew = t.E(t.xq @ wt)
    M = mask_matrix(C, E0)
    P, Q = head_products(tw["W_P"], tw["W_V"], tw["W_K"], tw["W_Q"])
    yq_lsa = readout(multihead_forward(Ew, [(P, Q)], M, C))
    P2, Q2 = head_products(tw["WP_new"], tw["WV_new"], tw["WK_new"], tw["WQ_new"])
    ltb = readout(tw["W_2"].T @ tw["W_1"] @ multihead_forward(E0, [(P2, Q2)], M, C))
    rel = float((yq_lsa - ltb).abs().max() / (yq_lsa.abs().max() + 1e-300))
    tol = 1e-9
    ok = rel <= tol
    b = int((yq_lsa - ltb).abs().argmax())
    return finish([Finding("torch_yq_lsa_vs_ltb", ok, {
        "max_relative_difference": rel, "tolerance": tol, "prompts": 64,
        "why_tolerance": "float64, with W_1^{-1} of condition number O(10)"},
        None if ok else {"instance": inst.as_dict(), "prompt": b, "yq_lsa": float(yq_lsa[b]),
                         "ltb": float(ltb[b]), "seed": ctx.seed},
        "" if ok else "the LTB construction differs from y_q-LSA on sampled prompts")],
        {"instance": inst.as_dict()})


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
    checks={"symbolic": lemma3_symbolic, "numeric": lemma3_numeric},
    setting=SETTING,
    correction=Correction(
        description="(W^K)' = W^K and (W^V)' = W^V (only the query weights take W_3)",
        reason="W_3 E equals E_w only on the query column; on the context columns it replaces y "
               "by X w, so keys and values must act on E itself: then "
               "(E^T (W^K)^T W^Q W_3 E) has E_w's query column and E's (= E_w's) context columns",
        formulas={"WK_new": "W_K", "WV_new": "W_V"}),
)
