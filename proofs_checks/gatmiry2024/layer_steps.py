"""The induction step of the proof of Thm. A.1 (line 360): one layer of the multi-layer model
(11), P^(t) = [[0, 0], [u^(t)T, 1]], Q^(t) = [[A^(t), 0], [0, 0]], on the label row.

Z^(t+1) = Z^(t) - (1/n) P^(t) Z^(t) M (Z^(t)T Q^(t) Z^(t)) (eqs. (2)-(3)); the check runs
``models.lsa.lsa_forward`` one layer on exact prompts [[X, x_q], [y^(t)T, c]] and compares the
new label row [Z^(t+1)]_{d+1,1:n} with the named formula."""
from __future__ import annotations

import numpy as np
import sympy
import torch

from models.lsa import lsa_forward
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, settle_le, step
from verify.formulas import NamedFormula, formula_value

from ..kit.evaluate import torch_value
from .common import _A, _D, _N, _U, _X, PAPER, _by_budget, _mat
from .loss import LOSS_SETTING

_YT = _mat("y_t", ("n", "1"))


def _layer(Z, A, u, n: int):
    d = A.shape[0]
    zero = sympy.zeros if isinstance(Z, sympy.MatrixBase) else (
        lambda r, c: torch.zeros(r, c, dtype=torch.float64))
    P, Q = zero(d + 1, d + 1), zero(d + 1, d + 1)
    P[d, d] = 1
    P[d, :d] = u.T if isinstance(Z, sympy.MatrixBase) else u[:, 0]
    Q[:d, :d] = A
    M = zero(Z.shape[1], Z.shape[1])
    for i in range(Z.shape[1] - 1):
        M[i, i] = 1
    return lsa_forward(Z, [(P, Q)], M, n, step=-1)


def _rational(rng, shape) -> sympy.Matrix:
    return sympy.Matrix(*shape, lambda i, j: sympy.Rational(int(rng.integers(-3, 4)),
                                                            int(rng.integers(1, 3))))


def _update_symbolic(ctx: Context) -> TierResult:
    """Random rational prompts (d, n) = (2, 3), (3, 5), u != 0, symmetric A: the label row after
    one layer against the named y^(t+1)T."""
    rng = ctx.rng("a1-update")
    bad, count = None, 0
    for d, n in ((2, 3), (3, 5)):
        for _ in range(2):
            X, y, xq = _rational(rng, (d, n)), _rational(rng, (n, 1)), _rational(rng, (d, 1))
            B = _rational(rng, (d, d))
            A, u = B + B.T, _rational(rng, (d, 1)) + sympy.Matrix([1] + [0] * (d - 1))
            Z = sympy.zeros(d + 1, n + 1)
            Z[:d, :n], Z[:d, n], Z[d, :n], Z[d, n] = X, xq, y.T, sympy.Rational(1, 2)
            derived = _layer(Z, A, u, n)[d, :n]
            named = sympy.Matrix(formula_value(ctx.formulas["y_next"], {
                "X": X, "y_t": y, "A": A, "u": u, "n": n, "d": d}))
            count += 1
            if (named.shape != derived.shape or sympy.expand(named - derived)
                    != sympy.zeros(*derived.shape)) and bad is None:
                bad = {"d": d, "n": n, "X": str(X.tolist()), "y_t": str(y.T.tolist()),
                       "A": str(A.tolist()), "u": str(u.T.tolist()),
                       "derived": str(derived.tolist()), "named": str(named.tolist())}
    return combine([Finding("exact_instances", bad is None, {"instances": count}, bad,
                            "" if bad is None else "the label row after one layer is not the "
                            "named y^(t+1)")],
                   steps=[step("One layer", r"[Z^{(t+1)}]_{d+1,1:n}=y^{(t)\top}-\tfrac1n"
                               r"(u^{(t)\top}XX^\top+y^{(t)\top}X^\top)A^{(t)}X",
                               "lsa_forward on exact prompts: the last row of P^(t) Z is "
                               "u^(t)T [X, x_q] + [y^(t)T, c]")])


def _update_numeric(ctx: Context) -> TierResult:
    rng = ctx.rng("a1-update-float")
    bad, undecided, count = None, [], 0
    for _ in range(_by_budget(ctx, 4, 20)):
        d, n = 4, 16
        X, y, xq = rng.standard_normal((d, n)), rng.standard_normal((n, 1)), rng.standard_normal(d)
        B = rng.standard_normal((d, d))
        A, u = B + B.T, rng.standard_normal((d, 1))
        Z = torch.zeros(d + 1, n + 1, dtype=torch.float64)
        Z[:d, :n], Z[:d, n], Z[d, :n] = torch.tensor(X), torch.tensor(xq), torch.tensor(y[:, 0])
        derived = _layer(Z, torch.tensor(A), torch.tensor(u), n)[d, :n].numpy()
        named = torch_value(ctx.formulas["y_next"], {"X": X, "y_t": y, "A": A, "u": u},
                            {"n": n, "d": d}).numpy().reshape(-1)
        count += 1
        if named.shape != derived.shape:
            bad = bad or {"named_shape": named.shape}
            continue
        ok, why = settle_le(np.abs(named - derived), 1e-9 * (1 + np.abs(derived).max()))
        if ok is None:
            undecided.append(why)
        elif not ok and bad is None:
            bad = {"d": d, "n": n, "max_difference": float(np.abs(named - derived).max())}
    ok = False if bad is not None else (None if len(undecided) == count else True)
    return combine([Finding("gaussian_instances", ok, {"instances": count}, bad,
                            "" if bad is None else "the label row after one layer is not the "
                            "named y^(t+1) (float64)")])


THM_A1_LABEL_UPDATE = Claim(
    id="gatmiry2024.thm_a1_label_update",
    title="Proof of Thm. A.1 (line 360): the label row after one layer", paper=PAPER,
    statement=r"$y^{(t+1)\top}=y^{(t)\top}-\frac1n y^{(t)\top}X^\top A^{(t)}X$ for the layer "
              r"$P^{(t)}=\begin{bmatrix}0&0\\u^{(t)\top}&1\end{bmatrix}$, "
              r"$Q^{(t)}=\begin{bmatrix}A^{(t)}&0\\0&0\end{bmatrix}$ of (11).",
    assumptions=("y^(t)T = [Z^(t)]_{d+1,1:n}", "one layer of eqs. (2)-(3) with the weights (11)",
                 "A^(t) symmetric, u^(t) any"),
    formulas=(NamedFormula("y_next", "y_t.T - y_t.T*X.T*A*X/n", (_N, _D, _X, _YT, _A, _U),
                           equation="proof of Thm. A.1", shape=("1", "n"),
                           description="y^(t+1)T"),),
    checks={"symbolic": _update_symbolic, "numeric": _update_numeric},
    setting=LOSS_SETTING,
    correction=Correction(
        description="y^(t+1)T = y^(t)T - (1/n)(u^(t)T X X^T + y^(t)T X^T) A^(t) X",
        reason="the last row of P^(t) Z^(t) is u^(t)T [X, x_q] + [y^(t)T, .]: the u-term the "
               "printed update drops is the one (12) carries",
        formulas={"y_next": "y_t.T - (u.T*X*X.T + y_t.T*X.T)*A*X/n"}),
)
