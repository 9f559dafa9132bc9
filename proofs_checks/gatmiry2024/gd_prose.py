"""Sections 3.2-3.6: least squares and one linear-attention step, the statements around
Prop. 3.1 (lines 57-163).

* line 57: n > d and realisable labels y = X^T w* give w* = (X X^T)^{-1} X y;
* line 65: the Hessian of l_2^2(w) = ||X^T w - y||^2 is X X^T, and GD with step 1/kappa converges
  in O(kappa) iterations;
* eq. (6): with P, Q of (5) the last row of Attn(Z; Q, P) = P Z M Z^T Q Z (eq. (2)) is
  y^T X^T A [X, x_q];
* eq. (7) and line 136: that row equals -(0 - (1/n) A grad l_2^2(0))^T X = -w_1^T X (query
  entry -w_1^T x_q), with grad l_2^2(0) = X y as the paper uses it;
* line 163: the inverse data covariance concentrates around Sigma*^{-1} (Monte Carlo);
* line 159: one preconditioned GD step w_1 = 0 - (1/n) A grad l_2^2(0) with A = Sigma^{-1}
  (Sigma = X X^T / n) gives (X X^T)^{-1} X y.

Each check derives its side from the definitions (sympy gradients and Hessians of the loss, the
attention of ``models.lsa`` on exact prompts, GD iterated) and compares it with the named
formula exactly at rational instances, and in float64 at Gaussian ones."""
from __future__ import annotations

import math

import numpy as np
import sympy
import torch

from models.lsa import attention
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, settle_le, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from ..kit.evaluate import torch_value
from ..kit import looped_icl as li
from .common import _A, _D, _N, _SIGMA, _SIGMA_STAR, _W, _X, _XQ, _Y, PAPER, _mat
from .loss import LOSS_SETTING

_KAPPA = FormulaSymbol("kappa", positive=True)
_H_MAX = FormulaSymbol("lambda_max", positive=True)
_ELL = NamedFormula("ell", "(X.T*w - y).T*(X.T*w - y)", (_N, _D, _X, _W, _Y), equation="Sec. 3.2",
                    shape=("1", "1"), description="l_2^2(w) = ||X^T w - y||^2 (printed with w*)")
_SIZES = ((2, 3), (3, 5))  # (d, n), n > d


def _rational(rng: np.random.Generator, shape, lo=-3, hi=4) -> sympy.Matrix:
    return sympy.Matrix(*shape, lambda i, j: sympy.Rational(int(rng.integers(lo, hi)),
                                                            int(rng.integers(1, 3))))


def _full_rank(rng, d: int, n: int) -> sympy.Matrix:
    while True:
        X = _rational(rng, (d, n))
        if (X * X.T).det() != 0:
            return X


def _sym_pd(rng, d: int) -> sympy.Matrix:
    B = _rational(rng, (d, d))
    return B * B.T + sympy.eye(d)


def _scalar(v):
    return v[0, 0] if isinstance(v, sympy.MatrixBase) else v


def _grad_hess(F, vals: dict, d: int) -> tuple[sympy.Matrix, sympy.Matrix, sympy.Matrix]:
    """(w symbols, gradient, Hessian) of the named loss, by sympy."""
    ws = sympy.Matrix(sympy.symbols(f"w_0:{d}"))
    ell = _scalar(formula_value(F["ell"], {**vals, "w": ws}))
    grad = sympy.Matrix([sympy.diff(ell, w) for w in ws])
    return ws, grad, sympy.hessian(ell, list(ws))


def _exact_finding(name: str, rows: list, what: str, eq: str) -> Finding:
    """rows: (instance dict, derived, named) exact matrices; ok where every pair is equal."""
    bad = next(({**inst, "derived": str(a.tolist()), "named": str(b.tolist())}
                for inst, a, b in rows if sympy.simplify(a - b) != sympy.zeros(*a.shape)), None)
    return Finding(name, bad is None, {"instances": len(rows), "exact": True}, bad,
                   "" if bad is None else f"{what} differs from {eq}")


def _float_finding(name: str, pairs: list, what: str, eq: str) -> Finding:
    """pairs: (instance dict, derived, named) float arrays: |difference| <= 1e-9 scale."""
    worst, bad, undecided = 0.0, None, []
    for inst, a, b in pairs:
        a, b = np.asarray(a, float), np.asarray(b, float)
        if a.shape != b.shape:
            bad = bad or {**inst, "derived_shape": a.shape, "named_shape": b.shape}
            continue
        scale = 1e-9 * max(1.0, float(np.abs(a).max()))
        ok, why = settle_le(np.abs(a - b), scale)
        worst = max(worst, float(np.abs(a - b).max()) / scale if np.all(np.isfinite(b)) else 1e300)
        if ok is None:
            undecided.append(why)
        elif not ok and bad is None:
            bad = {**inst, "derived": a.tolist(), "named": b.tolist()}
    ok = False if bad is not None else (None if undecided or not pairs else True)  # a NaN anywhere decides nothing
    return Finding(name, ok, {"instances": len(pairs), "worst_over_tolerance": worst}, bad,
                   (undecided[0] if undecided else "nothing compared") if ok is None else
                   "" if bad is None else f"{what} differs from {eq} (float64)")


# ----- line 57 ----------------------------------------------------------------------------------
def _pinv_symbolic(ctx: Context) -> TierResult:
    """Exact: w* rational, y = X^T w*, X rational of full rank, n > d; the named formula at
    (X, y) against w*."""
    rng = ctx.rng("pinv")
    rows = []
    for d, n in _SIZES:
        for _ in range(3):
            X, w = _full_rank(rng, d, n), _rational(rng, (d, 1))
            y = X.T * w
            named = sympy.Matrix(formula_value(ctx.formulas["w_star"], {"X": X, "y": y,
                                                                        "n": n, "d": d}))
            rows.append(({"d": d, "n": n, "X": str(X.tolist()), "w_star": str(w.T.tolist())},
                         w, named))
    return combine([_exact_finding("exact_instances", rows, "w*", "the named formula")],
                   steps=[step("Realisable labels", r"y = X^\top w^*",
                               "the named formula at y = X^T w* against w* itself")])


def _pinv_numeric(ctx: Context) -> TierResult:
    rng = ctx.rng("pinv-float")
    pairs = []
    for d, n in ((5, 20), (10, 40)):
        for _ in range(li.by_budget(ctx, 4, 20)):
            X, w = rng.standard_normal((d, n)), rng.standard_normal((d, 1))
            named = torch_value(ctx.formulas["w_star"], {"X": X, "y": X.T @ w}, {"n": n, "d": d})
            pairs.append(({"d": d, "n": n}, w, named.numpy()))
    return combine([_float_finding("gaussian_instances", pairs, "w*", "the named formula")])


EQ_PSEUDO_INVERSE = Claim(
    id="gatmiry2024.eq_pseudo_inverse", title="Sec. 3.2 (line 57): w* = (X Xᵀ)⁻¹ X y",
    paper=PAPER,
    statement=r"With $n>d$ and realisable labels $y_i=w^{*\top}x_i$, $w^*=(XX^\top)^{-1}Xy$.",
    assumptions=("y = X^T w*", "X X^T invertible (X of rank d, n >= d)"),
    formulas=(NamedFormula("w_star", "Inverse(X*X.T)*X*y", (_N, _D, _X, _Y), equation="Sec. 3.2",
                           shape=("d", "1"), description="the pseudo-inverse formula"),),
    checks={"symbolic": _pinv_symbolic, "numeric": _pinv_numeric},
    setting=LOSS_SETTING,
)


# ----- line 159 ---------------------------------------------------------------------------------
def _step_symbolic(ctx: Context) -> TierResult:
    """Exact: the named w_1 = 0 - A grad / n with the gradient of the named loss at 0 (sympy) and
    the preconditioner A = the named Sigma^{-1}; against the named solution."""
    F = ctx.formulas
    rng = ctx.rng("one-step")
    rows = []
    for d, n in _SIZES:
        for _ in range(2):
            X, w = _full_rank(rng, d, n), _rational(rng, (d, 1))
            y = X.T * w
            vals = {"X": X, "y": y, "n": n, "d": d}
            ws, grad, _h = _grad_hess(F, vals, d)
            g0 = grad.subs({v: 0 for v in ws})
            A = sympy.Matrix(formula_value(F["precond"], {**vals, "Sigma": X * X.T / n}))
            w1 = sympy.Matrix(formula_value(F["w1"], {**vals, "A": A, "grad": g0}))
            named = sympy.Matrix(formula_value(F["solution"], vals))
            rows.append(({"d": d, "n": n, "X": str(X.tolist()), "y": str(y.T.tolist())}, w1,
                         named))
    return combine([_exact_finding("exact_instances", rows, "one GD step from 0",
                                   "the named solution"), _loss_finding(F, rng)],
                   steps=[step("One preconditioned step", r"w_1 = 0 - \tfrac1n A\nabla\ell(0),"
                               r"\ A = \Sigma^{-1}", "the gradient of the named loss by sympy")])


def _loss_finding(F, rng) -> Finding:
    """The named l_2^2 is the regression loss GD minimises: at realisable labels it vanishes at
    w* and is nowhere below that (checked at w* +- v for random rational v, exactly)."""
    bad, count = None, 0
    for d, n in _SIZES:
        X, w = _full_rank(rng, d, n), _rational(rng, (d, 1))
        vals = {"X": X, "y": X.T * w, "n": n, "d": d}
        at = lambda v: _scalar(formula_value(F["ell"], {**vals, "w": v}))  # noqa: E731
        low = at(w)
        for _ in range(3):
            v = _rational(rng, (d, 1))
            for u in (w + v, w - v):
                count += 1
                if (low != 0 or at(u) < low) and bad is None:
                    bad = {"d": d, "n": n, "X": str(X.tolist()), "w_star": str(w.T.tolist()),
                           "loss_at_w_star": str(low), "w": str(u.T.tolist()),
                           "loss_at_w": str(at(u))}
    return Finding("ell_is_minimised_at_w_star", bad is None, {"points": count}, bad,
                   "" if bad is None else "the named loss is not minimised (at 0) by w*")


def _step_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    rng = ctx.rng("one-step-float")
    pairs = []
    for d, n in ((5, 20),):
        for _ in range(li.by_budget(ctx, 4, 20)):
            X = rng.standard_normal((d, n))
            y = X.T @ rng.standard_normal((d, 1))
            Xt, yt = torch.tensor(X), torch.tensor(y)
            w0 = torch.zeros(d, 1, dtype=torch.float64, requires_grad=True)
            ell = torch_value(F["ell"], {"X": Xt, "y": yt, "w": w0}, {"n": n, "d": d}).sum()
            g0, = torch.autograd.grad(ell, w0)
            A = torch_value(F["precond"], {"Sigma": Xt @ Xt.T / n, "X": Xt}, {"n": n, "d": d})
            w1 = torch_value(F["w1"], {"A": A, "grad": g0}, {"n": n, "d": d})
            named = torch_value(F["solution"], {"X": Xt, "y": yt}, {"n": n, "d": d})
            pairs.append(({"d": d, "n": n}, w1.detach().numpy(), named.numpy()))
    return combine([_float_finding("gaussian_instances", pairs, "one GD step from 0",
                                   "the named solution")])


_GRAD = _mat("grad", ("d", "1"))
EQ_ONE_STEP_SOLUTION = Claim(
    id="gatmiry2024.eq_one_step_solution",
    title="Sec. 3.6 (line 159): one preconditioned GD step with A = Σ⁻¹ solves the "
          "regression",
    paper=PAPER,
    statement=r"One step of preconditioned gradient descent from the origin, "
              r"$w_1=w_0-\frac1n A\nabla\ell_2^2(w_0)$ with $A=\Sigma^{-1}$, "
              r"$\Sigma=\frac1n\sum_i x_ix_i^\top$, gives the exact solution $(XX^\top)^{-1}Xy$ "
              r"of the over-determined instance.",
    assumptions=("y = X^T w* (realisable), X of rank d", "the GD of Sec. 3.4 on l_2^2"),
    formulas=(_ELL,
              NamedFormula("w1", "ZeroMatrix(d, 1) - A*grad/n", (_N, _D, _A, _GRAD),
                           equation="Sec. 3.4", shape=("d", "1"),
                           description="w_1 = 0 - (1/n) A grad l_2^2(0)"),
              NamedFormula("precond", "Inverse(Sigma)", (_D, _SIGMA), equation="Sec. 3.6",
                           shape=("d", "d"), description="A = Sigma^{-1}"),
              NamedFormula("solution", "Inverse(X*X.T)*X*y", (_N, _D, _X, _Y),
                           equation="Sec. 3.6", shape=("d", "1"),
                           description="the exact solution (X X^T)^{-1} X y")),
    checks={"symbolic": _step_symbolic, "numeric": _step_numeric},
    setting=LOSS_SETTING,
    correction=Correction(
        description="GD on l(w) = ||X^T w - y||^2 / 2",
        reason="grad ||X^T w - y||^2 = 2 X (X^T w - y): from 0 the step gives "
               "(2/n) Sigma^{-1} X y = 2 (X X^T)^{-1} X y; on half the loss (or with step 1/(2n)) "
               "it gives the solution",
        formulas={"ell": "(X.T*w - y).T*(X.T*w - y)/2"}),
)


# ----- line 65 ----------------------------------------------------------------------------------
def _hessian_rows(F, rng) -> list:
    rows = []
    for d, n in _SIZES:
        X = _full_rank(rng, d, n)
        vals = {"X": X, "y": X.T * _rational(rng, (d, 1)), "n": n, "d": d}
        _ws, _g, H = _grad_hess(F, vals, d)
        named = sympy.Matrix(formula_value(F["hessian"], vals))
        rows.append(({"d": d, "n": n, "X": str(X.tolist())}, H, named))
    return rows


def _gd_runs(F, X: np.ndarray, y: np.ndarray) -> dict:
    """GD w <- w - step grad l(w) from 0 with the named step (kappa and lambda_max of the
    Hessian of the named loss, by autograd; the loss is quadratic, so grad l(w) = H w + grad
    l(0) exactly), for 8 ceil(kappa ln 10^6) iterations: the relative error ||w - w*|| / ||w*||
    at the end (w* the least-squares solution)."""
    d, n = X.shape
    Xt, yt = torch.tensor(X), torch.tensor(y)

    def ell(v):
        return torch_value(F["ell"], {"X": Xt, "y": yt, "w": v.reshape(d, 1)},
                           {"n": n, "d": d}).sum()

    zero = torch.zeros(d, dtype=torch.float64)
    H = torch.autograd.functional.hessian(ell, zero).numpy()
    g0 = torch.autograd.functional.jacobian(ell, zero).numpy()
    ev = np.linalg.eigvalsh(H)
    kappa, h_max = float(ev.max() / ev.min()), float(ev.max())
    eta = float(torch_value(F["step"], {"kappa": kappa, "lambda_max": h_max}, {"n": n, "d": d}))
    target = np.linalg.solve(X @ X.T, X @ y)[:, 0]
    iters = 8 * math.ceil(kappa * math.log(1e6))
    v = np.zeros(d)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(iters):
            v = v - eta * (H @ v + g0)
    err = float(np.linalg.norm(v - target) / np.linalg.norm(target))
    return {"d": d, "n": n, "scale_of_X": float(np.abs(X).max()), "kappa": kappa,
            "lambda_max": h_max, "step": eta, "iterations": iters,
            "relative_error": err if np.isfinite(err) else "diverged"}


def _gd_finding(F, rng) -> Finding:
    """The named step converges to relative error 10^-6 within 8 kappa ln 10^6 iterations at
    X scaled by 1/10, 1, 10 (a step that ignores the scale of the Hessian cannot)."""
    runs = []
    for scale in (0.1, 1.0, 10.0):
        X = scale * rng.standard_normal((3, 12))
        runs.append(_gd_runs(F, X, X.T @ rng.standard_normal((3, 1))))
    bad = next((r for r in runs if r["relative_error"] == "diverged"
                or not r["relative_error"] <= 1e-6), None)
    return Finding("gd_with_the_named_step", bad is None, {"runs": runs}, bad,
                   "" if bad is None else "GD with the named step does not converge in "
                   "O(kappa log(1/eps)) iterations")


def _hessian_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    return combine([_exact_finding("hessian", _hessian_rows(F, ctx.rng("hessian")),
                                   "the Hessian of the named loss", "the named Hessian")],
                   steps=[step("Hessian", r"\nabla^2\|X^\top w-y\|^2 = 2XX^\top", "by sympy")])


def _hessian_numeric(ctx: Context) -> TierResult:
    return combine([_gd_finding(ctx.formulas, ctx.rng("gd-step"))])


EQ_HESSIAN = Claim(
    id="gatmiry2024.eq_hessian",
    title="Sec. 3.2 (line 65): the Hessian of l_2^2 is X Xᵀ; GD with step 1/κ converges in "
          "O(κ) iterations",
    paper=PAPER,
    statement=r"The Hessian of $\|X^\top w-y\|^2$ is $XX^\top$ with condition number $\kappa$; "
              r"gradient descent with step size $\frac1\kappa$ converges in $O(\kappa)$ "
              r"iterations.",
    assumptions=("X of rank d", "convergence in O(kappa): relative error 10^-6 within "
                 "8 kappa ln(10^6) iterations (the constant 8, and the log(1/eps) factor the "
                 "O(kappa) leaves out)"),
    formulas=(_ELL,
              NamedFormula("hessian", "X*X.T", (_N, _D, _X), equation="Sec. 3.2",
                           shape=("d", "d"), description="the Hessian of l_2^2"),
              NamedFormula("step", "1/kappa", (_KAPPA, _H_MAX), equation="Sec. 3.2",
                           description="the GD step size")),
    checks={"symbolic": _hessian_symbolic, "numeric": _hessian_numeric},
    setting=LOSS_SETTING,
    correction=Correction(
        description="the Hessian is 2 X X^T, and the step 1/lambda_max(Hessian)",
        reason="d^2/dw^2 ||X^T w - y||^2 = 2 X X^T; a step 1/kappa is scale-free while GD needs "
               "a step below 2/lambda_max: with X scaled by 10 it diverges.  With step "
               "1/lambda_max the error contracts by 1 - 1/kappa per step",
        formulas={"hessian": "2*X*X.T", "step": "1/lambda_max"}),
)


# ----- eqs. (6), (7) and line 136 ---------------------------------------------------------------
def _prompt(rng, d: int, n: int):
    X, y, xq = _rational(rng, (d, n)), _rational(rng, (n, 1)), _rational(rng, (d, 1))
    return X, y, xq, _sym_pd(rng, d)


def _attention_row(X, y, xq, A):
    """The last row of Attn(Z; Q, P) = P Z M Z^T Q Z with P, Q of (5) (``models.lsa``)."""
    d, n = X.shape
    Z = sympy.zeros(d + 1, n + 1)
    Z[:d, :n], Z[:d, n], Z[d, :n] = X, xq, y.T
    M = sympy.diag(*([1] * n + [0]))
    P = sympy.zeros(d + 1, d + 1)
    P[d, d] = 1
    Q = sympy.zeros(d + 1, d + 1)
    Q[:d, :d] = A
    return attention(Z, P, Q, M)[d, :]


def _attn_rows(F, rng, names_cols) -> list:
    """(instance, derived, named) per formula name, over rational prompts; ``names_cols``:
    (formula name, which columns of the attention row: 'all', 'data' or 'query')."""
    rows = []
    for d, n in _SIZES:
        X, y, xq, A = _prompt(rng, d, n)
        row = _attention_row(X, y, xq, A)
        vals = {"X": X, "y": y, "x_q": xq, "A": A, "n": n, "d": d}
        for name, cols in names_cols:
            derived = {"all": row, "data": row[:, :n], "query": row[:, n:]}[cols]
            named = sympy.Matrix(formula_value(F[name], vals))
            rows.append(({"formula": name, "d": d, "n": n, "X": str(X.tolist()),
                          "y": str(y.T.tolist()), "x_q": str(xq.T.tolist()),
                          "A": str(A.tolist())}, derived, named))
    return rows


def _attn_numeric(F, rng, names_cols) -> Finding:
    pairs = []
    for d, n in ((5, 20),):
        for _ in range(3):
            X, y, xq = (rng.standard_normal(s) for s in ((d, n), (n, 1), (d, 1)))
            B = rng.standard_normal((d, d))
            A = B @ B.T + np.eye(d)
            Z = torch.zeros(d + 1, n + 1, dtype=torch.float64)
            Z[:d, :n], Z[:d, n:] = torch.tensor(X), torch.tensor(xq)
            Z[d, :n] = torch.tensor(y[:, 0])
            M = torch.diag(torch.tensor([1.0] * n + [0.0], dtype=torch.float64))
            P = torch.zeros(d + 1, d + 1, dtype=torch.float64)
            P[d, d] = 1
            Q = torch.zeros(d + 1, d + 1, dtype=torch.float64)
            Q[:d, :d] = torch.tensor(A)
            row = attention(Z, P, Q, M)[d, :].numpy()[None, :]
            vals = {"X": X, "y": y, "x_q": xq, "A": A}
            for name, cols in names_cols:
                derived = {"all": row, "data": row[:, :n], "query": row[:, n:]}[cols]
                named = torch_value(F[name], vals, {"n": n, "d": d}).numpy()
                pairs.append(({"formula": name, "d": d, "n": n}, derived, named))
    return _float_finding("gaussian_instances", pairs, "the attention's last row",
                          "the named formula")


_EQ6 = (("attn_row", "all"),)
_EQ7 = (("rows", "data"), ("query", "query"))


def _eq6_symbolic(ctx):
    return combine([_exact_finding("exact_instances", _attn_rows(ctx.formulas, ctx.rng("eq6"),
                                                                 _EQ6),
                                   "the attention's last row", "the named formula")],
                   steps=[step("Attention", r"\mathrm{Attn}=PZM(Z^\top QZ)",
                               "models.lsa.attention on exact prompts, P, Q of (5)")])


def _eq7_symbolic(ctx):
    return combine([_exact_finding("exact_instances", _attn_rows(ctx.formulas, ctx.rng("eq7"),
                                                                 _EQ7),
                                   "the attention's last row", "the named formula")],
                   steps=[step("Attention", r"\mathrm{Attn}=PZM(Z^\top QZ)",
                               "models.lsa.attention on exact prompts, P, Q of (5)")])


_ATTN_SYMBOLS = (_N, _D, _X, _Y, _XQ, _A)
EQ6 = Claim(
    id="gatmiry2024.eq6", title="Eq. (6): the last row of the attention with (5)", paper=PAPER,
    statement=r"With $P,Q$ of (5), $[\mathrm{Attn}(Z;Q,P)]_{d+1,:}=y^\top X^\top A[X\ x_q]$.",
    assumptions=("Attn(Z; Q, P) = P Z M (Z^T Q Z), eq. (2), no 1/n (it sits in (3))",
                 "A symmetric"),
    formulas=(NamedFormula("attn_row", "y.T*X.T*A*BlockMatrix([[X, x_q]])", _ATTN_SYMBOLS,
                           equation="(6)", shape=("1", "n + 1"),
                           description="[Attn]_{d+1,:}"),),
    checks={"symbolic": _eq6_symbolic,
            "numeric": lambda ctx: combine([_attn_numeric(ctx.formulas, ctx.rng("eq6f"), _EQ6)])},
    setting=LOSS_SETTING,
)
_W1 = "(ZeroMatrix(d, 1) - A*X*y/n)"  # w_1 = w_0 - (1/n) A grad l(0), grad l(0) = X y as printed
EQ7 = Claim(
    id="gatmiry2024.eq7",
    title="Eq. (7) and line 136: the attention's last row as -w_1^T [X, x_q]", paper=PAPER,
    statement=r"$[\mathrm{Attn}(Z;Q,P)]_{d+1,1:n}=-(0-\frac1n A\nabla\ell_2^2(0))^\top X"
              r"=-w_1^\top X$ (7) and $[\mathrm{Attn}]_{d+1,n+1}=-w_1^\top x_q$ (line 136), with "
              r"$\nabla\ell_2^2(0)=Xy$ and $w_1=0-\frac1n A\nabla\ell_2^2(0)$.",
    assumptions=("P, Q of (5); Attn(Z; Q, P) = P Z M (Z^T Q Z), eq. (2)",
                 "grad l_2^2(0) = X y, the value the paper uses (Sec. 3.4; prop3_1 checks it)"),
    formulas=(NamedFormula("rows", f"-{_W1}.T*X", _ATTN_SYMBOLS, equation="(7)",
                           shape=("1", "n"), description="[Attn]_{d+1,1:n} = -w_1^T X"),
              NamedFormula("query", f"-{_W1}.T*x_q", _ATTN_SYMBOLS, equation="Sec. 3.4",
                           shape=("1", "1"), description="[Attn]_{d+1,n+1} = -w_1^T x_q")),
    checks={"symbolic": _eq7_symbolic,
            "numeric": lambda ctx: combine([_attn_numeric(ctx.formulas, ctx.rng("eq7f"), _EQ7)])},
    setting=LOSS_SETTING,
    correction=Correction(
        description="the attention's row is -n w_1^T [X, x_q] (the 1/n of w_1 is the one of "
                    "eq. (3), not of the attention)",
        reason="by (6) the row is y^T X^T A [X, x_q] = n (A X y / n)^T [X, x_q]; "
               "-w_1^T [X, x_q] with w_1 = -(1/n) A X y is 1/n of it",
        formulas={"rows": f"-n*{_W1}.T*X", "query": f"-n*{_W1}.T*x_q"}),
)


# ----- line 163 ---------------------------------------------------------------------------------
_CONC_NS = (50, 500, 5000)
_Z = 3.89  # two-sided normal quantile at 1e-4


def _concentration_numeric(ctx: Context) -> TierResult:
    """Monte Carlo (seeded): the relative distance D(n) = ||Sigma^{-1} - named limit||_F /
    ||Sigma*^{-1}||_F of the inverse empirical covariance, Sigma = X X^T / n with x_i ~ N(0,
    Sigma*) (random Sigma*, d = 3), at n = 50, 500, 5000: it concentrates if the upper 99.99%
    bound of the mean D(5000) is below 0.1 and below the lower bound of the mean D(50)."""
    F = ctx.formulas
    rng = ctx.mc_rng("inverse-concentration")  # Sigma* and the sample
    samples = li.by_budget(ctx, 200, 1000)
    d = 3
    Q, _r = np.linalg.qr(rng.standard_normal((d, d)))
    sig = Q @ np.diag(rng.uniform(0.3, 3.0, d)) @ Q.T
    C = np.linalg.cholesky(sig)
    limit = np.array(sympy.Matrix(formula_value(F["limit"], {"Sigma_star": sympy.Matrix(sig),
                                                             "d": d})).tolist(), dtype=float)
    scale = np.linalg.norm(np.linalg.inv(sig))
    rows = []
    for n in _CONC_NS:
        X = C @ rng.standard_normal((samples, d, n))
        S_inv = np.linalg.inv(X @ np.swapaxes(X, 1, 2) / n)
        D = np.linalg.norm(S_inv - limit, axis=(1, 2)) / scale
        m, se = float(D.mean()), float(D.std(ddof=1) / np.sqrt(samples))
        rows.append({"n": n, "mean_distance": m, "low": m - _Z * se, "high": m + _Z * se})
    first, last = rows[0], rows[-1]
    ok_small, why1 = settle_le(last["high"], 0.1)
    ok_down, why2 = settle_le(last["high"], first["low"])
    ok = None if None in (ok_small, ok_down) else (ok_small and ok_down)
    return combine([Finding("monte_carlo", ok, {"rows": rows, "samples": samples,
                                                "seed": ctx.seed, "d": d}, None if ok is not False
                            else {"rows": rows},
                            "" if ok is not False else "Sigma^{-1} does not concentrate around the "
                            "named limit (distance at n = 5000 not small, or not below n = 50)",
                            sampled=True)])


EQ_INVERSE_CONCENTRATION = Claim(
    id="gatmiry2024.eq_inverse_concentration",
    title="Sec. 3.6 (line 163): the inverse data covariance concentrates around Σ*⁻¹",
    paper=PAPER,
    statement=r"Since $x_i\sim\mathcal N(0,\Sigma^*)$ i.i.d., the inverse of the data covariance "
              r"matrix $\Sigma^{-1}$ concentrates around the inverse population covariance "
              r"$\Sigma^{*-1}$.",
    assumptions=("Sigma = X X^T / n", "concentrates: the mean relative distance at n = 5000 is "
                 "below 0.1 and below the one at n = 50 (99.99% Monte Carlo bounds)"),
    formulas=(NamedFormula("limit", "Inverse(Sigma_star)", (_D, _SIGMA_STAR), equation="Sec. 3.6",
                           shape=("d", "d"), description="the point Sigma^{-1} concentrates at"),),
    checks={"numeric": _concentration_numeric}, setting=LOSS_SETTING,
)
