"""Out-of-distribution instances: Theorem 4.5 and its restatement A.13."""
from __future__ import annotations

from typing import Sequence

import mpmath
import numpy as np
import sympy
import torch

from models.lsa import lsa_forward, readout
from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, Margin, combine, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from .common import (PAPER, _D, _DELTA, _L, _N, _ZETA, _by_budget, _loops, _mat, _setting,
                     sec35_delta, single_threaded)
from .loss import looped_model
from .dominance import _gd_env, _gd_expr, _gd_le, _holds, _mp_value, _mpf, _n_text
from .flow import _mp_a_star
from .moment_search import _finite_real


OOD_SETTING = _setting({"n": 20, "d": 2, "L": 2})
_S_MIN = FormulaSymbol("s_min", positive=True, at_most="s_max")
_S_MAX = FormulaSymbol("s_max", positive=True, near=(1, 2))
_XQ2 = FormulaSymbol("xq_norm2", positive=True)
_W2 = FormulaSymbol("w_norm2", positive=True)
_GRAM = _mat("XXt", symmetric=True)
_OOD_SYMBOLS = (_N, _D, _L, _DELTA, _ZETA, _S_MIN, _S_MAX, _XQ2, _W2)
OOD_BOUND = ("(1 + 16*delta*d**(1/(2*L)))**2*(1 + 16*delta*d**(1/(2*L)) - zeta)**(2*L)"
             "*xq_norm2*w_norm2")
OOD_NS = (10 ** 4, 10 ** 8, 10 ** 40, 10 ** 100)
_OOD_R = (sympy.Rational(1, 10), sympy.Rational(1, 2), sympy.Rational(9, 10), sympy.Integer(1),
          sympy.Rational(11, 10), sympy.Rational(13, 10), sympy.Rational(7, 5))
_OOD_R_OUT = (sympy.Integer(3), sympy.Integer(10) ** 4)  # beyond the window (s = 9, 10^8)


def _largest_zeta(F, env: dict):
    """The largest zeta in (0, 1) the named condition admits at ``env`` (n, d, L, s_min, s_max
    and the norms; the bound decreases in zeta), to 40 bits; None if none."""
    cond = _gd_expr(F, "condition")
    at = lambda z: {**env, "zeta": z}  # noqa: E731
    grid = [sympy.Rational(k, 64) for k in range(63, 0, -1)]
    top = next((z for z in grid if _holds(cond, at(z))), None)
    if top is None:
        return None
    lo, hi = top, min(top + sympy.Rational(1, 64), 1 - sympy.Rational(1, 2 ** 40))
    if _holds(cond, at(hi)):
        return hi
    for _ in range(34):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _holds(cond, at(mid)) else (lo, mid)
    return lo


def _norm_scales(n: int) -> tuple[tuple[sympy.Rational, sympy.Rational], ...]:
    """(c_w, c_x) with w = c_w e_i, x_q = c_x e_i: the error and the bound both scale by
    c_w^2 c_x^2, so the printed bound is tight at every scale; a bound with ||w||^2 or ||x_q||^2
    swapped for n, d, s_max or each other (or delta for a norm) is not, at c = n or 1/n, and
    one with d and ||x_q||^2 swapped is not at c = 10 (at n or 1/n the swap moves delta's
    factor d^{1/(2L)} by as much as the prefactor)."""
    one, ten = sympy.Integer(1), sympy.Integer(10)
    big = sympy.Integer(n) if n > 1 else ten ** 6
    return ((one, one), (big, one), (one, big), (1 / big, one), (one, 1 / big), (ten, one),
            (one, ten))


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


def _ood_families(ctx: Context) -> list[tuple[int, tuple[int, ...]]]:
    """(d, ns): d = 2 at large n (where the bound is tight), and d = 1, also at n = 1 (a
    hypothesis in d or n instead of s_max admits only there, with s_max beyond the window)."""
    ns = _by_budget(ctx, OOD_NS[1:], OOD_NS)
    return [(2, ns), (1, (1, *ns[:1]))]


def _ood_rows(F, n: int, d: int, L: int, a_opt: sympy.Rational, x: list, norms_matter: bool):
    """(row, violation or None) at X^out = diag(x) for each norm scale the condition admits (at
    its largest zeta): the exact error (TF_L - y_q)^2 against the named bound.  A bound <= 0 or
    not real fails; a close call is decided at 80+ digits."""
    gram = sympy.diag(*[v ** 2 for v in x])
    sig = sympy.Matrix(formula_value(F["sigma_out"], {"XXt": gram, "n": n, "d": d}))
    ev = [sig[i, i] for i in range(d)]
    S = [v ** 2 / n for v in x]  # the model's X X^T / n
    i = max(range(d), key=lambda j: abs(1 - a_opt * S[j]))
    spectrum = {**_gd_env(n, d, L), "s_min": min(ev), "s_max": max(ev)}
    zeta = None if norms_matter else _largest_zeta(F, spectrum)
    if zeta is None and not norms_matter:
        return
    err2_unit = None
    for c_w, c_x in _norm_scales(n):
        env = {**spectrum, "xq_norm2": c_x ** 2, "w_norm2": c_w ** 2}
        if norms_matter:
            zeta = _largest_zeta(F, env)
            if zeta is None:
                continue
        if err2_unit is None:
            err2_unit = _ood_error_exact(x, n, L, a_opt, i)
        err2 = err2_unit * c_w ** 2 * c_x ** 2
        env["zeta"] = zeta
        with mpmath.workdps(40):
            bound = _mp_value(_gd_expr(F, "bound"), env)
            real = _finite_real(bound)
            ratio = _mpf(err2) / real if real is not None and real > 0 else mpmath.inf
        row = {"L": L, "d": d, "n": _n_text(n), "X_diag": [str(v) for v in x],
               "Sigma_out_eigs": [mpmath.nstr(_mpf(v), 8) for v in ev],
               "zeta": str(zeta) if zeta.q < 10 ** 6 else float(zeta),
               "w": f"{_c_text(c_w)} e_{i + 1}", "x_q": f"{_c_text(c_x)} e_{i + 1}",
               "error_sq": mpmath.nstr(_mpf(err2), 12),
               "bound": mpmath.nstr(bound, 12), "ratio": float(ratio)}
        if real is None:
            row["not_a_real_number"] = True
        violation = None
        if real is None or (_mpf(err2) > real and not _gd_le(
                sympy.Symbol("e"), sympy.Symbol("b"),
                {"e": err2, "b": sympy.Float(mpmath.nstr(real, 40), 40)})):
            with mpmath.workdps(len(str(n)) + 30):
                a_txt = mpmath.nstr(_mpf(a_opt), len(str(n)) + 20)
                e_txt = mpmath.nstr(_mpf(err2), len(str(n)) + 20)
            violation = {**row, "error_sq_digits": e_txt, "a_star": a_txt, "Sigma_star": f"I_{d}"}
        yield row, violation


OOD_MEASURE = "(TF_L - y_q)^2 / the named bound at the largest admissible zeta"


def _ood_symbolic(ctx: Context) -> TierResult:
    """Exact instances: Sigma* = I, X^out = diag(x) (plus zero examples), w = c_w e_i and
    x_q = c_x e_i at the eigenvalue farthest from 1 / a*; the ratio error^2 / bound at the largest
    admissible zeta.  x runs over values inside the window and beyond it on both sides (these
    are admissible only under another condition)."""
    F = ctx.formulas
    rows, worst, bad, count = [], None, None, 0
    rs = _by_budget(ctx, _OOD_R[1::2] + _OOD_R[-1:], _OOD_R) + _OOD_R_OUT
    norms_matter = bool({"xq_norm2", "w_norm2"}
                        & {s.name for s in _gd_expr(F, "condition").free_symbols})
    families = _ood_families(ctx)
    for L in _loops(ctx):
        for d, ns in families:
            for n in ns:
                root = sympy.Integer(10) ** (len(str(n)) // 2)  # sqrt(n) for n = 10^{2k}
                digits = len(str(n)) + 40  # a* = 1 - O(1/n): resolved to 10^-40 beyond 1/n
                a_opt = sympy.Rational(mpmath.nstr(_mp_a_star(L, n, d, digits), digits))
                for xs in _diagonals(rs, d):
                    for scale in (1, root) if root > 1 else (1,):
                        for row, violation in _ood_rows(F, n, d, L, a_opt,
                                                        [r * scale for r in xs], norms_matter):
                            count += 1
                            if worst is None or row["ratio"] > worst["ratio"]:
                                worst = row
                            if violation is not None:
                                bad = bad or violation
                                rows.append(row)
    ok = bad is None
    evidence = {
        "instances": count, "sizes": [{"d": d, "ns": [_n_text(n) for n in ns]}
                                      for d, ns in families],
        "X_diag_values": "r * 10^j, r in " + ", ".join(str(r) for r in rs) + ", j in {0, k/2}",
        "norms": "(||w||, ||x_q||) in (1, 1), (n, 1), (1, n), (1/n, 1), (1, 1/n), (10, 1), (1, 10)",
        "ratio": "(TF_L - y_q)^2 / bound at the largest admissible zeta (> 1 violates)",
        "worst": worst, "violations_shown": rows[:5]}
    finding = (Finding("exact_instances", None, evidence,
                       reason="the condition admits no instance of the grid")
               if count == 0 else
               Finding("exact_instances", ok, evidence, bad,
                       "" if ok else "an admissible OOD instance exceeds the bound",
                       _ood_margin(worst)))
    return combine([finding],
        steps=[step("Error of the optimal looped model", r"\mathrm{TF}_L-y_q=-w^\top(I-a^*S)^Lx_q,"
                    r"\quad S=\tfrac1n X^{out}X^{out\top}",
                    "from the forward pass at u = 0, A = a* I; the condition of the theorem is on "
                    "Sigma^out, and the bound needs Sigma^out = S (the 1/n of the model's "
                    "empirical covariance).")])


def _c_text(c: sympy.Rational) -> str:
    return ("1" if c == 1 else _n_text(int(c))) if c.q == 1 else f"1/{_n_text(int(c.q))}"


def _diagonals(rs: Sequence, d: int) -> list[tuple]:
    """Nondecreasing d-tuples of the values (the diagonal of X^out up to order)."""
    if d == 1:
        return [(r,) for r in rs]
    return [(r1, r2) for r1 in rs for r2 in rs if r2 >= r1]


def _ood_numeric(ctx: Context) -> TierResult:
    """Random instances at practical n with the torch forward pass: X^out with the named
    Sigma^out spectrum placed inside the window, random w and x_q."""
    F = ctx.formulas
    rng = ctx.rng("ood")
    trials = _by_budget(ctx, 12, 200, 1000)
    worst, bad, count = None, None, 0
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
                                                                         "n": n, "d": d})[0, 0])
                    w, xq = rng.standard_normal(d), rng.standard_normal(d)
                    if not sig_of_gram > 0:  # no X^out gives a positive definite Sigma^out
                        continue
                    X = U @ np.diag(np.sqrt(target / sig_of_gram)) @ Vt
                    ev = np.linalg.eigvalsh(gram_unit)
                    spectrum = {"xq_norm2": sympy.Rational(repr(float(xq @ xq))),
                                "w_norm2": sympy.Rational(repr(float(w @ w))),
                                "s_min": sympy.Rational(repr(float(ev.min()))),
                                "s_max": sympy.Rational(repr(float(ev.max())))}
                    zeta = _largest_zeta(F, {**_gd_env(n, d, L), **spectrum})
                    if zeta is None:
                        continue
                    count += 1
                    Z = np.zeros((d + 1, n + 1))
                    Z[:d, :n], Z[:d, n], Z[d, :n] = X, xq, w @ X
                    with torch.no_grad():
                        pred = float(model.predict(torch.tensor(Z).unsqueeze(0))[0])
                    err2 = (pred - w @ xq) ** 2
                    env = {**_gd_env(n, d, L), "zeta": zeta, **spectrum}
                    with mpmath.workdps(30):
                        real = _finite_real(_mp_value(_gd_expr(F, "bound"), env))
                    bound = float(real) if real is not None else float("nan")
                    ratio = err2 / bound if bound > 0 else float("inf")
                    row = {"L": L, "d": d, "n": n, "zeta": float(zeta), "ratio": ratio,
                           "Sigma_out_eigs": ev.tolist()}
                    if worst is None or ratio > worst["ratio"]:
                        worst = row
                    if not ratio <= 1 + 1e-9 and bad is None:
                        bad = {**row, "error_sq": err2, "bound": bound}
    evidence = {"trials_per_size": trials, "admissible": count, "worst": worst}
    if count == 0:  # nothing to compare here (e.g. a window only d = 1 admits); the exact tier
        # decides whether the condition admits anything
        return TierResult("skipped", {"random_instances": evidence},
                          reason="the condition admits no instance drawn")
    return combine([Finding("random_instances", bad is None, evidence, bad,
                            "" if bad is None else "an admissible OOD instance exceeds the bound",
                            _ood_margin(worst))])


def _ood_margin(worst: dict | None) -> Margin | None:
    """The largest error^2 / bound over the admissible instances (``worst``), as a margin."""
    if worst is None:
        return None
    at = {k: worst[k] for k in ("L", "d", "n", "zeta", "w", "x_q") if k in worst}
    return Margin(worst["ratio"], OOD_MEASURE, at)


OOD_EXACT_MAX_L = 10


def ood_exact(point: dict, per_n=None) -> dict | None:
    """What (10)/(30) bound, with Sigma^out = X X^T / n (the correction) and Sigma* = I: the
    error is -w^T (I - a* Sigma^out)^L x_q, so its sup over w, x_q of the given norms and over
    spectra of Sigma^out within [s_min, s_max] is ||w||^2 ||x_q||^2 max(|1 - a* s_min|,
    |1 - a* s_max|)^{2L} ((1 - a s)^{2L} is convex in s; attained along an eigenvector).  None
    where no X^out has those extreme eigenvalues (s_min > s_max; n < d, where s_min = 0; d = 1
    with s_min != s_max) or L > OOD_EXACT_MAX_L.  With Sigma^out := c X X^T instead, c > 0,
    the model's X X^T / n has its spectrum in [s_min, s_max] / (c n): ``per_n(n, d)`` = c n."""
    n, d, L = (int(point[k]) for k in ("n", "d", "L"))
    s_min, s_max = point["s_min"], point["s_max"]
    if not 1 <= L <= OOD_EXACT_MAX_L or s_min > s_max or n < d or (d == 1 and s_min != s_max):
        return None
    if per_n is not None:
        s_min, s_max = s_min / per_n(n, d), s_max / per_n(n, d)
    a = _mp_a_star(L, n, d, mpmath.mp.dps + len(str(n)))
    worst = max(abs(1 - a * s_min), abs(1 - a * s_max)) ** (2 * L)
    return {"bound": point["xq_norm2"] * point["w_norm2"] * worst}


_OOD_EXACT_WORDS = ("the largest error over w, x_q of the given norms and Sigma^out = X X^T / n "
                    "with spectrum in [s_min, s_max]: ||w||^2 ||x_q||^2 max|1 - a* s|^{2L}, at "
                    "L <= 10")


def ood_definition(name: str, mutant: sympy.Basic) -> "ExactValues | tuple[str, str] | None":
    """A mutated Sigma^out := c X X^T (c in n, d; X X^T symmetric, so a transpose changes
    nothing): for c <= 0 it is negative semidefinite, and no X^out meets the window, whose lower
    end (1, or zeta in (0, 1)) is positive: the mutated claim is vacuously true; for c > 0 the
    exact values with the window rescaled by 1 / (c n) (``ood_exact``)."""
    if name != "sigma_out":
        return None
    if isinstance(mutant, sympy.MatMul):
        c, mats = mutant.as_coeff_matrices()
    else:
        c, mats = sympy.Integer(1), [mutant]
    base = mats[0].arg if len(mats) == 1 and isinstance(mats[0], sympy.Transpose) else mats[0]
    if len(mats) != 1 or not isinstance(base, sympy.MatrixSymbol) or base.name != _GRAM.name:
        return None
    if c.is_nonpositive:
        return "true", (f"true: Sigma^out := {mutant} is negative semidefinite for every X^out "
                        f"({c} <= 0 for all sizes), so no X^out meets the window, whose lower "
                        f"end is positive: the mutated claim says nothing (vacuous)")
    if not c.is_positive:
        return None
    sizes = sorted(c.free_symbols, key=lambda s: s.name)
    if any(s.name not in ("n", "d") for s in sizes):
        return None
    per_n = sympy.lambdify([sympy.Symbol("n"), sympy.Symbol("d")],
                           (c * sympy.Symbol("n")).xreplace(
                               {s: sympy.Symbol(s.name) for s in sizes}), "mpmath")
    return ExactValues(lambda point: ood_exact(point, per_n),
                       f"{_OOD_EXACT_WORDS}, with Sigma^out := {mutant}, the window / (c n)")


OOD_EXACT = ExactValues(ood_exact, _OOD_EXACT_WORDS, definition=ood_definition)


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
        exact=OOD_EXACT,
        # a window with s_min > 0 needs X^out of rank d: n >= d examples
        ranges=("n >= d",),
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
    "gatmiry2024.thm_a13", "Restatement of Theorem 4.5 (window ζ Σ* .. (2 - ζ) Σ*)",
    "zeta", "Thm. A.13 (30)",
    r"If $\zeta\Sigma^*\preccurlyeq\Sigma^{out}\preccurlyeq(2-\zeta)\Sigma^*$, the same bound as "
    r"Thm. 4.5.")


