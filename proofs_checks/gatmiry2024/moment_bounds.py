"""Moment bounds: Lemmas 4.2, A.2, A.5 (E[(W/n)^k]) and 4.3, A.7 (E[(I - W/n)^k])."""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Mapping, Sequence

import mpmath
import numpy as np
import sympy

from moments import wishart
from moments.montecarlo import Estimate
from moments.tensor import matrix
from moments.wick import expectation
from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, Margin, combine, step
from verify.formulas import NamedFormula

from ..kit import looped_icl as li
from ..kit.linear_icl import cayley_orthogonal
from .common import (N, PAPER, _D, _DELTA, _K, _L, _LAM_1, _LAM_J, _N, _by_budget, _exact_value,
                     _setting, _size, formula_letters, root_instances, sec35_delta)


@dataclass(frozen=True)
class BoundCase:
    """One instance of a moment bound: sizes and the spectrum of the covariance (descending)."""

    d: int
    L: int
    k: int
    n: int
    eigs: tuple
    flat: bool = False  # Sigma~ = eigs[0] I: one eigenvalue, d-fold
    counts: tuple | None = None  # how often each of eigs occurs (None: once each)

    def as_dict(self) -> dict:
        if self.flat:
            spectrum = {"eigenvalues": f"{self.eigs[0]} ({self.d}-fold)"}
        elif self.counts:
            spectrum = {"eigenvalues": [f"{v} ({c}-fold)" for v, c in zip(self.eigs, self.counts)]}
        else:
            spectrum = {"eigenvalues": [str(v) for v in self.eigs]}
        return {"d": self.d, "L": self.L, "k": self.k, "n": self.n, **spectrum}


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


def flat_beta(k: int, s: Fraction, d: int, n: int) -> Fraction:
    """The eigenvalue of E[(I - W/n)^k] at Sigma~ = s I_d: sum_j C(k, j) (-1)^j alpha_j, over the
    common denominator (q n)^k with s = a / q."""
    s = Fraction(s)
    return _flat_beta(k, s.numerator, s.denominator, d, n)


@lru_cache(maxsize=4096)
def _level_coefficients(k: int, a: Fraction, b: Fraction, top: int, d: int) -> tuple:
    """(e, C_e) with the eigenvalue of E[W^k] at eigenvalue b equal to sum_e C_e n^e, for the
    spectrum a (top-fold), b ((d - top)-fold): p_m = top a^m + (d - top) b^m."""
    out: dict = {}
    for (s_, mu, e), c in _moment_terms(k):
        v = Fraction(c) * b ** s_
        for part in mu:
            v *= top * a ** part + (d - top) * b ** part
        out[e] = out.get(e, 0) + v
    return tuple(sorted(out.items()))


def level_alpha(k: int, a: Fraction, b: Fraction, top: int, d: int, n: int) -> Fraction:
    """alpha^(j) at lambda_j = b for Sigma~ with two eigenvalue levels, a (top-fold) and b
    ((d - top)-fold), for any d: sum_e C_e n^(e - k)."""
    if k == 0:
        return Fraction(1)
    return sum(c * n ** e for e, c in _level_coefficients(k, a, b, top, d)) / Fraction(n) ** k


def level_beta(k: int, a: Fraction, b: Fraction, top: int, d: int, n: int) -> Fraction:
    """beta^(j) = sum_i C(k, i) (-1)^i alpha_i^(j) at the same two-level spectrum."""
    return sum(math.comb(k, i) * (-1) ** i * level_alpha(i, a, b, top, d, n) for i in range(k + 1))


# cached on integers: hashing a Fraction key was a visible share of the flat search
@lru_cache(maxsize=65536)
def _flat_alpha(k: int, a: int, q: int, d: int, n: int) -> Fraction:
    return Fraction(a ** k * _flat_numerator(k, d, n), (q * n) ** k)


@lru_cache(maxsize=65536)
def _flat_beta(k: int, a: int, q: int, d: int, n: int) -> Fraction:
    num = sum(math.comb(k, j) * (-a) ** j * (q * n) ** (k - j) * _flat_numerator(j, d, n)
              for j in range(k + 1))
    return Fraction(num, (q * n) ** k)


@lru_cache(maxsize=8192)
def centred_eigenvalues(k: int, eigs: tuple, n: int) -> list[Fraction]:
    """The eigenvalues beta_i of E[(I - W/n)^k] = sum_j C(k, j) (-1)^j E[(W/n)^j]."""
    _, q = _integer_spectrum(eigs)
    nq = n * q
    nums = [nq ** k] * len(eigs)
    for j in range(1, k + 1):
        c = math.comb(k, j) * (-1) ** j * nq ** (k - j)
        nums = [o + c * v for o, v in zip(nums, _moment_numerators(j, eigs, n))]
    return [Fraction(v, nq ** k) for v in nums]


_BOUND_ARGS = ("n", "d", "L", "k", "lambda_j", "lambda_1", "delta")


class BoundForms:
    """The named bounds (``lower``, ``upper``, ``delta``, ``hypothesis``) of a moment lemma, in
    float64 over a grid of n (numpy) and exactly (to decide a case and print a counterexample)."""

    def __init__(self, F: Mapping[str, sympy.Basic]) -> None:
        self.F = F
        syms = {name: sympy.Symbol(name, positive=True) for name in _BOUND_ARGS}
        for size in ("n", "d", "L", "k"):
            syms[size] = sympy.Symbol(size, positive=True, integer=True)
        self.syms = syms
        order = [syms[a] for a in _BOUND_ARGS]
        self._delta = sympy.lambdify(order[:4], F["delta"], "numpy") if "delta" in F else None
        self._lower = sympy.lambdify(order, F["lower"], "numpy")
        self._upper = sympy.lambdify(order, F["upper"], "numpy")
        h = F.get("hypothesis")
        self._hyp = sympy.lambdify(order[:4], h, "numpy") if h is not None else None
        self._mp = {name: sympy.lambdify(order if name != "delta" else order[:4], F[name],
                                         "mpmath")
                    for name in ("lower", "upper", "delta") if name in F}
        # exact values through sympy functions: much faster than .subs on the expression tree
        self._exact = {name: sympy.lambdify(order if name != "delta" else order[:4], F[name],
                                            "sympy")
                       for name in ("lower", "upper", "delta") if name in F}

    def _mp_at(self, c: BoundCase, j: int, side: str):
        """The bound on ``side`` at the case, at the caller's mpmath precision."""
        vals = [mpmath.mpf(c.n), mpmath.mpf(c.d), mpmath.mpf(c.L), mpmath.mpf(c.k),
                mpmath.mpf(c.eigs[j].numerator) / c.eigs[j].denominator,
                mpmath.mpf(c.eigs[0].numerator) / c.eigs[0].denominator]
        delta = self._mp["delta"](*vals[:4]) if "delta" in self._mp else mpmath.mpf(0)
        return self._mp[side](*vals, delta)

    def mp_slack(self, c: BoundCase, j: int, v: Fraction, side: str, digits: int = 60):
        """The slack (upper - v or v - lower) in mpmath at ``digits`` digits, and its scale."""
        with mpmath.workdps(digits):
            bound = self._mp_at(c, j, side)
            vm = mpmath.mpf(v.numerator) / v.denominator
            slack = bound - vm if side == "upper" else vm - bound
            return slack, max(abs(bound), abs(vm), mpmath.mpf(10) ** (-digits))

    def mp_value(self, c: BoundCase, j: int, side: str, digits: int = 30):
        """The bound on ``side`` in mpmath (an mpc where it is not a real number)."""
        with mpmath.workdps(digits):
            return self._mp_at(c, j, side)

    def mp_bounds(self, c: BoundCase, j: int, digits: int = 30) -> tuple[str, str]:
        """(lower, upper) at the case to ``digits`` digits, as text."""
        with mpmath.workdps(digits + 10):
            return tuple(mpmath.nstr(self._mp_at(c, j, side), digits)
                         for side in ("lower", "upper"))

    def hypothesis(self, ns: np.ndarray, d: int, L: int, k: int) -> np.ndarray:
        if self._hyp is None:
            return np.ones(len(ns), dtype=bool)
        return np.broadcast_to(np.asarray(self._hyp(ns, d, L, k), dtype=bool), ns.shape)

    def float_bounds(self, ns: np.ndarray, d: int, L: int, k: int, lam_j: float, lam_1: float):
        # numpy scalars: lambda_1^d at lambda_1 = 10, d = 10^8 is inf, where a float raises
        lam_j, lam_1 = np.float64(lam_j), np.float64(lam_1)
        with np.errstate(all="ignore"):
            delta = self._delta(ns, d, L, k) if self._delta is not None else 0.0
            lo = np.broadcast_to(np.asarray(self._lower(ns, d, L, k, lam_j, lam_1, delta),
                                            dtype=float), ns.shape)
            up = np.broadcast_to(np.asarray(self._upper(ns, d, L, k, lam_j, lam_1, delta),
                                            dtype=float), ns.shape)
        return lo, up

    def exact_holds(self, c: BoundCase, j: int, value: sympy.Rational, side: str) -> bool | None:
        """Whether the bound on ``side`` holds for ``value``, for a case within 10^-50: at 400
        digits when that settles it, else exactly (that side only: the other may hold a radical
        whose exact form makes sympy factor 20-digit integers); None when neither can (a power
        too large to expand, a sign exact_sign cannot settle), counted as undecided, never as a
        violation."""
        slack, scale = self.mp_slack(c, j, Fraction(int(value.p), int(value.q)), side, digits=400)
        if abs(slack) > scale * mpmath.mpf(10) ** -370:
            return bool(slack > 0)
        bound = self.exact_bound(c, j, side)
        if bound is None:
            return None
        try:
            return li.exact_le(value, bound) if side == "upper" else li.exact_le(bound, value)
        except ArithmeticError:
            return None

    def exact_bound(self, c: BoundCase, j: int, side: str) -> sympy.Expr | None:
        """The bound on ``side`` exactly, or None when it raises an irrational number to a power
        beyond EXACT_MAX_EXPONENT (delta^n at n = 2^40: sympy would expand it for hours)."""
        lam_j, lam_1 = c.eigs[j], c.eigs[0]
        vals = [sympy.Integer(c.n), sympy.Integer(c.d), sympy.Integer(c.L), sympy.Integer(c.k),
                sympy.Rational(lam_j.numerator, lam_j.denominator),
                sympy.Rational(lam_1.numerator, lam_1.denominator)]
        uses_delta = self.syms["delta"] in self.F[side].free_symbols and "delta" in self.F

        def value(evaluate: bool) -> sympy.Expr:
            with sympy.evaluate(evaluate):
                delta = self._exact["delta"](*vals[:4]) if uses_delta else sympy.Integer(0)
                return sympy.sympify(self._exact[side](*vals, delta))

        return None if _huge_power(value(False)) else value(True)


EXACT_MAX_EXPONENT = 4096


def _huge_power(expr: sympy.Basic) -> bool:
    """A power of a non-integer base with a numeric exponent beyond EXACT_MAX_EXPONENT."""
    for p in expr.atoms(sympy.Pow):
        e = p.exp
        if e.is_number and not p.base.is_Integer and abs(float(sympy.N(e, 15))) > EXACT_MAX_EXPONENT:
            return True
    return False


def _n_grid(d: int, k: int, L: int) -> list[int]:
    """Every n from 1 to 48, powers of 2 up to 2^40, and the paper's thresholds."""
    pts = set(range(1, 49)) | {2 ** e for e in range(6, 41)}
    for t in (4 * k * k * d * d, 16 * k * k * d * d, 64 * L * L * d * d, (8 * L * d * d * 4 ** L) ** 2):
        pts |= {t, t + 1}
    return sorted(pts)


WIDE_DIMS = (1, 2, 3, 5, 10, 100, 10 ** 4, 10 ** 8)
# k = 1..min(2L, WIDE_K) at each; at L = 1024 delta = (8Ld/sqrt(n))^(1/(2L)) is near 1 for
# every n, and a condition that admits large L (a mutant L >= 4k^2d^2) admits small n (a far
# larger L makes sympy look for 2L-th roots of integers, for minutes and gigabytes)
WIDE_LOOPS = (*range(1, 9), 16, 1024)
WIDE_K = 16


def _wide_n_grid(d: int, k: int, L: int) -> list[int]:
    """``_n_grid`` and powers of 10 up to 10^40, for ``flat_search`` at d up to 10^8 (not beyond
    10^40: the threshold (8 L d^2 4^L)^2 at L = 16, d = 10^8 is 10^55)."""
    grid = set(_n_grid(d, k, L)) | {10 ** e for e in (*range(1, 13), *range(13, 41, 3))}
    return sorted(n for n in grid if n <= 10 ** 40)


def _spectra(d: int, scales: Sequence = (Fraction(1),), rng: np.random.Generator | None = None):
    """Spectra with lambda_1 = scale: flat (the worst case of the upper bounds of Lemma 4.2),
    geometric, and one random rational spectrum."""
    base = [tuple(Fraction(1) for _ in range(d)),
            tuple(Fraction(1, 2 ** i) for i in range(d)),
            tuple(Fraction(1, 10 ** i) for i in range(d))]
    if rng is not None and d > 1:
        base.append(tuple(sorted([Fraction(1)] + [Fraction(int(rng.integers(1, 10)), 10)
                                                  for _ in range(d - 1)], reverse=True)))
    out = []
    for sc in scales:
        for b in dict.fromkeys(base):
            out.append(tuple(sc * v for v in b))
    return out


@dataclass
class BoundSearch:
    """What a search over (d, L, k, n, spectrum) found for one set of named bounds."""

    checked: int = 0
    skipped_by_hypothesis: int = 0
    violations: int = 0
    first: dict | None = None
    closest: tuple | None = None  # (relative slack, case, j, side)
    holds_from: dict = None  # "d,L,k" -> smallest grid n from which every larger grid n holds
    undecided: int = 0  # cases within 10^-50 whose exact bound is a power too large to evaluate
    float_only: int = 0  # violations after the first counted in float64 (relative slack < -1e-6)

    def as_dict(self) -> dict:
        out = {"instances_checked": self.checked, "skipped_by_hypothesis": self.skipped_by_hypothesis,
               "violations": self.violations}
        if self.float_only:
            out["violations_counted_in_float64_after_the_first"] = self.float_only
        if self.undecided:
            out["undecided_not_counted"] = self.undecided
        if self.closest is not None:
            slack, case, j, side = self.closest
            out["closest_approach"] = {"relative_slack": float(slack), "side": side, "j": j + 1,
                                       **case.as_dict()}
        if self.holds_from is not None:
            out["smallest_n_from_which_it_holds_on_the_grid"] = self.holds_from
        return out

    @property
    def margin(self) -> Margin | None:
        """1 - the smallest relative slack: the eigenvalue over its upper bound, or the lower bound
        over the eigenvalue, where both are positive."""
        if self.closest is None:
            return None
        slack, case, j, side = self.closest
        return Margin(1 - slack, "1 - (bound - eigenvalue) / max(|bound|, |eigenvalue|) on the "
                      "side nearest to failing", {"side": side, "j": j + 1, **case.as_dict()})


_moment_cache: dict = {}


def _quantity(quantity: Callable, k: int, eigs: tuple, n: int) -> list:
    key = (quantity.__name__, k, eigs, n)
    if key not in _moment_cache:
        _moment_cache[key] = quantity(k, eigs, n)
    return _moment_cache[key]


def bound_search(forms: BoundForms, quantity: Callable, dims: Sequence[int], loops: Sequence[int],
                 ks: Callable[[int], Sequence[int]], spectra: Callable[[int], list],
                 grid: Callable = _n_grid) -> BoundSearch:
    """Check lower <= quantity_j <= upper at every case the hypothesis admits: float64 over the
    grid, and exactly (``looped_icl.exact_sign``) wherever the relative slack is below 1e-9."""
    res = BoundSearch(holds_from={})
    for d in dims:
        specs = spectra(d)
        for L in loops:
            for k in ks(L):
                ns = _admitted(res, forms, grid(d, k, L), d, L, k, len(specs))
                if not ns:
                    continue
                bad = np.zeros(len(ns), dtype=bool)
                for eigs in specs:
                    vals = [_quantity(quantity, k, eigs, n) for n in ns]
                    res.checked += len(ns)
                    for j in range(d):
                        bad |= _check_row(res, forms, [BoundCase(d, L, k, n, eigs) for n in ns],
                                          [v[j] for v in vals], j)
                _holds_from(res, ns, bad, f"d={d},L={L},k={k}")
    return res


def flat_search(forms: BoundForms, flat: Callable, dims: Sequence[int], loops: Sequence[int],
                scales: Sequence) -> BoundSearch:
    """``bound_search`` at flat spectra Sigma~ = s I (lambda_j = lambda_1 = s) of any size d: the
    moment is then a polynomial in n and d (``flat(k, s, d, n)``), so d may be 10^8 and n 10^40,
    where a condition on n, d and k that differs from the printed one first admits a case."""
    res = BoundSearch()
    for d in dims:
        for L in loops:
            for k in range(1, min(2 * L, WIDE_K) + 1):
                ns = _admitted(res, forms, _wide_n_grid(d, k, L), d, L, k, len(scales))
                if not ns:
                    continue
                for s in scales:
                    res.checked += len(ns)
                    _check_row(res, forms, [BoundCase(d, L, k, n, (s,), flat=True) for n in ns],
                               [flat(k, s, d, n) for n in ns], 0)
    return res


LEVEL_DIMS = (2, 3, 10, 1000)
LEVEL_LOOPS = (1, 2, 3)
# (lambda_1, lambda_j): a large top eigenvalue over a small one, where the terms in the traces
# p_mu (the other eigenvalues) outweigh a slack written in lambda_j; at lambda_j = 10^-6 they
# pull beta_j below (1 - lambda_j)^k by ~ lambda_j tr(Sigma~)^2 / n^2 (k = 3), more than a slack
# lambda_j^k (lambda_1 + 1)^k
LEVEL_PAIRS = ((Fraction(1000), Fraction(10)), (Fraction(100), Fraction(1)),
               (Fraction(1000), Fraction(1, 10)), (Fraction(1000), Fraction(1, 10 ** 6)))


def level_search(forms: BoundForms, level: Callable, dims: Sequence[int] = LEVEL_DIMS,
                 loops: Sequence[int] = LEVEL_LOOPS, pairs: Sequence = LEVEL_PAIRS) -> BoundSearch:
    """``bound_search`` at spectra with two levels, lambda_1 = a (once, or d - 1 times) and
    lambda_j = b (the rest), ``level(k, a, b, top, d, n)`` the eigenvalue at b: exact for any d,
    with lambda_1 / lambda_j up to 10^4, beyond the small grid's spectra (lambda_1 <= 4)."""
    res = BoundSearch()
    for d in dims:
        tops = sorted({1, d - 1})
        for L in loops:
            for k in range(1, 2 * L + 1):
                ns = _admitted(res, forms, _n_grid(d, k, L), d, L, k, len(pairs) * len(tops))
                if not ns:
                    continue
                for a, b in pairs:
                    for top in tops:
                        res.checked += len(ns)
                        _check_row(res, forms, [BoundCase(d, L, k, n, (a, b), counts=(top, d - top))
                                                for n in ns],
                                   [level(k, a, b, top, d, n) for n in ns], 1)
    return res


def _admitted(res: BoundSearch, forms: BoundForms, grid: list[int], d: int, L: int, k: int,
              spectra: int) -> list[int]:
    """The grid's n that the hypothesis admits; the others are counted as skipped."""
    ns_all = np.array(grid, dtype=float)
    admit = forms.hypothesis(ns_all, d, L, k)
    res.skipped_by_hypothesis += int((~admit).sum()) * spectra
    return [n for n, a in zip(grid, admit) if a]


def _holds_from(res: BoundSearch, ns: list[int], bad: np.ndarray, key: str) -> None:
    last_bad = max((n for n, b in zip(ns, bad) if b), default=None)
    after = [n for n in ns if last_bad is None or n > last_bad]
    res.holds_from[key] = after[0] if after else None


FLOAT_CLEAR = 1e-6  # a relative slack float64 cannot get wrong in sign (bounds of a few terms)


def _check_row(res: BoundSearch, forms: BoundForms, cases: list[BoundCase], vals: list,
               j: int) -> np.ndarray:
    """Check lower <= vals[i] <= upper for eigenvalue j of cases[i] (cases of one d, L, k and
    spectrum over n): float64, then at 60 digits and exactly near a tie.  Records the closest
    approach and the first violation in ``res``; returns which cases fail."""
    c0 = cases[0]
    ns = np.array([c.n for c in cases], dtype=float)
    bad = np.zeros(len(cases), dtype=bool)
    q = np.array([float(v) for v in vals])
    lo, up = forms.float_bounds(ns, c0.d, c0.L, c0.k, float(c0.eigs[j]), float(c0.eigs[0]))
    for side, slack, bound in (("upper", up - q, up), ("lower", q - lo, lo)):
        # the scale of this side only: a huge bound on the other side would make every entry
        # here look like a near tie and send it to mpmath
        scale = np.maximum.reduce([np.abs(q), np.abs(bound), np.full(len(q), 1e-300)])
        with np.errstate(all="ignore"):
            rel = np.where(np.isfinite(slack), slack / scale, np.inf)
            # a bound past float64 keeps its side (an upper bound of -inf fails); a bound that is
            # nan may not be a real number: both are decided in mpmath below
            rel = np.where(np.isinf(slack), np.sign(slack) * np.inf, rel)
            rel = np.where(np.isnan(slack), -np.inf, rel)
        finite = np.flatnonzero(np.isfinite(rel))
        if len(finite):
            i_min = int(finite[np.argmin(rel[finite])])
            if res.closest is None or rel[i_min] < res.closest[0]:
                res.closest = (float(rel[i_min]), cases[i_min], j, side)
        for i in np.flatnonzero(rel <= 1e-9):
            c, v = cases[i], vals[i]
            if res.first is not None and rel[i] < -FLOAT_CLEAR:
                # one violation is confirmed already: a clear float64 one is counted unconfirmed
                bad[i] = True
                res.violations += 1
                res.float_only += 1
                continue
            slack_mp, scale_mp = forms.mp_slack(c, j, v, side)
            slack_mp = _finite_real(slack_mp)
            if slack_mp is None:  # the bound is complex or nan here (float64 may not show it)
                bad[i] = True
                res.violations += 1
                if res.first is None:
                    res.first = {**c.as_dict(), "j": j + 1, "side": side, "quantity": str(v),
                                 "quantity_float": float(v),
                                 "bound": mpmath.nstr(forms.mp_value(c, j, side), 15),
                                 "not_a_real_number": True}
                continue
            tol = scale_mp * mpmath.mpf(10) ** -50
            if slack_mp > tol:
                continue
            ev = sympy.Rational(v.numerator, v.denominator)
            if slack_mp >= -tol:  # within 10^-50: decided exactly
                holds = forms.exact_holds(c, j, ev, side)
                if holds is None:
                    res.undecided += 1
                    continue
                if holds:
                    continue
            bad[i] = True
            res.violations += 1
            if res.first is None:
                lo_mp, up_mp = forms.mp_bounds(c, j)
                res.first = {**c.as_dict(), "j": j + 1, "side": side, "quantity": str(ev),
                             "quantity_float": float(ev), "lower": lo_mp, "upper": up_mp,
                             "slack_60_digits": mpmath.nstr(slack_mp, 15)}
    return bad


def _finite_real(x):
    """x as a finite mpf, or None when it is complex, nan or infinite."""
    if isinstance(x, mpmath.mpc):
        if x.imag != 0:
            return None
        x = x.real
    return x if mpmath.isfinite(x) else None


def _search_finding(name: str, res: BoundSearch, what: str) -> Finding:
    ok = res.violations == 0
    if res.checked == 0:
        return Finding(name, None, res.as_dict(), reason="the hypothesis admits no case of the grid")
    return Finding(name, ok, res.as_dict(), None if ok else {"instance": res.first,
                                                            "violations": res.violations},
                   "" if ok else f"{what} fails at n = {res.first['n']}, d = {res.first['d']}, "
                                 f"k = {res.first['k']}"
                                 + (" (the bound is not a real number there)"
                                    if res.first.get("not_a_real_number") else ""), res.margin)


def _reading_summary(F, readings: Mapping[str, str], search: Callable) -> dict:
    """Run the search once per reading of delta; how many violations each gives."""
    out = {}
    for label, text in readings.items():
        G = dict(F)
        G["delta"] = sympy.sympify(text, locals={"n": sympy.Symbol("n", positive=True, integer=True),
                                                 "d": sympy.Symbol("d", positive=True, integer=True),
                                                 "L": sympy.Symbol("L", positive=True, integer=True),
                                                 "k": sympy.Symbol("k", positive=True, integer=True)})
        res = search(BoundForms(G))
        out[label] = {"delta": text, "violations": res.violations, "checked": res.checked,
                      "first_violation": res.first}
    return out


DELTA_READINGS = {
    "Sec. 3.5: delta = (8 L d / sqrt(n))^(1/(2L))": "(8*L*d/sqrt(n))**(1/(2*L))",
    "remark after Thm. 3.2: delta = 4 k d / sqrt(n)": "4*k*d/sqrt(n)",
    "Lemma A.7: delta^k = 4 k d / sqrt(n)": "(4*k*d/sqrt(n))**(1/k)",
}

MOMENT_SETTING = _setting({"n": 16, "d": 3, "L": 2})
_BOUND_SYMBOLS = (_N, _D, _L, _K, _LAM_J, _LAM_1, _DELTA)


def _moment_dims(ctx) -> tuple:
    return _by_budget(ctx, (1, 2, 3), (1, 2, 3, 4), (1, 2, 3, 4, 5))


def _moment_loops(ctx) -> tuple:
    return _by_budget(ctx, (1, 2), (1, 2, 3), (1, 2, 3, 4))


FLAT_SCALES = (Fraction(1, 10), Fraction(1), Fraction(10))


def _cached_spectra(scales: Sequence, rng: np.random.Generator, identity_only: bool = False):
    """d -> the spectra searched at d (``_spectra``, or s I_d only), drawn once per d."""
    cache: dict = {}

    def spectra(d):
        if d not in cache:
            cache[d] = ([tuple(sc for _ in range(d)) for sc in scales] if identity_only
                        else _spectra(d, scales, rng))
        return cache[d]
    return spectra


def _moment_symbolic(ctx: Context, quantity, what: str, flat: Callable, scales=(Fraction(1),),
                     flat_scales=FLAT_SCALES, readings: bool = False,
                     identity_only: bool = False, proofs: Sequence[Finding] = (),
                     level: Callable | None = None, late_scales: Sequence = ()) -> TierResult:
    """The moment lemmas' symbolic tier: ``bound_search`` over small d and several spectra, then
    ``flat_search`` at flat spectra Sigma~ = s I (``flat``: the eigenvalue at s I_d) with d up to
    10^8, L up to 16 and L = 1024, k up to 16 and n up to 10^40, scales ``flat_scales``; ``proofs`` are
    findings that rebuild a bound's proof (``lower_envelope_finding``); ``late_scales``: a last
    ``bound_search`` at those lambda_1, after the others (whose counterexamples come first)."""
    F = ctx.formulas
    forms = BoundForms(F)
    spectra = _cached_spectra(scales, ctx.rng("spectra"), identity_only)

    def search(fm):
        return bound_search(fm, quantity, _moment_dims(ctx), _moment_loops(ctx),
                            lambda L: range(1, 2 * L + 1), spectra)

    res = search(forms)
    wide = flat_search(forms, flat, WIDE_DIMS, WIDE_LOOPS, flat_scales)
    findings = [_search_finding("bound_search", res, what),
                _search_finding("flat_spectrum_search", wide, what), *proofs]
    if level is not None:
        findings.append(_search_finding("two_level_search", level_search(forms, level), what))
    if late_scales:
        late = bound_search(forms, quantity, _moment_dims(ctx), _moment_loops(ctx),
                            lambda L: range(1, 2 * L + 1),
                            _cached_spectra(late_scales, ctx.rng("late_spectra")))
        findings.append(_search_finding("large_spectrum_search", late, what))
    extra = {"grid": "d in %s, L in %s, k = 1..2L, n = 1..48, powers of 2 up to 2^40 and the "
                     "thresholds 4k^2d^2, 16k^2d^2, 64L^2d^2, (8Ld^2 4^L)^2; spectra with "
                     "lambda_1 = %s" % (list(_moment_dims(ctx)), list(_moment_loops(ctx)),
                                        [str(s) for s in scales]),
             "flat_grid": "Sigma~ = s I_d with s in %s, d in %s, L in %s, k = 1..min(2L, 16), the "
                          "grid's n "
                          "and the powers of 10 up to 10^40" % (
                              [str(s) for s in flat_scales], list(WIDE_DIMS), list(WIDE_LOOPS))}
    if readings:
        extra["delta_readings"] = _reading_summary(F, DELTA_READINGS, search)
    return combine(findings, extra)


LOWER_ENVELOPE_SOURCE = ("alpha^(j) >= lambda_j^k (the Wishart moments' coefficients are "
                         "non-negative: the symbolic tier's lower_envelope)")


MOMENT_EXACT_MAX_K = 10


def _sizes_of(point: Mapping, names: Sequence[str]) -> tuple[int, ...] | None:
    """Integer sizes of an ExactValues point (None if one is not a positive integer)."""
    out = []
    for name in names:
        v = point[name]
        if v != int(v) or v < 1:
            return None
        out.append(int(v))
    return tuple(out)


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


def _beta_extremes(k: int, n: int, d: int, lam_j, lam_1) -> tuple:
    """Lemmas 4.3 and A.7: beta^(j) = sum_i C(k, i) (-1)^i alpha_i^(j) over the same spectra.
    Its coefficients have both signs, so it is not monotone in the other eigenvalues: returns
    (attained max, enclosure max, attained min, enclosure min), the attained values at the two
    spectra with the others at lambda_1 and at 0, the enclosure by taking each term at its
    worse end (a sound bound on the sup and inf over every spectrum)."""
    with mpmath.workdps(mpmath.mp.dps + 30):
        lam_j, lam_1, nn = mpmath.mpf(lam_j), mpmath.mpf(lam_1), mpmath.mpf(n)
        at_top = at_low = env_hi = env_lo = mpmath.mpf(0)
        for i in range(k + 1):
            sign = math.comb(k, i) * (-1) ** i
            for coef, low, top in ([(mpmath.mpf(1), mpmath.mpf(1), mpmath.mpf(1))] if i == 0
                                   else _term_ranges(i, nn, d, lam_j, lam_1)):
                c = sign * coef
                at_top, at_low = at_top + c * top, at_low + c * low
                env_hi += c * (top if c > 0 else low)
                env_lo += c * (low if c > 0 else top)
        return +max(at_top, at_low), +env_hi, +min(at_top, at_low), +env_lo


def _moment_point(point: dict) -> tuple | None:
    """(k, n, d, lambda_j, lambda_1) of an ExactValues point of the moment lemmas, or None where
    their exact values are not computed (k > MOMENT_EXACT_MAX_K, lambda_j > lambda_1, or d = 1
    with two eigenvalues)."""
    sizes = _sizes_of(point, ("n", "d", "k"))
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


def centred_exact(point: dict) -> dict | None:
    """Lemmas 4.3 and A.7: beta^(j) at (n, d, k, lambda_j, lambda_1), as (attained, enclosure)
    pairs (``_beta_extremes``), for k <= MOMENT_EXACT_MAX_K."""
    args = _moment_point(point)
    if args is None:
        return None
    att_hi, env_hi, att_lo, env_lo = _beta_extremes(*args)
    return {"upper": (att_hi, env_hi), "lower": (att_lo, env_lo)}


MOMENT_EXACT = ExactValues(moment_exact, "the sup and inf of alpha^(j) over the spectra with "
                                         "these lambda_j <= lambda_1, from the Wishart moments, at "
                                         f"k <= {MOMENT_EXACT_MAX_K}")


def identity_moment_exact(point: dict) -> dict | None:
    """Lemma A.2: alpha_{n,d,k} at Sigma = I, exactly, for k <= MOMENT_EXACT_MAX_K."""
    sizes = _sizes_of(point, ("n", "d", "k"))
    if sizes is None or sizes[2] > MOMENT_EXACT_MAX_K:
        return None
    n, d, k = sizes
    a = flat_alpha(k, Fraction(1), d, n)
    v = mpmath.mpf(a.numerator) / a.denominator
    return {"upper": v, "lower": v}


CENTRED_EXACT = ExactValues(centred_exact, "beta^(j) from the Wishart moments at the spectra with "
                                           "the other eigenvalues at lambda_1 and at 0, and an "
                                           "enclosure over every spectrum, at k <= "
                                           f"{MOMENT_EXACT_MAX_K}")


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
    title="Moments of the Gaussian covariance at Sigma = I",
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
    gen = np.random.default_rng(ctx.seed_for("moment-mc-draws"))
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
        "" if ok else "an exact moment eigenvalue is outside its Monte Carlo interval")])


LEMMA4_2 = Claim(
    id="gatmiry2024.lemma4_2",
    title="Moment controls: eigenvalues of E[(S~)^k] within delta^k lambda_1^k of lambda_j^k",
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
    title="Restatement of Lemma 4.2 (bound delta lambda_1^k)",
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

# ----- Lemma 4.3 and its restatement A.7 --------------------------------------------------------
LEMMA43_FORMULAS = (
    NamedFormula("hypothesis", "n > d", (_N, _D, _K, _L), equation="Sec. 3.2",
                 description="the paper's standing assumption (the lemma states none)",
                 weaker="narrower"),
    sec35_delta(_K),
    NamedFormula("lower", "(1 - lambda_j)**k - delta**k*(lambda_1 + 1)**k", _BOUND_SYMBOLS,
                 equation="Lemma 4.3", description="lower bound on beta_i", weaker="smaller"),
    NamedFormula("upper", "(1 - lambda_j)**k + delta**k*(lambda_1 + 1)**k", _BOUND_SYMBOLS,
                 equation="Lemma 4.3", description="upper bound on beta_i", weaker="larger"),
)
_BETA_SCALES = (Fraction(1, 4), Fraction(1), Fraction(2), Fraction(4))
# searched after the others (their first counterexamples stay the small, documented ones): at
# odd k and lambda_j > 1, beta_j is below (1 - lambda_j)^k (3 (1 - lambda) Var S < 0 and
# E[(S - lambda)^3] > 0), so a lower slack that vanishes once lambda_j > k (delta^lambda_j for
# delta^k, a mutate survivor false at lambda_j = 220) is refuted at lambda_1 = 64
_BETA_LARGE_SCALES = (Fraction(64),)


def _eigvec_finding(ctx: Context, k_max: int = 3) -> Finding:
    """E[(I - A^{1/2} S A^{1/2})^k] by Isserlis equals the Wishart polynomial in
    Sigma~ = A^{1/2} Sigma* A^{1/2} (so it has Sigma~'s eigenvectors), tested against a probe C."""
    letters = formula_letters()
    B, S, C = letters["A_half"], letters["Sigma"], matrix("C", symmetric=True)
    inst = root_instances(ctx, dims=(2,))[0]
    Cv = sympy.Matrix([[1, sympy.Rational(1, 3)], [sympy.Rational(1, 3), -2]])
    env = inst.env({"C": Cv})
    cov = inst.B * env["Sigma"] * inst.B
    rows, ok = [], True
    from moments.tensor import identity as _identity
    for k in range(1, k_max + 1):
        M = _identity("d")
        for _ in range(k):
            M = M @ (_identity("d") - B @ S @ B)
        iss = _exact_value(expectation((M @ C).trace()).simplify(), env, N)
        wis = sympy.Integer(0)
        for j in range(k + 1):
            Ej = sympy.eye(2) if j == 0 else sympy.Matrix(wishart.evaluate_wishart(
                wishart.moment(j), sigma=cov, n=N, mode="exact")) if False else None
            if j == 0:
                Ej = sympy.eye(2)
            else:
                Ej = sympy.zeros(2, 2)
                for (s_, mu, e), c in wishart.moment(j).terms.items():
                    term = c * N ** e * cov ** s_
                    for part in mu:
                        term = term * (cov ** part).trace()
                    Ej += term
                Ej = Ej / N ** j
            wis += math.comb(k, j) * (-1) ** j * (Ej * Cv).trace()
        diff = sympy.cancel(iss - wis)
        rows.append({"k": k, "difference_in_n": str(diff)})
        ok &= diff == 0
    return Finding("eigenvectors", bool(ok), {"probe": "tr(E[(I - A^{1/2} Sigma A^{1/2})^k] C)",
                                              "instance": inst.as_dict(), "rows": rows},
                   None if ok else {"rows": rows}, "" if ok else "Isserlis and Wishart disagree")


def lemma43_symbolic(ctx: Context) -> TierResult:
    r = _moment_symbolic(ctx, centred_eigenvalues, "the bound on beta_i", flat_beta,
                         scales=_BETA_SCALES, flat_scales=_BETA_SCALES, readings=True,
                         level=level_beta, late_scales=_BETA_LARGE_SCALES)
    f = _eigvec_finding(ctx)
    r2 = combine([f])
    if r2.status == "fail":
        return r2
    r.evidence["eigenvectors"] = r2.evidence["eigenvectors"]
    r.steps = [step("Change of covariance", r"A^{1/2}\Sigma A^{1/2}\sim \tfrac1n W_d(n, A^{1/2}"
                    r"\Sigma_*A^{1/2})",
                    "So E[(I - A^{1/2} Sigma A^{1/2})^k] = sum_j C(k,j)(-1)^j E[(W~/n)^j], a "
                    "polynomial in Sigma~ = A^{1/2} Sigma* A^{1/2} (checked against Isserlis on "
                    "the formula for k <= 3); beta_i = sum_j C(k,j)(-1)^j alpha^(j)(lambda_i)."),
               step("Grid", "", "The bounds at every case the hypothesis admits, spectra with "
                    "lambda_1 in {1/4, 1, 2, 4} (then 64), and with each reading of delta.")]
    return r


LEMMA4_3 = Claim(
    id="gatmiry2024.lemma4_3",
    title="Eigenvalue approximation: E[(I - A^{1/2} Sigma A^{1/2})^k] near (1 - lambda_i)^k",
    paper=PAPER,
    statement=r"With $A^{1/2}\Sigma^*A^{1/2}=\sum_i\lambda_iu_iu_i^\top$ and $k\le2L$, "
              r"$\mathbb E[(I-A^{1/2}\Sigma A^{1/2})^k]=\sum_i\beta_i^{(k)}u_iu_i^\top$ with "
              r"$(1-\lambda_i)^k-\delta^k(\lambda_1+1)^k\le\beta_i^{(k)}\le(1-\lambda_i)^k+\delta^k"
              r"(\lambda_1+1)^k$.",
    assumptions=("x_i ~ N(0, Sigma*), A symmetric positive definite",
                 "delta = (8 L d / sqrt(n))^{1/(2L)} (Sec. 3.5)", "n > d (Sec. 3.2)"),
    formulas=LEMMA43_FORMULAS,
    checks={"symbolic": lemma43_symbolic},
    setting=MOMENT_SETTING,
    exact=CENTRED_EXACT,
    ranges=("k <= 2*L",),
    correction=Correction(
        description="add Lemma A.2's sample-size condition n >= 4 k^2 d^2",
        reason="the bound inherits Lemma 4.2's failure at small n: at d = 1, n = 2, L = 3, k = 4 "
               "and Sigma~ = 4, beta = E[(1 - 4E)^4] = 4785 (E ~ Exp(1)) exceeds 81 + 625 "
               "(24/sqrt(2))^(2/3) = 4208.4",
        formulas={"hypothesis": HYPOTHESIS_A2}),
    notes="The decomposition sums i = 1..n (for d); the lemma's preamble speaks of A^{1/2} E[(I - "
          "Sigma A)^k] A^{-1/2}, a similar matrix with the same eigenvalues.",
)

LEMMA_A7_FORMULAS = (
    NamedFormula("hypothesis", "n > d", (_N, _D, _K, _L), equation="Sec. 3.2",
                 description="the paper's standing assumption (the lemma states none)",
                 weaker="narrower"),
    NamedFormula("delta", "(4*k*d/sqrt(n))**(1/k)", (_N, _D, _L, _K), equation="Lemma A.7",
                 description="delta^k = 4 k d / sqrt(n)"),
    NamedFormula("lower", "(1 - lambda_j)**k - delta**k*(lambda_1 + 1)**k", _BOUND_SYMBOLS,
                 equation="Lemma A.7",
                 description="lower bound on the eigenvalue of E[(I - A^{1/2} Sigma A^{1/2})^k] "
                             "(the lemma writes (lambda_i - 1)^k for (A^{1/2} Sigma A^{1/2} - I)^k)",
                 weaker="smaller"),
    NamedFormula("upper", "(1 - lambda_j)**k + delta**k*(lambda_1 + 1)**k", _BOUND_SYMBOLS,
                 equation="Lemma A.7", description="upper bound", weaker="larger"),
)

LEMMA_A7 = Claim(
    id="gatmiry2024.lemma_a7",
    title="Restatement of Lemma 4.3 (delta^k = 4kd / sqrt(n))",
    paper=PAPER,
    statement=r"$\mathbb E[(A^{1/2}\Sigma A^{1/2}-I)^k]=\sum_i\beta_i^{(k)}u_iu_i^\top$ with "
              r"$(\lambda_i-1)^k-\delta^k(\lambda_1+1)^k\le\beta_i^{(k)}\le(\lambda_i-1)^k+\delta^k"
              r"(\lambda_1+1)^k$, $\delta^k=\frac{4kd}{\sqrt n}$ (checked in the equivalent form "
              r"for $(I-A^{1/2}\Sigma A^{1/2})^k$, both sides times $(-1)^k$).",
    assumptions=LEMMA4_3.assumptions[:1] + ("delta^k = 4 k d / sqrt(n)", "n > d (Sec. 3.2)"),
    formulas=LEMMA_A7_FORMULAS,
    checks={"symbolic": lambda ctx: _moment_symbolic(ctx, centred_eigenvalues,
                                                     "the bound on beta_i", flat_beta,
                                                     scales=_BETA_SCALES,
                                                     flat_scales=_BETA_SCALES,
                                                     level=level_beta,
                                                     late_scales=_BETA_LARGE_SCALES)},
    setting=MOMENT_SETTING,
    exact=CENTRED_EXACT,
    correction=Correction(
        description="add Lemma A.2's sample-size condition n >= 4 k^2 d^2",
        reason="the proof goes through Lemma 4.2, which needs it; without it the bound fails: at "
               "d = 1, n = 2, k = 5 and Sigma~ = 4, beta = E[(1 - 4E)^5] = -95699 (E ~ Exp(1)) is "
               "below -243 - 3125 * 20/sqrt(2) = -44437.2",
        formulas={"hypothesis": HYPOTHESIS_A2}),
    notes="The statement opens with E[A^{-1/2}(A^{1/2} Sigma A^{1/2} - I)^k A^{1/2}] and then "
          "writes E[(A^{1/2} Sigma A^{1/2} - I)^k]; the second is the one with eigenvectors u_i.",
)

