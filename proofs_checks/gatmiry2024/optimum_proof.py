"""Around the global optimum: the tightness remarks of Sec. 3.7 (lines 169, 179), steps of the
proof of Thm. A.8 (lines 593, 599) and the gradient moment of the proof of Lemma A.9 (line 668).

All at Sigma* = I (the statements are about A^{1/2} Sigma* A^{1/2}, whose spectrum a whitening
keeps) and A = a I, where the loss is the exact polynomial f(a) = E tr (I - a W / n)^{2L}
(``kit.looped_icl.scalar_poly``, from the forward pass) and E[Sigma (I - a Sigma)^{2L-1}] =
-f'(a) / (2 L d) I."""
from __future__ import annotations

import mpmath
import sympy

from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import combine, step
from verify.formulas import NamedFormula, size_symbol

from ..kit import looped_icl as li
from ..kit.exact_compare import holds, mpf, real_le, size_text, value
from .common import _D, _DELTA, _L, _LAM_1, _LAM_J, _N, PAPER, _setting, sec35_delta
from .common import _EPS as _EPS_F, _LOSS as _LOSS_F, _SIGMA_STAR as _SIGMA_STAR_F
from .dominance import _gd_env, _gd_expr
from .proof_chain import Chain, none_admitted, num, values_at

OPT_PROOF_SETTING = _setting({"n": 20, "d": 3, "L": 2})
_SYMS = (_N, _D, _L, _DELTA)
_HYP_A8 = "delta*d**(1/(2*L)) < 1/2"
_NO_SIZE = "the hypothesis admits no size of the grid"


def _edge_n(d: int, L: int) -> int:
    """The smallest n with delta d^{1/(2L)} < 1/2: 8 L d / sqrt(n) < 2^{-2L} / d."""
    return int(mpmath.floor((mpmath.mpf(8 * L * d * d) * 4 ** L) ** 2)) + 1


def _a8_sizes(ctx: Context):
    """(n, d, L), L up to 5: at the hypothesis' edge, 1.1, 10 and 10^4 times it, n = 10^40, and
    small n (n >= d) beyond the edge, where only a wider hypothesis admits anything."""
    for L in sorted(set(li.loops(ctx)) | {3, 5}):
        for d in (1, 2, 3, 10):
            e = _edge_n(d, L)
            for n in (e, e + e // 10, 10 * e, 10 ** 4 * e, 10 ** 40, 1, 2, 3, 10, 100):
                if n >= d:
                    yield n, d, L


def _ratio(a, b) -> float:
    with mpmath.workdps(30):
        a, b = mpf(a), mpf(b)
        return float(a / b) if b > 0 else (float("inf") if a > 0 else 0.0)


# ----- line 593 ---------------------------------------------------------------------------------
def _inverse_symbolic(ctx: Context) -> TierResult:
    """L(Sigma*^{-1}, 0) = f(1) exactly against the named bound where the named hypothesis
    holds."""
    F = ctx.formulas
    hyp, bound = _gd_expr(F, "hypothesis"), _gd_expr(F, "bound")
    chain = Chain({"exact_sizes": "L(Sigma*^{-1}, 0) exceeds the named bound"})
    for n, d, L in _a8_sizes(ctx):
        env = _gd_env(n, d, L)
        if not holds(hyp, env):
            continue
        f1 = li.scalar_poly(L, n, d).eval(1)
        with mpmath.workdps(30):
            b = value(bound, env)
        row = {"L": L, "d": d, "n": size_text(n), "loss_at_inverse": mpmath.nstr(mpf(f1), 12),
               "bound": mpmath.nstr(b, 12), "ratio": _ratio(f1, b)}
        chain.see("exact_sizes", real_le(sympy.Symbol("e"), bound, {**env, "e": f1}), row,
                  near=True)
    if not chain.count["exact_sizes"]:
        return none_admitted("exact_sizes", _NO_SIZE)
    return combine([chain.finding("exact_sizes", "L(Sigma*^{-1}, 0) / bound", ("L", "d", "n"))],
                   steps=[step("The loss at the inverse", r"L(\Sigma^{*-1},0)=f(1)=\mathbb E\,"
                               r"\mathrm{tr}(I-W/n)^{2L}", "exact Wishart moments in n, d")])


def _inverse_exact(point: dict) -> dict | None:
    n, d, L = (int(point[k]) for k in ("n", "d", "L"))
    if not 1 <= L <= 6 or d > 10 ** 6:
        return None
    return {"bound": mpf(li.scalar_poly(L, n, d).eval(1))}


THM_A8_LOSS_AT_INVERSE = Claim(
    id="gatmiry2024.thm_a8_loss_at_inverse",
    title="Proof of Thm. A.8 (line 593): L(Σ*⁻¹, 0) ≤ d (2 δ)²ᴸ", paper=PAPER,
    statement=r"$L(A^{opt},0)\le L(\Sigma^{*-1},0)=\sum_i\beta_i^{(2L)}\le d(2\delta)^{2L}$ "
              r"(printed $L(I,0)$), under $\delta d^{1/(2L)}<\frac12$.",
    assumptions=("u = 0", "delta = (8 L d / sqrt(n))^{1/(2L)}",
                 "L(Sigma*^{-1}, 0) = E tr (I - W/n)^{2L} for every Sigma* (whitening)"),
    formulas=(NamedFormula("hypothesis", _HYP_A8, _SYMS, equation="Thm. A.8",
                           description="delta d^{1/(2L)} < 1/2", weaker="narrower"),
              sec35_delta(),
              NamedFormula("bound", "d*(2*delta)**(2*L)", _SYMS, equation="proof of Thm. A.8",
                           description="L(Sigma*^{-1}, 0) <= bound", weaker="larger")),
    checks={"symbolic": _inverse_symbolic}, setting=OPT_PROOF_SETTING,
    exact=ExactValues(_inverse_exact, "L(Sigma*^{-1}, 0) = f(1), L <= 6"),
)


# ----- line 599 ---------------------------------------------------------------------------------
_C4 = "4*delta*d**(1/(2*L))"
_FAR = (1, sympy.Rational(101, 100), sympy.Rational(3, 2), 2, 4, 10)


def _far_symbolic(ctx: Context) -> TierResult:
    """Where the named hypothesis holds: (i) (lambda_1 - 1)^{2L} - delta^{2L} (lambda_1 + 1)^{2L}
    (Lemma 4.3's lower bound on beta_1) against the named middle term, for lambda_1 = 1 +- s x,
    x = 4 delta d^{1/(2L)}, s >= 1 (|lambda_1 - 1| >= x, lambda_1 > 0); (ii) the middle term
    against the named bound d (2 delta)^{2L} (strictly above it)."""
    F = ctx.formulas
    hyp, middle, bound = (_gd_expr(F, k) for k in ("hypothesis", "middle", "bound"))
    Ls, ds = size_symbol("L"), size_symbol("d")
    delta, lam = F["delta"], sympy.Symbol("lam")
    x_expr = 4 * delta * ds ** (1 / (2 * Ls))  # |lambda_1 - 1| >= 4 delta d^{1/(2L)}
    lemma = (lam - 1) ** (2 * Ls) - delta ** (2 * Ls) * (lam + 1) ** (2 * Ls)
    chain = Chain({"lemma_bound_to_middle": "(lambda_1 - 1)^{2L} - delta^{2L}(lambda_1 + 1)^{2L} "
                   "falls below the named middle term at |lambda_1 - 1| >= 4 delta d^{1/(2L)}",
                   "middle_above_bound": "the named middle term is not above d (2 delta)^{2L}"})
    for n, d, L in _a8_sizes(ctx):
        env = _gd_env(n, d, L)
        if not holds(hyp, env):
            continue
        with mpmath.workdps(50):
            x = value(x_expr, env)
            # |lambda_1 - 1| >= x: x to 40 digits, widened by 10^-30 so that rounding keeps the
            # points admissible
            xr = sympy.Rational(mpmath.nstr(x * (1 + mpmath.mpf(10) ** -30), 40))
        row = {"L": L, "d": d, "n": size_text(n), "x": mpmath.nstr(x, 12)}
        for s in _FAR:
            for sign in (1, -1):
                lam = 1 + sign * s * xr
                if lam <= 0:
                    continue
                e = {**env, "lam": lam}
                chain.see("lemma_bound_to_middle", real_le(middle, lemma, e), lambda: {
                    **row, "lambda_1": num(lam, 15),
                    **values_at(e, lemma_4_3_lower=lemma, middle=middle)})
        chain.see("middle_above_bound", real_le(bound, middle, env, strict=True),
                  {**row, **values_at(env, middle=middle, bound=bound)})
    if not chain.count["middle_above_bound"]:
        return none_admitted("lemma_bound", _NO_SIZE)
    return combine(chain.findings(), steps=[step(
        "The chain", r"(\lambda_1-1)^{2L}-\delta^{2L}(\lambda_1+1)^{2L}\ge\text{middle}"
        r">d(2\delta)^{2L}", "exact at 80+ digits over |lambda_1 - 1| >= x")])


THM_A8_FAR_EIGENVALUE = Claim(
    id="gatmiry2024.thm_a8_far_eigenvalue",
    title="Proof of Thm. A.8 (line 599): a far eigenvalue makes the loss exceed d (2 δ)²ᴸ",
    paper=PAPER,
    statement=r"If $|\lambda_1-1|\ge4\delta d^{1/(2L)}$ then $(\lambda_1-1)^{2L}-\delta^{2L}"
              r"(\lambda_1+1)^{2L}\ge(4\delta d^{1/(2L)})^{2L}-\delta^{2L}(1+4\delta d^{1/(2L)})"
              r"^{2L}>d(2\delta)^{2L}$, using $\delta d^{1/(2L)}<\frac12$.",
    assumptions=("lambda_1 > 0 the eigenvalue of A^{1/2} Sigma* A^{1/2} farthest from 1",
                 "Lemma 4.3's beta_1 >= (lambda_1 - 1)^{2L} - delta^{2L} (lambda_1 + 1)^{2L} as "
                 "given", "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=(NamedFormula("hypothesis", _HYP_A8, _SYMS, equation="Thm. A.8",
                           description="delta d^{1/(2L)} < 1/2", weaker="narrower"),
              sec35_delta(),
              NamedFormula("middle", f"({_C4})**(2*L) - delta**(2*L)*(1 + {_C4})**(2*L)", _SYMS,
                           equation="proof of Thm. A.8", description="the middle term"),
              NamedFormula("bound", "d*(2*delta)**(2*L)", _SYMS, equation="proof of Thm. A.8",
                           description="d (2 delta)^{2L}")),
    checks={"symbolic": _far_symbolic}, setting=OPT_PROOF_SETTING,
    correction=Correction(
        description="the middle term with lambda_1 + 1 = 2 + 4 delta d^{1/(2L)}",
        reason="at lambda_1 = 1 + 4 delta d^{1/(2L)}, lambda_1 + 1 = 2 + 4 delta d^{1/(2L)}; the "
               "chain then needs (16^L - 4^L) d > (2 + 4 delta d^{1/(2L)})^{2L}, which fails near "
               "the edge of delta d^{1/(2L)} < 1/2 (L = 1, d = 1, delta = 0.49: 0.077 < 0.96): "
               "the corrected middle term does not carry the step either",
        formulas={"middle": f"({_C4})**(2*L) - delta**(2*L)*(2 + {_C4})**(2*L)"}),
)


# ----- line 668 ---------------------------------------------------------------------------------
_MOMENT_AS = tuple(sympy.Rational(v) for v in ("1/100", "1/4", "1/2", "3/4", "1", "5/4", "3/2",
                                               "2", "3", "10", "100"))


def _moment_ns(L: int, d: int) -> tuple:
    """n from Lemma A.2's n >= 4 k^2 d^2 at k = 2L (where the moment lemmas speak) upward."""
    e = 16 * L * L * d * d
    return (e, 2 * e, 10 * e, 10 ** 4 * e, 10 ** 40)
_J_SYMS = (_N, _D, _L, _DELTA, _LAM_J, _LAM_1)


def _moment_symbolic(ctx: Context) -> TierResult:
    """A = a I (lambda_j = lambda_1 = a), Sigma* = I:
    E[(I - Sigma A)^i Sigma (I - Sigma A)^{2L-1-i}] = -f'(a) / (2 L d) I for every i, exactly,
    between the named lower and upper ends."""
    F = ctx.formulas
    lo_e, hi_e = _gd_expr(F, "lower"), _gd_expr(F, "upper")
    chain = Chain({"scalar_family_exact": "the moment is outside the named ends"})
    e = sympy.Symbol("e")
    for L in sorted(set(li.loops(ctx)) | {3}):
        for d in (1, 2, 3):
            for n in _moment_ns(L, d):
                fp = li.scalar_poly(L, n, d).diff(li.a_sym)
                for a in _MOMENT_AS:
                    g = -fp.eval(a) / (2 * L * d)
                    env = {**_gd_env(n, d, L), "lambda_j": a, "lambda_1": a, "e": g}
                    chain.see("scalar_family_exact",
                              real_le(lo_e, e, env) and real_le(e, hi_e, env),
                              lambda: {"L": L, "d": d, "n": size_text(n), "A": f"{a} I",
                                       "moment": num(g), **values_at(env, lower=lo_e, upper=hi_e)})
    return combine(chain.findings(),
                   steps=[step("The moment at a I", r"\mathbb E[\Sigma(I-a\Sigma)^{2L-1}]="
                               r"-\tfrac{f'(a)}{2Ld}I", "f(a) = E tr (I - a Sigma)^{2L}; the "
                               "factors commute at A = a I")])


def _moment_exact(point: dict) -> dict | None:
    """-f'(a) / (2 L d) at lambda_j = lambda_1 = a (an isotropic A); None elsewhere."""
    n, d, L = (int(point[k]) for k in ("n", "d", "L"))
    if point["lambda_j"] != point["lambda_1"] or not 1 <= L <= 6 or d > 10 ** 6 \
            or n < 16 * L * L * d * d:
        return None
    fp = li.scalar_poly(L, n, d).diff(li.a_sym)
    a = point["lambda_1"]
    g = -sum(mpf(c) * a ** k for (k,), c in fp.terms()) / (2 * L * d)
    return {"lower": g, "upper": g}


LEMMA_A9_GRADIENT_MOMENT = Claim(
    id="gatmiry2024.lemma_a9_gradient_moment",
    title="Proof of Lemma A.9 (line 668): the moment "
          "E[(I - Σ A)ⁱ Σ (I - Σ A)^{2L-1-i}]",
    paper=PAPER,
    statement=r"$\sum_j((\lambda_j-1)^{2L-1}-\delta^{2L}(\lambda_1+1)^{2L-1})u_ju_j^\top"
              r"\preccurlyeq\mathbb E[(I-\Sigma A)^i\Sigma(I-\Sigma A)^{2L-1-i}]\preccurlyeq"
              r"\sum_j((\lambda_j-1)^{2L-1}+\delta^{2L}(\lambda_j+1)^{2L-1})u_ju_j^\top$.",
    assumptions=("Sigma* = I, A = a I (lambda_j = lambda_1 = a, every i alike)",
                 "n >= 16 L^2 d^2 (Lemma A.2's n >= 4 k^2 d^2 at k = 2L)",
                 "delta^{2L} = 8 L d / sqrt(n) (Sec. 3.5; Lemma A.7's delta^k = 4 k d / sqrt(n) at "
                 "k = 2L)"),
    formulas=(sec35_delta(),
              NamedFormula("lower", "(lambda_j - 1)**(2*L - 1) - delta**(2*L)*(lambda_1 + 1)**"
                           "(2*L - 1)", _J_SYMS, equation="proof of Lemma A.9",
                           description="the lower end", weaker="smaller"),
              NamedFormula("upper", "(lambda_j - 1)**(2*L - 1) + delta**(2*L)*(lambda_j + 1)**"
                           "(2*L - 1)", _J_SYMS, equation="proof of Lemma A.9",
                           description="the upper end", weaker="larger")),
    checks={"symbolic": _moment_symbolic}, setting=OPT_PROOF_SETTING,
    exact=ExactValues(_moment_exact, "-f'(a) / (2 L d) at lambda_j = lambda_1 = a, L <= 6"),
    # the moment lemmas' n >= 4 k^2 d^2 (Lemma A.2) at k = 2L: below it the estimate fails
    ranges=("n >= 16*L**2*d**2",),
    correction=Correction(
        description="(1 - lambda_j)^{2L-1} -+ delta^{2L} (lambda_1 + 1)^{2L-1}",
        reason="the binomial sums give (1 - lambda_j)^{2L-1}: at A = a I the moment is about "
               "(1 - a)^{2L-1}, of the other sign for a != 1; the upper end's error has "
               "(lambda_1 + 1), as the lower end's",
        formulas={"lower": "(1 - lambda_j)**(2*L - 1) - delta**(2*L)*(lambda_1 + 1)**(2*L - 1)",
                  "upper": "(1 - lambda_j)**(2*L - 1) + delta**(2*L)*(lambda_1 + 1)**(2*L - 1)"}),
)


# ----- lines 169, 179 ---------------------------------------------------------------------------
_TIGHT_DIMS = (1, 2, 5)


def _tight_symbolic(ctx: Context) -> TierResult:
    """L = 1: a* = n / (n + d + 1) exactly (f is quadratic in a), so A^opt = a* Sigma*^{-1} differs
    from Sigma*^{-1} by (d + 1) / (n + d + 1); the named radius over that distance as n -> oo
    (sympy's limit, d fixed): a tight radius keeps it bounded.  And a* != 1, a* -> 1 (line 179)."""
    F = ctx.formulas
    radius = _gd_expr(F, "radius")
    n = sympy.Symbol("n", positive=True)
    rows = []
    chain = Chain({"radius_over_distance": "the named radius is not tight: over the distance of "
                   "A^opt from Sigma*^{-1} it grows without bound in n",
                   "l1_minimiser": "at L = 1 the minimiser is Sigma*^{-1} or does not tend to it"})
    for d in _TIGHT_DIMS:
        f = sympy.expand(li.scalar_loss(1).subs({li.D: d, li.N: n}))
        a_opt = sympy.solve(sympy.diff(f, li.a_sym), li.a_sym)[0]
        gap = sympy.simplify(1 - a_opt)
        r = radius.subs({s: {"n": n, "d": d, "L": 1}[s.name] for s in radius.free_symbols
                         if s.name in ("n", "d", "L")})
        lim = sympy.limit(r / gap, n, sympy.oo)
        rows.append({"d": d, "a_star": str(a_opt), "distance": str(gap), "radius": str(r),
                     "limit_of_radius_over_distance": str(lim)})
        chain.see("radius_over_distance", lim.is_finite and lim.is_real, {"L": 1, **rows[-1]})
        chain.see("l1_minimiser", gap != 0 and sympy.limit(gap, n, sympy.oo) == 0,
                  {"L": 1, **rows[-1]})
    return combine([chain.finding(name, evidence={"rows": rows}) for name in chain.what],
                   steps=[step("L = 1", r"a^*=\frac{n}{n+d+1},\quad 1-a^*=\frac{d+1}{n+d+1}",
                               "the stationary point of the exact quadratic f(a)")])


def _tight_numeric(ctx: Context) -> TierResult:
    """L = 2, 3: the growth exponent of radius / |1 - a*| between n = 10^20 and 10^40 (a* by
    bisection at 60 digits): a tight radius has exponent <= 0 (0.05 allowed)."""
    F = ctx.formulas
    radius = _gd_expr(F, "radius")
    from .flow import _mp_a_star
    rows = []
    chain = Chain({"growth_in_n": "the named radius over |1 - a*| grows like a power of n"})
    for L in (2, 3):
        for d in (1, 3):
            vals = []
            for n in (10 ** 20, 10 ** 40):
                with mpmath.workdps(80):
                    gap = 1 - _mp_a_star(L, n, d, 80)
                    vals.append(value(radius, _gd_env(n, d, L)) / abs(gap))
            slope = float(mpmath.log10(vals[1] / vals[0]) / 20)
            rows.append({"L": L, "d": d, "exponent_in_n": slope})
            chain.see("growth_in_n", slope <= 0.05, rows[-1])
    return combine([chain.finding("growth_in_n", evidence={"rows": rows})])


THM3_2_TIGHT = Claim(
    id="gatmiry2024.thm3_2_tight",
    title="Sec. 3.7 (lines 169, 179): Theorem 3.2's estimate of the minimiser is tight",
    paper=PAPER,
    statement=r"We give a tight estimate on the set of global minimizers (Theorem 3.2: "
              r"$(1-c)\Sigma^{*-1}\preccurlyeq A^{opt}\preccurlyeq(1+c)\Sigma^{*-1}$, $c=8\delta "
              r"d^{1/(2L)}$); for $L=1$ the minimizer is not exactly $\Sigma^{*-1}$ but tends to "
              r"it "
              r"as $n\to\infty$, so the estimate is essentially the best one can hope for.",
    assumptions=("tight: c / ||A^opt Sigma* - I|| stays bounded as n -> oo",
                 "Sigma* = I (A^opt = a* Sigma*^{-1} for every Sigma*)",
                 "the remark's delta = 4 k d / sqrt(n) leaves k unbound: not used"),
    formulas=(sec35_delta(),
              NamedFormula("radius", "8*delta*d**(1/(2*L))", _SYMS, equation="Thm. 3.2",
                           description="c")),
    checks={"symbolic": _tight_symbolic, "numeric": _tight_numeric}, setting=OPT_PROOF_SETTING,
    notes="At L = 1, c / (1 - a*) = 16 sqrt(2) d n^{3/4} (n + d + 1) / ((d + 1) n) -> oo: the "
          "estimate is off by a power of n (the distance is O(d / n), c is O(d n^{-1/4})).",
)


# ----- line 218 ---------------------------------------------------------------------------------
def _population_value(A, S, L: int):
    """tr (I - A^{1/2} Sigma* A^{1/2})^{2L} = tr (I - A Sigma*)^{2L} (similar matrices)."""
    M = sympy.eye(S.shape[0]) - A * S
    return (M ** (2 * L)).trace()


def _population_symbolic(ctx: Context) -> TierResult:
    """Exact Sigma* (random rational symmetric positive definite, d = 2, 3): the value at the
    named minimiser against the least value 0, attained where A Sigma* = I (solved for A): the
    value is >= 0 (an even power of a matrix similar to a symmetric one), so the named A is a
    global minimiser exactly when its value is 0."""
    F = ctx.formulas
    rng = ctx.rng("population-min")
    chain = Chain({"exact_instances": "the named A is not a global minimiser"}, key="instances")
    for d in (2, 3):
        S = sympy.Matrix(li.spd(d, rng))
        Aw = sympy.Matrix(d, d, lambda i, j: sympy.Symbol(f"a{i}{j}"))
        sol = sympy.solve(list(sympy.eye(d) - Aw * S), list(Aw), dict=True)[0]
        witness = Aw.subs(sol)
        named = _formula_matrix(F["minimiser"], S, d)
        for L in li.loops(ctx):
            v, w = _population_value(named, S, L), _population_value(witness, S, L)
            chain.see("exact_instances", sympy.simplify(v - w) == 0, lambda: {
                "d": d, "L": L, "Sigma_star": str(S.tolist()), "A": str(named.tolist()),
                "value_at_named": str(sympy.nsimplify(v)), "least_value": str(w),
                "attained_at": str(witness.tolist())})
    return combine(chain.findings(),
                   steps=[step("The least value",
                               r"\mathrm{tr}(I-A\Sigma^*)^{2L}\ge0=\text{value at }"
                               r"A\Sigma^*=I", "A solved from A Sigma* = I (sympy)")])


def _formula_matrix(expr, S, d: int) -> sympy.Matrix:
    from verify.formulas import formula_value
    return sympy.Matrix(formula_value(expr, {"Sigma_star": S, "d": d}))


LEMMA4_1_REMARK = Claim(
    id="gatmiry2024.lemma4_1_remark",
    title="Sec. 4 (line 218): tr (I - A^{1/2} Σ* A^{1/2})²ᴸ is minimised at Σ*⁻¹",
    paper=PAPER,
    statement=r"If $\Sigma$ were $\Sigma^*$, the loss would be $\mathrm{tr}((I-A^{1/2}\Sigma^*"
              r"A^{1/2})^{2L})$, whose global minimum is $A=\Sigma^{*-1}$.",
    assumptions=("A symmetric positive definite",),
    formulas=(NamedFormula("minimiser", "Inverse(Sigma_star)", (_D, _SIGMA_STAR_F),
                           equation="Sec. 4", shape=("d", "d"),
                           description="the global minimiser"),),
    checks={"symbolic": _population_symbolic}, setting=OPT_PROOF_SETTING,
)


# ----- line 616 ---------------------------------------------------------------------------------
_A9_SYMS = (_N, _D, _L, _DELTA, _EPS_F, _LOSS_F)
_A9_AS = tuple(sympy.Rational(v) for v in ("-2", "-3/2", "-2/5", "0", "1/4", "1/2", "3/4", "9/10",
                                           "99/100", "1", "101/100", "11/10", "5/4", "3/2", "2",
                                           "11/5", "3", "7/2", "4", "10"))
_A9_EPS = tuple(sympy.Rational(v) for v in ("1/100", "1/20", "1/10", "1/4", "1/2", "1", "3/2", "2",
                                            "3"))


def _a9_symbolic(ctx: Context) -> TierResult:
    """A = a I at Sigma* = I (every eigenvalue of A^{1/2} Sigma* A^{1/2} is a; at d = 1 any A):
    wherever the named hypothesis admits (loss = f(a), epsilon), |a - 1| against the named
    radius, exactly."""
    F = ctx.formulas
    hyp, radius = _gd_expr(F, "hypothesis"), _gd_expr(F, "radius")
    chain = Chain({"scalar_family": "|lambda - 1| exceeds the named radius"})
    for L in li.loops(ctx):
        for d in (1, 2, 3):
            for n in (10 ** 4, 10 ** 8, 10 ** 40):
                f = li.scalar_poly(L, n, d)
                for a in _A9_AS:
                    loss = f.eval(a)
                    for eps in _A9_EPS:
                        env = {**_gd_env(n, d, L, loss, eps), "e": abs(a - 1)}
                        if not holds(hyp, env):
                            continue
                        with mpmath.workdps(30):
                            r = value(radius, env)
                        ratio = _ratio(abs(a - 1), r) if r > 0 else float("inf")
                        row = {"L": L, "d": d, "n": size_text(n), "A": f"{a} I",
                               "epsilon": str(eps), "loss": mpmath.nstr(mpf(loss), 12),
                               "ratio": ratio}
                        chain.near("scalar_family", row)
                        chain.see("scalar_family", real_le(sympy.Symbol("e"), radius, env),
                                  lambda: {**row, "radius": mpmath.nstr(r, 12)})
    if not chain.count["scalar_family"]:
        return none_admitted("scalar_family")
    return combine([chain.finding("scalar_family", "|lambda - 1| / radius",
                                  ("L", "d", "n", "A", "epsilon"))],
                   steps=[step("The loss at a I", r"L(aI,0)=f(a)=\mathbb E\,\mathrm{tr}"
                               r"(I-aW/n)^{2L}", "exact polynomial; lambda_i = a")])


def _a9_exact(point: dict) -> dict | None:
    """On the family the checks search (A = a I, Sigma* = I): the largest |a - 1| over the a with
    f(a) = loss (the real roots of f - loss, 50 digits); None where no a I has that loss, L > 6."""
    n, d, L = (int(point[k]) for k in ("n", "d", "L"))
    if not 1 <= L <= 6 or d > 10 ** 6:
        return None
    with mpmath.workdps(50):
        coeffs = [mpf(c) for c in li.scalar_poly(L, n, d).all_coeffs()]
        coeffs[-1] -= point["loss"]
        try:
            roots = mpmath.polyroots(coeffs, maxsteps=200, extraprec=200)
        except mpmath.libmp.NoConvergence:
            return None
        real = [r.real for r in roots if abs(mpmath.im(r)) < mpmath.mpf(10) ** -30]
        return {"radius": max(abs(a - 1) for a in real)} if real else None


LEMMA_A9_EIGENVALUE_STEP = Claim(
    id="gatmiry2024.lemma_a9_eigenvalue_step",
    title="Proof of Lemma A.9 (line 616): a small loss puts every λᵢ within ε of 1",
    paper=PAPER,
    statement=r"For $\epsilon>2\delta$ and $L(A,0)\le\epsilon^{2L}-\delta^{2L}(\epsilon+2)^{2L}$: "
              r"$|\lambda_i-1|\le\epsilon$ for all $i$, i.e. $\|A^{1/2}\Sigma^*A^{1/2}-I\|\le"
              r"\epsilon$.",
    assumptions=("Sigma* = I, u = 0, A = a I (and any A at d = 1)",
                 "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=(NamedFormula("hypothesis", "(epsilon > 2*delta) & (loss <= epsilon**(2*L) - "
                           "delta**(2*L)*(epsilon + 2)**(2*L))", _A9_SYMS, equation="Lemma A.9",
                           description="the lemma's hypothesis", weaker="narrower"),
              sec35_delta(),
              NamedFormula("radius", "epsilon", _A9_SYMS, equation="proof of Lemma A.9",
                           description="|lambda_i - 1| <= radius", weaker="larger")),
    checks={"symbolic": _a9_symbolic}, setting=OPT_PROOF_SETTING,
    exact=ExactValues(_a9_exact, "the largest |a - 1| over the a with f(a) = loss (A = a I, "
                      "Sigma* = I, the family the checks search), L <= 6"),
)
