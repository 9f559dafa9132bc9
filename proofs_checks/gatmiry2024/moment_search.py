"""The search behind gatmiry2024's moment lemmas (4.2, A.2, A.5, 4.3, A.7): their named bounds
(``lower``, ``upper``, ``delta``, ``hypothesis``) as float64, mpmath and exact functions
(``BoundForms``), checked against an exact eigenvalue over grids of d, L, k, n and spectra
(``bound_search``), at flat spectra s I_d of any size (``flat_search``) and at two-level spectra
(``level_search``), with the relative slack and the first violation (``MomentSearch``); and the
moment lemmas' shared symbolic tier (``_moment_symbolic``).  The eigenvalues searched are in
``moment_bounds`` (E[(W/n)^k]) and ``centred_bounds`` (E[(I - W/n)^k])."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Mapping, Sequence

import mpmath
import numpy as np
import sympy

from verify.claim import Context, TierResult
from verify.evidence import Finding, Margin, combine

from ..kit import looped_icl as li
from ..kit.scalar_optimum import huge_power
from ..kit.exact_compare import finite_real


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

        return None if huge_power(value(False)) else value(True)


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
class MomentSearch:
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
                 grid: Callable = _n_grid) -> MomentSearch:
    """Check lower <= quantity_j <= upper at every case the hypothesis admits: float64 over the
    grid, and exactly (``looped_icl.exact_sign``) wherever the relative slack is below 1e-9."""
    res = MomentSearch(holds_from={})
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
                scales: Sequence) -> MomentSearch:
    """``bound_search`` at flat spectra Sigma~ = s I (lambda_j = lambda_1 = s) of any size d: the
    moment is then a polynomial in n and d (``flat(k, s, d, n)``), so d may be 10^8 and n 10^40,
    where a condition on n, d and k that differs from the printed one first admits a case."""
    res = MomentSearch()
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
                 loops: Sequence[int] = LEVEL_LOOPS, pairs: Sequence = LEVEL_PAIRS) -> MomentSearch:
    """``bound_search`` at spectra with two levels, lambda_1 = a (once, or d - 1 times) and
    lambda_j = b (the rest), ``level(k, a, b, top, d, n)`` the eigenvalue at b: exact for any d,
    with lambda_1 / lambda_j up to 10^4, beyond the small grid's spectra (lambda_1 <= 4)."""
    res = MomentSearch()
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


def _admitted(res: MomentSearch, forms: BoundForms, grid: list[int], d: int, L: int, k: int,
              spectra: int) -> list[int]:
    """The grid's n that the hypothesis admits; the others are counted as skipped."""
    ns_all = np.array(grid, dtype=float)
    admit = forms.hypothesis(ns_all, d, L, k)
    res.skipped_by_hypothesis += int((~admit).sum()) * spectra
    return [n for n, a in zip(grid, admit) if a]


def _holds_from(res: MomentSearch, ns: list[int], bad: np.ndarray, key: str) -> None:
    last_bad = max((n for n, b in zip(ns, bad) if b), default=None)
    after = [n for n in ns if last_bad is None or n > last_bad]
    res.holds_from[key] = after[0] if after else None


FLOAT_CLEAR = 1e-6  # a relative slack float64 cannot get wrong in sign (bounds of a few terms)


def _check_row(res: MomentSearch, forms: BoundForms, cases: list[BoundCase], vals: list,
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
            slack_mp = finite_real(slack_mp)
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




def _search_finding(name: str, res: MomentSearch, what: str) -> Finding:
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


def _moment_dims(ctx) -> tuple:
    return li.by_budget(ctx, (1, 2, 3), (1, 2, 3, 4), (1, 2, 3, 4, 5))


def _moment_loops(ctx) -> tuple:
    return li.by_budget(ctx, (1, 2), (1, 2, 3), (1, 2, 3, 4))


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
