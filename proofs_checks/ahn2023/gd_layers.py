"""ahn2023 Lemma 2: the sparse k-layer transformer (9) runs k steps of preconditioned gradient
descent (11) on the least-squares loss (10), checked on the forward pass (symbolic, Monte
Carlo, and at trained weights)."""
from __future__ import annotations

import numpy as np
import sympy
import torch

from models.device import runtime
from models.lsa import LSAConfig, LinearTransformer, lsa_forward, readout
from models.progress import Progress
from models.sampler import sample_prompts
from models.trainers import optimise
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula, compile_formula, formula_value

from ..kit.linear_icl import LinearICLSetting, prompt_law
from .one_layer import (PAPER, _D, _N, _OVERFLOW, _as_matrix, _finite, _sampled_budget,
                        d_sym)


# ==============================================================================================
# Lemma 2: the sparse k-layer transformer (9) runs k steps of preconditioned GD (11) on (10)
# ==============================================================================================
LEMMA2_SETTING = LinearICLSetting(
    w_prior="identity",
    sizes={"quick": {"n": 8, "d": 3, "layers": 3}, "default": {"n": 20, "d": 5, "layers": 3},
           "paper": {"n": 20, "d": 5, "layers": 4}},
)

_W = FormulaSymbol("w", "matrix", ("d", "1"))
_WSTAR = FormulaSymbol("w_star", "matrix", ("d", "1"))
_X = FormulaSymbol("X", "matrix", ("d", "n"))
_XQ = FormulaSymbol("x_q", "matrix", ("d", "1"))
_A = FormulaSymbol("A", "matrix", ("d", "d"), symmetric=True)
_GRAD = FormulaSymbol("grad", "matrix", ("d", "1"))

LEMMA2_FORMULAS = (
    NamedFormula("R", "(w - w_star).T*X*X.T*(w - w_star)/(2*n)", (_N, _D, _W, _WSTAR, _X),
                 equation="(10)", shape=("1", "1"),
                 description="least-squares loss R_{w*}(w) = 1/(2n) sum_i (w^T x_i - w*^T x_i)^2"),
    NamedFormula("update", "w + A*grad", (_D, _W, _A, _GRAD), equation="(11), Lemma 2",
                 shape=("d", "1"), description="w_{i+1} = w_i + A_i grad R_{w*}(w_i)"),
    NamedFormula("prediction", "-x_q.T*w", (_D, _XQ, _W), equation="Lemma 2", shape=("1", "1"),
                 description="the label entry after layer i is -<x^(n+1), w_i^gd>"),
    NamedFormula("w0", "ZeroMatrix(d, 1)", (_D,), equation="App. C.2 (theta_0 = 0)",
                 shape=("d", "1"), description="the iterate before the first layer"),
)


def _truncate(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit] + f" ... ({len(text)} characters)"


def _sparse_layer(A):
    """(P_i, Q_i) of eq. (9) as explicit matrices around a d x d block A_i."""
    d = A.shape[0]
    P = sympy.zeros(d + 1, d + 1)
    P[d, d] = 1
    Q = sympy.zeros(d + 1, d + 1)
    Q[:d, :d] = A
    return P, Q


def _gd_predictions(F, X, w_star, xq, As, n):
    """Predictions -<x_q, w_i> of the GD iterates defined by the named formulas, exactly."""
    d = X.shape[0]
    w_sym = sympy.MatrixSymbol("w", d_sym, 1)
    grad_expr = F["R"].diff(w_sym) if isinstance(F["R"], sympy.MatrixExpr) else None
    values = {"X": X, "w_star": w_star, "x_q": xq, "n": n, "d": d}
    w = sympy.Matrix(_as_matrix(formula_value(F["w0"], values), d, 1))
    preds = []
    for A in As + [None]:
        pred = formula_value(F["prediction"], {**values, "w": w})
        preds.append(sympy.Matrix([[pred]])[0, 0] if not isinstance(pred, sympy.MatrixBase)
                     else pred[0, 0])
        if A is None:
            break
        grad = _gradient(F["R"], grad_expr, {**values, "w": w}, d)
        w = sympy.Matrix(formula_value(F["update"], {**values, "w": w, "A": A, "grad": grad}))
    return preds


def _gradient(R, grad_expr, values, d):
    """grad_w R at w: from sympy's matrix calculus, checked against the entrywise derivative."""
    ws = sympy.symbols(f"w_0:{d}")
    wv = sympy.Matrix(ws)
    R_val = formula_value(R, {**values, "w": wv})
    R_val = R_val[0, 0] if isinstance(R_val, sympy.MatrixBase) else R_val
    entry = sympy.Matrix([sympy.diff(R_val, wi) for wi in ws])
    return entry.subs(dict(zip(ws, values["w"])))


def lemma2_symbolic(ctx: Context) -> TierResult:
    """Exact identity on symbolic prompts (d = 2, n = 3, two layers, symmetric A_i)."""
    F = ctx.formulas
    d, n, k = 2, 3, 2
    X = sympy.Matrix(d, n, lambda i, j: sympy.Symbol(f"x{j}_{i}"))
    w_star = sympy.Matrix(sympy.symbols(f"ws0:{d}"))
    xq = sympy.Matrix(sympy.symbols(f"xq0:{d}"))
    As = [sympy.Matrix(d, d, lambda i, j, l=l: sympy.Symbol(f"a{l}_{min(i, j)}{max(i, j)}"))
          for l in range(k)]
    Z = sympy.Matrix(d + 1, n + 1, lambda i, j: 0)
    Z[:d, :n] = X
    Z[:d, n] = xq
    Z[d, :n] = (X.T * w_star).T
    M = sympy.zeros(n + 1, n + 1)
    M[:n, :n] = sympy.eye(n)
    Zs = lsa_forward(Z, [_sparse_layer(A) for A in As], M, n, keep_all=True)
    model = [readout(Zl) for Zl in Zs]
    gd = _gd_predictions(F, X, w_star, xq, As, n)
    findings = []
    for layer, (m, g) in enumerate(zip(model, gd)):
        diff = sympy.expand(m - g)
        ok = diff == 0
        ce = None
        if not ok:
            rng = ctx.rng("lemma2-ce")
            subs = {s: sympy.Rational(int(rng.integers(-3, 4)), int(rng.integers(1, 3)))
                    for s in sorted(diff.free_symbols, key=str)}
            ce = {"layer": layer, "sizes": {"d": d, "n": n}, "instance": {str(k): str(v) for k, v in subs.items()},
                  "transformer": str(m.subs(subs)), "preconditioned_gd": str(g.subs(subs))}
        findings.append(Finding(f"layer_{layer}", ok, {
            "transformer_entry_terms": len(sympy.Add.make_args(sympy.expand(m))),
            "difference": "0" if ok else _truncate(str(diff))}, ce,
            "" if ok else f"after layer {layer} the forward pass differs from the GD prediction"))
    # informational: with a non-symmetric A_i the forward pass applies A_i^T, not A_i
    A_ns = [sympy.Matrix(d, d, lambda i, j, l=l: sympy.Symbol(f"b{l}_{i}{j}")) for l in range(1)]
    m_ns = readout(lsa_forward(Z, [_sparse_layer(A_ns[0])], M, n))
    g_ns = _gd_predictions(F, X, w_star, xq, A_ns, n)[1]
    extra = {"sizes": {"d": d, "n": n, "layers": k},
             "nonsymmetric_A_note": "holds without symmetry" if sympy.expand(m_ns - g_ns) == 0
             else "for a non-symmetric A_i the forward pass implements w + A_i^T grad R; eq. (9) "
                  "assumes A_i symmetric, so the lemma as stated is unaffected"}
    steps = [
        step("Symbolic prompt", r"Z_0 = \begin{bmatrix} X & x_q \\ w_\star^\top X & 0 \end{bmatrix}",
             f"Entries are independent symbols (d = {d}, n = {n}); A_0, A_1 symmetric symbols."),
        step("Forward pass of (9)", r"[Z_\ell]_{d+1,n+1},\ \ell = 0,\dots," + str(k),
             "The same lsa_forward the torch model uses, run on sympy matrices."),
        step("Gradient of (10)", r"\nabla R_{w_\star}(w) = " + sympy.latex(
            F["R"].diff(sympy.MatrixSymbol("w", d_sym, 1))),
             "sympy's matrix derivative of the named R; the iterates follow the named update from "
             "the named w_0, and the named prediction is compared with the forward pass."),
        step("Identity", r"[Z_\ell]_{d+1,n+1} + \langle x_q, w_\ell^{\mathrm{gd}}\rangle = 0",
             "Expanded exactly for every layer."),
    ]
    return combine(findings, extra, steps=steps)


def _float_gd_predictions(F, X, w_star, xq, As, n) -> np.ndarray:
    """Predictions of the GD iterates defined by the named formulas, float64, batched over prompts.

    grad R is sympy's matrix derivative of the named R; every formula is compiled once.
    """
    B, d = X.shape[0], X.shape[1]
    sizes = {"n": n, "d": d}
    w_sym = sympy.MatrixSymbol("w", d_sym, 1)
    grad_f = compile_formula(F["R"].diff(w_sym), sizes)
    update_f = compile_formula(F["update"], sizes)
    pred_f = compile_formula(F["prediction"], sizes)
    w0 = compile_formula(F["w0"], sizes)()
    preds = np.zeros((B, len(As) + 1))
    for b in range(B):
        data = {"X": X[b], "w_star": w_star[b].reshape(-1, 1), "x_q": xq[b].reshape(-1, 1)}
        w = w0.reshape(d, 1) if w0.ndim else np.zeros((d, 1))
        for layer in range(len(As) + 1):
            preds[b, layer] = float(np.ravel(_call(pred_f, {**data, "w": w}))[0])
            if layer == len(As):
                break
            grad = _call(grad_f, {**data, "w": w}).reshape(d, 1)
            w = _call(update_f, {**data, "w": w, "A": As[layer], "grad": grad}).reshape(d, 1)
    return preds


def _call(fn, values):
    return fn(**{k: values[k] for k in fn.arg_names})


def _lemma2_compare(F, model, pr, n, rt) -> tuple[float, np.ndarray, np.ndarray]:
    Zs = model(pr.Z(), keep_all=True)
    model_preds = torch.stack([readout(Z) for Z in Zs], dim=1).detach().cpu().double().numpy()
    As = [Q[:-1, :-1].detach().cpu().double().numpy() for _, Q in model.weights()]
    gd = _float_gd_predictions(F, pr.X.cpu().double().numpy(), pr.w.cpu().double().numpy(),
                               pr.xq.cpu().double().numpy(), As, n)
    scale = np.abs(gd).max() + 1e-300
    return float(np.abs(model_preds - gd).max() / scale), model_preds, gd


def lemma2_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = LEMMA2_SETTING.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("instance"))
    k = inst.extra["layers"]
    gen = torch.Generator().manual_seed(ctx.seed_for("lemma2-model"))
    model = LinearTransformer(LSAConfig(d=inst.d, layers=k, parametrisation="eq9"),
                              init_scale=0.3, generator=gen)
    pr = sample_prompts(prompt_law(inst, "identity"), 8, torch.Generator().manual_seed(
        ctx.seed_for("lemma2-prompts")))
    rel, mp, gd = _lemma2_compare(F, model, pr, inst.n, None)
    if not _finite(mp, gd):
        return combine([Finding("forward_pass_vs_gd", None, {"layers": k}, reason=_OVERFLOW)],
                       {"instance": inst.as_dict()})
    tol = 1e-10
    ok = rel <= tol
    ce = None
    if not ok:
        b, layer = np.unravel_index(np.abs(mp - gd).argmax(), mp.shape)
        ce = {"instance": inst.as_dict(), "prompt": int(b), "layer": int(layer),
              "transformer": float(mp[b, layer]), "preconditioned_gd": float(gd[b, layer]),
              "seed": ctx.seed}
    return combine([Finding("forward_pass_vs_gd", ok, {
        "max_relative_difference": rel, "tolerance": tol, "prompts": 8, "layers": k,
        "why_tolerance": "float64 forward pass vs exact-arithmetic GD on float64 inputs"}, ce,
        "" if ok else "the forward pass is not preconditioned GD")], {"instance": inst.as_dict()})


def lemma2_train(ctx: Context) -> TierResult:
    """Train the sparse model (9) on sampled prompts, then check the identity at trained weights."""
    F = ctx.formulas
    inst = LEMMA2_SETTING.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("instance"))
    rt = runtime(ctx.device)
    k = inst.extra["layers"]
    gen = rt.generator(ctx.seed_for("lemma2-train"))
    model = LinearTransformer(LSAConfig(d=inst.d, layers=k, parametrisation="eq9"),
                              init_scale=0.1, generator=gen, dtype=rt.dtype, device=rt.device)
    law = prompt_law(inst, "identity")
    data = rt.data_generator(ctx.seed_for("lemma2-data"))
    steps, batch = _sampled_budget(ctx)

    def loss():
        pr = sample_prompts(law, batch, data, dtype=rt.dtype, device=rt.device)
        return ((model.predict(pr.Z()) - pr.yq) ** 2).mean()

    with Progress(steps, "ahn2023.lemma2 sampled-prompt Adam", ctx.progress) as bar:
        res = optimise(loss, model.parameters(), method="adam", steps=steps, lr=0.01,
                       progress=bar.callback())
    if res.status == "diverged":
        return combine([Finding("trained_identity", None, res.summary(), reason=res.reason)])
    pr = sample_prompts(law, 8, rt.generator(ctx.seed_for("lemma2-check")), dtype=rt.dtype,
                        device=rt.device)
    rel, mp, gd = _lemma2_compare(F, model, pr, inst.n, rt)
    if not _finite(mp, gd):
        return combine([Finding("trained_identity", None, {"training": res.summary()},
                                reason=_OVERFLOW)], {"instance": inst.as_dict()})
    tol = rt.tolerance(1e-10, 1e4)
    ok = rel <= tol
    ce = None
    if not ok:
        b, layer = np.unravel_index(np.abs(mp - gd).argmax(), mp.shape)
        ce = {"instance": inst.as_dict(), "prompt": int(b), "layer": int(layer),
              "transformer": float(mp[b, layer]), "preconditioned_gd": float(gd[b, layer])}
    return combine([Finding("trained_identity", ok, {
        "max_relative_difference": rel, "tolerance": tol, "training": res.summary(),
        "why_tolerance": f"{rt.dtype} forward pass: relative error a few thousand eps"}, ce,
        "" if ok else "at the trained weights the forward pass is not preconditioned GD")],
        {"instance": inst.as_dict(), "runtime": rt.describe()})


LEMMA2 = Claim(
    id="ahn2023.lemma2",
    title="The sparse k-layer transformer (9) implements k steps of preconditioned GD",
    paper=PAPER,
    statement=(r"For the transformer with parameters (9), for $i=0,\dots,k$ there is "
               r"$w_i^{\mathrm{gd}}$ with $y_i^{(n+1)}=-\langle x^{(n+1)},w_i^{\mathrm{gd}}\rangle$ "
               r"and $w_{i+1}^{\mathrm{gd}}=w_i^{\mathrm{gd}}+A_i\nabla R_{w_\star}(w_i^{\mathrm{gd}})$, "
               r"$R_{w_\star}(w)=\frac{1}{2n}\sum_i(w^\top x_i-w_\star^\top x_i)^2$ (eq. (10))."),
    assumptions=("P_i = [[0, 0], [0, 1]], Q_i = [[A_i, 0], [0, 0]] with A_i symmetric (eq. (9))",
                 "any prompt (the identity is deterministic); y^(i) = <w*, x^(i)>"),
    formulas=LEMMA2_FORMULAS,
    checks={"symbolic": lemma2_symbolic, "numeric": lemma2_numeric, "train": lemma2_train},
    setting=LEMMA2_SETTING,
)


CLAIMS = [LEMMA2]
