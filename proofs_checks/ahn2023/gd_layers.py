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
from verify.evidence import Finding, combine
from verify.formulas import FormulaSymbol, NamedFormula, compile_formula

from ..kit import ForwardIdentity, forward_identity
from ..kit.linear_icl import LinearICLSetting, prompt_law
from ..kit.layer_optimum_float import (OVERFLOW as _OVERFLOW, finite as _finite,
                                      sampled_budget as _sampled_budget)
from .one_layer import PAPER, _D, _N, d_sym


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


def _lemma2_inputs(sizes) -> dict:
    """What the identity quantifies over: the prompt (X, w*, x_q) and one symmetric A_i per
    layer (eq. (9) assumes A_i symmetric; with a non-symmetric A_i the forward pass applies A_i^T)."""
    out = {"X": ("d", "n"), "w_star": ("d", "1"), "x_q": ("d", "1")}
    out.update({f"A{i}": ("d", "d", "symmetric") for i in range(sizes["layers"])})
    return out


def _sparse_layer(a, A):
    """(P_i, Q_i) of eq. (9) around a d x d block A_i."""
    d = a.sizes["d"]
    P = a.blocks([[a.zeros(d, d), a.zeros(d, 1)], [a.zeros(1, d), a.eye(1)]])
    Q = a.blocks([[A, a.zeros(d, 1)], [a.zeros(1, d), a.zeros(1, 1)]])
    return P, Q


def lemma2_model(a):
    """The label entry of Z_0, ..., Z_k for the sparse k-layer transformer (9) on
    Z_0 = [[X, x_q], [w*^T X, 0]] (the forward pass the torch model runs)."""
    n, k = a.sizes["n"], a.sizes["layers"]
    Z = a.blocks([[a["X"], a["x_q"]], [a["w_star"].T @ a["X"], a.zeros(1, 1)]])
    Zs = lsa_forward(Z, [_sparse_layer(a, a[f"A{i}"]) for i in range(k)], a.mask(n), n,
                     keep_all=True)
    return a.blocks([[Zl[-1:, -1:]] for Zl in Zs])


def lemma2_gd(a):
    """The named prediction -<x_q, w_i> of the iterates w_{i+1} = update(w_i, A_i, grad R(w_i))
    from the named w_0, grad R differentiated by the kit from the named R (10)."""
    w, preds = a.formula("w0"), []
    for i in range(a.sizes["layers"] + 1):
        preds.append(a.formula("prediction", w=w))
        if i == a.sizes["layers"]:
            break
        w = a.formula("update", w=w, A=a[f"A{i}"], grad=a.grad("R", "w", w))
    return a.blocks([[p] for p in preds])


LEMMA2_IDENTITY = ForwardIdentity(
    lemma2_model, lemma2_gd, inputs=_lemma2_inputs,
    exact_sizes=({"d": 2, "n": 3, "layers": 2},),
    sizes=LEMMA2_SETTING.sizes, prompts={"quick": 8, "default": 8, "paper": 8},
    covariates=("X", "x_q"),
    covariance=lambda ctx, sizes: LEMMA2_SETTING.instance(
        ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("instance")).sigma,
    what="the label entry after each layer",
    model_latex=r"[Z_\ell]_{d+1,n+1},\ Z_{\ell+1} = Z_\ell + \tfrac1n P_\ell Z_\ell M "
                r"Z_\ell^\top Q_\ell Z_\ell\ \text{(9)}",
    claimed_latex=r"-\langle x_q, w_\ell^{\mathrm{gd}}\rangle,\ w_{\ell+1}^{\mathrm{gd}} = "
                  r"w_\ell^{\mathrm{gd}} + A_\ell \nabla R_{w_\star}(w_\ell^{\mathrm{gd}})")


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
    checks={**forward_identity(LEMMA2_IDENTITY), "train": lemma2_train},
    setting=LEMMA2_SETTING,
)


CLAIMS = [LEMMA2]
