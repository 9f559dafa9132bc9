"""Steps of the proofs of Lemmas A.5, A.7, A.9 and Thm. A.11 that expand a matrix power or chain
a bound: the genus step of Lemma A.5 (line 522), the binomial expansions (21) (line 570) and (25)
(line 634), and the eigenvalues gamma_j of the gradient moments (line 644).  The steps of Lemma A.10
(lines 683, 694) and the choice of epsilon in the proof of Thm. A.11 (line 730) are
``gradient_chain``.

Each check derives the quantity from the definitions: alpha^(j) from the Wishart moments
(``moment_bounds.moment_eigenvalues``), the pairings and their cycles by enumeration
(``pairings``), the matrix products at exact rational instances and their expectations at d = 1
from the Wishart moments, gamma_j with the moment kernel (``moments.wick``) at Sigma* = I and a
diagonal A; the named formulas give what the paper prints."""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import mpmath
import sympy

from moments.tensor import matrix, vector
from moments.wick import expectation
from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import combine, step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit.linear_icl import cayley_orthogonal
from ..kit.exact_compare import holds, mpf, real_le, size_text, value
from ..kit import looped_icl as li
from ..kit.looped_loss import formula_letters
from .common import N, PAPER, _D, _DELTA, _K, _L, _LAM_1, _LAM_J, _N, _setting
from .dominance import _gd_expr
from .isserlis_steps import cycles_gp
from .moment_bounds import moment_eigenvalues, moment_exact
from .pairings import _CG, _CGP, c_g, c_gp, pairings
from .proof_chain import Chain, formula_at, none_admitted, num

STEP_SETTING = _setting({"n": 20, "d": 3, "L": 2})
_I = FormulaSymbol("i")
_L1 = FormulaSymbol("l1")
_L2 = FormulaSymbol("l2")
_CSTAR = FormulaSymbol("c_star", positive=True)


def _as_index(x) -> int | None:
    """An exact integer value, or None (a summation bound or binomial argument that is not an
    integer is no such thing)."""
    x = sympy.nsimplify(x) if not isinstance(x, sympy.Basic) else x
    return int(x) if x.is_Integer else None


def _binom(top, bottom: int) -> int | None:
    t = _as_index(top)
    if t is None or t < 0:
        return None
    return math.comb(t, bottom)


# ----- line 522 ---------------------------------------------------------------------------------
_A5_SPECTRA = (("1", "1/100"), ("1", "1/2"), ("2", "1", "1/10"), ("3", "3", "1"), ("1", "1"),
               ("10", "1/10"), ("1/10", "1/20"), ("5", "5", "5"))
_A5_SYMS = (_N, _D, _K, _LAM_J, _LAM_1, _CG, _CGP, _CSTAR)


def _a5_ns(k: int, d: int) -> tuple:
    e = 4 * k * k * d * d  # Lemma A.2's n >= 4 k^2 d^2
    return (e, 10 * e, 10 ** 6 * e)


def _a5_symbolic(ctx: Context) -> TierResult:
    """Exact spectra lambda_1 >= ... >= lambda_d of Sigma~ (d = 2, 3), k <= 4 (5), n from
    Lemma A.2's n >= 4 k^2 d^2: n^k alpha^(j) (the Wishart moments) against the sum over the
    pairings of the named middle term (C(G_p), C(G'_p), |c*| enumerated), that sum against the
    named upper end, and the named lower end (line 532) against n^k alpha^(j)."""
    F = ctx.formulas
    chain = Chain({"alpha_to_middle": "n^k alpha^(j) exceeds the sum of the named middle terms",
                   "middle_to_upper": "the sum of the named middle terms exceeds the named upper "
                                      "end",
                   "lower_to_alpha": "the named lower end (line 532) exceeds n^k alpha^(j)"})
    term, upper, lower = (_gd_expr(F, x) for x in ("middle_term", "upper", "lower"))
    cg, cgp, cs = (sympy.Symbol(x, positive=True) for x in ("C_G", "C_Gp", "c_star"))
    X = sympy.Symbol("x")
    for k in range(1, li.by_budget(ctx, 4, 5) + 1):
        graphs = [(c_g(k, p), c_gp(k, p), cycles_gp(k, p)[0]) for p in pairings(2 * k)]
        for spec in _A5_SPECTRA:
            eigs = tuple(Fraction(s) for s in spec)
            d = len(eigs)
            lam_1 = sympy.Rational(str(max(eigs)))
            for n in _a5_ns(k, d):
                alphas = moment_eigenvalues(k, eigs, n)
                for j, (lam, alpha) in enumerate(zip(eigs, alphas)):
                    env = {"n": sympy.Integer(n), "d": sympy.Integer(d), "k": sympy.Integer(k),
                           "lambda_j": sympy.Rational(str(lam)), "lambda_1": lam_1}
                    lhs = sympy.Integer(n) ** k * sympy.Rational(alpha.numerator,
                                                                 alpha.denominator)
                    middle = sympy.Add(*[term.subs({cg: a, cgp: b, cs: c})
                                         for a, b, c in graphs])
                    row = {"k": k, "spectrum": list(spec), "j": j + 1, "n": size_text(n),
                           "n_k_alpha": num(lhs), "middle": num(value(middle, env))}
                    e = {**env, "x": lhs}
                    for name, ok, extra in (
                            ("alpha_to_middle", real_le(X, middle, e), {}),
                            ("middle_to_upper", real_le(middle, upper, e),
                             {"upper": num(value(upper, e))}),
                            ("lower_to_alpha", real_le(lower, X, e),
                             {"lower": num(value(lower, e))})):
                        chain.see(name, ok, {**row, **extra})
    return combine(chain.findings(),
                   steps=[step("The eigenvalues", r"n^k\alpha^{(j)}=u_j^\top\mathbb E[W^k]u_j",
                               "E[W^k], W ~ Wishart(n, diag(spectrum)), from moments.wishart "
                               "(exact rationals)"),
                          step("The pairings", r"C(\mathcal G_p),\ C(\mathcal G'_p),\ |c^*|",
                               "every pairing of the 2k factors enumerated; |c*| the nodes of "
                               "the cycle of G'_p holding (1, 2k)")])


def _a5_exact(point: dict) -> dict | None:
    """n^k times the sup and inf of alpha^(j) over the spectra with these lambda_j <= lambda_1
    (``moment_bounds.moment_exact``): what the upper and lower ends bound."""
    ex = moment_exact(point)
    if ex is None:
        return None
    nk = mpmath.mpf(point["n"]) ** int(point["k"])
    return {"upper": nk * ex["upper"], "lower": nk * ex["lower"]}


LEMMA_A5_GENUS_STEP = Claim(
    id="gatmiry2024.lemma_a5_genus_step",
    title="Proof of Lemma A.5 (line 522): nᵏ α^(j) ≤ sum_p n^{C(G_p)} d^{C(G'_p)-1} "
          "λⱼᵏ ≤ nᵏ λⱼᵏ + nᵏ λ₁ᵏ 4kd/√n", paper=PAPER,
    statement=r"$n^k\alpha^{(j)}_{n,d,k}\le\sum_{p}n^{C(\mathcal G_p)}d^{C(\mathcal G'_p)-1}"
              r"\lambda_j^k\le n^k\lambda_j^k+n^k\lambda_1^k\frac{4kd}{\sqrt n}$, and "
              r"$n^k\alpha^{(j)}\ge n^k\lambda_j^k(1-\frac{4kd}{\sqrt n})$ (line 532).",
    assumptions=("x~_i ~ N(0, Sigma~), Sigma~ = sum_j lambda_j u_j u_j^T, lambda_1 largest",
                 "n >= 4 k^2 d^2 (Lemma A.2, which the last step uses)",
                 "delta does not appear: the step prints 4 k d / sqrt(n) (the reading "
                 "delta = 4 k d / sqrt(n) of the proof of Lemma A.5)"),
    formulas=(NamedFormula("middle_term", "n**C_G*d**(C_Gp - 1)*lambda_j**k", _A5_SYMS,
                           equation="proof of Lemma A.5", description="the middle sum's term of "
                           "a pairing p (|c*| = c_star: the cycle of G'_p holding (1, 2k)); "
                           "an upper bound on alpha and a lower one for the next step"),
              NamedFormula("upper", "n**k*lambda_j**k + n**k*lambda_1**k*4*k*d/sqrt(n)",
                           _A5_SYMS, equation="proof of Lemma A.5",
                           description="the upper end", weaker="larger"),
              NamedFormula("lower", "n**k*lambda_j**k*(1 - 4*k*d/sqrt(n))", _A5_SYMS,
                           equation="proof of Lemma A.5 (line 532)",
                           description="the lower end", weaker="smaller")),
    checks={"symbolic": _a5_symbolic}, setting=STEP_SETTING,
    ranges=("n >= 4*k**2*d**2",),
    exact=ExactValues(_a5_exact, "n^k times the sup and inf of alpha^(j) over the spectra with "
                      "these lambda_j <= lambda_1, from the Wishart moments (the ends; the "
                      "middle term is judged by the checks)"),
    correction=Correction(
        description="the middle term n^{C(G_p)} d^{C(G'_p)-1} lambda_1^{k-|c*|} lambda_j^{|c*|}",
        reason="bounding each cycle c != c* by d lambda_1^{|c|} leaves lambda_1^{k - |c*|} "
               "lambda_j^{|c*|} (the cycles of G'_p cover its k nodes), not lambda_j^k: "
               "lambda_j^k is smaller when lambda_j < lambda_1 (k = 2, spectrum (1, 1/100), "
               "j = 2, n = 64: n^2 alpha^(2) = 1.0624 > 0.4288); the identity pairing "
               "(|c*| = k, C(G_p) = k) gives n^k lambda_j^k and the rest at most "
               "n^k lambda_1^k (alpha_{n,d,k} - 1), so the upper end still holds",
        formulas={"middle_term": "n**C_G*d**(C_Gp - 1)*lambda_1**(k - c_star)*"
                                 "lambda_j**c_star"}),
)


# ----- line 570: eq. (21) -----------------------------------------------------------------------
def _instances(ctx: Context, tag: str):
    """(d, B = A^{1/2}, Sigma) with B rational symmetric positive definite and Sigma = X X^T / n
    of a rational X (d x (d + 1)): the integrand of E_X at a sample."""
    rng = ctx.rng(tag)
    out = []
    for d in (2, 3):
        U = cayley_orthogonal(d, rng)  # a rational rotation: B has the distinct eigenvalues
        B = sympy.Matrix(U * sympy.diag(*[sympy.Rational(v, 2) for v in (1, 3, 4)[:d]]) * U.T)
        X = sympy.Matrix(d, d + 1, lambda i, j: sympy.Rational(int(rng.integers(-3, 4)), 2))
        out.append((d, B, X * X.T / (d + 1)))
    return out


@lru_cache(maxsize=None)
def _s_moment(m: int, sigma: Fraction, n: int) -> sympy.Rational:
    """E[s^m], s = Sigma at d = 1 (sigma chi^2_n / n), from the Wishart moments."""
    if m == 0:
        return sympy.Integer(1)
    v = moment_eigenvalues(m, (sigma,), n)[0]
    return sympy.Rational(v.numerator, v.denominator)


def _expect_d1(poly_in_s: sympy.Expr, s: sympy.Symbol, sigma: Fraction, n: int) -> sympy.Expr:
    """E of a polynomial in s = Sigma (d = 1): sympy expands it, the Wishart moments do the
    rest."""
    P = sympy.Poly(sympy.expand(poly_in_s), s)
    return sympy.Add(*[c * _s_moment(m, sigma, n) for (m,), c in P.terms()])


def _d1_cases():
    """(sigma, a, n, the point as a counterexample names it): Sigma* = sigma, A = a at d = 1."""
    for sigma, a in ((Fraction(1), sympy.Rational(1, 2)), (Fraction(3, 2), sympy.Integer(2))):
        for n in (3, 10):
            yield sigma, a, n, {"d": 1, "Sigma_star": str(sigma), "A": str(a), "n": n}


def _identity(chain: Chain, name: str, lhs, rhs, zero, at: dict) -> None:
    """lhs = rhs exactly (rhs None: the named sum is not one); at the first failure the point
    ``at`` with both sides is the counterexample."""
    text = lambda x: str(x.tolist() if isinstance(x, sympy.MatrixBase) else x)  # noqa: E731
    chain.see(name, rhs is not None and sympy.simplify(lhs - rhs) == zero,
              lambda: {**at, "lhs": text(lhs), "named_rhs": text(rhs)})


def _eq21_rhs(F, k: int, term, zero=0) -> sympy.Expr | None:
    """sum_{i = first}^{k} sign(i) C(k, i) term(i); None where the named first index is not an
    integer."""
    first = _as_index(formula_at(F, "first", {"k": k}))
    if first is None or first < 0:
        return None
    total = zero
    for i in range(first, k + 1):
        total = total + formula_at(F, "sign", {"k": k, "i": i}) * math.comb(k, i) * term(i)
    return total


def _eq21_symbolic(ctx: Context) -> TierResult:
    """(i) at exact instances (d = 2, 3; A = B^2, Sigma = X X^T / n of a rational X), k <= 4 (5):
    B^{-1} (B Sigma B - I)^k B by matrix powers against sum_{i=first}^{k} sign C(k, i)
    B^{-1} (B Sigma B)^i B, the integrand of E_X; (ii) the expectations at d = 1 (Sigma* = sigma,
    A = a), each side a polynomial in s = Sigma with E[s^m] from the Wishart moments."""
    F = ctx.formulas
    K = li.by_budget(ctx, 4, 5)
    chain = Chain({"integrand": "the named sum is not A^{-1/2} (B - I)^k A^{1/2} at a sample",
                   "expectation_d1": "E of the named sum is not E[A^{-1/2} (B - I)^k A^{1/2}] "
                                     "(d = 1, exact)"}, key="instances")
    for d, B, S in _instances(ctx, "eq21"):
        Bi, M = B.inv(), B * S * B
        for k in range(1, K + 1):
            _identity(chain, "integrand", Bi * (M - sympy.eye(d)) ** k * B,
                      _eq21_rhs(F, k, lambda i: Bi * M ** i * B, sympy.zeros(d, d)),
                      sympy.zeros(d, d),
                      {"d": d, "k": k, "A_half": str(B.tolist()), "Sigma": str(S.tolist())})
    s = sympy.Symbol("s")
    for sigma, a, n, at in _d1_cases():
        for k in range(1, K + 1):
            _identity(chain, "expectation_d1", _expect_d1((a * s - 1) ** k, s, sigma, n),
                      _eq21_rhs(F, k, lambda i: _expect_d1((a * s) ** i, s, sigma, n)), 0,
                      {**at, "k": k})
    return combine(chain.findings(), steps=[step(
        "Both sides",
        r"A^{-1/2}(B-I)^kA^{1/2}\ \text{vs}\ \sum_i(\pm1)\binom ki A^{-1/2}B^iA^{1/2}",
        "exact matrix powers at rational instances; at d = 1 the expectations from the Wishart "
        "moments")])


def _eq21_truth(name: str, mutant: sympy.Basic):
    """A mutated sign or first index is a true statement when, with the other formula as
    corrected, (b - 1)^k = sum_{i=first}^{k} sign C(k, i) b^i for k = 1..8 as polynomials in a
    scalar b (every side of (21) is a polynomial in B conjugated by A^{1/2}); None otherwise
    (the checks decide it)."""
    corr = {"sign": sympy.sympify("(-1)**(k - i)"), "first": sympy.Integer(0)}
    if name not in corr:
        return None
    forms = {**corr, name: mutant}
    b = sympy.Symbol("b")
    for k in range(1, 9):
        first = forms["first"].subs({s: k for s in forms["first"].free_symbols})
        if not first.is_Integer or first < 0:
            return None
        total = 0
        for i in range(int(first), k + 1):
            sign = forms["sign"].subs({s: {"k": k, "i": i}.get(s.name, s)
                                       for s in forms["sign"].free_symbols})
            total += sign * math.comb(k, i) * b ** i
        if sympy.expand(total - (b - 1) ** k) != 0:
            return None
    return "true", ("true: with the other formula as corrected, (b - 1)^k equals the sum for "
                    "k = 1..8 as a polynomial identity (integer i, k)")


EQ21 = Claim(
    id="gatmiry2024.eq21",
    title="Eq. (21): the binomial expansion of E[A^{-1/2} (A^{1/2} Σ A^{1/2} - I)ᵏ A^{1/2}]",
    paper=PAPER,
    statement=r"$\mathbb E[A^{-1/2}(A^{1/2}\Sigma A^{1/2}-I)^kA^{1/2}]=\sum_{i=1}^k(-1)^i"
              r"\binom ki\mathbb E[A^{-1/2}(A^{1/2}\Sigma A^{1/2})^iA^{1/2}]$.",
    assumptions=("A symmetric positive definite", "Sigma = X X^T / n, x_i ~ N(0, Sigma*)",
                 "the binomial coefficient C(k, i) is part of the statement; its sign and first "
                 "index are the named formulas"),
    formulas=(NamedFormula("sign", "(-1)**i", (_K, _I), equation="(21)",
                           description="the sign of the i-th term"),
              NamedFormula("first", "1", (_K,), equation="(21)",
                           description="the first index of the sum")),
    checks={"symbolic": _eq21_symbolic}, setting=STEP_SETTING,
    exact=ExactValues(lambda pt: None, "(21) as a polynomial identity in a scalar B, k <= 8",
                      definition=_eq21_truth),
    correction=Correction(
        description="sum_{i=0}^k (-1)^{k-i} C(k, i) E[A^{-1/2} B^i A^{1/2}]",
        reason="(B - I)^k = sum_{i=0}^k C(k, i) B^i (-I)^{k-i}: the i = 0 term (-1)^k I is "
               "missing, and (-1)^i is the sign only for even k (k = 1: the printed sum is "
               "-E[B], the left side E[B] - I)",
        formulas={"sign": "(-1)**(k - i)", "first": "0"}),
)


# ----- line 634: eq. (25) -----------------------------------------------------------------------
_E25_SYMS = (_L, _I, _L1, _L2)


def _eq25_rhs(F, L: int, i: int, term, zero=0) -> sympy.Expr | None:
    """sum_{l1 <= l1_max} sum_{l2 <= l2_max} C(top1, l1) C(top2, l2) sign term(power, l2) with
    the named ranges, binomial tops, sign and power; None where one is not a valid integer."""
    env = {"L": L, "i": i}
    m1, m2 = (_as_index(formula_at(F, nm, env)) for nm in ("l1_max", "l2_max"))
    if m1 is None or m2 is None:
        return None
    total = zero
    for l1 in range(0, m1 + 1):
        for l2 in range(0, m2 + 1):
            e = {**env, "l1": l1, "l2": l2}
            b1, b2 = _binom(formula_at(F, "top1", e), l1), _binom(formula_at(F, "top2", e), l2)
            p = _as_index(formula_at(F, "power", e))
            if b1 is None or b2 is None or p is None or p < 0:
                return None
            if b1 * b2:
                total = total + b1 * b2 * formula_at(F, "sign", e) * term(p, l2)
    return total


def _eq25_symbolic(ctx: Context) -> TierResult:
    """L = 1, 2 (3), every i: (i) at exact instances (d = 2, 3) (I - Sigma A)^i Sigma
    (I - Sigma A)^{2L-1-i} by matrix powers against the named double sum of
    A^{-1/2} B^{power} A^{-1} B^{l2} A^{1/2}; (ii) both sides' expectations at d = 1 from the
    Wishart moments."""
    F = ctx.formulas
    Ls = sorted(set(li.loops(ctx)) | {1, 2})
    chain = Chain({"integrand": "the named double sum is not (I - Sigma A)^i Sigma "
                                "(I - Sigma A)^{2L-1-i} at a sample",
                   "expectation_d1": "E of the named double sum is not the moment (d = 1, "
                                     "exact)"}, key="instances")
    for d, B, S in _instances(ctx, "eq25"):
        A, Bi, M = B * B, B.inv(), B * S * B
        Ai, I_ = A.inv(), sympy.eye(d)
        for L in Ls:
            for i in range(2 * L):
                _identity(chain, "integrand",
                          (I_ - S * A) ** i * S * (I_ - S * A) ** (2 * L - 1 - i),
                          _eq25_rhs(F, L, i, lambda p, q: Bi * M ** p * Ai * M ** q * B,
                                    sympy.zeros(d, d)), sympy.zeros(d, d),
                          {"d": d, "L": L, "i": i, "A": str(A.tolist()), "Sigma": str(S.tolist())})
    s = sympy.Symbol("s")
    for sigma, a, n, at in _d1_cases():
        for L in Ls:
            for i in range(2 * L):
                _identity(chain, "expectation_d1",
                          _expect_d1((1 - s * a) ** i * s * (1 - s * a) ** (2 * L - 1 - i), s,
                                     sigma, n),
                          _eq25_rhs(F, L, i, lambda p, q: _expect_d1(
                              (a * s) ** p / a * (a * s) ** q, s, sigma, n)), 0,
                          {**at, "L": L, "i": i})
    return combine(chain.findings(), steps=[step(
        "The factors", r"(I-\Sigma A)^i=A^{-1/2}(I-B)^iA^{1/2},\ \Sigma=A^{-1/2}BA^{-1/2}",
        "exact matrix powers at rational instances; at d = 1 the expectations from the Wishart "
        "moments")])


def _eq25_truth(name: str, mutant: sympy.Basic):
    """A mutated range, binomial top, sign or power is a true statement when, with the others as
    corrected, (1 - x)^i x (1 - y)^m = sum C(top1, l1) C(top2, l2) sign x^power y^l2 for
    L = 1..4 and every i, as polynomials in commuting x, y (the left and the right powers of
    B: A^{-1} separates them); None otherwise (the checks decide it)."""
    corr = {"l1_max": "i", "l2_max": "2*L - 1 - i", "top1": "i", "top2": "2*L - 1 - i",
            "sign": "(-1)**(l1 + l2)", "power": "l1 + 1"}
    if name not in corr:
        return None
    forms = {k: sympy.sympify(v) for k, v in corr.items()}
    forms[name] = mutant
    x, y = sympy.symbols("x y")

    def at(f, env):
        v = forms[f].subs({s: env.get(s.name, s) for s in forms[f].free_symbols})
        return v if v.is_number else None

    for L in range(1, 5):
        for i in range(2 * L):
            env = {"L": L, "i": i}
            m1, m2 = at("l1_max", env), at("l2_max", env)
            if m1 is None or m2 is None or not (m1.is_Integer and m2.is_Integer):
                return None
            total = 0
            for l1 in range(0, int(m1) + 1):
                for l2 in range(0, int(m2) + 1):
                    e = {**env, "l1": l1, "l2": l2}
                    t1, t2, p, sg = (at(f, e) for f in ("top1", "top2", "power", "sign"))
                    if None in (t1, t2, p, sg) or not (t1.is_Integer and t2.is_Integer
                                                       and p.is_Integer) or t1 < 0 or t2 < 0 \
                            or p < 0:
                        return None
                    total += math.comb(int(t1), l1) * math.comb(int(t2), l2) * sg * x ** p * \
                        y ** l2
            if sympy.expand(total - (1 - x) ** i * x * (1 - y) ** (2 * L - 1 - i)) != 0:
                return None
    return "true", ("true: with the others as corrected, the double sum equals the product for "
                    "L = 1..4 and every i, as a polynomial identity in the left and right powers "
                    "of B")


EQ25 = Claim(
    id="gatmiry2024.eq25",
    title="Eq. (25): the expansion of E[(I - Σ A)ⁱ Σ (I - Σ A)^{2L-1-i}]",
    paper=PAPER,
    statement=r"$\mathbb E[(I-\Sigma A)^i\Sigma(I-\Sigma A)^{2L-1-i}]=\sum_{0\le\ell_1\le i}"
              r"\sum_{0\le\ell_2\le2L-1-i}\binom{2L-1-i}{\ell_1}\binom i{\ell_2}(-1)^{\ell_1+"
              r"\ell_2}\mathbb E[A^{-1/2}B^{\ell_1+1}A^{-1}B^{\ell_2}A^{1/2}]$, "
              r"$B=A^{1/2}\Sigma A^{1/2}$.",
    assumptions=("A symmetric positive definite", "Sigma = X X^T / n, x_i ~ N(0, Sigma*)",
                 "binomials C(top, l) with the named tops; the ranges, sign and the power of "
                 "the first B are named too"),
    formulas=(NamedFormula("l1_max", "i", _E25_SYMS, equation="(25)",
                           description="the last l1"),
              NamedFormula("l2_max", "2*L - 1 - i", _E25_SYMS, equation="(25)",
                           description="the last l2"),
              NamedFormula("top1", "2*L - 1 - i", _E25_SYMS, equation="(25)",
                           description="the binomial C(top1, l1)"),
              NamedFormula("top2", "i", _E25_SYMS, equation="(25)",
                           description="the binomial C(top2, l2)"),
              NamedFormula("sign", "(-1)**(l1 + l2)", _E25_SYMS, equation="(25)",
                           description="the sign"),
              NamedFormula("power", "l1 + 1", _E25_SYMS, equation="(25)",
                           description="the power of the first B")),
    checks={"symbolic": _eq25_symbolic}, setting=STEP_SETTING,
    exact=ExactValues(lambda pt: None, "(25) as a polynomial identity in the left and right "
                      "powers of B, L <= 4", definition=_eq25_truth),
    notes="The label (25) is printed twice and (26) has no display (ledger line 642).",
    correction=Correction(
        description="C(i, l1) C(2L-1-i, l2)",
        reason="(I - Sigma A)^i Sigma (I - Sigma A)^m = A^{-1/2} (I - B)^i B A^{-1} (I - B)^m "
               "A^{1/2}: l1 runs with (I - B)^i, so its binomial is C(i, l1), and l2's is "
               "C(m, l2); the printed tops are swapped (L = 1, i = 0: the printed sum is "
               "A^{-1/2} B A^{-1} A^{1/2} = Sigma, the left side Sigma - Sigma A Sigma)",
        formulas={"top1": "i", "top2": "2*L - 1 - i"}),
)


# ----- line 644: the eigenvalues gamma_j ---------------------------------------------------------
_G_SYMS = (_N, _D, _K, _LAM_J, _LAM_1, _DELTA)
_G_SPECTRA = (("4", "1/4"), ("2", "1"), ("1", "1/2"), ("3/2", "3/2"), ("1", "1"))


@lru_cache(maxsize=None)
def _gamma_poly(l1: int, l2: int):
    """E[e^T A^{-1/2} B^{l1} A^{-1} B^{l2} A^{1/2} e] with the moment kernel, B = A^{1/2} Sigma
    A^{1/2} (the letters A^{-1/2}, A^{-1} are constants of their own)."""
    lt = formula_letters()
    S, Bh = lt["Sigma"], lt["A_half"]
    Bi, Ai, e = matrix("A_half_inv", symmetric=True), matrix("A_inv", symmetric=True), vector("e")
    M = Bh @ S @ Bh
    P = e.T @ Bi
    for _ in range(l1):
        P = P @ M
    P = P @ Ai
    for _ in range(l2):
        P = P @ M
    return expectation(P @ Bh @ e).simplify()


@lru_cache(maxsize=None)
def _gamma(l1: int, l2: int, spec: tuple) -> tuple:
    """gamma_j (j = 1..d) at Sigma* = I, A = diag(spec) (rational squares' roots), exact in n."""
    d = len(spec)
    lam = [sympy.Rational(x) for x in spec]
    Bh = sympy.diag(*[sympy.sqrt(x) for x in lam])
    env = {"Sigma": sympy.ImmutableMatrix(sympy.eye(d)), "B": sympy.ImmutableMatrix(Bh),
           "A_half_inv": sympy.ImmutableMatrix(Bh.inv()),
           "A_inv": sympy.ImmutableMatrix(sympy.diag(*[1 / x for x in lam])),
           "A": sympy.ImmutableMatrix(sympy.diag(*lam))}
    out = []
    P = _gamma_poly(l1, l2)
    for j in range(d):
        env["e"] = sympy.ImmutableMatrix([[1 if i == j else 0] for i in range(d)])
        out.append(sympy.simplify(P.evaluate(env, {"n": N, "d": d}, exact=True)))
    return tuple(out)


def _gamma_symbolic(ctx: Context) -> TierResult:
    """Sigma* = I, A = diag(spectrum) (so A commutes with A^{1/2} Sigma* A^{1/2} = A, whose
    eigenvalues are the lambda_j), l1 >= 1, k = l1 + l2 + 1 <= 4 (5): gamma_j with the moment
    kernel (exact in n), against the named centre and radius at n from the named hypothesis
    upward."""
    F = ctx.formulas
    hyp = _gd_expr(F, "hypothesis")
    chain = Chain({"spectra": "gamma_j is not within the named radius of the named centre"})
    g = sympy.Symbol("g")
    for k in range(2, li.by_budget(ctx, 4, 5) + 1):
        for l1 in range(1, k):
            l2 = k - 1 - l1
            for spec in _G_SPECTRA:
                d = len(spec)
                gammas = _gamma(l1, l2, spec)
                lam_1 = max(sympy.Rational(x) for x in spec)
                for n in (4 * k * k * d * d, 10 ** 4 * k * k * d * d, 10 ** 12):
                    for j, lam in enumerate(spec):
                        env = {"n": sympy.Integer(n), "d": sympy.Integer(d),
                               "k": sympy.Integer(k), "lambda_j": sympy.Rational(lam),
                               "lambda_1": lam_1}
                        if not holds(hyp, env):
                            continue
                        gv = gammas[j].subs(N, n)
                        e = {**env, "g": gv}
                        c, r = _gd_expr(F, "center"), _gd_expr(F, "radius")
                        # |gamma_j - centre| <= radius: a deviation exactly 0 (k = 2, where
                        # gamma_j = 1) is decided from its value, never by exact powers
                        ok = real_le(sympy.Abs(g - c), r, e)
                        with mpmath.workdps(30):
                            dev, rad = abs(mpf(gv) - value(c, e)), value(r, e)
                            ratio = float(dev / rad) if rad > 0 else float("inf")
                        row = {"k": k, "l1": l1, "l2": l2, "A": list(spec), "j": j + 1,
                               "n": size_text(n), "gamma_j": num(gv), "center": num(value(c, e)),
                               "radius": num(rad), "ratio": ratio}
                        chain.see("spectra", ok, row, near=True)
    if not chain.count["spectra"]:
        return none_admitted("spectra")
    return combine([chain.finding("spectra", "|gamma_j - centre| / radius",
                                  ("k", "l1", "l2", "A", "j", "n"))],
                   steps=[step("gamma_j", r"\gamma_j=u_j^\top\mathbb E[A^{-1/2}B^{\ell_1}A^{-1}"
                               r"B^{\ell_2}A^{1/2}]u_j", "moment kernel (Isserlis), exact in n, "
                               "at Sigma* = I and diagonal A")])


LEMMA_A9_GAMMA_STEP = Claim(
    id="gatmiry2024.lemma_a9_gamma_step",
    title="Proof of Lemma A.9 (line 644): the eigenvalues γⱼ of "
          "E[A^{-1/2} B^{l1} A⁻¹ B^{l2} A^{1/2}]", paper=PAPER,
    statement=r"For $k=\ell_1+\ell_2+1$: $\lambda_j^{k-1}-\delta^k\lambda_1^{k-1}\le\gamma_j\le"
              r"\lambda_j^{k-1}+\delta^k\lambda_1^{k-1}$, $\gamma_j$ the eigenvalues of "
              r"$\mathbb E[A^{-1/2}(A^{1/2}\Sigma A^{1/2})^{\ell_1}A^{-1}(A^{1/2}\Sigma A^{1/2})"
              r"^{\ell_2}A^{1/2}]$.",
    assumptions=("Sigma* = I and A diagonal (A commutes with A^{1/2} Sigma* A^{1/2}, which the "
                 "step needs), lambda_j = the eigenvalues of A", "l1 >= 1",
                 "delta^k = 4 k d / sqrt(n) (the step's n^k lambda_1^{k-1} 4kd/sqrt(n); Lemma "
                 "A.7's reading)", "n >= 4 k^2 d^2 (Lemma A.2)"),
    formulas=(NamedFormula("hypothesis", "n >= 4*k**2*d**2", _G_SYMS, equation="Lemma A.2",
                           description="the moment lemmas' sample size", weaker="narrower"),
              NamedFormula("delta", "(4*k*d/sqrt(n))**(1/k)", (_N, _D, _K),
                           equation="Lemma A.7", description="delta^k = 4 k d / sqrt(n)"),
              NamedFormula("center", "lambda_j**(k - 1)", _G_SYMS,
                           equation="proof of Lemma A.9", description="the centre"),
              NamedFormula("radius", "delta**k*lambda_1**(k - 1)", _G_SYMS,
                           equation="proof of Lemma A.9", description="the radius",
                           weaker="larger")),
    checks={"symbolic": _gamma_symbolic}, setting=STEP_SETTING,
    notes="(25)'s terms are B^{l1+1} A^{-1} B^{l2}, of degree k = l1 + l2 + 1 in B, whose "
          "eigenvalues are near lambda_j^{k-1} as printed; the display at line 644 drops the +1.",
    correction=Correction(
        description="lambda_j^{k-2} -+ delta^k lambda_1^{k-2}",
        reason="B^{l1} A^{-1} B^{l2} has degree l1 + l2 = k - 1 in Sigma and A^{-1} takes one "
               "power of A: at A = a I gamma_j = a^{k-2} alpha_{n,d,k-1}, near lambda_j^{k-2} "
               "(k = 2, l1 = 1, A = diag(4, 1/4), n = 160000: gamma_1 = 1, the printed centre "
               "lambda_1 = 4, radius 0.16)",
        formulas={"center": "lambda_j**(k - 2)", "radius": "delta**k*lambda_1**(k - 2)"}),
)
