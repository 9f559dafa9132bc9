"""Steps of the proofs of Lemma A.10 and Thm. A.11 (lines 702-730): the bound on the lambda_1
term (line 702), the choice of epsilon (line 725) and the dominance (28) it feeds.

The checks evaluate the printed relations exactly (``kit.bound``, 80+ digits) over grids
of the quantities they speak of: spectra of A^{1/2} Sigma* A^{1/2} (line 702), (n, d, L,
epsilon) (line 725), and for (28) the loss and squared gradient of the scalar family A = a I at
Sigma* = I (``dominance.scalar_point``: f(a) and f'(a)^2 / d from the derived loss), where the
hypothesis admits them at its largest epsilon."""
from __future__ import annotations

import mpmath
import sympy

from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit import looped_icl as li
from ..kit.bound import BoundSearch, Family, Line, Point, bound_findings, search_finding
from ..kit.exact_compare import holds, mpf, size_text, value
from .common import _D, _DELTA, _EPS, _L, _LAM_1, _LOSS, _N, PAPER, _setting, sec35_delta
from .dominance import GD_N, _gd_env, _gd_expr, scalar_point

DOM_PROOF_SETTING = _setting({"n": 20, "d": 3, "L": 2})
_MAX_DEV = FormulaSymbol("max_dev", positive=True)
_EPS_SYMBOLS = (_N, _D, _L, _DELTA, _EPS)


def _relation_finding(F, ctx: Context, name: str, points, what: str, says: str,
                      lhs: str = "lhs", rhs: str = "rhs") -> Finding:
    """lhs <= rhs (the named formulas, exactly) at every point the named hypothesis admits
    (``kit.bound``); ``points`` yields (env, row) pairs."""
    line = Line("points", [Point(env, None, row) for env, row in points], lambda p: p)
    spec = BoundSearch(lhs, rhs, "<=", (Family(name, what, lambda F, ctx: [line], says),),
                       hypothesis="hypothesis", inline=("delta",), named=lhs)
    return search_finding(spec, spec.families[0], F, ctx)


# ----- line 725 ---------------------------------------------------------------------------------
_EPS_NS = (10 ** 4, 10 ** 8, 1024 * 10 ** 8)
_EPS_DIMS = (1, 2, 4, 1000)


def _half_edge(d: int, L: int) -> int:
    """The n at which delta d^{1/(2L)} = 1/2 (delta of Sec. 3.5): sqrt(n) = 8 L d^2 4^L."""
    return (8 * L * d * d * 4 ** L) ** 2


def _eps_points(F, ctx: Context):
    """Over n (1, 2, 3, fixed ones and around the edge delta d^{1/(2L)} = 1/2, where the corrected
    relation is tight), d, L (up to 3), delta from the named formula: epsilon = 4 delta
    d^{t/(2L)} (1 + 2^-j) for t = 0, 1/2, 1 and j = 1, 30, and epsilon = 1/2 and 2^k,
    k = 0, 1, 2, 4, 8, 16."""
    fixed = [sympy.Rational(1, 2)] + [sympy.Integer(2) ** k for k in (0, 1, 2, 4, 8, 16)]
    for L in sorted(set(li.loops(ctx)) | {3}):
        for d in _EPS_DIMS:
            e = _half_edge(d, L)
            for n in sorted({1, 2, 3, *_EPS_NS, e // 4, e + 1, 4 * e} - {0}):
                env0 = _gd_env(n, d, L)
                eps_list = []
                with mpmath.workdps(40):
                    delta = value(F["delta"], env0)
                    if mpmath.isfinite(delta) and delta > 0:
                        eps_list = [
                            sympy.Rational(mpmath.nstr(4 * delta * mpmath.mpf(d) ** (
                                mpmath.mpf(t) / (2 * L)) * (1 + mpmath.mpf(2) ** -j), 35))
                            for t in (0, 0.5, 1) for j in (1, 30)]
                for eps in eps_list + fixed:
                    yield {**env0, "epsilon": eps}, {"L": L, "d": d, "n": size_text(n),
                                                     "epsilon": mpmath.nstr(mpf(eps), 12)}


def _eps_exact(point: dict) -> dict | None:
    """Each side of the relation at the point (delta by its definition): lhs must be at least
    d delta^{2L} (eps + 2)^{2L}, rhs at most eps^{2L}."""
    L, d, eps, delta = (point[k] for k in ("L", "d", "epsilon", "delta"))
    return {"lhs": d * delta ** (2 * L) * (eps + 2) ** (2 * L), "rhs": eps ** (2 * L)}


def _eps_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    return combine([_relation_finding(F, ctx, "exact_grid", _eps_points(F, ctx),
                                      "n, d, L and epsilon around 4 delta d^{t/(2L)}",
                                      "eps^{2L} >= d delta^{2L} (eps + 2)^{2L} (line 725)",
                                      lhs="rhs", rhs="lhs")],
                   steps=[step("The relation", r"\epsilon^{2L}\ge d\delta^{2L}(\epsilon+2)^{2L}",
                               "exact at 80+ digits, delta from Sec. 3.5")])


THM_A11_EPSILON_STEP = Claim(
    id="gatmiry2024.thm_a11_epsilon_step",
    title="Proof of Thm. A.11 (line 725): ε > 4 δ gives ε²ᴸ ≥ d δ²ᴸ "
          "(ε + 2)²ᴸ", paper=PAPER,
    statement=r"For $\epsilon>4\delta$ we have $\epsilon^{2L}\ge d\delta^{2L}(\epsilon+2)^{2L}$ "
              r"(so that Lemma A.10 applies).",
    assumptions=("delta = (8 L d / sqrt(n))^{1/(2L)}",),
    formulas=(NamedFormula("hypothesis", "epsilon > 4*delta", _EPS_SYMBOLS, equation="line 725",
                           description="epsilon > 4 delta", weaker="narrower"),
              sec35_delta(),
              NamedFormula("lhs", "epsilon**(2*L)", _EPS_SYMBOLS, equation="line 725",
                           description="epsilon^{2L}", weaker="larger"),
              NamedFormula("rhs", "d*delta**(2*L)*(epsilon + 2)**(2*L)", _EPS_SYMBOLS,
                           equation="line 725", description="d delta^{2L} (epsilon + 2)^{2L}",
                           weaker="smaller")),
    checks={"symbolic": _eps_symbolic}, setting=DOM_PROOF_SETTING,
    exact=ExactValues(_eps_exact, "each side of eps^{2L} >= d delta^{2L} (eps + 2)^{2L} at the "
                      "point (the other side as printed)"),
    correction=Correction(
        description="epsilon > 4 delta d^{1/(2L)}, with delta d^{1/(2L)} <= 1/2",
        reason="eps^{2L} >= d delta^{2L} (eps + 2)^{2L} is eps / (eps + 2) >= d^{1/(2L)} delta: "
               "the factor d^{1/(2L)} is missing (L = 1, d = 4, delta = 0.01, eps = 0.0401: "
               "1.608e-3 < 1.665e-3); with x = delta d^{1/(2L)} <= 1/2, eps >= 4x gives it",
        formulas={"hypothesis": "(epsilon > 4*delta*d**(1/(2*L))) & "
                                "(delta*d**(1/(2*L)) <= 1/2)"}),
)


# ----- eq. (28) ---------------------------------------------------------------------------------
_EQ28_DIMS = (1, 2, 10, 10 ** 4, 10 ** 8)
_EQ28_AS = (sympy.Rational(1, 2), sympy.Integer(-1), sympy.Integer(3),
            1 - sympy.Rational(1, 2 ** 8))
# the minimiser a* I (zero gradient) at sizes where the threshold 2 (4 delta)^{2L} admits f(a*)
_EQ28_MINIMISERS = ((1, 10 ** 8, 10 ** 8), (1, 10 ** 4, 10 ** 5))


def _largest_eps_wide(F, n: int, d: int, L: int, loss):
    """The largest epsilon in (0, 2^60] the named hypothesis admits at the loss, to 40 bits
    (eps > 4 delta is large at small n: the threshold's epsilons are not bounded by 1 here)."""
    hyp = _gd_expr(F, "hypothesis")
    at = lambda e: {**_gd_env(n, d, L, loss, e)}  # noqa: E731
    lo = next((sympy.Integer(2) ** k for k in range(60, -41, -1) if holds(hyp, at(
        sympy.Integer(2) ** k))), None)
    if lo is None:
        return None
    hi = 2 * lo
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if holds(hyp, at(mid)) else (lo, mid)
    return lo


def _eq28_point(F, L: int, n: int, d: int, a) -> Point | None:
    """||grad||^2 = f'(a)^2 / d at A = a I, at the largest epsilon the named hypothesis admits
    (None: it admits none)."""
    loss, g2 = scalar_point(L, n, d, a)
    eps = _largest_eps_wide(F, n, d, L, loss)
    if eps is None:
        return None
    return Point(_gd_env(n, d, L, loss, eps), g2,
                 {"L": L, "d": d, "n": size_text(n), "A": f"{mpmath.nstr(mpf(a), 15)} I"},
                 {"epsilon": mpmath.nstr(mpf(eps), 12), "loss": mpmath.nstr(mpf(loss), 12)})


def _eq28_lines(F, ctx: Context):
    points = [(L, GD_N, d, a) for L in li.loops(ctx) for d in _EQ28_DIMS for a in _EQ28_AS]
    points += [(L, n, d, li.a_star_rational(n, d, L)) for L, n, d in _EQ28_MINIMISERS]
    return [Line("A = a I", points, lambda p: _eq28_point(F, *p))]


EQ28_SEARCH = BoundSearch("||grad L(A, 0)||_F^2", "rhs", ">=", (Family(
    "scalar_family", "A = a I at n = 10^100 (d up to 10^8) and the minimiser a* I where its loss "
    "is above the threshold, at the largest epsilon the named hypothesis admits", _eq28_lines,
    "||grad L||^2 >= the named bound"),),
    hypothesis="hypothesis", inline=("delta",), key="grad_sq")


def _eq28_symbolic(ctx: Context) -> TierResult:
    """A = a I at n = 10^100 (d up to 10^8) and the minimiser a* I where its loss is above the
    threshold: ||grad||^2 = f'(a)^2 / d against the named bound (``kit.bound``)."""
    return combine(bound_findings(EQ28_SEARCH, ctx),
                   steps=[step("Gradient at a I", r"\|\nabla_AL(aI,0)\|_F^2=f'(a)^2/d",
                               "exact polynomials in n, d (dominance.scalar_point); the largest "
                               "epsilon the hypothesis admits by bisection")])


def _eq28_exact(point: dict) -> dict | None:
    """On the family the checks search, A = a I at Sigma* = I: the least ||grad L||^2 = f'(a)^2/d
    over the a with f(a) = loss (the real roots of f - loss, at 50 digits); None where no a I has
    that loss (below f(a*)) or L > 6."""
    n, d, L = (int(point[k]) for k in ("n", "d", "L"))
    if not 1 <= L <= 6 or d > 10 ** 6:
        return None
    f = li.scalar_poly(L, n, d)
    fp = f.diff(li.a_sym)
    with mpmath.workdps(50):
        coeffs = [mpf(c) for c in f.all_coeffs()]
        coeffs[-1] -= point["loss"]
        try:
            roots = mpmath.polyroots(coeffs, maxsteps=200, extraprec=200)
        except mpmath.libmp.NoConvergence:
            return None
        real = [r.real for r in roots if abs(mpmath.im(r)) < mpmath.mpf(10) ** -30]
        if not real:
            return None
        cp = [mpf(c) for c in fp.all_coeffs()]
        return {"rhs": min(mpmath.polyval(cp, a) ** 2 / d for a in real)}


_GD28_SYMBOLS = (_N, _D, _L, _DELTA, _LOSS, _EPS)
EQ28 = Claim(
    id="gatmiry2024.eq28", title="Eq. (28): Lemma A.10 as applied in the proof of Thm. A.11",
    paper=PAPER,
    statement=r"For $\epsilon>4\delta$, if $L(A,0)\ge2\epsilon^{2L}$ then $\|\nabla L(A,0)\|^2"
              r"\ge\frac14\epsilon^{4L-2}$.",
    assumptions=("Sigma* = I, u = 0", "delta = (8 L d / sqrt(n))^{1/(2L)}",
                 "checked along A = a I and at the minimiser a* I (the exact values for mutate "
                 "speak of that family only)"),
    formulas=(NamedFormula("hypothesis", "(epsilon > 4*delta) & (loss >= 2*epsilon**(2*L))",
                           _GD28_SYMBOLS, equation="(28)", description="the conditions",
                           weaker="narrower"),
              sec35_delta(),
              NamedFormula("rhs", "epsilon**(4*L - 2)/4", _GD28_SYMBOLS, equation="(28)",
                           description="||grad L(A, 0)||^2 >= rhs", weaker="smaller")),
    checks={"symbolic": _eq28_symbolic}, setting=DOM_PROOF_SETTING,
    exact=ExactValues(_eq28_exact, "the least ||grad L(aI, 0)||^2 = f'(a)^2 / d over the a with "
                      "f(a) = loss (A = a I, Sigma* = I, the family the checks search), L <= 6"),
    correction=Correction(
        description="||grad L(A, 0)||^2 >= epsilon^{4L-2} / (4 d^{(L-1)/L}), with Lemma A.10's "
                    "4 d delta^{4L-2} <= 1",
        reason="(28) is Lemma A.10, whose Hoelder step gives only the factor d^{-(L-1)/L} "
               "(at A = a I and large n ||grad||^2 / eps^{4L-2} -> 64 L^2 d^{(1-L)/L} 2^{(2L-1)/L}"
               " / 4 ...); and eps > 4 delta does not give the lemma's condition "
               "4 d delta^{4L-2} <= 1, without which the threshold admits the minimiser a* I, "
               "where the gradient vanishes",
        formulas={"rhs": "epsilon**(4*L - 2)/(4*d**((L - 1)/L))",
                  "hypothesis": "(epsilon > 4*delta) & (loss >= 2*epsilon**(2*L)) & "
                                "(4*d*delta**(4*L - 2) <= 1)"}),
)


# ----- line 702 ---------------------------------------------------------------------------------
_L1_SYMBOLS = (_N, _D, _L, _DELTA, _EPS, _LAM_1, _MAX_DEV)
_SPEC = tuple(sympy.Rational(v) for v in ("1/8", "1/2", "3/4", "9/10", "1", "11/10", "5/4", "3/2",
                                          "2", "3"))


def _size_edge(d: int, L: int) -> int:
    """The smallest n with 4 d delta^{4L-2} <= 1 (Lemma A.10's size condition), delta^{2L} =
    8 L d / sqrt(n): sqrt(n) >= 8 L d (4 d)^{L/(2L-1)}."""
    root = mpmath.mpf(8 * L * d) * mpmath.mpf(4 * d) ** (mpmath.mpf(L) / (2 * L - 1))
    return int(mpmath.ceil(root ** 2)) + 1


def _l1_points(ctx: Context):
    """Spectra of A^{1/2} Sigma* A^{1/2} by their largest eigenvalue lambda_1 and smallest
    lambda_d (max_dev = max |lambda_i - 1| is at one of them), n, d, L, and epsilon over
    (0, 1]; then the edge of the hypotheses: n at the size condition, epsilon = 8 delta
    d^{3/(4L)} and max_dev = epsilon / d^{1/(2L)} on either side of 1."""
    yield from _l1_edge_points(ctx)
    for L in li.loops(ctx):
        for d in (1, 2, 3):
            for n in (10 ** 8, 10 ** 40):
                env0 = _gd_env(n, d, L)
                for lam1 in _SPEC:
                    for lam_d in (_SPEC if d > 1 else (lam1,)):
                        if lam_d > lam1:
                            continue
                        dev = max(abs(lam1 - 1), abs(lam_d - 1))
                        # epsilon off the grid's deviations |lambda - 1| (no exact ties:
                        # a tie with an irrational side is decided by exact arithmetic, slowly)
                        for eps in (sympy.Rational(1, 97), sympy.Rational(1, 11),
                                    sympy.Rational(3, 7), sympy.Rational(99, 100)):
                            yield ({**env0, "lambda_1": lam1, "max_dev": dev, "epsilon": eps},
                                   {"L": L, "d": d, "n": size_text(n), "lambda_1": str(lam1),
                                    "lambda_d": str(lam_d), "epsilon": str(eps)})


def _l1_edge_points(ctx: Context):
    for L in li.loops(ctx):
        for d in (1, 2, 3):
            for n in (_size_edge(d, L), 10 * _size_edge(d, L)):
                env0 = _gd_env(n, d, L)
                with mpmath.workdps(40):
                    delta = (mpmath.mpf(8 * L * d) / mpmath.sqrt(n)) ** (mpmath.mpf(1) / (2 * L))
                    eps = 8 * delta * mpmath.mpf(d) ** (mpmath.mpf(3) / (4 * L)) * (1 + 1e-20)
                    dev = eps / mpmath.mpf(d) ** (mpmath.mpf(1) / (2 * L)) * (1 + 1e-20)
                eps, dev = (sympy.Rational(mpmath.nstr(v, 35)) for v in (eps, dev))
                for lam1 in (1 + dev, sympy.Integer(1)):
                    yield ({**env0, "lambda_1": lam1, "max_dev": dev, "epsilon": eps},
                           {"L": L, "d": d, "n": size_text(n), "lambda_1": mpmath.nstr(mpf(lam1),
                                                                                     12),
                            "max_dev": mpmath.nstr(mpf(dev), 12),
                            "epsilon": mpmath.nstr(mpf(eps), 12)})


def _l1_symbolic(ctx: Context) -> TierResult:
    return combine([_relation_finding(ctx.formulas, ctx, "spectra", _l1_points(ctx),
                                      "spectra of A^{1/2} Sigma* A^{1/2}",
                                      "d delta^{4L} (lambda_1 + 1)^{4L-2} <= the named bound "
                                      "(line 702)")],
                   steps=[step("The step", r"d\delta^{4L}(\lambda_1+1)^{4L-2}\le\tfrac14"
                               r"(\lambda_1-1)^{4L-2}", "exact over spectra where the lemma's "
                               "hypotheses and max_i |lambda_i - 1| >= eps / d^{1/(2L)} hold")])


def _l1_exact(point: dict) -> dict | None:
    """Each side of the step at the point (delta by its definition): lhs must be at most
    max_dev^{4L-2} / 4 (the corrected bound), rhs at least d delta^{4L} (lambda_1 + 1)^{4L-2};
    None where lambda_1 and max_dev are no spectrum (max_dev < |lambda_1 - 1|)."""
    L, d, lam1, dev, delta = (point[k] for k in ("L", "d", "lambda_1", "max_dev", "delta"))
    if dev < abs(lam1 - 1):
        return None
    return {"lhs": dev ** (4 * L - 2) / 4, "rhs": d * delta ** (4 * L) * (lam1 + 1) ** (4 * L - 2)}


LEMMA_A10_LAMBDA1_STEP = Claim(
    id="gatmiry2024.lemma_a10_lambda1_step",
    title="Proof of Lemma A.10 (line 702): d δ⁴ᴸ (λ₁ + 1)⁴ᴸ⁻² ≤ "
          "(λ₁ - 1)⁴ᴸ⁻² / 4", paper=PAPER,
    statement=r"Under $8\delta d^{3/(4L)}\le\epsilon\le1$, $4d\delta^{4L-2}\le1$ and "
              r"$\max_i|\lambda_i-1|\ge\epsilon/d^{1/(2L)}$: $d\delta^{4L}(\lambda_1+1)^{4L-2}"
              r"\le\frac14(\lambda_1-1)^{4L-2}$.",
    assumptions=("lambda_1 >= ... >= lambda_d > 0 the eigenvalues of A^{1/2} Sigma* A^{1/2}",
                 "max_dev = max_i |lambda_i - 1|", "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=(NamedFormula("hypothesis", "(8*delta*d**(3/(4*L)) <= epsilon) & (epsilon <= 1) & "
                           "(4*d*delta**(4*L - 2) <= 1) & (max_dev >= epsilon/d**(1/(2*L)))",
                           _L1_SYMBOLS, equation="Lemma A.10; line 694",
                           description="the lemma's conditions and line 694's conclusion",
                           weaker="narrower"),
              sec35_delta(),
              NamedFormula("lhs", "d*delta**(4*L)*(lambda_1 + 1)**(4*L - 2)", _L1_SYMBOLS,
                           equation="line 702", description="d delta^{4L} (lambda_1 + 1)^{4L-2}",
                           weaker="smaller"),
              NamedFormula("rhs", "(lambda_1 - 1)**(4*L - 2)/4", _L1_SYMBOLS,
                           equation="line 702", description="the bound", weaker="larger")),
    checks={"symbolic": _l1_symbolic}, setting=DOM_PROOF_SETTING,
    exact=ExactValues(_l1_exact, "each side of the step at the point (the other side as "
                      "corrected)"),
    correction=Correction(
        description="(max_i |lambda_i - 1|)^{4L-2} / 4",
        reason="the step takes |lambda_1 - 1| = max_i |lambda_i - 1| (printed max_i |lambda_1 - "
               "1|): false when the farthest eigenvalue is below 1 (lambda_1 = 1, lambda_d = 1/2: "
               "the bound is 0); with m = max_i |lambda_i - 1|, lambda_1 + 1 <= m + 2 and the "
               "proof's (1 + 2/m)^{4L-2} <= 1 / (4 d delta^{4L}) give it, and "
               "sum_i (lambda_i - 1)^{4L-2} >= m^{4L-2} carries the next line",
        formulas={"rhs": "max_dev**(4*L - 2)/4"}),
)
