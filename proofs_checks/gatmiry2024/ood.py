"""Out-of-distribution instances: Theorem 4.5 and its restatement A.13, at a general Sigma*.

With u = 0 and A^opt = a* Sigma*^{-1} (``ood_instances``), the forward pass of eqs. (2)-(4) gives
    TF_L - y_q = -w^T (I - S A^opt)^L x_q = -w~^T (I - a* S~)^L x~_q,
    S = X X^T / n,  S~ = Sigma*^{-1/2} S Sigma*^{-1/2},
    w~ = Sigma*^{1/2} w,  x~_q = Sigma*^{-1/2} x_q,
so the error is at most ||w||_{Sigma*} ||x_q||_{Sigma*^{-1}} max_s |1 - a* s|^L over the window
of S~: the norms (10) / (30) print swapped (||x_q||_{Sigma*} ||w||_{Sigma*^{-1}}, the proof's step
at line 799), which agree with these only at Sigma* = c I.  The checks search the bound at exact
instances for Sigma* = I (where the bound is tight) and for anisotropic Sigma* (diag(9, 1/9), or
the covariance given with ``--sigma``), with w, x_q aligned with a relative eigenvector of
Sigma^out (tight for the corrected norms) or along the extreme eigenvectors of Sigma* (where the
printed norms are smallest against the error)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import mpmath
import numpy as np
import sympy
import torch

from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, Margin, combine, settle_le, step
from verify.formulas import FormulaSymbol, NamedFormula, formula_value

from .common import PAPER, _D, _DELTA, _L, _N, _ZETA, _mat, _setting, sec35_delta, single_threaded
from ..kit.looped_icl import looped_model
from ..kit.exact_compare import decide, decide_le, finite_real, mp_value, mpf, size_text
from ..kit import looped_icl as li
from .dominance import _gd_env, _gd_expr
from .flow import _mp_a_star
from .ood_instances import (Covariance, bases, covariance, error_matrix, matrix_text,
                            relative_spectrum, scaled_columns, squared_root, vector_text)


OOD_SETTING = _setting({"n": 20, "d": 2, "L": 2}, fixed_sigma="")
_S_MIN = FormulaSymbol("s_min", positive=True, at_most="s_max")
_S_MAX = FormulaSymbol("s_max", positive=True, near=(1, 2))
_XQ2 = FormulaSymbol("xq_norm2", positive=True)
_W2 = FormulaSymbol("w_norm2", positive=True)
_XQ2_INV = FormulaSymbol("xq_norm2_inv", positive=True)
_W2_SIG = FormulaSymbol("w_norm2_sig", positive=True)
_GRAM = _mat("XXt", symmetric=True)
_OOD_SYMBOLS = (_N, _D, _L, _DELTA, _ZETA, _S_MIN, _S_MAX, _XQ2, _W2, _XQ2_INV, _W2_SIG)
_FACTOR = "(1 + 16*delta*d**(1/(2*L)))**2*(1 + 16*delta*d**(1/(2*L)) - zeta)**(2*L)"
OOD_BOUND = _FACTOR + "*xq_norm2*w_norm2"
OOD_BOUND_CORRECTED = _FACTOR + "*xq_norm2_inv*w_norm2_sig"
OOD_NS = (10 ** 4, 10 ** 8, 10 ** 40, 10 ** 100)
_OOD_R = (sympy.Rational(1, 10), sympy.Rational(1, 2), sympy.Rational(9, 10), sympy.Integer(1),
          sympy.Rational(11, 10), sympy.Rational(13, 10), sympy.Rational(7, 5))
_OOD_R_OUT = (sympy.Integer(3), sympy.Integer(10) ** 4)  # beyond the window (s = 9, 10^8)
# window positions at an anisotropic Sigma*: below it (Thm. A.13's zeta), its lower end, its top
_ANISO_R = (sympy.Rational(1, 2), sympy.Integer(1), sympy.Rational(7, 5))
# Sigma* = B^2, B rational: eigenvalues on both sides of 1, so that each printed norm is below
# its corrected counterpart along one eigen-direction
ANISOTROPIC = (squared_root(sympy.diag(3, sympy.Rational(1, 3)), "diag(9, 1/9)"),)
_NORMS = ("xq_norm2", "w_norm2", "xq_norm2_inv", "w_norm2_sig")


def _largest_zeta(F, env: dict):
    """The largest zeta in (0, 1) the named condition admits at ``env`` (n, d, L, s_min, s_max
    and the norms; the bound decreases in zeta), to 40 bits; None if none."""
    cond = _gd_expr(F, "condition")
    names = sorted(s.name for s in cond.free_symbols if s.name != "zeta")
    return _largest_zeta_at(cond, tuple((k, sympy.sympify(env[k])) for k in names))


@lru_cache(maxsize=4096)
def _largest_zeta_at(cond, items: tuple):
    """``_largest_zeta`` of the condition at the values of its own symbols (memoised: the
    instances share their spectra across n, L and the bases)."""
    env = dict(items)
    at = lambda z: {**env, "zeta": z}  # noqa: E731
    grid = [sympy.Rational(k, 64) for k in range(63, 0, -1)]
    top = next((z for z in grid if decide(cond, at(z))), None)
    if top is None:
        return None
    lo, hi = top, min(top + sympy.Rational(1, 64), 1 - sympy.Rational(1, 2 ** 40))
    if decide(cond, at(hi)):
        return hi
    for _ in range(34):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if decide(cond, at(mid)) else (lo, mid)
    return lo


def _norm_scales(n: int) -> tuple[tuple[sympy.Rational, sympy.Rational], ...]:
    """(c_w, c_x) with w -> c_w w, x_q -> c_x x_q: the error and the bound both scale by
    c_w^2 c_x^2, so the printed bound is tight at every scale; a bound with ||w||^2 or ||x_q||^2
    swapped for n, d, s_max or each other (or delta for a norm) is not, at c = n or 1/n, and
    one with d and ||x_q||^2 swapped is not at c = 10 (at n or 1/n the swap moves delta's
    factor d^{1/(2L)} by as much as the prefactor)."""
    one, ten = sympy.Integer(1), sympy.Integer(10)
    big = sympy.Integer(n) if n > 1 else ten ** 6
    return ((one, one), (big, one), (one, big), (1 / big, one), (one, 1 / big), (ten, one),
            (one, ten))


@dataclass(frozen=True)
class Pair:
    """A task vector w and a query x_q of an instance, with their four weighted norms."""

    w_name: str
    w: sympy.Matrix
    x_name: str
    x: sympy.Matrix

    def norms(self, cov: Covariance) -> dict:
        inv = cov.inverse
        q = lambda v, m: (v.T * m * v)[0, 0]  # noqa: E731
        return {"xq_norm2": q(self.x, cov.sigma), "w_norm2": q(self.w, inv),
                "xq_norm2_inv": q(self.x, inv), "w_norm2_sig": q(self.w, cov.sigma)}


def _pairs(cov: Covariance, V: sympy.Matrix, S: Sequence, a_opt, aligned_all: bool) -> list[Pair]:
    """w = v_i, x_q = Sigma* v_i (whitened, both along the relative eigenvector: the corrected
    bound is attained there) at the eigenvalue farthest from 1 / a* (or at every i); at an
    anisotropic Sigma*, also w and x_q along its largest and smallest eigenvectors u_1, u_d
    (each way round): the printed norms are then smallest against the error."""
    d = cov.d
    far = max(range(d), key=lambda j: abs(1 - a_opt * S[j]))
    out = [Pair(f"v_{i + 1}", V[:, i], f"Sigma* v_{i + 1}", cov.sigma * V[:, i])
           for i in (range(d) if aligned_all else (far,))]
    if not cov.isotropic:
        big, small = cov.U[:, 0], cov.U[:, d - 1]
        out += [Pair("u_1", big, f"u_{d}", small), Pair(f"u_{d}", small, "u_1", big)]
    return out


@dataclass(frozen=True)
class Grid:
    """What one exact search runs over: covariances, sizes, window positions and scales."""

    covariances: tuple
    sizes: tuple  # (d, ns)
    rs: tuple
    scaled: bool  # x also at sqrt(n) times r (the relative spectrum of X X^T / n at r^2)
    unscaled: bool
    aligned_all: bool


def _instances(F, grid: Grid, L: int, norms_matter: bool):
    """(row, violation or None) over the grid at L loops: for each Sigma*, basis V, n and
    window position, X^out = Sigma* V diag(x), the exact error w^T E x_q of each pair against the
    named bound at the largest zeta its condition admits."""
    for cov in grid.covariances:
        for label, V, D in bases(cov):
            for d, ns in grid.sizes:
                if d != cov.d:
                    continue
                for n in ns:
                    root = sympy.Integer(10) ** (len(str(n)) // 2)  # sqrt(n) for n = 10^{2k}
                    digits = len(str(n)) + 40  # a* = 1 - O(1/n): resolved to 10^-40 beyond 1/n
                    a_opt = sympy.Rational(mpmath.nstr(_mp_a_star(L, n, d, digits), digits))
                    scales = ([1] if grid.unscaled else []) + \
                        ([root] if grid.scaled and root > 1 else [])
                    for xs in _positions(grid.rs, d, ordered=not cov.isotropic):
                        for scale in scales:
                            x = scaled_columns(xs, scale, D)
                            yield from _rows(F, cov, label, V, D, n, L, a_opt, x, norms_matter,
                                             grid.aligned_all)


def _positions(rs: Sequence, d: int, ordered: bool) -> list[tuple]:
    """d-tuples of the values: nondecreasing (the diagonal up to order, at Sigma* = c I), or
    every order (at an anisotropic Sigma*, where the order meets different eigen-directions)."""
    if d == 1:
        return [(r,) for r in rs]
    if ordered:
        return [(r1, r2) for r1 in rs for r2 in rs] if d == 2 else \
            [tuple(rs[(i + k) % len(rs)] for i in range(d)) for k in range(len(rs))]
    if d == 2:
        return [(r1, r2) for r1 in rs for r2 in rs if r2 >= r1]
    return [tuple(sorted(rs[(i + k) % len(rs)] for i in range(d))) for k in range(len(rs))]


def _rows(F, cov: Covariance, label: str, V, D, n: int, L: int, a_opt, x: list,
          norms_matter: bool, aligned_all: bool):
    """The rows of one X^out = Sigma* V diag(x): the named condition reads the relative spectrum
    of the named Sigma^out; the error matrix is derived once, when some zeta is admissible."""
    d = cov.d
    X = cov.sigma * V * sympy.diag(*x)
    gram = X * X.T
    sig = sympy.Matrix(formula_value(F["sigma_out"], {"XXt": gram, "n": n, "d": d}))
    ev = relative_spectrum(sig, V, D)
    if ev is None:
        return
    S = [Di * v ** 2 / n for Di, v in zip(D, x)]  # the model's relative spectrum
    spectrum = {**_gd_env(n, d, L), "s_min": ev[0], "s_max": ev[-1]}
    zeta = None if norms_matter else _largest_zeta(F, spectrum)
    if zeta is None and not norms_matter:
        return
    E = None
    for pair in _pairs(cov, V, S, a_opt, aligned_all):
        unit = pair.norms(cov)
        err_unit = None
        for c_w, c_x in _norm_scales(n):
            env = {**spectrum, **{k: v * (c_x if k.startswith("xq") else c_w) ** 2
                                  for k, v in unit.items()}}
            if norms_matter:
                zeta = _largest_zeta(F, env)
                if zeta is None:
                    continue
            if E is None:
                E = error_matrix(X, cov.inverse, n, L, a_opt)
            if err_unit is None:
                err_unit = (pair.w.T * E * pair.x)[0, 0] ** 2
            err2 = err_unit * c_w ** 2 * c_x ** 2
            env["zeta"] = zeta
            yield _compare(F, env, err2, {
                "L": L, "d": d, "n": size_text(n), "Sigma_star": cov.name, "basis": label,
                "X_out": matrix_text(X),
                "Sigma_out_rel_eigs": [mpmath.nstr(mpf(v), 8) for v in ev],
                "zeta": str(zeta) if zeta.q < 10 ** 6 else float(zeta),
                "w": _scaled_text(c_w, pair.w_name, pair.w),
                "x_q": _scaled_text(c_x, pair.x_name, pair.x)}, a_opt, n)


def _compare(F, env: dict, err2, row: dict, a_opt, n: int):
    """(row, violation or None): the exact error^2 against the named bound; a bound <= 0 or not
    real fails; a close call is decided at 80+ digits."""
    with mpmath.workdps(40):
        bound = mp_value(_gd_expr(F, "bound"), env)
        real = finite_real(bound)
        ratio = mpf(err2) / real if real is not None and real > 0 else mpmath.inf
    row = {**row, **{k: mpmath.nstr(mpf(env[k]), 12) for k in _NORMS},
           "error_sq": mpmath.nstr(mpf(err2), 12), "bound": mpmath.nstr(bound, 12),
           "ratio": float(ratio)}
    if real is None:
        row["not_a_real_number"] = True
    violation = None
    if real is None or (mpf(err2) > real and not decide_le(
            sympy.Symbol("e"), sympy.Symbol("b"),
            {"e": err2, "b": sympy.Float(mpmath.nstr(real, 40), 40)})):
        with mpmath.workdps(len(str(n)) + 30):
            a_txt = mpmath.nstr(mpf(a_opt), len(str(n)) + 20)
            e_txt = mpmath.nstr(mpf(err2), len(str(n)) + 20)
        violation = {**row, "error_sq_digits": e_txt, "a_star": a_txt}
    return row, violation


def _scaled_text(c, name: str, v) -> str:
    return (f"{name} = {vector_text(v)}" if c == 1 else f"{_c_text(c)} {name}"
            f" = {_c_text(c)} {vector_text(v)}")


def _c_text(c: sympy.Rational) -> str:
    return ("1" if c == 1 else size_text(int(c))) if c.q == 1 else f"1/{size_text(int(c.q))}"


OOD_MEASURE = "(TF_L - y_q)^2 / the named bound at the largest admissible zeta"


def _user_covariance(ctx: Context) -> Covariance | None:
    """The --sigma covariance as an exact Covariance (None without --sigma)."""
    if ctx.sigma is None or ctx.sigma.kind is None:
        return None
    inst = OOD_SETTING.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("ood-sigma"))
    name = f"{matrix_text(inst.sigma_exact)} (--sigma {ctx.sigma.kind})"
    return covariance(name, inst.sigma_exact, inst.U_exact, inst.eigs_exact)


def _grids(ctx: Context) -> list[tuple[str, Grid]]:
    """The exact searches: at the --sigma covariance alone; otherwise at Sigma* = I (d = 2 at
    large n, where the bound is tight, and d = 1, also at n = 1, where a hypothesis in d or n
    instead of s_max admits) and at the anisotropic ``ANISOTROPIC``."""
    ns = li.by_budget(ctx, OOD_NS[1:], OOD_NS)
    rs = li.by_budget(ctx, _OOD_R[1::2] + _OOD_R[-1:], _OOD_R) + _OOD_R_OUT
    user = _user_covariance(ctx)
    if user is not None:
        sizes = ((user.d, ns),) if user.d > 1 else ((1, (1, *ns[:1])),)
        return [("exact_instances", Grid((user,), sizes, rs, True, True, not user.isotropic))]
    identity = tuple(covariance(f"I_{d}", sympy.eye(d), sympy.eye(d), (1,) * d) for d in (2, 1))
    return [("exact_instances", Grid(identity, ((2, ns), (1, (1, *ns[:1]))), rs, True, True,
                                     False)),
            ("anisotropic_instances", Grid(ANISOTROPIC, ((2, li.by_budget(ctx, ns[1:2], ns[1:3])),),
                                           _ANISO_R, True, False, True))]


def _ood_symbolic(ctx: Context) -> TierResult:
    """Exact instances: X^out = Sigma* V diag(x) (plus zero examples), the exact error of the
    forward pass against the named bound at the largest admissible zeta (ratio > 1 violates);
    x runs inside the window and beyond it on both sides (admissible only under another
    condition), w and x_q over the pairs of ``_pairs`` and the scales of ``_norm_scales``."""
    F = ctx.formulas
    norms_matter = bool(set(_NORMS) & {s.name for s in _gd_expr(F, "condition").free_symbols})
    findings = []
    for name, grid in _grids(ctx):
        rows, worst, bad, count = [], None, None, 0
        for L in li.loops(ctx):
            for row, violation in _instances(F, grid, L, norms_matter):
                count += 1
                if worst is None or row["ratio"] > worst["ratio"]:
                    worst = row
                if violation is not None:
                    bad = bad or violation
                    rows.append(row)
        evidence = {
            "instances": count, "Sigma_star": [c.name for c in grid.covariances],
            "sizes": [{"d": d, "ns": [size_text(n) for n in ns]} for d, ns in grid.sizes],
            "window_values": "r^2 (x_i = r sqrt(n) / sqrt(D_i))" + (", and r^2 / n" if
                                                                   grid.unscaled else "")
            + ", r in " + ", ".join(str(r) for r in grid.rs),
            "norms": "(c_w, c_x) in (1, 1), (n, 1), (1, n), (1/n, 1), (1, 1/n), (10, 1), (1, 10)",
            "ratio": "(TF_L - y_q)^2 / bound at the largest admissible zeta (> 1 violates)",
            "worst": worst, "violations_shown": rows[:5]}
        findings.append(
            Finding(name, None, evidence, reason="the condition admits no instance of the grid")
            if count == 0 else
            Finding(name, bad is None, evidence, bad,
                    "" if bad is None else f"an admissible OOD instance at Sigma* = "
                    f"{bad['Sigma_star']} exceeds the bound", _ood_margin(worst)))
    result = combine(findings, steps=[step(
        "Error of the optimal looped model",
        r"\mathrm{TF}_L-y_q=-w^\top(I-SA^{\mathrm{opt}})^Lx_q=-\tilde w^\top(I-a^*\tilde S)^L"
        r"\tilde x_q,\quad \tilde w=\Sigma^{*1/2}w,\ \tilde x_q=\Sigma^{*-1/2}x_q",
        "from the forward pass at u = 0, A = a* Sigma*^{-1}; S = X X^T / n (the 1/n of eq. (3)) "
        "and S~ = Sigma*^{-1/2} S Sigma*^{-1/2}: the error is at most ||w||_{Sigma*} "
        "||x_q||_{Sigma*^{-1}} max|1 - a* s|^L over the window, the norms the statement prints "
        "the other way round.")])
    if ctx.sigma is not None:
        result.evidence = {**result.evidence, "sigma_read": ctx.sigma.describe()}
    return result


def _numeric_covariances(ctx: Context, rng: np.random.Generator, d: int, trials: int):
    """Sigma* per trial: the --sigma one, or I at the first trial and then random ones
    (eigenvalues log-uniform in [1/10, 10], a random rotation)."""
    if ctx.sigma is not None:
        user = _user_covariance(ctx)
        return [np.array(user.sigma.tolist(), dtype=float)] * trials
    out = [np.eye(d)]
    for _ in range(trials - 1):
        Q, _r = np.linalg.qr(rng.standard_normal((d, d)))
        out.append(Q @ np.diag(10 ** rng.uniform(-1, 1, d)) @ Q.T)
    return out


def _ood_numeric(ctx: Context) -> TierResult:
    """Random instances at practical n with the torch forward pass: Sigma* (--sigma or random),
    X^out with the named Sigma^out's relative spectrum placed inside the window, w and x_q random
    or along the extreme eigenvectors of Sigma*."""
    F = ctx.formulas
    rng = ctx.rng("ood")
    trials = li.by_budget(ctx, 12, 200, 1000)
    worst, bad, count, undecided = None, None, 0, []
    sizes = ((_user_covariance(ctx).d,) if ctx.sigma is not None
             else li.by_budget(ctx, (2,), (2, 3)))
    for L in li.loops(ctx):
        for d in sizes:
            for n in li.by_budget(ctx, (d + 2, 200), (d + 2, 20, 200)):
                a_opt = float(_mp_a_star(L, n, d))
                covs = _numeric_covariances(ctx, rng, d, trials)
                for t, sigma in enumerate(covs):
                    model = looped_model(d, L, a_opt * np.linalg.inv(sigma))
                    found = _numeric_trial(F, rng, sigma, n, d, L, model, adversarial=t % 2 == 1)
                    if found is None:
                        continue
                    row, err2, bound = found
                    count += 1
                    if worst is None or row["ratio"] > worst["ratio"]:
                        worst = row
                    ok, why = settle_le(err2, bound * (1 + 1e-9))
                    if ok is None:
                        undecided.append(why)
                    elif not ok and bad is None:
                        bad = {**row, "error_sq": err2, "bound": bound}
    evidence = {"trials_per_size": trials, "admissible": count, "worst": worst,
                "undecided": undecided[:3]}
    if ctx.sigma is not None:
        evidence["sigma_read"] = ctx.sigma.describe()
    if count == 0:  # nothing to compare here (e.g. a window only d = 1 admits); the exact tier
        # decides whether the condition admits anything
        return TierResult("skipped", {"random_instances": evidence},
                          reason="the condition admits no instance drawn")
    ok = bad is None and (None if undecided else True)  # a NaN anywhere decides nothing
    return combine([Finding("random_instances", False if bad is not None else ok, evidence, bad,
                            undecided[0] if ok is None else
                            "" if bad is None else f"an admissible OOD instance at Sigma* = "
                            f"{bad['Sigma_star']} exceeds the bound", _ood_margin(worst))])


def _numeric_trial(F, rng, sigma: np.ndarray, n: int, d: int, L: int, model, adversarial: bool):
    """One random instance: (row, error^2, bound), or None where the condition admits no zeta."""
    X = rng.standard_normal((d, n))
    target = rng.uniform(0.05, 1.95, d)
    U, _sv, Vt = np.linalg.svd(X, full_matrices=False)
    lam, Us = np.linalg.eigh(sigma)
    root = Us @ np.diag(np.sqrt(lam)) @ Us.T
    c = float(formula_value(F["sigma_out"], {"XXt": sympy.eye(d), "n": n, "d": d})[0, 0])
    if not c > 0:  # no X^out gives a positive definite Sigma^out
        return None
    X = root @ U @ np.diag(np.sqrt(target / c)) @ Vt
    sig = np.array(formula_value(F["sigma_out"], {"XXt": sympy.Matrix(X @ X.T), "n": n, "d": d}
                                 ).tolist(), dtype=float)
    rel = np.linalg.eigvals(np.linalg.solve(sigma, sig))
    if np.abs(rel.imag).max() > 0:
        return None
    rel = np.sort(rel.real)
    if adversarial:
        w, xq = Us[:, -1] * rng.uniform(0.5, 2), Us[:, 0] * rng.uniform(0.5, 2)
    else:
        w, xq = rng.standard_normal(d), rng.standard_normal(d)
    inv = np.linalg.inv(sigma)
    q = lambda v: sympy.Rational(repr(float(v)))  # noqa: E731
    spectrum = {"xq_norm2": q(xq @ sigma @ xq), "w_norm2": q(w @ inv @ w),
                "xq_norm2_inv": q(xq @ inv @ xq), "w_norm2_sig": q(w @ sigma @ w),
                "s_min": q(rel[0]), "s_max": q(rel[-1])}
    zeta = _largest_zeta(F, {**_gd_env(n, d, L), **spectrum})
    if zeta is None:
        return None
    Z = np.zeros((d + 1, n + 1))
    Z[:d, :n], Z[:d, n], Z[d, :n] = X, xq, w @ X
    with torch.no_grad():
        pred = float(model.predict(torch.tensor(Z).unsqueeze(0))[0])
    err2 = (pred - w @ xq) ** 2
    env = {**_gd_env(n, d, L), "zeta": zeta, **spectrum}
    with mpmath.workdps(30):
        real = finite_real(mp_value(_gd_expr(F, "bound"), env))
    bound = float(real) if real is not None else float("nan")
    ratio = err2 / bound if bound > 0 else float("inf")
    row = {"L": L, "d": d, "n": n, "zeta": float(zeta), "ratio": ratio,
           "Sigma_star": np.round(sigma, 6).tolist(), "Sigma_out_rel_eigs": rel.tolist(),
           "w": w.tolist(), "x_q": xq.tolist()}
    return row, err2, (bound if bound > 0 else -1.0)


def _ood_margin(worst: dict | None) -> Margin | None:
    """The largest error^2 / bound over the admissible instances (``worst``), as a margin."""
    if worst is None:
        return None
    at = {k: worst[k] for k in ("L", "d", "n", "Sigma_star", "zeta", "w", "x_q") if k in worst}
    return Margin(worst["ratio"], OOD_MEASURE, at)


OOD_EXACT_MAX_L = 10


def ood_exact(point: dict, per_n: Callable | None = None) -> dict | None:
    """What (10)/(30) bound, with Sigma^out = X X^T / n (the correction): the error is
    -w~^T (I - a* S~)^L x~_q, ||w~||^2 = w_norm2_sig, ||x~_q||^2 = xq_norm2_inv.  Its sup over the
    instances with the point's norms and a relative spectrum of Sigma^out in [s_min, s_max] is
    at most w_norm2_sig xq_norm2_inv max(|1 - a* s_min|, |1 - a* s_max|)^{2L}, attained (w~, x~_q
    along the extreme eigenvector u, d >= 2) where some Sigma* and unit u have u^T Sigma*^{-2} u
    = w_norm2 / w_norm2_sig and u^T Sigma*^2 u = xq_norm2 / xq_norm2_inv, i.e. where their product
    is >= 1 (Cauchy-Schwarz; Sigma* = diag(s1, s2), u = (1, 1)/sqrt 2 reaches every such value).
    Elsewhere w~ = c e_1, x~_q = c' e_2 (Sigma* diagonal) with S~'s eigenvectors at 45 degrees
    attain the product times ((m(s_max) - m(s_min)) / 2)^2, m(s) = (1 - a* s)^L: the pair
    (attained, enclosure).  None where no X^out has those extreme eigenvalues (s_min > s_max;
    n < d, where s_min = 0; d = 1 unless s_min = s_max and the norms agree, as there they must)
    or L > OOD_EXACT_MAX_L.  With Sigma^out := c X X^T instead, c > 0, the model's X X^T / n has
    its relative spectrum in [s_min, s_max] / (c n): ``per_n(n, d)`` = c n."""
    n, d, L = (int(point[k]) for k in ("n", "d", "L"))
    s_min, s_max = point["s_min"], point["s_max"]
    if not 1 <= L <= OOD_EXACT_MAX_L or s_min > s_max or n < d or any(k not in point
                                                                       for k in _NORMS):
        return None
    xq, w, xq_inv, w_sig = (point[k] for k in _NORMS)
    if d == 1 and (s_min != s_max or xq * w != xq_inv * w_sig):
        return None
    if per_n is not None:
        s_min, s_max = s_min / per_n(n, d), s_max / per_n(n, d)
    a = _mp_a_star(L, n, d, mpmath.mp.dps + len(str(n)))
    m = lambda s: (1 - a * s) ** L  # noqa: E731
    enclosure = xq_inv * w_sig * max(abs(m(s_min)), abs(m(s_max))) ** 2
    if xq * w >= xq_inv * w_sig:
        return {"bound": enclosure}
    return {"bound": (xq_inv * w_sig * ((m(s_max) - m(s_min)) / 2) ** 2, enclosure)}


_OOD_EXACT_WORDS = ("the largest error over the instances with the point's four norms and "
                    "Sigma^out = X X^T / n with relative spectrum in [s_min, s_max]: "
                    "||w||^2_{Sigma*} ||x_q||^2_{Sigma*^{-1}} max|1 - a* s|^{2L} where the "
                    "norms allow the aligned worst case, else (attained, that), at L <= 10")


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
        assumptions=("u = 0, A = A^opt = a*(n, d, L) Sigma*^{-1}: with x = Sigma*^{1/2} z the "
                     "population loss at Sigma* (w* ~ N(0, Sigma*^{-1})) is the one at I after "
                     "A -> Sigma*^{1/2} A Sigma*^{1/2}, minimised at a* I",
                     "delta = (8 L d / sqrt(n))^{1/(2L)}", "y_q^out = <w^{out,*}, x_q^out>",
                     "s_min, s_max: the extreme eigenvalues of Sigma*^{-1} Sigma^out (the window "
                     "reads s_min >= its lower end, s_max <= 2 - zeta)"),
        formulas=(
            NamedFormula("sigma_out", "XXt", (_N, _D, _GRAM), equation=equation, shape=("d", "d"),
                         description="Sigma^out := X^out X^out^T"),
            NamedFormula("condition", f"(s_min >= {lower}) & (s_max <= 2 - zeta)", _OOD_SYMBOLS,
                         equation=equation, description="the window of Sigma^out relative to "
                         "Sigma*", weaker="narrower"),
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
            description="Sigma^out := X^out X^out^T / n (the model's empirical covariance), and "
                        "the norms paired as ||x_q^out||^2_{Sigma*^{-1}} ||w^{out,*}||^2_{Sigma*}",
            reason="the model attends with 1/n (eq. (3)), so the error is w^T (I - A X X^T/n)^L "
                   "x_q; with Sigma^out = X X^T the window forces X X^T / n -> 0 and the error "
                   "to ||w|| ||x_q||, above the bound once 16 delta d^{1/(2L)} < zeta.  With "
                   "A^opt = a* Sigma*^{-1} the error is -w~^T (I - a* S~)^L x~_q with "
                   "||w~|| = ||w||_{Sigma*}, ||x~_q|| = ||x_q||_{Sigma*^{-1}}: the proof's step "
                   "at line 799 bounds w^T A^{-1} w by ||w||^2_{Sigma*^{-1}} (and x_q^T A x_q by "
                   "||x_q||^2_{Sigma*}) where A^{-1} ~ Sigma* gives ||w||^2_{Sigma*}",
            formulas={"sigma_out": "XXt/n", "bound": OOD_BOUND_CORRECTED}),
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
