"""Small loss implies closeness to A^opt: Theorem 4.4 and Lemma A.9."""
from __future__ import annotations

from typing import Sequence

import mpmath
import numpy as np
import sympy
import torch

from verify.claim import Claim, Context, TierResult
from verify.evidence import Closest, Finding, combine, step
from verify.formulas import NamedFormula

from ..kit import looped_icl as li
from ..kit.bound import BoundSearch, Family, Line, Point, bound_findings
from ..kit.exact_compare import decide, mp_value, mpf, size_text
from .common import (PAPER, _D, _DELTA, _EPS, _L, _LOSS, _N, _setting, sec35_delta,
                     single_threaded, small_torch)
from .dominance import _gd_env, _gd_expr
from .flow import _mp_a_star


CLOSE_SETTING = _setting({"n": 20, "d": 2, "L": 2})
_CLOSE_SYMBOLS = (_N, _D, _L, _DELTA, _LOSS, _EPS)
CLOSE_NS = (10 ** 4, 10 ** 12, 10 ** 40, 10 ** 100)


RATIO_MEASURE = "max_i |lambda_i / a* - 1| / radius at the smallest admissible epsilon"
_EPS_GRID = tuple(sympy.Rational(1, 2 ** k) for k in range(400, 0, -1)) + tuple(
    sympy.Integer(2 ** k) for k in range(0, 401))  # 2^-400, ..., 2^400


EPS_STRIDE = 16  # the coarse scan of a bounded set of admissible epsilons: every 2^16 in epsilon


def _smallest_eps(F, n, d, L, loss) -> sympy.Rational | None:
    """The smallest admissible epsilon (the radius grows with epsilon, so it is the most
    demanding one), to 40 bits.  The admissible epsilons of Thm. 4.4 / Lemma A.9 are an interval
    [eps_0, infinity) (the upper end of the grid is 2^400); a hypothesis that admits only
    bounded epsilons (a mutant with epsilon^L or d for epsilon^{2L}, whose delta term outgrows
    it) is scanned from 2^-400 up in steps of 2^16 for its first admissible epsilon.  Any
    admissible epsilon is a fair test (the statement holds for each), so a narrow window the
    scan steps over costs sharpness, never soundness."""
    hyp = _gd_expr(F, "hypothesis")
    grid = _EPS_GRID
    ok = lambda e: decide(hyp, _gd_env(n, d, L, loss, e))  # noqa: E731
    if ok(grid[0]):
        return grid[0]
    i_lo, i_hi = 0, len(grid) - 1  # not admissible at i_lo; admissible at i_hi, once found
    if not ok(grid[i_hi]):
        i_hi = next((i for i in range(EPS_STRIDE, len(grid) - 1, EPS_STRIDE) if ok(grid[i])), None)
        if i_hi is None:
            return None
        i_lo = i_hi - EPS_STRIDE
    while i_lo + 1 < i_hi:
        mid = (i_lo + i_hi) // 2
        i_lo, i_hi = (i_lo, mid) if ok(grid[mid]) else (mid, i_hi)
    lo, hi = grid[i_lo], grid[i_hi]
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if decide(hyp, _gd_env(n, d, L, loss, mid)) else (mid, hi)
    return hi


def _close_ratio(F, n, d, L, lam: Sequence, loss, a_opt) -> dict | None:
    """max_i |lambda_i / a* - 1| / radius(eps_0) at the most demanding admissible epsilon (> 1
    violates (1 - r) A^opt <= A <= (1 + r) A^opt; a radius <= 0 admits no A at all, so its ratio
    is infinite); None when no epsilon is admissible."""
    eps = _smallest_eps(F, n, d, L, loss)
    if eps is None:
        return None
    env = _gd_env(n, d, L, loss, eps)
    with mpmath.workdps(40):
        r = mp_value(_gd_expr(F, "radius"), env)
        dev = max(abs(mpf(x) / a_opt - 1) for x in lam)
        ratio = dev / r if r > 0 else mpmath.inf
        return {"ratio": ratio, "deviation": dev, "radius": r, "epsilon": eps}


def _ratio_out(ratio) -> float | str:
    """A ratio for the JSON evidence (JSON has no infinity)."""
    return float(ratio) if mpmath.isfinite(ratio) else "inf (the radius is not positive)"


def _close_points(L: int, n: int, d: int, a_opt: mpmath.mpf) -> list:
    """Diagonal A: the scalar family a* (1 + s) I, and (d = 2, 3) one eigenvalue moved, as exact
    rationals (with the exact loss).  The shifts run from 10^-16 to 10^12 and down to -10^6
    (negative eigenvalues): far from A^opt the loss is large and so is the admissible epsilon,
    and a hypothesis that no longer ties epsilon to the loss is caught there.  The largest
    shifts catch an epsilon that grows slower than the deviation s: the loss grows like s^{2L},
    so L(A, 0) <= epsilon^{3L}/2 admits epsilon ~ s^{2/3}, below s / c once s^{1/3} > c."""
    a_q = sympy.Rational(mpmath.nstr(a_opt, 40))
    shifts = [sympy.Rational(sg, 10 ** k) for k in (1, 2, 4, 8, 16) for sg in (1, -1)] + [
        sympy.Integer(-1), sympy.Rational(-1, 2), sympy.Rational(1, 2), sympy.Integer(1),
        sympy.Integer(9), sympy.Integer(99), sympy.Integer(-3)] + [
        sympy.Integer(10) ** k for k in (3, 6, 9, 12)] + [-sympy.Integer(10) ** 6]
    pts = [("scalar", [a_q * (1 + sh)] * d) for sh in shifts]
    if d in (2, 3):
        pts += [("one_moved", [a_q * (1 + sh)] + [a_q] * (d - 1)) for sh in shifts]
    return pts


def _close_loss(L: int, n: int, lam: Sequence) -> sympy.Rational:
    d = len(lam)
    if len(set(lam)) == 1:
        return li.scalar_poly(L, n, d).eval(lam[0])
    C = li.derived_loss(L, isotropic=True, with_u=False)
    return li.exact_value(C, {"A": sympy.diag(*lam), "Sigma": sympy.eye(d)}, n)


def _close_point(F, L: int, n: int, d: int, a_opt, kind: str, lam: Sequence) -> Point | None:
    """max_i |lambda_i / a* - 1| at A = diag(lam), at the smallest admissible epsilon (None: no
    epsilon is admissible)."""
    loss = _close_loss(L, n, lam)
    eps = _smallest_eps(F, n, d, L, loss)
    if eps is None:
        return None
    with mpmath.workdps(40):
        dev = max(abs(mpf(x) / a_opt - 1) for x in lam)
    return Point(_gd_env(n, d, L, loss, eps), dev, {"L": L, "d": d, "n": size_text(n), "at": kind},
                 {"A_eigenvalues_over_a_star": [mpmath.nstr(mpf(x) / a_opt, 12) for x in lam],
                  "loss": str(loss), "epsilon": str(eps), "A_opt": "a* I",
                  "a_star": mpmath.nstr(a_opt, 30), "Sigma_star": "I_d"})


def _close_lines(F, ctx: Context):
    for L in li.loops(ctx):
        for d in li.by_budget(ctx, (1, 2, 10), (1, 2, 3, 10, 1000)):
            for n in li.by_budget(ctx, CLOSE_NS[1::2], CLOSE_NS):
                a_opt = _mp_a_star(L, n, d, 40)
                yield Line(f"L={L},d={d},n={size_text(n)}", _close_points(L, n, d, a_opt),
                           lambda p, L=L, n=n, d=d, a=a_opt: _close_point(F, L, n, d, a, *p))


CLOSE_SEARCH = BoundSearch("max_i |lambda_i / a* - 1|", "radius", "<=", (Family(
    "exact_search", "Sigma* = I (the statement is invariant under A -> Sigma*^{1/2} A "
    "Sigma*^{1/2}), A^opt = a* I, diagonal A (the loss is orthogonally invariant): the scalar "
    "family a* (1 + s) I and one eigenvalue moved, at the smallest admissible epsilon",
    _close_lines, "(1 - r) A^opt <= A <= (1 + r) A^opt"),),
    hypothesis="hypothesis", inline=("delta",), key="deviation")


def _close_symbolic(ctx: Context) -> TierResult:
    """Exact search (``kit.bound``): the deviation of A from A^opt against the named radius."""
    return combine(bound_findings(CLOSE_SEARCH, ctx),
                   steps=[step("Most demanding epsilon",
                               r"\epsilon_0=\inf\{\epsilon: \text{hypothesis}\}",
                               "the radius grows with epsilon, so the statement holds for every "
                               "admissible epsilon iff it holds at the smallest one (found by "
                               "bisection, exact comparisons at 80 digits)")])


def _close_numeric(ctx: Context) -> TierResult:
    """Random diagonal spectra at practical n (float64 loss, the ratio at the smallest admissible
    epsilon in mpmath): where the hypothesis admits epsilon at all."""
    F = ctx.formulas
    rng = ctx.rng("close")
    samples = li.by_budget(ctx, 60, 300, 2000)
    rows, closest, bad = [], None, None
    near = Closest(RATIO_MEASURE)
    for L in li.loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        for d in (2, 3):
            for n in (10, 100, 10 ** 4):
                a_opt = _mp_a_star(L, n, d, 30)
                lam = float(a_opt) * (1 + rng.uniform(-0.5, 0.5, (samples, d)))
                with small_torch():
                    t = torch.tensor(lam, dtype=torch.float64)
                    loss = C.evaluate({"A": torch.diag_embed(t)}, {"n": n, "d": d}).numpy()
                best, admitted = None, 0
                score = np.abs(lam / float(a_opt) - 1).max(1) / loss ** (1 / (2 * L))
                for i in np.argsort(-score)[:20]:
                    lam_q = [sympy.Rational(repr(float(x))) for x in lam[i]]
                    r = _close_ratio(F, n, d, L, lam_q, sympy.Rational(repr(float(loss[i]))),
                                     a_opt)
                    if r is None:
                        continue
                    admitted += 1
                    if best is None or r["ratio"] > best[0]:
                        best = (r["ratio"], i)
                if best is None:
                    continue
                row = {"L": L, "d": d, "n": n, "max_ratio": _ratio_out(best[0]),
                       "A_eigenvalues": lam[best[1]].tolist(), "loss": float(loss[best[1]])}
                rows.append(row)
                near.see(best[0], {"L": L, "d": d, "n": n})
                if closest is None or best[0] > closest_ratio:
                    closest, closest_ratio = row, best[0]
                if best[0] > 1 and bad is None:
                    bad = row
    return combine([Finding("search_at_practical_sizes", bad is None, {
        "samples_per_size": samples, "closest_approach": closest, "rows": rows}, bad,
        "" if bad is None else "an admissible A lies outside the named sandwich", near.margin,
        tested=bool(rows))])


THM4_4 = Claim(
    id="gatmiry2024.thm4_4",
    title="Small loss implies closeness to the optimum",
    paper=PAPER,
    statement=r"For $\epsilon>4\delta$, if $L(A,0)\le\epsilon^{2L}/2$ then, for "
              r"$c=4+16d^{1/(2L)}$, "
              r"$(1-c\epsilon)A^{opt}\preccurlyeq A\preccurlyeq(1+c\epsilon)A^{opt}$.",
    assumptions=("u = 0; checked at Sigma* = I (the statement is invariant under A -> "
                 "Sigma*^{1/2} A Sigma*^{1/2}), A^opt = a* I", "A symmetric",
                 "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=(
        NamedFormula("hypothesis", "(epsilon > 4*delta) & (loss <= epsilon**(2*L)/2)",
                     _CLOSE_SYMBOLS, equation="Thm. 4.4", description="epsilon > 4 delta and "
                     "L(A, 0) <= epsilon^{2L} / 2", weaker="narrower"),
        sec35_delta(),
        NamedFormula("radius", "(4 + 16*d**(1/(2*L)))*epsilon", _CLOSE_SYMBOLS,
                     equation="Thm. 4.4", description="c epsilon", weaker="larger"),
    ),
    checks={"symbolic": _close_symbolic, "numeric": single_threaded(_close_numeric)},
    setting=CLOSE_SETTING,
)

LEMMA_A9 = Claim(
    id="gatmiry2024.lemma_a9",
    title="Small loss implies closeness to the optimum (appendix form)",
    paper=PAPER,
    statement=r"For $\epsilon>2\delta$, if $L(A,0)\le\epsilon^{2L}-\delta^{2L}(\epsilon+2)^{2L}$ "
              r"then $(1-(4\epsilon+16\delta d^{1/(2L)}))A^{opt}\preccurlyeq A\preccurlyeq"
              r"(1+(4\epsilon+16\delta d^{1/(2L)}))A^{opt}$.",
    assumptions=THM4_4.assumptions,
    formulas=(
        NamedFormula("hypothesis", "(epsilon > 2*delta) & "
                     "(loss <= epsilon**(2*L) - delta**(2*L)*(epsilon + 2)**(2*L))",
                     _CLOSE_SYMBOLS, equation="Lemma A.9",
                     description="the conditions on epsilon and L(A, 0)", weaker="narrower"),
        sec35_delta(),
        NamedFormula("radius", "4*epsilon + 16*delta*d**(1/(2*L))", _CLOSE_SYMBOLS,
                     equation="Lemma A.9", description="the radius of the sandwich",
                     weaker="larger"),
    ),
    checks={"symbolic": _close_symbolic, "numeric": single_threaded(_close_numeric)},
    setting=CLOSE_SETTING,
    notes="The proof ends with 'Combining this with Equation (??)' (a dangling reference).",
)


