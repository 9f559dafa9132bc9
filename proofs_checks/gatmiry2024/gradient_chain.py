"""Steps of the proofs of Lemma A.10 (gradient dominance) and Thm. A.11: the chain (27) from the
gradient's eigenvalues to (1/2) sum_i (lambda_i - 1)^{4L-2} - d delta^{4L} (lambda_1 + 1)^{4L-2}
(line 683), the bound on max_i |lambda_i - 1| (line 694), and the choice epsilon =
(L(A, 0)/2)^{1/(2L)} that turns (28) into the dominance (line 730, exact algebra given (28)).

At Sigma* = I and a diagonal A the eigenvalues of A^{1/2} Sigma* A^{1/2} are A's, the loss is
L(A, 0) = tr E[(I - W/n)^{2L}], W ~ Wishart(n, A) (Lemma A.6; ``centred_bounds``), and the
gradient is -2L E[Sigma (I - A Sigma)^{2L-1}] (d tr (I - A Sigma)^{2L} = -2L tr((I - A Sigma)^{2L-1}
dA Sigma)), diagonal by the sign symmetry Sigma -> D Sigma D, computed with the moment kernel
and checked at A = a I against f'(a) / d of the forward pass's loss f (``kit.looped_icl``).
The points are those where Lemma A.10's hypotheses hold, epsilon the largest they admit."""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import mpmath
import sympy

from moments.tensor import identity, vector
from moments.wick import expectation
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit import looped_icl as li
from ..kit.exact_compare import holds, holds_at_digits, mpf, real_le, size_text, value
from ..kit.looped_loss import formula_letters
from .centred_bounds import centred_eigenvalues
from .common import N, PAPER, _D, _DELTA, _EPS, _L, _LAM_1, _LOSS, _N, _setting, sec35_delta
from .dominance import _gd_env, _gd_expr
from .proof_chain import Chain, formula_at, none_admitted, num

CHAIN_SETTING = _setting({"n": 20, "d": 3, "L": 2})
_LAM_I = FormulaSymbol("lambda_i", positive=True, at_most="lambda_1")
_DEV_SUM = FormulaSymbol("dev_sum", positive=True)
_SYMS = (_N, _D, _L, _DELTA, _EPS, _LOSS, _LAM_I, _LAM_1, _DEV_SUM)
HYP_A10 = ("(8*delta*d**(3/(4*L)) <= epsilon) & (epsilon <= 1) & (4*d*delta**(4*L - 2) <= 1) & "
           "(loss >= epsilon**(2*L) + d*delta**(2*L)*(epsilon + 2)**(2*L))")
# the one hypothesis line 694 uses (epsilon in (0, 1] and n large, as the points are drawn)
HYP_694 = "loss >= epsilon**(2*L) + d*delta**(2*L)*(epsilon + 2)**(2*L)"
# spectra of A (= of A^{1/2} Sigma* A^{1/2} at Sigma* = I), largest first; scalar ones at larger d
_SPECTRA = (("2", "1"), ("1", "1/2"), ("3/2", "1/2"), ("1", "1/10"), ("3", "3"), ("11/10", "1"),
            ("2", "1", "1/2"), ("1", "1", "1/4"), ("5/4", "1", "3/4"), ("1/2", "1/2", "1/2"))
_SCALAR = ((5, "1/2"), (5, "3/2"), (8, "1/4"))
_NS = (10 ** 12, 10 ** 40)


def _loss(L: int, spec: tuple, n: int) -> sympy.Rational:
    """L(A, 0) at Sigma* = I, A = diag(spec): tr E[(I - W/n)^{2L}], W ~ Wishart(n, A)."""
    if len(set(spec)) == 1 and len(spec) > 3:  # a I at larger d: the forward pass's f(a)
        return li.scalar_poly(L, n, len(spec)).eval(sympy.Rational(spec[0]))
    b = centred_eigenvalues(2 * L, tuple(Fraction(x) for x in spec), n)
    return sympy.Rational(sum(b, Fraction(0)))


def _largest_eps(hyp, env: dict, bits: int = 150):
    """The largest epsilon in (0, 1] the hypothesis admits at env, to 150 bits (the conclusion
    is tight to 10^-10 at A = I/2, d = 3, L = 2), or None."""
    at = lambda e: {**env, "epsilon": e}  # noqa: E731
    hi = sympy.Integer(1)
    if holds(hyp, at(hi)):
        return hi
    lo = next((sympy.Rational(1, 2 ** k) for k in range(1, 40) if holds_at_digits(hyp, at(
        sympy.Rational(1, 2 ** k)))), None)
    if lo is None:
        return None
    hi = 2 * lo
    for _ in range(bits):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if holds_at_digits(hyp, at(mid)) else (lo, mid)
    for _ in range(8):  # rounding at 60 digits: step down until the exact check admits it
        if holds(hyp, at(lo)):
            return lo
        lo -= (hi - lo) * 2 ** 20
        if lo <= 0:
            return None
    return None


def admitted_points(ctx: Context, F, bits: int = 150):
    """(L, n, spectrum, env) where the named hypothesis holds at its largest epsilon."""
    hyp = _gd_expr(F, "hypothesis")
    specs = list(_SPECTRA) + [tuple([a] * d) for d, a in _SCALAR]
    for L in li.loops(ctx):
        # and the minimiser a* I (d = 2, n = 10^12), where the gradient vanishes: outside the
        # hypotheses, inside a wider one
        a_star = str(li.a_star_rational(_NS[0], 2, L, digits=40))
        for spec in specs + [(a_star, a_star)]:
            d = len(spec)
            for n in (_NS if spec[0] != a_star else _NS[:1]):
                loss = _loss(L, spec, n)
                env = _gd_env(n, d, L, loss)
                eps = _largest_eps(hyp, env, bits)
                if eps is None:
                    continue
                yield L, n, spec, {**env, "epsilon": eps}


def _row(L, n, spec, env) -> dict:
    return {"L": L, "d": len(spec), "n": size_text(n), "A": list(spec),
            "loss": num(env["loss"]), "epsilon": num(env["epsilon"])}


# ----- line 694 ---------------------------------------------------------------------------------
def _max_symbolic(ctx: Context) -> TierResult:
    """Where Lemma A.10's hypotheses hold (largest epsilon): (i) sum_{i=1}^{last}
    (lambda_i - 1)^{2L} (the named last index, over the d eigenvalues there are) against
    epsilon^{2L}; (ii) d max_i (lambda_i - 1)^{2L} against that sum; (iii) max_i |lambda_i - 1|
    against the named radius."""
    F = ctx.formulas
    radius = _gd_expr(F, "radius")
    chain = Chain({"sum_to_epsilon": "sum_{i=1}^{last} (lambda_i - 1)^{2L} < epsilon^{2L}",
                   "max_to_sum": "d max_i (lambda_i - 1)^{2L} < the sum",
                   "max_to_radius": "max_i |lambda_i - 1| < the named radius"})
    S, M, E = (sympy.Symbol(x) for x in ("s", "m", "e"))
    for L, n, spec, env in admitted_points(ctx, F):
        lam = sorted((sympy.Rational(x) for x in spec), reverse=True)
        d = len(lam)
        last = formula_at(F, "last", env)
        last = int(last) if last.is_Integer else None
        if last is None:
            terms = None
        else:
            terms = sum(((x - 1) ** (2 * L) for x in lam[:max(0, min(last, d))]),
                        sympy.Integer(0))
        dev = max(abs(x - 1) for x in lam)
        e = {**env, "s": terms if terms is not None else sympy.Integer(0), "m": dev,
             "e": env["epsilon"]}
        row = _row(L, n, spec, env)
        checks = (("sum_to_epsilon", terms is not None and real_le(E ** (2 * L), S, e)),
                  ("max_to_sum", terms is not None and real_le(S, d * M ** (2 * L), e)),
                  ("max_to_radius", real_le(radius, M, e)))
        for name, ok in checks:
            chain.see(name, ok, lambda: {
                **row, "last_index": str(last), "sum": num(e["s"]),
                "epsilon_2L": num(env["epsilon"] ** (2 * L)), "max_dev": num(dev),
                "radius": num(value(radius, e))})
        with mpmath.workdps(30):
            r = value(radius, e)
            ratio = float(r / mpf(dev)) if dev > 0 else float("inf")
        chain.near("max_to_radius", {**row, "ratio": ratio})
    if not chain.count["max_to_radius"]:
        return none_admitted("spectra")
    return combine(chain.findings("radius / max_i |lambda_i - 1|", ("L", "d", "n", "A")),
                   steps=[step("The loss", r"L(A,0)=\mathrm{tr}\,\mathbb E[(I-W/n)^{2L}],\ "
                               r"W\sim\mathcal W(n,A)", "exact Wishart moments at Sigma* = I, "
                               "diagonal A; epsilon the largest the hypothesis admits")])


LEMMA_A10_MAX_STEP = Claim(
    id="gatmiry2024.lemma_a10_max_step",
    title="Proof of Lemma A.10 (line 694): d max_i (λᵢ - 1)²ᴸ ≥ sum (λᵢ - 1)²ᴸ"
          " ≥ ε²ᴸ, so max_i |λᵢ - 1| ≥ ε / d^{1/(2L)}", paper=PAPER,
    statement=r"Under Lemma A.10's hypotheses: $d\max_i(\lambda_i-1)^{2L}\ge\sum_{i=1}^{2L}"
              r"(\lambda_i-1)^{2L}\ge\epsilon^{2L}$, so $\max_i|\lambda_i-1|\ge\epsilon/"
              r"d^{1/(2L)}$.",
    assumptions=("Sigma* = I, u = 0, A diagonal (lambda_i its eigenvalues, largest first); "
                 "A = a I at d = 5, 8", "delta = (8 L d / sqrt(n))^{1/(2L)}",
                 "n = 10^12, 10^40, where Lemma A.10's size conditions hold",
                 "epsilon the largest in (0, 1] the loss condition admits at each A (the "
                 "lemma's other conditions on epsilon do not enter the step)",
                 "a sum's indices beyond d contribute nothing"),
    formulas=(NamedFormula("hypothesis", HYP_694, _SYMS, equation="Lemma A.10",
                           description="the lemma's loss condition (the one the step uses)",
                           weaker="narrower"),
              sec35_delta(),
              NamedFormula("last", "2*L", _SYMS, equation="proof of Lemma A.10",
                           description="the last index of the sum"),
              NamedFormula("radius", "epsilon/d**(1/(2*L))", _SYMS,
                           equation="proof of Lemma A.10",
                           description="max_i |lambda_i - 1| >= radius", weaker="smaller")),
    checks={"symbolic": _max_symbolic}, setting=CHAIN_SETTING,
    notes="The step cites 'Lemma ??'; what it needs is L(A, 0) <= sum_i (lambda_i - 1)^{2L} + "
          "d delta^{2L} (lambda_1 + 1)^{2L} (Lemma 4.3), which gives the sum >= epsilon^{2L} "
          "when lambda_1 <= 1 + epsilon (and max_i |lambda_i - 1| > epsilon otherwise).",
    correction=Correction(
        description="sum_{i=1}^{d} (lambda_i - 1)^{2L}",
        reason="the sum runs over the d eigenvalues (printed 1..2L): with 2L < d it drops "
               "eigenvalues and can fall below epsilon^{2L} (L = 1, d = 3, n = 10^12, "
               "A = diag(1, 1, 1/4): the sum over i = 1, 2 is 0 < epsilon^2 = 0.562 at the "
               "largest admitted epsilon 0.7496)",
        formulas={"last": "d"}),
)


# ----- line 683: eq. (27) -----------------------------------------------------------------------
@lru_cache(maxsize=None)
def _grad_eigs(L: int, d: int) -> tuple:
    """The diagonal of -2L E[Sigma (I - A Sigma)^{2L-1}] at Sigma* = I, A = diag(a_1..a_d), as
    polynomials in the a_i and n (moment kernel)."""
    lt = formula_letters()
    S, A, e = lt["Sigma"], lt["A"], vector("e")
    P = e.T @ S
    for _ in range(2 * L - 1):
        P = P @ (identity("d") - A @ S)
    poly = expectation(P @ e).simplify()
    a = sympy.symbols(f"a1:{d + 1}")
    env = {"Sigma": sympy.ImmutableMatrix(sympy.eye(d)),
           "A": sympy.ImmutableMatrix(sympy.diag(*a))}
    out = []
    for j in range(d):
        env["e"] = sympy.ImmutableMatrix([[1 if i == j else 0] for i in range(d)])
        out.append(sympy.expand(-2 * L * poly.evaluate(env, {"n": N, "d": d}, exact=True)))
    return a, tuple(out)


def _gradient_form(ctx: Context) -> Finding:
    """At A = a I (d = 1, 2, 3) the kernel's gradient eigenvalue is f'(a) / d, f the forward
    pass's loss (exact polynomials in a, at two n)."""
    bad = None
    for L in li.loops(ctx):
        for d in (1, 2, 3):
            a, eigs = _grad_eigs(L, d)
            g = eigs[0].subs({x: li.a_sym for x in a})
            for n in (7, 100):
                fp = li.scalar_poly(L, n, d).diff(li.a_sym).as_expr() / d
                if sympy.expand(g.subs(N, n) - fp) != 0 and bad is None:
                    bad = {"L": L, "d": d, "n": n, "kernel": str(g.subs(N, n)),
                           "forward_pass": str(fp)}
    return Finding("gradient_form", bad is None, {"loops": list(li.loops(ctx))}, bad,
                   "" if bad is None else "the gradient's eigenvalue is not f'(a) / d")


def _eq27_symbolic(ctx: Context) -> TierResult:
    """Where Lemma A.10's hypotheses hold: (i) ||grad L||^2 = sum_j gamma_j^2 (kernel) against
    sum_i of the named first term; (ii) the named first term against the named second term at
    each eigenvalue; (iii) sum_i of the named second term against the named bound (dev_sum =
    sum_i (lambda_i - 1)^{4L-2})."""
    F = ctx.formulas
    first, second, bound = (_gd_expr(F, k) for k in ("first", "second", "bound"))
    chain = Chain({"grad_to_first": "||grad L||^2 < sum_i of the named first term",
                   "first_to_second": "the named first term < the named second term",
                   "second_to_bound": "sum_i of the named second term < the named bound"})
    X, Y = sympy.Symbol("x"), sympy.Symbol("y")
    for L, n, spec, env in admitted_points(ctx, F, bits=30):
        lam = sorted((sympy.Rational(x) for x in spec), reverse=True)
        d = len(lam)
        if d <= 3:
            a, eigs = _grad_eigs(L, d)
            gam = [g.subs({**dict(zip(a, lam)), N: n}) for g in eigs]
        else:  # a I: f'(a) / d
            gam = [li.scalar_poly(L, n, d).diff(li.a_sym).eval(lam[0]) / d] * d
        grad_sq = sum(g ** 2 for g in gam)
        dev_sum = sum((x - 1) ** (4 * L - 2) for x in lam)
        e0 = {**env, "lambda_1": lam[0], "dev_sum": dev_sum}
        with mpmath.workdps(60):
            f_vals = [value(first, {**e0, "lambda_i": x}) for x in lam]
            s_vals = [value(second, {**e0, "lambda_i": x}) for x in lam]
            sum_first, sum_second = mpmath.fsum(f_vals), mpmath.fsum(s_vals)
        row = _row(L, n, spec, env)
        ok1 = real_le(X, Y, {"x": sympy.Rational(mpmath.nstr(sum_first, 50)) if
                             mpmath.isfinite(sum_first) else sympy.oo, "y": grad_sq}) \
            if mpmath.isfinite(sum_first) else False
        ok2 = all(real_le(second, first, {**e0, "lambda_i": x}) for x in lam)
        ok3 = mpmath.isfinite(sum_second) and real_le(
            bound, X, {**e0, "x": sympy.Rational(mpmath.nstr(sum_second, 50))})
        for name, ok in (("grad_to_first", ok1), ("first_to_second", ok2),
                         ("second_to_bound", ok3)):
            chain.see(name, ok, lambda: {
                **row, "grad_sq": num(grad_sq), "sum_first": mpmath.nstr(sum_first, 12),
                "sum_second": mpmath.nstr(sum_second, 12), "bound": num(value(bound, e0))})
        with mpmath.workdps(30):
            ratio = float(sum_first / mpf(grad_sq)) if grad_sq > 0 else float("inf")
        chain.near("grad_to_first", {**row, "ratio": ratio})
    if not chain.count["grad_to_first"]:
        return none_admitted("spectra")
    findings = chain.findings("sum_i first / ||grad L||^2", ("L", "d", "n", "A"))
    return combine([_gradient_form(ctx)] + findings, steps=[step(
        "The gradient", r"\nabla_AL(A,0)=-2L\,\mathbb E[\Sigma(I-A\Sigma)^{2L-1}]",
        "moment kernel at Sigma* = I, diagonal A; equal to f'(a)/d I at A = a I")])


EQ27 = Claim(
    id="gatmiry2024.eq27",
    title="Eq. (27): ‖∇L(A, 0)‖² ≥ (1/2) sum_i (λᵢ - 1)⁴ᴸ⁻² - d δ⁴ᴸ "
          "(λ₁ + 1)⁴ᴸ⁻²", paper=PAPER,
    statement=r"$\|\nabla_AL(A,0)\|^2=\sum_i\gamma_i^2\ge\sum_i((\lambda_i-1)^{2L-1}-\delta^{2L}"
              r"(\lambda_1+1)^{2L-1})^2\ge\sum_i(\frac12(\lambda_i-1)^{4L-2}-\delta^{4L}"
              r"(\lambda_1+1)^{4L-2})\ge\frac12\sum_i(\lambda_i-1)^{4L-2}-d\delta^{4L}"
              r"(\lambda_1+1)^{4L-2}$.",
    assumptions=("Sigma* = I, u = 0, A diagonal (A = a I at d = 5, 8)",
                 "Lemma A.10's hypotheses, epsilon the largest they admit",
                 "delta = (8 L d / sqrt(n))^{1/(2L)} (delta^{2L} = Lemma A.7's 4 k d / sqrt(n) "
                 "at k = 2L)",
                 "dev_sum = sum_i (lambda_i - 1)^{4L-2}"),
    formulas=(NamedFormula("hypothesis", HYP_A10, _SYMS, equation="Lemma A.10",
                           description="the lemma's hypotheses", weaker="narrower"),
              sec35_delta(),
              NamedFormula("first", "((lambda_i - 1)**(2*L - 1) - delta**(2*L)*(lambda_1 + 1)**"
                           "(2*L - 1))**2", _SYMS, equation="(27)",
                           description="the first lower bound's term"),
              NamedFormula("second", "(lambda_i - 1)**(4*L - 2)/2 - delta**(4*L)*(lambda_1 + 1)"
                           "**(4*L - 2)", _SYMS, equation="(27)",
                           description="the second lower bound's term"),
              NamedFormula("bound", "dev_sum/2 - d*delta**(4*L)*(lambda_1 + 1)**(4*L - 2)",
                           _SYMS, equation="(27)", description="the final lower bound",
                           weaker="smaller")),
    checks={"symbolic": _eq27_symbolic}, setting=CHAIN_SETTING,
    notes="The gradient is -2L E[Sigma (I - A Sigma)^{2L-1}], 2L times the moment whose "
          "eigenvalues line 668 bounds (of the sign (1 - lambda_i)^{2L-1}). The first step "
          "squares a lower bound that may be negative and holds here only through that factor "
          "2L: its sum over ||grad L||^2 reaches 0.25006 = 1.00024 / (2L)^2 (L = 1, d = 5, "
          "A = I/2, n = 10^12), so with gamma_i the moment's eigenvalues it would fail; at the "
          "minimiser (outside the hypotheses) the first sum is positive and the gradient 0.",
)


# ----- line 730 ---------------------------------------------------------------------------------
_T_SYMS = (_L, _DELTA, _LOSS, FormulaSymbol("epsilon", positive=True))
_T_DELTAS = tuple(sympy.Rational(v) for v in ("1/1000000", "1/1000", "1/20", "1/10", "6/25", "1/2",
                                              "1", "2"))
_T_SCALES = tuple(sympy.Rational(v) for v in ("1/10", "1/2", "3/4", "1", "5/4", "10", "1000000"))


def _final_points(ctx: Context):
    """L, delta and losses at the threshold 2 (4 delta)^{2L} times 1 -+ 2^-30 and the scales,
    below it too (where the hypothesis must exclude them), and a few absolute losses."""
    for L in sorted(set(li.loops(ctx)) | {3}):
        for delta in _T_DELTAS:
            th = 2 * (4 * delta) ** (2 * L)
            losses = [th * c for c in _T_SCALES] + [th * (1 + sympy.Rational(j, 2 ** 30))
                                                   for j in (-1, 1)]
            for loss in losses + [sympy.Rational(1, 1000), sympy.Integer(1), sympy.Integer(1000)]:
                yield ({"L": sympy.Integer(L), "delta": delta, "loss": loss},
                       {"L": L, "delta": str(delta), "loss": num(loss)})


def _final_symbolic(ctx: Context) -> TierResult:
    """Wherever the named hypothesis holds, at 60 digits (sides equal to 35 digits are equal):
    (i) epsilon := the named choice meets (28)'s conditions epsilon >= 4 delta and
    L(A, 0) >= 2 epsilon^{2L}; (ii) (28)'s bound at that epsilon equals the named middle term;
    (iii) the middle term against the named final bound."""
    F = ctx.formulas
    hyp, choice = F["hypothesis"], F["epsilon_choice"]
    b28, mid, fin = (F[k] for k in ("bound28", "via28", "final"))
    eps, delta, loss = (sympy.Symbol(x, positive=True) for x in ("epsilon", "delta", "loss"))
    L_ = sympy.Symbol("L", positive=True, integer=True)
    chain = Chain({"conditions_of_28": "epsilon = the named choice does not meet (28)'s "
                                       "conditions",
                   "bound28_is_middle": "(28)'s bound at epsilon is not the named middle term",
                   "middle_to_final": "the named middle term is below the named final bound"})
    for env, row in _final_points(ctx):
        with mpmath.workdps(60):
            ev = value(choice, env)
        # the hypothesis at epsilon := the choice (a hypothesis naming epsilon speaks of it)
        at = {**env, "epsilon": ev} if mpmath.isfinite(ev) and ev > 0 else env
        if not holds(hyp, at):
            continue
        if not (mpmath.isfinite(ev) and ev > 0):
            for name in chain.what:
                chain.see(name, False, {**row, "epsilon": str(ev),
                                        "why": "epsilon is not a positive number"})
            continue
        e = {**env, "epsilon": ev}
        checks = (("conditions_of_28", _le(4 * delta, eps, e)
                   and _le(2 * eps ** (2 * L_), loss, e)),
                  ("bound28_is_middle", _le(mid, b28, e) and _le(b28, mid, e)),
                  ("middle_to_final", _le(fin, mid, e)))
        for name, ok in checks:
            chain.see(name, ok, lambda: {
                **row, "epsilon": num(ev), "bound28": num(value(b28, e)),
                "middle": num(value(mid, e)), "final": num(value(fin, e))})
        with mpmath.workdps(30):
            m, f = value(mid, e), value(fin, e)
            ratio = float(f / m) if m > 0 else float("inf")
        chain.near("middle_to_final", {**row, "ratio": ratio})
    if not chain.count["middle_to_final"]:
        return none_admitted("grid")
    return combine(chain.findings("final / middle", ("L", "delta", "loss")),
                   steps=[step("The chain", r"\tfrac14\epsilon^{4L-2}\big|_{\epsilon=(L/2)^{1/(2L)}}"
                               r"=\tfrac14(\tfrac L2)^{\frac{2L-1}L}\ge\tfrac1{16}L^{\frac{2L-1}L}",
                               "60-digit values over (L, delta, loss)")])


def _le(lhs, rhs, env) -> bool:
    """lhs <= rhs at 60 digits, sides equal to 35 digits counting as equal (epsilon := the
    choice is a 60-digit value: an exact power of a mutated choice, (loss/2)^{n/(2L)}, may not
    fit in memory); False where a side is not a finite real number."""
    with mpmath.workdps(60):
        x, y = value(lhs, env), value(rhs, env)
        if not (mpmath.isfinite(x) and mpmath.isfinite(y)):
            return False
        return bool(x <= y + mpmath.mpf(10) ** -35 * max(1, abs(x), abs(y)))


THM_A11_FINAL_STEP = Claim(
    id="gatmiry2024.thm_a11_final_step",
    title="Proof of Thm. A.11 (line 730): ε = (L(A,0)/2)^{1/(2L)} turns (28) into the "
          "dominance", paper=PAPER,
    statement=r"If $L(A,0)\ge2(4\delta)^{2L}$, $\epsilon=(L(A,0)/2)^{1/(2L)}$ meets (28), which "
              r"then gives $\|\nabla L\|^2\ge\frac14\epsilon^{4L-2}=\frac14(\frac{L(A,0)}2)^"
              r"{(2L-1)/L}\ge\frac1{16}L(A,0)^{(2L-1)/L}$.",
    assumptions=("(28) as printed is given (its own finding is gatmiry2024.eq28's)",
                 "any delta > 0: the step does not use its definition (Sec. 3.5's delta = "
                 "(8 L d / sqrt(n))^{1/(2L)} in the paper), so it is checked over a grid of delta",
                 "(28) asks epsilon > 4 delta; at the threshold itself epsilon = 4 delta: "
                 "checked with >="),
    formulas=(NamedFormula("hypothesis", "loss >= 2*(4*delta)**(2*L)", _T_SYMS,
                           equation="Thm. A.11", description="the threshold",
                           weaker="narrower"),
              NamedFormula("epsilon_choice", "(loss/2)**(1/(2*L))", _T_SYMS,
                           equation="proof of Thm. A.11", description="epsilon"),
              NamedFormula("bound28", "epsilon**(4*L - 2)/4", _T_SYMS, equation="(28)",
                           description="(28)'s lower bound on ||grad L||^2"),
              NamedFormula("via28", "(loss/2)**((2*L - 1)/L)/4", _T_SYMS,
                           equation="proof of Thm. A.11", description="the middle term"),
              NamedFormula("final", "loss**((2*L - 1)/L)/16", _T_SYMS,
                           equation="Thm. A.11", description="the final bound",
                           weaker="smaller")),
    checks={"symbolic": _final_symbolic}, setting=CHAIN_SETTING,
    notes="The step is sound given (28); (28) itself is corrected (gatmiry2024.eq28: the factor "
          "d^{-(L-1)/L} and 4 d delta^{4L-2} <= 1), and the conclusion inherits that correction "
          "(gatmiry2024.thm_a11).",
)
