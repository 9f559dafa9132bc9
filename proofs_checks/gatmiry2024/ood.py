"""Out-of-distribution instances: Theorem 4.5 and its restatement A.13."""
from __future__ import annotations

from typing import Sequence

import mpmath
import numpy as np
import sympy
import torch

from models.lsa import lsa_forward, readout
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from .common import (PAPER, _D, _DELTA, _L, _N, _ZETA, _by_budget, _loops, _mat, _setting,
                     sec35_delta, single_threaded)
from .loss import looped_model
from .dominance import _gd_env, _gd_expr, _gd_le, _holds, _mp_value, _mpf, _n_text
from .flow import _mp_a_star


OOD_SETTING = _setting({"n": 20, "d": 2, "L": 2})
_S_MIN = FormulaSymbol("s_min", description="the smallest eigenvalue of Sigma^out (Sigma* = I)",
                       positive=True)
_S_MAX = FormulaSymbol("s_max", description="the largest eigenvalue of Sigma^out (Sigma* = I)",
                       positive=True)
_XQ2 = FormulaSymbol("xq_norm2", description="||x_q^out||^2_{Sigma*}", positive=True)
_W2 = FormulaSymbol("w_norm2", description="||w^{out,*}||^2_{Sigma*^{-1}}", positive=True)
_GRAM = _mat("XXt", description="the Gram matrix X^out X^out^T of the OOD instance", symmetric=True)
_OOD_SYMBOLS = (_N, _D, _L, _DELTA, _ZETA, _S_MIN, _S_MAX, _XQ2, _W2)
OOD_BOUND = ("(1 + 16*delta*d**(1/(2*L)))**2*(1 + 16*delta*d**(1/(2*L)) - zeta)**(2*L)"
             "*xq_norm2*w_norm2")
OOD_NS = (10 ** 4, 10 ** 8, 10 ** 40, 10 ** 100)
_OOD_R = (sympy.Rational(1, 10), sympy.Rational(1, 2), sympy.Rational(9, 10), sympy.Integer(1),
          sympy.Rational(11, 10), sympy.Rational(13, 10), sympy.Rational(7, 5))


def _largest_zeta(F, s_min, s_max, n, d, L):
    """The largest zeta in (0, 1) the named condition admits (the bound decreases in zeta), to 40
    bits; None if none."""
    cond = _gd_expr(F, "condition")
    env = lambda z: {**_gd_env(n, d, L), "s_min": s_min, "s_max": s_max, "zeta": z}  # noqa: E731
    grid = [sympy.Rational(k, 64) for k in range(63, 0, -1)]
    top = next((z for z in grid if _holds(cond, env(z))), None)
    if top is None:
        return None
    lo, hi = top, min(top + sympy.Rational(1, 64), 1 - sympy.Rational(1, 2 ** 40))
    if _holds(cond, env(hi)):
        return hi
    for _ in range(34):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _holds(cond, env(mid)) else (lo, mid)
    return lo


def _ood_error_exact(x: Sequence, n: int, L: int, a_opt: sympy.Rational, i: int) -> sympy.Expr:
    """(TF_L - y_q)^2 from the forward pass (eqs. (2)-(4), u = 0, A = a* I) on the instance
    X^out = [diag(x), 0, ..., 0] (n columns: the zero examples add nothing to the attention, so
    the pass runs on the d nonzero ones with the 1/n of eq. (3)), w = x_q = e_i."""
    d = len(x)
    X = sympy.diag(*x)
    e = sympy.zeros(d, 1)
    e[i] = 1
    Z = sympy.zeros(d + 1, d + 1)
    Z[:d, :d], Z[:d, d], Z[d, :d] = X, e, (X.T * e).T
    M = sympy.diag(*([1] * d + [0]))
    P = sympy.zeros(d + 1, d + 1)
    P[d, d] = 1
    Q = sympy.zeros(d + 1, d + 1)
    Q[:d, :d] = a_opt * sympy.eye(d)
    pred = -readout(lsa_forward(Z, [(P, Q)] * L, M, sympy.Integer(n), step=-1))
    return (sympy.Rational(pred) - (e.T * e)[0, 0]) ** 2


def _ood_symbolic(ctx: Context) -> TierResult:
    """Exact instances: Sigma* = I, X^out = diag(x) (plus zero examples), w = x_q = e_i at the
    eigenvalue farthest from 1 / a*; the ratio error^2 / bound at the largest admissible zeta."""
    F = ctx.formulas
    rows, worst, bad, count = [], None, None, 0
    ns = _by_budget(ctx, OOD_NS[1:], OOD_NS)
    rs = _by_budget(ctx, _OOD_R[1::2] + _OOD_R[-1:], _OOD_R)
    for L in _loops(ctx):
        for n in ns:
            root = sympy.Integer(10) ** (len(str(n)) // 2)  # sqrt(n) for n = 10^{2k}
            digits = len(str(n)) + 40  # a* = 1 - O(1/n): resolved to 10^-40 beyond 1/n
            a_opt = sympy.Rational(mpmath.nstr(_mp_a_star(L, n, 2, digits), digits))
            for r1 in rs:
                for r2 in [r for r in rs if r >= r1]:
                    for scale in (1, root):
                        x = [r1 * scale, r2 * scale]
                        gram = sympy.diag(*[v ** 2 for v in x])
                        sig = sympy.Matrix(formula_value(F["sigma_out"], {"XXt": gram, "n": n}))
                        ev = [sig[0, 0], sig[1, 1]]
                        zeta = _largest_zeta(F, min(ev), max(ev), n, 2, L)
                        if zeta is None:
                            continue
                        count += 1
                        S = [v ** 2 / n for v in x]  # the model's X X^T / n
                        i = max(range(2), key=lambda j: abs(1 - a_opt * S[j]))
                        err2 = _ood_error_exact(x, n, L, a_opt, i)
                        env = {**_gd_env(n, 2, L), "zeta": zeta, "s_min": min(ev),
                               "s_max": max(ev), "xq_norm2": 1, "w_norm2": 1}
                        with mpmath.workdps(40):
                            bound = _mp_value(_gd_expr(F, "bound"), env)
                            ratio = _mpf(err2) / bound
                        row = {"L": L, "n": _n_text(n), "X_diag": [str(v) for v in x],
                               "Sigma_out_eigs": [mpmath.nstr(_mpf(v), 8) for v in ev],
                               "zeta": str(zeta) if zeta.q < 10 ** 6 else float(zeta),
                               "error_sq": mpmath.nstr(_mpf(err2), 12),
                               "bound": mpmath.nstr(bound, 12), "ratio": float(ratio)}
                        if worst is None or row["ratio"] > worst["ratio"]:
                            worst = row
                        if ratio > 1 and not _gd_le(sympy.Symbol("e"), sympy.Symbol("b"), {
                                "e": err2, "b": sympy.Float(mpmath.nstr(bound, 40), 40)}):
                            if bad is None:
                                with mpmath.workdps(len(str(n)) + 30):
                                    a_txt = mpmath.nstr(_mpf(a_opt), len(str(n)) + 20)
                                    e_txt = mpmath.nstr(_mpf(err2), len(str(n)) + 20)
                                bad = {**row, "error_sq_digits": e_txt, "a_star": a_txt,
                                       "w": f"e_{i + 1}", "x_q": f"e_{i + 1}",
                                       "Sigma_star": "I_2"}
                            rows.append(row)
    ok = bad is None
    return combine([Finding("exact_instances", ok, {
        "instances": count, "d": 2, "ns": [_n_text(n) for n in ns],
        "X_diag_values": "r * 10^j, r in " + ", ".join(str(r) for r in rs) + ", j in {0, k/2}",
        "ratio": "(TF_L - y_q)^2 / bound at the largest admissible zeta (> 1 violates)",
        "worst": worst, "violations_shown": rows[:5]}, bad,
        "" if ok else "an admissible OOD instance exceeds the bound")],
        steps=[step("Error of the optimal looped model", r"\mathrm{TF}_L-y_q=-w^\top(I-a^*S)^Lx_q,"
                    r"\quad S=\tfrac1n X^{out}X^{out\top}",
                    "from the forward pass at u = 0, A = a* I; the condition of the theorem is on "
                    "Sigma^out, and the bound needs Sigma^out = S (the 1/n of the model's "
                    "empirical covariance).")])


def _ood_numeric(ctx: Context) -> TierResult:
    """Random instances at practical n with the torch forward pass: X^out with the named
    Sigma^out spectrum placed inside the window, random w and x_q."""
    F = ctx.formulas
    rng = ctx.rng("ood")
    trials = _by_budget(ctx, 12, 200, 1000)
    worst, bad = None, None
    for L in _loops(ctx):
        for d in _by_budget(ctx, (2,), (2, 3)):
            for n in _by_budget(ctx, (d + 2, 200), (d + 2, 20, 200)):
                a_opt = float(_mp_a_star(L, n, d))
                model = looped_model(d, L, a_opt * np.eye(d))
                for _ in range(trials):
                    X = rng.standard_normal((d, n))
                    target = rng.uniform(0.05, 1.95, d)
                    U, sv, Vt = np.linalg.svd(X, full_matrices=False)
                    gram_unit = U @ np.diag(target) @ U.T  # the wanted Sigma^out
                    sig_of_gram = float(formula_value(F["sigma_out"], {"XXt": sympy.eye(d),
                                                                         "n": n})[0, 0])
                    X = U @ np.diag(np.sqrt(target / sig_of_gram)) @ Vt
                    ev = np.linalg.eigvalsh(gram_unit)
                    zeta = _largest_zeta(F, sympy.Rational(repr(float(ev.min()))),
                                         sympy.Rational(repr(float(ev.max()))), n, d, L)
                    if zeta is None:
                        continue
                    w, xq = rng.standard_normal(d), rng.standard_normal(d)
                    Z = np.zeros((d + 1, n + 1))
                    Z[:d, :n], Z[:d, n], Z[d, :n] = X, xq, w @ X
                    with torch.no_grad():
                        pred = float(model.predict(torch.tensor(Z).unsqueeze(0))[0])
                    err2 = (pred - w @ xq) ** 2
                    env = {**_gd_env(n, d, L), "zeta": zeta, "s_min": 1, "s_max": 1,
                           "xq_norm2": sympy.Rational(repr(float(xq @ xq))),
                           "w_norm2": sympy.Rational(repr(float(w @ w)))}
                    with mpmath.workdps(30):
                        bound = float(_mp_value(_gd_expr(F, "bound"), env))
                    ratio = err2 / bound
                    row = {"L": L, "d": d, "n": n, "zeta": float(zeta), "ratio": ratio,
                           "Sigma_out_eigs": ev.tolist()}
                    if worst is None or ratio > worst["ratio"]:
                        worst = row
                    if ratio > 1 + 1e-9 and bad is None:
                        bad = {**row, "error_sq": err2, "bound": bound}
    return combine([Finding("random_instances", bad is None, {
        "trials_per_size": trials, "worst": worst}, bad,
        "" if bad is None else "an admissible OOD instance exceeds the bound")])


def _ood_claim(cid: str, title: str, lower: str, equation: str, statement: str) -> Claim:
    return Claim(
        id=cid, title=title, paper=PAPER, statement=statement,
        assumptions=("u = 0, A = A^opt = a*(n, d, L) I (Sigma* = I: the statement is invariant "
                     "under x -> Sigma*^{-1/2} x, w -> Sigma*^{1/2} w)",
                     "delta = (8 L d / sqrt(n))^{1/(2L)}", "y_q^out = <w^{out,*}, x_q^out>"),
        formulas=(
            NamedFormula("sigma_out", "XXt", (_N, _D, _GRAM), equation=equation, shape=("d", "d"),
                         description="Sigma^out := X^out X^out^T"),
            NamedFormula("condition", f"(s_min >= {lower}) & (s_max <= 2 - zeta)", _OOD_SYMBOLS,
                         equation=equation, description="the window of Sigma^out",
                         weaker="narrower"),
            sec35_delta(),
            NamedFormula("bound", OOD_BOUND, _OOD_SYMBOLS, equation=equation,
                         description="the bound on (TF_L(Z_0^out) - y_q^out)^2", weaker="larger"),
        ),
        checks={"symbolic": _ood_symbolic, "numeric": single_threaded(_ood_numeric)},
        setting=OOD_SETTING,
        correction=Correction(
            description="Sigma^out := X^out X^out^T / n (the model's empirical covariance)",
            reason="the model attends with 1/n (eq. (3)), so the error is w^T (I - A X X^T/n)^L "
                   "x_q; with Sigma^out = X X^T the window forces X X^T / n -> 0 and the error "
                   "to ||w|| ||x_q||, above the bound once 16 delta d^{1/(2L)} < zeta",
            formulas={"sigma_out": "XXt/n"}),
    )


THM4_5 = _ood_claim(
    "gatmiry2024.thm4_5", "Out-of-distribution bound for the optimal looped model", "1",
    "Thm. 4.5 (10)",
    r"If $\Sigma^*\preccurlyeq\Sigma^{out}\preccurlyeq(2-\zeta)\Sigma^*$, $(TF_L(Z_0^{out})-"
    r"y_q^{out})^2\le(1+16\delta d^{1/(2L)})^2(1+16\delta d^{1/(2L)}-\zeta)^{2L}\|x_q^{out}\|"
    r"^2_{\Sigma^*}\|w^{out,*}\|^2_{\Sigma^{*-1}}$, with $\Sigma^{out}=X^{out}X^{out\top}$.")
THM_A13 = _ood_claim(
    "gatmiry2024.thm_a13", "Restatement of Theorem 4.5 (window zeta Sigma* .. (2 - zeta) Sigma*)",
    "zeta", "Thm. A.13 (30)",
    r"If $\zeta\Sigma^*\preccurlyeq\Sigma^{out}\preccurlyeq(2-\zeta)\Sigma^*$, the same bound as "
    r"Thm. 4.5.")


