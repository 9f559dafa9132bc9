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
from ..kit import looped_icl as li
from .common import _A, _D, _N, _U, _X, PAPER, _mat
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
    for _ in range(li.by_budget(ctx, 4, 20)):
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
    ok = False if bad is not None else (None if undecided or not count else True)  # a NaN anywhere decides nothing
    return combine([Finding("gaussian_instances", ok, {"instances": count}, bad,
                            (undecided[0] if undecided else "nothing compared") if ok is None
                            else "" if bad is None else "the label row after one layer is not the "
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


# ----- line 356: the update rule, and line 370: the query label -----------------------------------
_Z = _mat("Z", ("d+1", "n+1"))
_P = _mat("P", ("d+1", "d+1"))
_Q = _mat("Q", ("d+1", "d+1"), symmetric=True)
_M = _mat("M", ("n+1", "n+1"), symmetric=True)
_XQ = _mat("x_q", ("d", "1"))
_YQ = _mat("yq_t", ("1", "1"))


def _instance(rng, d: int, n: int, exact: bool) -> dict:
    """A prompt Z = [[X, x_q], [y^(t)T, -y_q^(t)]] and the weights (11) of one layer: exact
    rationals or float64 Gaussians; every value a formula may use, by symbol name."""
    if exact:
        draw = lambda *s: _rational(rng, s)  # noqa: E731
        X, y, xq, B, u, c = (draw(d, n), draw(n, 1), draw(d, 1), draw(d, d), draw(d, 1),
                             draw(1, 1)[0, 0])
        u = u + sympy.Matrix([1] + [0] * (d - 1))  # u != 0: the u-terms are visible
        A = B + B.T
        Z = sympy.zeros(d + 1, n + 1)
        Z[:d, :n], Z[:d, n], Z[d, :n], Z[d, n] = X, xq, y.T, c
    else:
        X, y = rng.standard_normal((d, n)), rng.standard_normal((n, 1))
        xq, B = rng.standard_normal((d, 1)), rng.standard_normal((d, d))
        u, c = rng.standard_normal((d, 1)), float(rng.standard_normal())
        A = B + B.T
        Zn = np.zeros((d + 1, n + 1))
        Zn[:d, :n], Zn[:d, n:], Zn[d, :n], Zn[d, n] = X, xq, y[:, 0], c
        Z, A, u = torch.tensor(Zn), torch.tensor(A), torch.tensor(u)
    Zn1 = _layer(Z, A, u, n)
    zero = (lambda r, k: sympy.zeros(r, k)) if exact else (lambda r, k: np.zeros((r, k)))
    P, Q, M = zero(d + 1, d + 1), zero(d + 1, d + 1), zero(n + 1, n + 1)
    P[d, d] = 1
    P[d, :d] = u.T if exact else u.numpy()[:, 0]
    Q[:d, :d] = A if exact else A.numpy()
    for i in range(n):
        M[i, i] = 1
    conv = (lambda v: v) if exact else (lambda v: v.numpy() if isinstance(v, torch.Tensor) else v)
    c_mat = sympy.Matrix([[-c]]) if exact else np.array([[-c]])
    return {"Z": conv(Z), "Z_next": conv(Zn1), "P": P, "Q": Q, "M": M, "A": conv(A),
            "u": conv(u), "X": X, "y_t": y, "x_q": xq, "yq_t": c_mat, "n": n, "d": d}


def _derived(inst: dict, what: str, exact: bool):
    Zn1, d, n = inst["Z_next"], inst["d"], inst["n"]
    if what == "Z_next":
        return Zn1
    return sympy.Matrix([[-Zn1[d, n]]]) if exact else np.array([[-Zn1[d, n]]])


def _update_check(name: str, what: str, exact: bool, label: str):
    """The named formula, type-checked with symbolic sizes, then against one layer of
    ``lsa_forward`` on prompts: exact rationals (d, n) = (2, 3), (3, 5), or float64 (4, 16)."""
    from ..kit.matrices import evaluate, shape_errors

    def check(ctx: Context) -> TierResult:
        errs = shape_errors(ctx.formulas[name])
        dims = Finding("dimensions", not errs, {"formula": ctx.formula_texts[name],
                                                "shape_errors": errs or "type-checks"},
                       {"ill_typed": errs} if errs else None,
                       "" if not errs else f"the named {label} is ill-typed: {errs[0]}")
        if errs:
            return combine([dims])
        rng = ctx.rng(f"a1-{name}", int(exact))
        sizes = ((2, 3), (3, 5)) if exact else ((4, 16),) * li.by_budget(ctx, 4, 20)
        bad, undecided, count = None, [], 0
        for d, n in sizes:
            for _ in range(2 if exact else 1):
                inst = _instance(rng, d, n, exact)
                derived = _derived(inst, name, exact)
                try:
                    named = evaluate(ctx.formulas[name], inst, exact=exact)
                except (ValueError, TypeError) as exc:
                    bad = bad or {"d": d, "n": n, "error": str(exc)}
                    continue
                named = sympy.Matrix(named) if exact else np.asarray(named, float)
                count += 1
                if tuple(named.shape) != tuple(derived.shape):
                    bad = bad or {"d": d, "n": n, "named_shape": tuple(named.shape),
                                  "derived_shape": tuple(derived.shape)}
                    continue
                if exact:
                    ok = sympy.expand(named - derived) == sympy.zeros(*derived.shape)
                    if not ok and bad is None:
                        bad = {"d": d, "n": n, "X": str(inst["X"].tolist()),
                               "A": str(inst["A"].tolist()), "u": str(inst["u"].T.tolist()),
                               "derived": str(derived.tolist()), "named": str(named.tolist())}
                    continue
                diff = np.abs(named - derived)
                ok, why = settle_le(diff, 1e-9 * (1 + np.abs(derived).max()))
                if ok is None:
                    undecided.append(why)
                elif not ok and bad is None:
                    bad = {"d": d, "n": n, "max_difference": float(diff.max())}
        ok = False if bad is not None else (None if not count or undecided else True)  # a NaN anywhere decides nothing
        return combine([dims, Finding("exact_instances" if exact else "gaussian_instances", ok,
                                      {"instances": count}, bad,
                                      (undecided[0] if undecided else "nothing compared")
                                      if ok is None else
                                      "" if bad is None else f"one layer of the forward pass "
                                      f"does not give the named {label}")],
                       steps=[step("One layer", r"Z^{(t+1)}=Z^{(t)}-\tfrac1n P^{(t)}Z^{(t)}M"
                                   r"Z^{(t)\top}Q^{(t)}Z^{(t)}",
                                   "models.lsa.lsa_forward, step -1 (eqs. (2)-(3))")])

    check.__name__ = f"_{name}_{'symbolic' if exact else 'numeric'}"
    return check


THM_A1_UPDATE_RULE = Claim(
    id="gatmiry2024.thm_a1_update_rule",
    title="Proof of Thm. A.1 (line 356): the layer update rule", paper=PAPER,
    statement=r"$Z^{(t)}=Z^{(t-1)}-\frac1n P^{(t)}MZ^{(t)}A^{(t)}Z^{(t)\top}$ for the layer "
              r"$P^{(t)}=\begin{bmatrix}0&0\\u^{(t)\top}&1\end{bmatrix}$, "
              r"$Q^{(t)}=\begin{bmatrix}A^{(t)}&0\\0&0\end{bmatrix}$ of (11).",
    assumptions=("Z is the layer's input Z^(t-1) (the printed right-hand side writes Z^(t), "
                 "its output)", "M = [[I_n, 0], [0, 0]] the mask of eq. (2)",
                 "A^(t) symmetric, u^(t) any"),
    formulas=(NamedFormula("Z_next", "Z - P*M*Z*A*Z.T/n", (_N, _D, _Z, _P, _M, _A, _Q),
                           equation="proof of Thm. A.1", shape=("d+1", "n+1"),
                           description="the layer's output Z^(t)"),),
    checks={"symbolic": _update_check("Z_next", "Z_next", True, "update"),
            "numeric": _update_check("Z_next", "Z_next", False, "update")},
    setting=LOSS_SETTING,
    correction=Correction(
        description="Z^(t) = Z^(t-1) - (1/n) P^(t) Z^(t-1) M Z^(t-1)T Q^(t) Z^(t-1)",
        reason="as printed the update is ill-typed (P^(t) M multiplies a (d+1)x(d+1) by an "
               "(n+1)x(n+1) matrix, A^(t) Z^(t)T a d x d by an (n+1)x(d+1)); eqs. (2)-(3) give "
               "the attention P Z M (Z^T Q Z) of the layer's input",
        formulas={"Z_next": "Z - P*Z*M*Z.T*Q*Z/n"}),
)


THM_A1_QUERY_UPDATE = Claim(
    id="gatmiry2024.thm_a1_query_update",
    title="Proof of Thm. A.1 (line 370): the query label after one layer", paper=PAPER,
    statement=r"$y_q^{(t+1)}=y_q^{(t)}-\frac1n y^{(t)\top}X^\top Qx_q$, where "
              r"$[Z^{(t)}]_{d+1,n+1}=-y_q^{(t)}$ and $[Z^{(t)}]_{d+1,1:n}=y^{(t)\top}$.",
    assumptions=("one layer of eqs. (2)-(3) with the weights (11)", "A^(t) symmetric, u^(t) any",
                 "Q is Q^(t), (d+1) x (d+1), as printed"),
    formulas=(NamedFormula("yq_next", "yq_t - y_t.T*X.T*Q*x_q/n",
                           (_N, _D, _X, _YT, _A, _U, _Q, _XQ, _YQ),
                           equation="proof of Thm. A.1", shape=("1", "1"),
                           description="y_q^(t+1) = -[Z^(t+1)]_{d+1,n+1}"),),
    checks={"symbolic": _update_check("yq_next", "yq_next", True, "query label"),
            "numeric": _update_check("yq_next", "yq_next", False, "query label")},
    setting=LOSS_SETTING,
    correction=Correction(
        description="y_q^(t+1) = y_q^(t) + (1/n)(u^(t)T X X^T + y^(t)T X^T) A^(t) x_q",
        reason="X^T Q x_q is ill-typed (Q is (d+1)x(d+1)); with Q's block A^(t), the last row of "
               "P^(t) Z^(t) M is u^(t)T X + y^(t)T and [Z]_{d+1,n+1} = -y_q^(t) flips the sign: "
               "the induction's last line (y_q - w*T prod_{i<=t}(I - Sigma A^(i)) x_q) needs +, "
               "and the u-term is the one (13) carries",
        formulas={"yq_next": "yq_t + (u.T*X*X.T + y_t.T*X.T)*A*x_q/n"}),
)
