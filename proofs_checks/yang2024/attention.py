"""yang2024 eqs. (8) and (35): the multi-head softmax attention (5)-(7) predicts yhat_k = <y, Ahat_k>,
a linear map of the prompt labels, checked against the forward pass of ``models.softmax``."""
from __future__ import annotations

import numpy as np
import sympy
import torch

from models.device import randn
from models.softmax import attention_weights, coefficient_matrix, full_prediction, head_matrix
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, combine, settle_le, step, worse
from verify.formulas import FormulaSymbol, NamedFormula

from .setting import PAPER, SETTING, make_instance
from .common import (_Ahat, _H, _K, _N, _is_zero_expr, _safe_exact, _y, dimension_finding,
                     float_value)
from .deterministic_loss import random_model


# ==============================================================================================
# Eqs. (8) and (35): the multi-head attention (5)-(7) predicts yhat = Ahat^T y
# ==============================================================================================
_Ck = FormulaSymbol("C_k", "matrix", ("N", "H"))
_omk = FormulaSymbol("omega_k", "matrix", ("H", "1"))

EQ8_FORMULAS = (
    NamedFormula("yhat_k", "y.T*C_k*omega_k", (_N, _H, _y, _Ck, _omk), equation="(8)", shape=("1", "1"),
                 description="yhat_k = <y, sum_h w_{h,k} softmax(V^T Q_h v_k)>, the sum over heads "
                             "written as C_k omega_k"),
)
EQ35_FORMULAS = (
    NamedFormula("yhat", "Transpose(Ahat)*y", (_N, _K, _y, _Ahat), equation="(35), (70)",
                 shape=("K", "1"), description="yhat = Ahat(theta)^T y with Ahat of eq. (35)"),
)


def _symbolic_architecture(d=2, N=2, K=3, H=2):
    V = sympy.Matrix(d, K, lambda i, j: sympy.Symbol(f"v_{i}{j}"))
    Q = [sympy.Matrix(d, d, lambda i, j, h=h: sympy.Symbol(f"q{h}_{i}{j}")) for h in range(H)]
    w = sympy.Matrix(H, K, lambda i, j: sympy.Symbol(f"w_{i}{j}"))
    y = sympy.Matrix(N, 1, lambda i, j: sympy.Symbol(f"y_{i}"))
    return V, Q, w, y


def _prediction_symbolic(ctx: Context, which: str) -> TierResult:
    F = ctx.formulas
    d, N, K, H = 2, 2, 3, 2
    V, Q, w, y = _symbolic_architecture(d, N, K, H)
    full = full_prediction(V, y, N, Q, w)                      # diag T(E), eqs. (5)-(7)
    S = attention_weights(V[:, :N], V, Q)                      # s_k^h, eq. (28)
    names = ["yhat_k"] if which == "eq8" else ["yhat"]
    findings = [dimension_finding(ctx, names)]
    rows, bad, why = [], None, ""
    if which == "eq8":
        for k in range(K):
            vals = {"y": y, "C_k": head_matrix(S, k), "omega_k": w[:, k], "N": N, "H": H}
            val, why = _safe_exact(F["yhat_k"], vals)
            if val is None:
                break
            ok = _is_zero_expr(val - full[k])
            rows.append({"token": k + 1, "agree": ok})
            if not ok and bad is None:
                bad = {"token": k + 1, "sizes": {"d": d, "N": N, "K": K, "H": H},
                       "paper": str(val), "architecture": str(full[k])}
    else:
        Ahat = coefficient_matrix(S, w)                         # eq. (35)
        val, why = _safe_exact(F["yhat"], {"y": y, "Ahat": Ahat, "N": N, "K": K})
        if val is not None:
            val = sympy.Matrix(val) if isinstance(val, sympy.MatrixBase) else sympy.Matrix([val])
            for k in range(K):
                ok = val.shape == (K, 1) and _is_zero_expr(val[k] - full[k])
                rows.append({"token": k + 1, "agree": ok})
                if not ok and bad is None:
                    bad = {"token": k + 1, "paper": str(val[k] if k < val.shape[0] else None),
                           "architecture": str(full[k])}
    if why and val is None:
        findings.append(Finding("architecture_identity", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(Finding("architecture_identity", bad is None, {"tokens": rows,
                                "sizes": {"d": d, "N": N, "K": K, "H": H}}, bad,
                                "" if bad is None else "the formula differs from the diagonal of T(E)"))
    steps = [
        step("Embedding", r"E = \begin{pmatrix} v_1 & \cdots & v_N & v_{N+1} & \cdots & v_K\\ "
             r"y_1 & \cdots & y_N & 0 & \cdots & 0\end{pmatrix},\ E^P = E_{:,1:N}", "eqs. (2), (4)."),
        step("Heads", r"\mathrm{head}_h(E) = W^V_h E^P\,\mathrm{softmax}\big((E^P)^\top (W^K_h)^\top "
             r"W^Q_h E\big),\quad \mathcal T(E) = W^O[\mathrm{head}_1;\dots;\mathrm{head}_H]",
             "eqs. (5)-(6), with W^O = (I_K, ..., I_K), W^V_h = (0, w_h), W^K_h = I, "
             "W^Q_h = diag(Q_h, 0) (eq. (7)); all entries independent symbols (d = 2, N = 2, K = 3, "
             "H = 2)."),
        step("Prediction", r"\hat y_k = \mathcal T(E)_{kk}",
             "The diagonal, expanded exactly and compared with the formula evaluated at "
             "C_k = (s_k^1, ..., s_k^H), s_k^h = softmax(V^T Q_h v_k) (eqs. (13), (28))."),
    ]
    return combine(findings, steps=steps)


def _prediction_numeric(ctx: Context, which: str) -> TierResult:
    F = ctx.formulas
    inst = make_instance(ctx)
    gen = torch.Generator().manual_seed(ctx.seed_for("model"))
    worst, bad, why = 0.0, None, ""
    trials = 5
    for trial in range(trials):
        model = random_model(inst, gen, w_scale=1.0)
        Q, w = model.Q.detach(), model.w.detach()
        V_all = inst.dictionary.V_all
        y = randn(inst.N, generator=gen, dtype=torch.float64)
        full = full_prediction(V_all, y, inst.N, Q, w).numpy()
        S = attention_weights(V_all[:, :inst.N], V_all, Q)
        try:
            if which == "eq8":
                paper = np.array([np.asarray(float_value(F["yhat_k"], {
                    "y": y.numpy()[:, None], "C_k": head_matrix(S, k).numpy(),
                    "omega_k": w[:, [k]].numpy(), "N": inst.N, "H": inst.H})).reshape(-1)[0]
                    for k in range(inst.K)])
            else:
                paper = np.asarray(float_value(F["yhat"], {
                    "y": y.numpy()[:, None], "Ahat": coefficient_matrix(S, w).numpy(),
                    "N": inst.N, "K": inst.K})).reshape(-1)
                if paper.shape != full.shape:
                    raise ValueError(f"the formula has {paper.size} entries, the model {full.size}")
        except Exception as exc:  # an ill-typed formula
            why = f"{type(exc).__name__}: {exc}"
            break
        rel = float(np.abs(paper - full).max() / np.abs(full).max())
        if worse(rel, worst, 1e-12):  # a NaN is kept: undecided, never a pass
            worst = rel
            k = int(np.abs(paper - full).argmax())
            bad = {"trial": trial, "token": k + 1, "paper": float(paper[k]), "architecture": float(full[k])}
    tol = 1e-12
    if why:
        return combine([Finding("architecture_float", False, {"error": why},
                                {"instance": inst.as_dict(), "error": why}, f"cannot evaluate: {why}")])
    ok, undecided = settle_le(worst, tol)
    return combine([Finding("architecture_float", ok, {
        "max_relative_difference": worst, "tolerance": tol, "trials": trials,
        "why_tolerance": "float64 rounding of a softmax and a K x K product"},
        None if ok is not False else {"instance": inst.as_dict(), **bad, "seed": ctx.seed},
        undecided or ("" if ok else "the formula differs from the diagonal of T(E)"))],
        {"instance": inst.as_dict()})


EQ8 = Claim(
    id="yang2024.eq8",
    title="The multi-head attention (5)-(7) predicts yhat_k = <y, sum_h w_hk softmax(Vᵀ Q_h v_k)>",
    paper=PAPER,
    statement=(r"With the weights (7), the diagonal of $\mathcal T(E)$ (eqs. (5)-(6)) is "
               r"$\hat y_k=\langle y,\sum_{h=1}^H w_{h,k}\,\mathrm{softmax}(V^\top Q_h v_k)\rangle$."),
    assumptions=("W^O = (I_K, ..., I_K), W^V_h = (0, w_h), (W^K_h)^T W^Q_h = diag(Q_h, 0) (eq. (7))",),
    formulas=EQ8_FORMULAS,
    checks={"symbolic": lambda ctx: _prediction_symbolic(ctx, "eq8"),
            "numeric": lambda ctx: _prediction_numeric(ctx, "eq8")},
    setting=SETTING,
)

EQ35 = Claim(
    id="yang2024.eq35",
    title="Â(θ) of eq. (35): the model is the linear map ŷ = Â(θ)ᵀ y",
    paper=PAPER,
    statement=(r"$\hat A(\theta)=(\sum_h w_{h,1}s_1^h,\dots,\sum_h w_{h,K}s_K^h)\in\mathbb R^{N\times K}$ "
               r"and $\hat y=\hat A(\theta)^\top y$ (used in (70) and (75))."),
    assumptions=("the weights of eq. (7)",),
    formulas=EQ35_FORMULAS,
    checks={"symbolic": lambda ctx: _prediction_symbolic(ctx, "eq35"),
            "numeric": lambda ctx: _prediction_numeric(ctx, "eq35")},
    setting=SETTING,
)
