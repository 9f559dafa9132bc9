"""Moment bounds on E[(W/n)^k], W ~ Wishart(n, Sigma~): Lemmas A.2 (Sigma = I), 4.2 and its
restatement A.5 (the eigenvalues alpha^(j) within delta^k lambda_1^k of lambda_j^k).  Holds the
exact eigenvalues from the Wishart engine (``moment_eigenvalues``, ``flat_alpha``), the exact
values of the moment lemmas (``MOMENT_EXACT``, ``IDENTITY_EXACT``, the ``_moment_point`` and
``_term_ranges`` that ``centred_bounds`` shares), the lower envelope alpha^(j) >= lambda_j^k and
the Monte Carlo tier.  The search over the bounds is ``moment_search``; Lemmas 4.3 and A.7
(E[(I - W/n)^k]) are ``centred_bounds``."""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np
import sympy

from moments import wishart
from moments.montecarlo import Estimate
from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import NamedFormula

from ..kit.linear_icl import cayley_orthogonal
from ..kit.scalar_optimum import sizes_of
from .common import (PAPER, _D, _DELTA, _K, _L, _LAM_1, _LAM_J, _N, _setting, _size,
                     sec35_delta)
from .moment_search import _moment_symbolic


@lru_cache(maxsize=None)
def _moment_terms(k: int) -> tuple:
    return tuple(wishart.moment(k).terms.items())


def _integer_spectrum(eigs: tuple) -> tuple[list[int], int]:
    """eigs = a / q with integers a and one common denominator q."""
    q = math.lcm(*[Fraction(v).denominator for v in eigs])
    return [int(Fraction(v) * q) for v in eigs], q


@lru_cache(maxsize=8192)  # bounded: at n = 10^100 each entry holds integers of thousands of digits
def _moment_numerators(k: int, eigs: tuple, n: int) -> tuple:
    """I_j with alpha_j = I_j / (n q)^k: E[W^k] = sum c n^e p_mu Sigma^s has degree |mu| + s = k,
    so at Sigma = diag(a / q) every term is an integer over q^k."""
    a, q = _integer_spectrum(eigs)
    p: dict = {}
    out = []
    for aj in a:
        total = 0
        for (s_, mu, e), c in _moment_terms(k):
            term = c * n ** e * aj ** s_
            for part in mu:
                if part not in p:
                    p[part] = sum(v ** part for v in a)
                term *= p[part]
            total += term
        out.append(total)
    return tuple(out)


@lru_cache(maxsize=8192)
def moment_eigenvalues(k: int, eigs: tuple, n: int) -> list[Fraction]:
    """The eigenvalues alpha_j of E[(W/n)^k], W ~ Wishart(n, diag(eigs)), exactly: E[W^k] =
    sum c n^e p_mu Sigma^s is a polynomial in Sigma (same eigenvectors)."""
    _, q = _integer_spectrum(eigs)
    den = (n * q) ** k
    return [Fraction(v, den) for v in _moment_numerators(k, eigs, n)]


@lru_cache(maxsize=None)
def _flat_coefficients(k: int, d: int) -> tuple[tuple[int, int], ...]:
    """(e, C_e) with E[W^k] = sum_e C_e n^e I at Sigma = I: p_mu(I) = d^{len(mu)}."""
    out: dict = {}
    for (_, mu, e), c in _moment_terms(k):
        out[e] = out.get(e, 0) + int(c) * d ** len(mu)
    return tuple(sorted(out.items()))


@lru_cache(maxsize=65536)
def _flat_numerator(k: int, d: int, n: int) -> int:
    """n^k alpha_I = sum_e C_e n^e, an integer."""
    return sum(c * n ** e for e, c in _flat_coefficients(k, d)) if k else 1


def flat_alpha(k: int, s: Fraction, d: int, n: int) -> Fraction:
    """The eigenvalue of E[(W/n)^k], W ~ Wishart(n, s I_d), exactly, for any d: s^k alpha_I with
    alpha_I = sum_e C_e n^(e - k) (Lemma A.2's alpha_{n,d,k})."""
    s = Fraction(s)
    return _flat_alpha(k, s.numerator, s.denominator, d, n)


# cached on integers: hashing a Fraction key was a visible share of the flat search
@lru_cache(maxsize=65536)
def _flat_alpha(k: int, a: int, q: int, d: int, n: int) -> Fraction:
    return Fraction(a ** k * _flat_numerator(k, d, n), (q * n) ** k)


MOMENT_SETTING = _setting({"n": 16, "d": 3, "L": 2})
_BOUND_SYMBOLS = (_N, _D, _L, _K, _LAM_J, _LAM_1, _DELTA)


LOWER_ENVELOPE_SOURCE = ("alpha^(j) >= lambda_j^k (the Wishart moments' coefficients are "
                         "non-negative: the symbolic tier's lower_envelope)")


MOMENT_EXACT_MAX_K = 10


def _term_ranges(k: int, n, d: int, lam_j, lam_1):
    """(c n^(e-k) lambda_j^s, low, top) for each term of alpha^(j) = sum c n^(e-k) p_mu(Sigma~)
    lambda_j^s, with p_mu between its values at the d - 2 other eigenvalues at 0 (low) and at
    lambda_1 (top): p_mu grows with every eigenvalue (when lambda_j = lambda_1 it may be
    lambda_1 itself, j = 1, with all d - 1 others at 0)."""
    alone = lam_j == lam_1
    for (s_, mu, e), c in _moment_terms(k):
        coef, top, low = c * n ** (e - k) * lam_j ** s_, mpmath.mpf(1), mpmath.mpf(1)
        for part in mu:
            top *= lam_j ** part + (d - 1) * lam_1 ** part
            low *= lam_j ** part + (0 if alone else lam_1 ** part)
        yield coef, low, top


def _alpha_extremes(k: int, n: int, d: int, lam_j, lam_1) -> tuple:
    """(sup, inf) of alpha^(j) over spectra of size d with lambda_1 the largest eigenvalue and
    lambda_j the j-th: every coefficient is >= 0, so the sup has the others at lambda_1 and the
    inf at 0 (``_term_ranges``)."""
    with mpmath.workdps(mpmath.mp.dps + 30):
        lam_j, lam_1, nn = mpmath.mpf(lam_j), mpmath.mpf(lam_1), mpmath.mpf(n)
        hi = lo = mpmath.mpf(0)
        for coef, low, top in _term_ranges(k, nn, d, lam_j, lam_1):
            hi += coef * top
            lo += coef * low
        return +hi, +lo


def _moment_point(point: dict) -> tuple | None:
    """(k, n, d, lambda_j, lambda_1) of an ExactValues point of the moment lemmas, or None where
    their exact values are not computed (k > MOMENT_EXACT_MAX_K, lambda_j > lambda_1, or d = 1
    with two eigenvalues)."""
    sizes = sizes_of(point, ("n", "d", "k"))
    if sizes is None:
        return None
    n, d, k = sizes
    lam_j, lam_1 = point["lambda_j"], point["lambda_1"]
    if k > MOMENT_EXACT_MAX_K or lam_j > lam_1 or (d == 1 and lam_j != lam_1):
        return None
    return k, n, d, lam_j, lam_1


def moment_exact(point: dict) -> dict | None:
    """Lemmas 4.2 and A.5: the sup and inf of alpha^(j) at (n, d, k, lambda_j, lambda_1) for
    k <= MOMENT_EXACT_MAX_K (Lemma 4.2's k <= 2L is its Claim.ranges)."""
    args = _moment_point(point)
    if args is None:
        return None
    hi, lo = _alpha_extremes(*args)
    return {"upper": hi, "lower": lo}


MOMENT_EXACT = ExactValues(moment_exact, "the sup and inf of alpha^(j) over the spectra with "
                                         "these lambda_j <= lambda_1, from the Wishart moments, at "
                                         f"k <= {MOMENT_EXACT_MAX_K}")


def identity_moment_exact(point: dict) -> dict | None:
    """Lemma A.2: alpha_{n,d,k} at Sigma = I, exactly, for k <= MOMENT_EXACT_MAX_K."""
    sizes = sizes_of(point, ("n", "d", "k"))
    if sizes is None or sizes[2] > MOMENT_EXACT_MAX_K:
        return None
    n, d, k = sizes
    a = flat_alpha(k, Fraction(1), d, n)
    v = mpmath.mpf(a.numerator) / a.denominator
    return {"upper": v, "lower": v}


IDENTITY_EXACT = ExactValues(identity_moment_exact, "alpha_{n,d,k} at Sigma = I from the Wishart "
                                                    f"moments, k <= {MOMENT_EXACT_MAX_K}")


def _lower_envelope() -> sympy.Expr:
    """alpha^(j) >= lambda_j^k, as ``lower_envelope_finding`` derives it."""
    return sympy.Symbol("lambda_j", positive=True) ** sympy.Symbol("k", positive=True, integer=True)


# ----- Lemma A.2 -------------------------------------------------------------------------------
LEMMA_A2_FORMULAS = (
    NamedFormula("hypothesis", "n >= 4*k**2*d**2", (_N, _D, _K), equation="Lemma A.2",
                 description="the sample size condition", weaker="narrower"),
    NamedFormula("lower", "1", _BOUND_SYMBOLS, equation="Lemma A.2",
                 description="lower bound on alpha_{n,d,k}", weaker="smaller"),
    NamedFormula("upper", "1 + 4*k*d/sqrt(n)", _BOUND_SYMBOLS, equation="Lemma A.2",
                 description="upper bound on alpha_{n,d,k}", weaker="larger"),
)


def _identity_alpha(k: int, eigs, n: int) -> list[Fraction]:
    return moment_eigenvalues(k, eigs, n)


def lemma_a2_symbolic(ctx: Context) -> TierResult:
    """E[(W/n)^k] = alpha I at Sigma = I, alpha exact; the bounds on the grid, then for every real
    n above the hypothesis: (alpha - 1)^2 n <= 16 k^2 d^2 is a polynomial inequality in n."""
    r = _moment_symbolic(ctx, _identity_alpha, "the bound on alpha", flat_alpha,
                         flat_scales=(Fraction(1),), identity_only=True)
    steps = [step("Moments at the identity", r"\mathbb E[W^k] = \alpha_{n,d,k}\, n^k I,\quad "
                  r"\alpha_{n,d,2} = 1 + \tfrac{d+1}{n}",
                  "E[W^k] from the Wishart engine at Sigma = I: a polynomial in n and d times I."),
             step("Grid", "", "alpha exact (rational), the bounds in 40-digit arithmetic and "
                  "exactly near the boundary, at every n of the grid the hypothesis admits.")]
    r.steps = steps
    return r


LEMMA_A2 = Claim(
    id="gatmiry2024.lemma_a2",
    title="Moments of the Gaussian covariance at Σ = I",
    paper=PAPER,
    statement=r"For $n\ge4k^2d^2$ and $x_i\sim\mathcal N(0,I)$, $\mathbb E[(\frac1n\sum_i "
              r"x_ix_i^\top)^k]=\alpha_{n,d,k}I$ with $1\le\alpha_{n,d,k}\le1+\frac{4kd}{\sqrt n}$.",
    assumptions=("x_i ~ N(0, I_d) i.i.d.", "n >= 4 k^2 d^2"),
    formulas=LEMMA_A2_FORMULAS,
    checks={"symbolic": lemma_a2_symbolic},
    setting=MOMENT_SETTING,
    exact=IDENTITY_EXACT,
    notes="The display prints E[(1/n) sum x_i x_i^T] without the power k.",
)

# ----- Lemma 4.2 and its restatement A.5 --------------------------------------------------------
LEMMA42_FORMULAS = (
    NamedFormula("hypothesis", "n > d", (_N, _D, _K, _L), equation="Sec. 3.2",
                 description="the paper's standing assumption (the lemma states none)",
                 weaker="narrower"),
    sec35_delta(_K),
    NamedFormula("lower", "lambda_j**k - delta**k*lambda_1**k", _BOUND_SYMBOLS,
                 equation="Lemma 4.2", description="lower bound on alpha^(j)", weaker="smaller",
                 proof=_lower_envelope, proof_source=LOWER_ENVELOPE_SOURCE),
    NamedFormula("upper", "lambda_j**k + delta**k*lambda_1**k", _BOUND_SYMBOLS,
                 equation="Lemma 4.2", description="upper bound on alpha^(j)", weaker="larger"),
)
HYPOTHESIS_A2 = "n >= 4*k**2*d**2"


def lemma42_symbolic(ctx: Context) -> TierResult:
    r = _moment_symbolic(ctx, moment_eigenvalues, "the bound on alpha^(j)", flat_alpha,
                         readings=True, proofs=(lower_envelope_finding(),))
    r.steps = [step("Eigenvalues", r"\mathbb E[(W/n)^k] = \sum_{s,\mu,e} c\, n^{e-k} p_\mu "
                    r"\tilde\Sigma^s \Rightarrow \alpha^{(j)} = \sum c\, n^{e-k} p_\mu \lambda_j^s",
                    "E[W^k] is a polynomial in Sigma~ with non-negative coefficients (Wishart "
                    "engine), so it has Sigma~'s eigenvectors, alpha^(j) >= lambda_j^k, and "
                    "alpha^(j) - lambda_j^k <= lambda_1^k (alpha(I) - 1): the flat spectrum is the "
                    "worst case of the upper bound."),
               step("Grid and readings of delta", "",
                    "Every case the hypothesis admits is checked (40-digit arithmetic, exact near "
                    "the boundary); the same grid is run with each of the paper's definitions of "
                    "delta.")]
    return r


LOWER_ENVELOPE_K = 16


def lower_envelope_finding() -> Finding:
    """alpha^(j) >= lambda_j^k: E[W^k] = sum c n^e p_mu Sigma^s has c >= 0 for every term and the
    term n^k Sigma^k has c = 1, so alpha^(j) = sum c n^(e-k) p_mu lambda_j^s >= lambda_j^k
    (checked on the Wishart engine's coefficients for k <= LOWER_ENVELOPE_K)."""
    negative, leading = [], []
    for k in range(1, LOWER_ENVELOPE_K + 1):
        terms = dict(_moment_terms(k))
        negative += [(k, key) for key, c in terms.items() if c < 0]
        if terms.get((k, (), k)) != 1:
            leading.append(k)
    ok = not negative and not leading
    ev = {"k": f"1..{LOWER_ENVELOPE_K}", "negative_coefficients": len(negative),
          "leading_term_not_one": leading}
    return Finding("lower_envelope", ok, ev, None if ok else {"negative": str(negative[:5]),
                                                              "leading": leading},
                   "" if ok else "a Wishart coefficient is negative or the n^k Sigma^k term is "
                                 "not 1: alpha^(j) >= lambda_j^k does not follow")


def _moment_numeric(ctx: Context, k_max: int = 4) -> TierResult:
    """E[(W/n)^k] from the engine against Monte Carlo of sampled Wishart matrices."""
    rng = ctx.rng("moment-mc")
    d, n = 3, _size(ctx, MOMENT_SETTING, "n")
    eigs = (Fraction(1), Fraction(1, 2), Fraction(1, 5))
    U = np.array(cayley_orthogonal(d, rng).tolist(), dtype=float)
    S = U @ np.diag([float(v) for v in eigs]) @ U.T
    samples = ctx.budget.mc_samples
    gen = np.random.default_rng(ctx.mc_seed("moment-mc-draws"))
    rows, ok = [], True
    comps = k_max * d
    sums = np.zeros((k_max, d))
    sq = np.zeros((k_max, d))
    done = 0
    chol = np.linalg.cholesky(S)
    while done < samples:
        m = min(20_000, samples - done)
        X = chol @ gen.standard_normal((m, d, n))
        Wn = X @ np.swapaxes(X, 1, 2) / n
        P = np.eye(d)[None].repeat(m, 0)
        for k in range(k_max):
            P = P @ Wn
            vals = np.einsum("ij,mjk,ki->mi", U.T, P, U)  # u_j^T (W/n)^k u_j
            sums[k] += vals.sum(0)
            sq[k] += (vals ** 2).sum(0)
        done += m
    for k in range(1, k_max + 1):
        exact = moment_eigenvalues(k, eigs, n)
        for j in range(d):
            mean = sums[k - 1, j] / samples
            se = math.sqrt(max(sq[k - 1, j] / samples - mean ** 2, 0) / samples)
            est = Estimate(mean, se, samples)
            agree = est.agrees(float(exact[j]), 0.999, comps)
            ok &= agree
            rows.append({"k": k, "j": j + 1, "exact": float(exact[j]), "mean": mean, "se": se,
                         "z": est.z_score(float(exact[j]))})
    return combine([Finding("moments_vs_monte_carlo", bool(ok), {
        "n": n, "d": d, "eigenvalues": [str(v) for v in eigs], "samples": samples,
        "comparisons": comps, "rows": rows}, None if ok else {"rows": rows, "seed": ctx.seed},
        "" if ok else "an exact moment eigenvalue is outside its Monte Carlo interval",
        sampled=True)])


LEMMA4_2 = Claim(
    id="gatmiry2024.lemma4_2",
    title="Moment controls: eigenvalues of E[(S~)ᵏ] within δᵏ λ₁ᵏ of λⱼᵏ",
    paper=PAPER,
    statement=r"For $\tilde x_i\sim\mathcal N(0,\tilde\Sigma)$, $\tilde\Sigma=\sum_j\lambda_ju_ju_j^\top$ "
              r"($\lambda_1\ge\dots\ge\lambda_d$) and $1\le k\le2L$, $\mathbb E[(\frac1n\sum_i\tilde "
              r"x_i\tilde x_i^\top)^k]=\sum_j\alpha^{(j)}_{n,d,k}u_ju_j^\top$ with $\lambda_j^k-\delta^k"
              r"\lambda_1^k\le\alpha^{(j)}_{n,d,k}\le\lambda_j^k+\delta^k\lambda_1^k$.",
    assumptions=("x~_i ~ N(0, Sigma~) i.i.d.", "delta = (8 L d / sqrt(n))^{1/(2L)} (Sec. 3.5)",
                 "n > d (Sec. 3.2); the lemma states no condition on n"),
    formulas=LEMMA42_FORMULAS,
    checks={"symbolic": lemma42_symbolic, "numeric": _moment_numeric},
    setting=MOMENT_SETTING,
    exact=MOMENT_EXACT,
    ranges=("k <= 2*L",),
    correction=Correction(
        description="add Lemma A.2's sample-size condition n >= 4 k^2 d^2",
        reason="without a condition on n the bound fails at small n (e.g. d = 1, L = 2, k = 4: "
               "E[chi^2_n^4]/n^4 = 1 + 12/n + 44/n^2 + 48/n^3 exceeds 1 + 16/sqrt(n) for n <= 3)",
        formulas={"hypothesis": HYPOTHESIS_A2}),
)

LEMMA_A5_FORMULAS = (
    NamedFormula("hypothesis", "n > d", (_N, _D, _K, _L), equation="Sec. 3.2",
                 description="the paper's standing assumption (the lemma states none)",
                 weaker="narrower"),
    NamedFormula("delta", "4*k*d/sqrt(n)", (_N, _D, _L, _K), equation="proof of Lemma A.5",
                 description="delta = 4 k d / sqrt(n), the value the proof ends with"),
    NamedFormula("lower", "lambda_j**k - delta*lambda_1**k", _BOUND_SYMBOLS, equation="Lemma A.5",
                 description="lower bound on alpha^(j) (delta, not delta^k)", weaker="smaller",
                 proof=_lower_envelope, proof_source=LOWER_ENVELOPE_SOURCE),
    NamedFormula("upper", "lambda_j**k + delta*lambda_1**k", _BOUND_SYMBOLS, equation="Lemma A.5",
                 description="upper bound on alpha^(j)", weaker="larger"),
)


def lemma_a5_symbolic(ctx: Context) -> TierResult:
    r = _moment_symbolic(ctx, moment_eigenvalues, "the bound on alpha^(j)", flat_alpha,
                         readings=True, proofs=(lower_envelope_finding(),))
    r.steps = [step("Eigenvalues", r"\alpha^{(j)} = \sum c\, n^{e-k} p_\mu \lambda_j^s",
                    "As for Lemma 4.2, with delta lambda_1^k in place of delta^k lambda_1^k.")]
    return r


LEMMA_A5 = Claim(
    id="gatmiry2024.lemma_a5",
    title="Restatement of Lemma 4.2 (bound δ λ₁ᵏ)",
    paper=PAPER,
    statement=r"$\mathbb E[(\frac1n\sum_i\tilde x_i\tilde x_i^\top)^k]=\sum_j\alpha^{(j)}_{n,d,k}u_j"
              r"u_j^\top$ with $\lambda_j^k-\delta\lambda_1^k\le\alpha^{(j)}_{n,d,k}\le\lambda_j^k+"
              r"\delta\lambda_1^k$ ($\delta$ undefined in the statement; the proof ends with "
              r"$4kd/\sqrt n$).",
    assumptions=("x~_i ~ N(0, Sigma*) i.i.d.", "n > d (Sec. 3.2)"),
    formulas=LEMMA_A5_FORMULAS,
    checks={"symbolic": lemma_a5_symbolic, "numeric": _moment_numeric},
    setting=MOMENT_SETTING,
    exact=MOMENT_EXACT,
    correction=Correction(
        description="add Lemma A.2's sample-size condition n >= 4 k^2 d^2",
        reason="the proof runs Lemma A.2's argument, which needs it; without it the bound fails "
               "at small n",
        formulas={"hypothesis": HYPOTHESIS_A2}),
    notes="The proof's lower bound n^k alpha >= n^k lambda_j^k (1 - 4kd/sqrt(n)) is a third "
          "variant; alpha^(j) >= lambda_j^k always holds (non-negative coefficients).",
)
