"""Gradient flow: Theorem 3.3 and its restatement A.12."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import mpmath
import numpy as np
import sympy
import torch

from moments.poly import Poly
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Closest, Finding, combine, step
from verify.formulas import NamedFormula

from ..kit import looped_icl as li
from ..kit.bound import BoundSearch, Family, Line, NotReal, Point, search_finding
from ..kit.exact_compare import decide, finite_real, mp_value, mpf, size_text
from .common import PAPER, _D, _DELTA, _L, _N, _XI, _setting, sec35_delta, single_threaded
from .dominance import A10_SIZE_CONDITION, GD_N, _gd_env, _gd_expr


FLOW_SETTING = _setting({"n": 20, "d": 3, "L": 2})
_FLOW_SYMBOLS = (_N, _D, _L, _DELTA, _XI)
FLOW_XI = sympy.Rational(1, 10 ** 6)  # the target loss of the large-d scan (any xi << d works)
CLOSE_XI = sympy.Rational(1, 10 ** 12)  # small enough that c < 1 in Thm. 3.3 (2) for L = 2, 3


def _flow_named(F, name: str, n, d, L, xi) -> mpmath.mpf:
    """A named formula of the section at (n, d, L, xi) in mpmath (delta from its own formula);
    nan where it divides by zero (a time in 1/(L - 2) at L = 2), which every comparison fails."""
    try:
        return mp_value(_gd_expr(F, name), {**_gd_env(n, d, L), "xi": sympy.sympify(xi)})
    except ZeroDivisionError:
        return mpmath.nan


def _mp_coeffs(poly: sympy.Poly) -> list:
    return [mpmath.mpf(int(c.p)) / int(c.q) for c in poly.all_coeffs()]


def _admits(F, n, d, L, xi) -> bool:
    """Whether the named hypothesis holds at (n, d, L, xi), exactly."""
    return decide(_gd_expr(F, "hypothesis"), {**_gd_env(n, d, L), "xi": xi})


def scalar_flow_time(L: int, n: int, d: int, xi, a0=0) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Time for the flow dA/dt = -grad_A L(A, 0) from A(0) = a0 I (Sigma* = I) to reach
    L = xi, and the level a_xi where it does.  By orthogonal invariance A(t) = a(t) I with
    da/dt = -f'(a)/d, so t = int_{a0}^{a_xi} d / (-f'(a)) da (f(a_xi) = xi, a0 <= a_xi < a*);
    mpmath quadrature on the exact polynomial (30 digits)."""
    f = li.scalar_poly(L, n, d)
    fp = f.diff(li.a_sym)
    with mpmath.workdps(30):
        cf, cp = _mp_coeffs(f), _mp_coeffs(fp)
        x = mpmath.mpf(xi)
        lo, hi = mpmath.mpf(a0), _mp_a_star(L, n, d)
        if mpmath.polyval(cf, lo) <= x:
            return mpmath.mpf(0), lo
        for _ in range(200):  # f decreases on [a0, a*]
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mpmath.polyval(cf, mid) > x else (lo, mid)
        a_xi = (lo + hi) / 2
        t = mpmath.quad(lambda a: d / -mpmath.polyval(cp, a), [mpmath.mpf(a0), a_xi])
    return t, a_xi


def scalar_flow_position(L: int, n: int, d: int, t, a0=0) -> mpmath.mpf:
    """a(t) of the scalar flow (A(0) = a0 I, a0 < a*): the root of
    int_{a0}^{a} d / (-f'(b)) db = t (increasing in a, infinite at a*), by safeguarded Newton
    (dt/da = d / (-f'(a))) at 30 digits; f' Taylor-shifted to a* (``Inflow``), so that it does
    not cancel to 0 near a*.  Within 10^FARTHEST_FLOOR of a* (a time of 10^10^12, or infinite) it
    stops there."""
    with mpmath.workdps(30):
        flow = Inflow.at(L, n, d)
        a_opt = flow.a_opt
        t = mpmath.mpf(t)
        lo, hi = mpmath.mpf(a0), a_opt
        rate = lambda b: d / -mpmath.polyval(flow.fp_shift, b - a_opt)  # noqa: E731
        a, t_a = lo, mpmath.mpf(0)
        for _ in range(200):
            if abs(t_a - t) <= mpmath.mpf(10) ** -20 * max(1, t):
                break
            if a_opt - a < mpmath.mpf(10) ** FARTHEST_FLOOR:
                break
            lo, hi = (a, hi) if t_a < t else (lo, a)
            nxt = a + (t - t_a) / rate(a) if mpmath.isfinite(t) else hi
            if not lo < nxt < hi:
                nxt = (lo + hi) / 2
            t_a = t_a + mpmath.quad(rate, [a, nxt])
            a = nxt
        return a


def _mp_a_star(L: int, n: int, d: int, digits: int = 30) -> mpmath.mpf:
    """a*(n, d, L) by bisection on f' (strictly increasing) at ``digits`` digits; works at any n
    (``looped_icl.a_star_rational`` certifies 120 digits and is slower at n = 10^100)."""
    with mpmath.workdps(digits):
        cp = _mp_coeffs(li.scalar_poly(L, n, d).diff(li.a_sym))
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        while mpmath.polyval(cp, hi) < 0:
            hi *= 2
        for _ in range(int(digits * 3.4) + 10):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mpmath.polyval(cp, mid) < 0 else (lo, mid)
        return (lo + hi) / 2


def scalar_flow_ivp(L: int, n: int, d: int, xi: float | None, t_end: float,
                    a0: float = 0.0) -> dict:
    """The same flow with scipy's solve_ivp (float64): the time the loss reaches xi (an event;
    none when xi is None) and a(t_end)."""
    from scipy.integrate import solve_ivp

    f = np.array([float(c) for c in li.scalar_poly(L, n, d).all_coeffs()])
    fp = np.polyder(f)
    # in s = log(1 + t) the power-law approach a* - a ~ t^{-1/(2L-2)} takes O(1) steps per decade
    hit = lambda s, y: np.polyval(f, y[0]) - xi  # noqa: E731
    sol = solve_ivp(lambda s, y: [-np.expm1(s) * np.polyval(fp, y[0]) / d
                                  - np.polyval(fp, y[0]) / d], (0.0, np.log1p(t_end)), [a0],
                    method="LSODA", events=hit if xi is not None else None, rtol=1e-10,
                    atol=1e-13)
    t_hit = float(np.expm1(sol.t_events[0][0])) if xi is not None and len(sol.t_events[0]) \
        else None
    return {"t_hit": t_hit, "a_at_t_end": float(sol.y[0, -1]), "status": sol.status,
            "rhs_evaluations": int(sol.nfev)}


@dataclass(frozen=True)
class FlowForm:
    with_closeness: bool  # Thm. 3.3 (2): (1 - c) A^opt <= A(t) <= (1 + c) A^opt


TIME_MEASURE = "the time the flow takes to reach loss xi / the named time"
RADIUS_MEASURE = "|a(t) / a* - 1| at the named time / the radius c"


def _hitting_lines(n: int = GD_N, xi=FLOW_XI, d_max: int = 2 ** 20):
    """Per L, d = 1 .. d_max from the scalar start A(0) = 0: the time the flow takes to reach
    loss xi (quadrature) against the named time; t_true / t_bound grows like d^{(L-1)/L} at
    large n, so bisect for the smallest failing d."""
    def point(L, d):
        return Point({**_gd_env(n, d, L), "xi": sympy.sympify(xi)},
                     lambda: scalar_flow_time(L, n, d, xi)[0],
                     {"L": L, "d": d, "n": size_text(n), "xi": str(xi), "A0": "0"},
                     {"Sigma_star": "I_d"})

    def lines(F, ctx):
        for L in li.by_budget(ctx, (2, 3, 4), (2, 3, 4, 5, 6), (2, 3, 4, 5, 6, 8)):
            yield Line(f"L={L}", range(1, d_max + 1), lambda d, L=L: point(L, d), smallest=True)
    return lines


HITTING_SEARCH = BoundSearch(
    "the time the flow takes to reach loss xi", "time", "<=", (Family(
        "hitting_time_large_d", f"Sigma* = I, A(0) = 0, n = {size_text(GD_N)}, xi = {FLOW_XI}; "
        "per L the smallest d at which L(A(t), 0) > xi at the named time (bisection over d <= "
        "2^20; L = 1 excluded: the named time divides by L - 1)", _hitting_lines(),
        "the flow from A(0) = 0 reaches xi by the named time"),),
    hypothesis="hypothesis", inline=("delta",), key="t_to_reach_xi_quadrature")


def _hitting_finding(ctx: Context) -> Finding:
    """``HITTING_SEARCH``, its counterexample cross-checked by solve_ivp and with the loss the
    flow has at the named time."""
    found = search_finding(HITTING_SEARCH, HITTING_SEARCH.families[0], ctx.formulas, ctx)
    ce = found.counterexample
    if ce is not None:
        L, d, t, bound = ce["L"], ce["d"], float(ce["t_to_reach_xi_quadrature"]), ce["time"]
        ce["named_time_bound"] = ce.pop("time")
        ce["t_to_reach_xi_solve_ivp"] = scalar_flow_ivp(L, GD_N, d, float(FLOW_XI), 4 * t)["t_hit"]
        if bound != "not a real number":
            ce["loss_at_named_time"] = _loss_at_time(L, GD_N, d, float(bound))
    return found


def _loss_at_time(L: int, n: int, d: int, t: float) -> float:
    a = scalar_flow_position(L, n, d, t)
    with mpmath.workdps(30):
        return float(mpmath.polyval(_mp_coeffs(li.scalar_poly(L, n, d)), a))


def _deviation_at_named_time(F, L: int, n: int, d: int, xi):
    """|a(t) / a* - 1| at the named time t (A(0) = 0); ``NotReal`` where t is not a real number
    (the statement's time says nothing there, so it fails)."""
    with mpmath.workdps(30):
        t = finite_real(_flow_named(F, "time", n, d, L, xi))
        if t is None:
            return NotReal("the named time is not a real number")
        return abs(scalar_flow_position(L, n, d, max(t, 0)) / _mp_a_star(L, n, d) - 1)


def _closeness_lines(dims: Sequence[int], n: int = GD_N, xi=FLOW_XI):
    def lines(F, ctx):
        for L in li.by_budget(ctx, (2, 3, 4), (2, 3, 4, 5, 6), (2, 3, 4, 5, 6, 8))[:2]:
            yield Line(f"L={L}", dims, lambda d, L=L: Point(
                {**_gd_env(n, d, L), "xi": sympy.sympify(xi)},
                lambda: _deviation_at_named_time(F, L, n, d, xi),
                {"L": L, "d": d, "n": size_text(n), "xi": str(xi), "A0": "0"}))
    return lines


CLOSENESS_SEARCH = BoundSearch(
    "|a(t) / a* - 1| at the named time", "c", "<=", (Family(
        "closeness_at_the_named_time", f"Thm. 3.3 (2) at the named time, A(0) = 0, n = "
        f"{size_text(GD_N)}, xi = {CLOSE_XI}, d in (1, 10, 1000)", _closeness_lines(
            (1, 10, 1000), xi=CLOSE_XI), "(1 - c) A^opt <= A(t) <= (1 + c) A^opt"),),
    hypothesis="hypothesis", inline=("delta",), key="deviation")


def _taylor_shift(coeffs: Sequence, a) -> list:
    """The coefficients (highest first) of p(a + u), from those of p: repeated synthetic division
    by (x - a), so that p near a is evaluated without cancellation."""
    rest, out = list(coeffs), []
    while rest:
        acc, quotient = mpmath.mpf(0), []
        for c in rest:
            acc = acc * a + c
            quotient.append(acc)
        out.append(quotient.pop())
        rest = quotient
    return out[::-1]


FARTHEST_FLOOR = -25  # log10 of the smallest |a - a*| the probes from infinity resolve


@dataclass(frozen=True)
class Inflow:
    """The scalar flow da/dt = -f'(a)/d (Sigma* = I, A = a I) coming in from a = side * oo: it
    arrives in finite time (f' grows like a^{2L-1}), and a flow from any finite start on that
    side is nearer a* at every t, so it is the supremum over the starts a0 I.  Positions are
    a* + side e^y; ``time_to(y)`` = int_{a* + side e^y}^{side oo} d / |f'(b)| db, taken over y,
    where the integrand is smooth at both ends (f' is Taylor-shifted to a*: no cancellation)."""

    L: int
    n: int
    d: int
    side: int
    a_opt: mpmath.mpf
    f_shift: tuple  # f(a* + u), highest coefficient first
    fp_shift: tuple  # f'(a* + u)

    @classmethod
    @lru_cache(maxsize=256)  # a probe row asks for it two or three times
    def at(cls, L: int, n: int, d: int, side: int = -1, digits: int = 30) -> "Inflow":
        with mpmath.workdps(digits):
            a_opt = _mp_a_star(L, n, d, digits + 15)
            f = li.scalar_poly(L, n, d)
            return cls(L, n, d, side, a_opt, tuple(_taylor_shift(_mp_coeffs(f), a_opt)),
                       tuple(_taylor_shift(_mp_coeffs(f.diff(li.a_sym)), a_opt)))

    def position(self, y) -> mpmath.mpf:
        return self.a_opt + self.side * mpmath.exp(y)

    def speed(self, y) -> mpmath.mpf:
        """d(time)/dy = d e^y / |f'(a* + side e^y)|."""
        u = mpmath.exp(y)
        return self.d * u / abs(mpmath.polyval(self.fp_shift, self.side * u))

    def time_to(self, y) -> mpmath.mpf:
        return mpmath.quad(self.speed, [y, y + 10, mpmath.inf])

    def loss(self, y) -> mpmath.mpf:
        return mpmath.polyval(self.f_shift, self.side * mpmath.exp(y))


def scalar_flow_from_infinity(L: int, n: int, d: int, t, side: int = -1,
                              digits: int = 30) -> mpmath.mpf | None:
    """a(t) of the scalar flow from a = side * oo (``Inflow``): solves time_to(y) = t for
    y = log|a - a*| (Newton, safeguarded).  None when |a(t) - a*| is below 10^FARTHEST_FLOOR."""
    with mpmath.workdps(digits):
        flow = Inflow.at(L, n, d, side, digits)
        t = mpmath.mpf(t)
        lo, hi = FARTHEST_FLOOR * mpmath.log(10), mpmath.inf  # time_to(lo) > t >= time_to(hi)
        if flow.time_to(lo) < t:
            return None
        # the large-n start: |a - a*|^{-(2L-2)} = 4 L (L - 1) t
        y = max(lo, -mpmath.log(4 * L * (L - 1) * t) / (2 * L - 2))
        tau = flow.time_to(y)
        for _ in range(200):
            if abs(tau - t) <= mpmath.mpf(10) ** (8 - digits) * t:
                break
            lo, hi = (max(lo, y), hi) if tau > t else (lo, min(hi, y))
            nxt = y + (tau - t) / flow.speed(y)
            if not lo < nxt < hi:
                nxt = (lo + hi) / 2 if hi < mpmath.inf else y + 1
            tau = flow.time_to(nxt) if abs(nxt - y) > 5 else tau - mpmath.quad(flow.speed, [y, nxt])
            y = nxt
        return flow.position(y)


def hitting_time_from_infinity(L: int, n: int, d: int, xi, side: int = -1,
                               digits: int = 30) -> mpmath.mpf | None:
    """The time the flow from a = side * oo takes to reach loss xi (the supremum of the hitting
    times over the starts a0 I on that side): the level a_xi = a* + side e^y with f(a_xi) = xi
    by bisection on y, then time_to(y).  None when xi is not above f(a*) + the floor's loss."""
    with mpmath.workdps(digits):
        flow = Inflow.at(L, n, d, side, digits)
        xi = mpf(xi)
        lo, hi = FARTHEST_FLOOR * mpmath.log(10), mpmath.mpf(0)
        if not flow.loss(lo) < xi:
            return None
        while flow.loss(hi) <= xi:
            hi += 10
        for _ in range(digits * 4):  # f increases in y on either side
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if flow.loss(mid) <= xi else (lo, mid)
        return flow.time_to(hi)  # f(a* + side e^hi) >= xi: a lower bound on the hitting time


# d = 10^12 with xi = 10^3 (d >> xi >> 1): a time that is ~ constant for xi >> L but should grow
# like (d/xi)^{(L-1)/L} fails only there
FARTHEST_PROBE_SIZES = tuple((L, n, d) for L in (2, 3) for n in (10 ** 12, 10 ** 40)
                             for d in (1, 16, 10 ** 12))
FARTHEST_PROBE_XI = tuple(sympy.Integer(10) ** k for k in (-12, 0, 3, 12, 40))
RADIUS_START_FRACTION = mpmath.mpf(10) ** -6  # the concrete start: the flow from -oo at 1e-6 T


def _admitted_targets(F, sizes: Sequence, xis: Sequence):
    """(L, n, d, xi) over the sizes and targets xi that the hypothesis admits."""
    for L, n, d in sizes:
        for xi in xis:
            if _admits(F, n, d, L, xi):
                yield L, n, d, xi


def _farthest_finding(name: str, starts: str, rows: list, say: Callable[[dict], str],
                      near: Closest) -> Finding:
    """A farthest-start probe's finding: its first failing row is the counterexample, told by
    its own ``why`` or by ``say``, after the instance."""
    bad = next((r for r in rows if not r["ok"]), None)
    return Finding(name, bad is None, {"family": f"Sigma* = I, A(0) = a0 I with {starts}; xi in "
                                                 "10^-12 .. 10^40 where the hypothesis admits it",
                                       "rows": rows}, bad,
                   "" if bad is None else f"at L = {bad['L']}, n = {bad['n']}, d = {bad['d']}, "
                                          f"xi = {bad['xi']} {bad.get('why') or say(bad)}",
                   near.margin, tested=bool(rows))


def flow_radius_probe(F, sizes: Sequence = FARTHEST_PROBE_SIZES,
                      xis: Sequence = FARTHEST_PROBE_XI) -> Finding:
    """Thm. 3.3 (2) against the worst scalar start: at the named time T the flow from
    A(0) = a0 I with a0 -> -oo is the farthest below A^opt (1 - a(T)/a* grows like
    xi^{1/(2L)} (4 L (L - 1) K)^{-1/(2L-2)} when T = K xi^{-(L-1)/L}), at every xi the hypothesis
    admits from 10^-12 to 10^40.  The closeness check at one xi from A(0) = 0 passed radii in
    another power of xi, or constant in xi.  A violation is confirmed at a concrete start."""
    rows, near = [], Closest(RADIUS_MEASURE + " (the flow from a0 → -∞)")
    for L, n, d, xi in _admitted_targets(F, sizes, xis):
        with mpmath.workdps(30):
            T, c = _flow_named(F, "time", n, d, L, xi), _flow_named(F, "c", n, d, L, xi)
        row = {"L": L, "n": size_text(n), "d": d, "xi": str(xi), "t": mpmath.nstr(T, 15),
               "c": mpmath.nstr(c, 15)}
        T, c = finite_real(T), finite_real(c)
        if T is None or T <= 0 or c is None:
            row.update(ok=False, why=f"the named time {row['t']} or radius {row['c']} is not a "
                                     "positive real number")
        else:
            a_t = scalar_flow_from_infinity(L, n, d, T)
            a_opt = Inflow.at(L, n, d).a_opt
            dev = mpmath.mpf(0) if a_t is None else 1 - a_t / a_opt
            row.update(sup_deviation=("< 1e-25" if a_t is None else mpmath.nstr(dev, 15)),
                       ok=bool(dev <= c))
            near.see_le(dev, c, {k: row[k] for k in ("L", "n", "d", "xi")})
            if not row["ok"] and all(r["ok"] for r in rows) and c > 0:
                # the first violation, at a finite start: a0 = a(eps T) of the flow from -oo;
                # at T it is a((1 + eps) T)
                a0 = scalar_flow_from_infinity(L, n, d, RADIUS_START_FRACTION * T)
                a_end = scalar_flow_from_infinity(L, n, d, (1 + RADIUS_START_FRACTION) * T)
                if a_end is not None:  # else within 1e-25 of a* at T: not confirmed, kept
                    dev_end = 1 - a_end / a_opt
                    row.update(A0=f"{mpmath.nstr(a0, 15)} I", a_at_t=mpmath.nstr(a_end, 15),
                               deviation_at_t=mpmath.nstr(dev_end, 15), ok=bool(dev_end <= c))
        rows.append(row)
    return _farthest_finding(
        "closeness_from_the_farthest_start", "a0 → -∞ (the farthest scalar start)", rows,
        lambda b: f"the flow from A(0) = {b.get('A0', '-∞ I')} is "
                  f"{b.get('deviation_at_t', b['sup_deviation'])} below A^opt at the named time "
                  f"> c = {b['c']}", near)


def flow_farthest_time_probe(F, sizes: Sequence = FARTHEST_PROBE_SIZES,
                             xis: Sequence = FARTHEST_PROBE_XI) -> Finding:
    """The time bound against the farthest scalar starts: the flow from A(0) = a0 I with
    a0 -> +-oo takes a finite time, the supremum over those starts, to reach loss xi; at every
    xi the hypothesis admits from 10^-12 to 10^40.  From A(0) = 0 the loss starts at f(0) <= d,
    so at xi >= d that start says nothing and a time too short at large xi passed.  A violation
    is confirmed at a concrete start."""
    rows, near = [], Closest(TIME_MEASURE + " (the sup over the starts a0 → ±∞)")
    for L, n, d, xi in _admitted_targets(F, sizes, xis):
        with mpmath.workdps(30):
            T = _flow_named(F, "time", n, d, L, xi)
        row = {"L": L, "n": size_text(n), "d": d, "xi": str(xi), "t_named": mpmath.nstr(T, 15)}
        T = finite_real(T)
        times = {side: hitting_time_from_infinity(L, n, d, xi, side) for side in (-1, 1)}
        side = max(times, key=lambda k: times[k] or 0)
        t_sup = times[side]
        if t_sup is None:  # xi within 10^-25 of f(a*): flow_xi_probe's ground
            continue
        row["t_sup_over_starts"] = mpmath.nstr(t_sup, 15)
        if T is None:
            row.update(ok=False, why=f"the named time {row['t_named']} is not a real number")
        else:
            row["ok"] = bool(t_sup <= T)
            near.see_le(t_sup, T, {k: row[k] for k in ("L", "n", "d", "xi")})
            if not row["ok"] and all(r["ok"] for r in rows):
                # a finite start, tau0 in from the side: it needs t_sup - tau0 > T
                tau0 = (t_sup - max(T, 0)) / 2
                a0 = scalar_flow_from_infinity(L, n, d, tau0, side)
                row.update(A0=f"{mpmath.nstr(a0, 15)} I",
                           t_from_A0=mpmath.nstr(t_sup - tau0, 15))
        rows.append(row)
    return _farthest_finding(
        "hitting_time_from_the_farthest_start", "a0 → -∞ or +∞ (the farthest scalar starts)",
        rows, lambda b: f"the flow from A(0) = {b['A0']} needs {b['t_from_A0']} > "
                        f"{b['t_named']} to reach xi", near)


# Large n at d = 1, 16; n << d, where f(a*) ~ d - n is large (a delta^{-1} admits xi = 0.45 <
# f(a*) = 98 at L = 2, n = 2, d = 100; a delta ~ 1 admits xi of a few hundred below f(a*) ~ 10^4
# at n = 100); and n = d = 10^9, where 2 (4 delta)^4 = 2.6e8 < f(a*) = 3.75e8 at L = 2 (the
# corrections' 4 d delta^{4L-2} <= 1 excludes it); and n = 10^21, d = 10^12, just inside that
# condition for a delta without its d ((8 L^2 / sqrt(n))^{1/(2L)} admits xi = 1e-6 < f(a*) = 2e-6)
FLOW_PROBE_SIZES = tuple((L, n, d) for L in (2, 3) for n in (10 ** 6, 10 ** 12) for d in (1, 16)) \
    + ((2, 2, 100), (3, 2, 100), (2, 100, 10 ** 4), (3, 100, 10 ** 4), (2, 10 ** 4, 10 ** 6),
       (2, 10 ** 9, 10 ** 9), (2, 10 ** 21, 10 ** 12))
FLOW_PROBE_MULTIPLES = (sympy.Rational(1, 2), 2, 10 ** 6)  # xi as multiples of the optimal loss


def _optimal_loss(L: int, n: int, d: int, digits: int = 60) -> mpmath.mpf:
    """f(a*), the least loss on the line A = a I (Sigma* = I), at ``digits`` digits (30 lose it to
    cancellation at n = 10^12)."""
    with mpmath.workdps(digits):
        a = _mp_a_star(L, n, d, digits)
        return mpmath.polyval(_mp_coeffs(li.scalar_poly(L, n, d)), a)


def _smallest_admitted_xi(admits: Callable, lo: mpmath.mpf, hi: mpmath.mpf) -> mpmath.mpf | None:
    """The smallest xi in [lo, hi] the hypothesis admits (bisection on log xi, 60 steps), when
    it admits hi but not lo; None otherwise."""
    as_xi = lambda v: sympy.Float(mpmath.nstr(v, 40), 40)  # noqa: E731
    if admits(as_xi(lo)) or not admits(as_xi(hi)):
        return None
    a, b = mpmath.log(lo), mpmath.log(hi)
    for _ in range(60):
        mid = (a + b) / 2
        a, b = (a, mid) if admits(as_xi(mpmath.exp(mid))) else (mid, b)
    return mpmath.exp(b)


def flow_xi_probe(F, sizes: Sequence = FLOW_PROBE_SIZES,
                  multiples: Sequence = FLOW_PROBE_MULTIPLES) -> Finding:
    """The time bound where the hypothesis admits xi near the optimal loss f(a*): half of it,
    which the flow from A(0) = 0 never reaches (A(t) = a(t) I has loss >= f(a*)), twice and 10^6
    times it, and the smallest xi it admits below f(a*) (a failure) or else in [2 f(a*), d] (the
    true hitting time against the named time).
    The large-d scan uses one xi only, so a hypothesis that admits every xi, or a time in
    another power of xi, passed it."""
    rows, bad, near = [], None, Closest(TIME_MEASURE)
    hyp = _gd_expr(F, "hypothesis")
    for L, n, d in sizes:
        f_star = _optimal_loss(L, n, d)
        if not f_star > 0:  # not resolved at 60 digits: no xi relative to it
            rows.append({"L": L, "n": size_text(n), "d": d, "skipped": "f(a*) not resolved"})
            continue
        admits = lambda x: _admits(F, n, d, L, x)  # noqa: E731
        candidates = [f_star * m for m in multiples]
        # the smallest xi admitted below f(a*) (a threshold between f(a*)/10^6 and f(a*)), or
        # else the smallest in [2 f(a*), d]
        edges = [_smallest_admitted_xi(admits, f_star / 10 ** 6, f_star),
                 _smallest_admitted_xi(admits, 2 * f_star, mpmath.mpf(d))]
        candidates += [e for e in edges if e is not None]
        for value in candidates:
            m = value / f_star
            xi = sympy.Float(mpmath.nstr(value, 40), 40)
            if not admits(xi):
                continue
            row = {"L": L, "n": size_text(n), "d": d, "xi": mpmath.nstr(value, 15),
                   "optimal_loss": mpmath.nstr(f_star, 15),
                   "edge": any(value is e for e in edges)}
            if m <= 1:
                row.update(ok=False, why="the hypothesis admits xi below the optimal loss, which "
                                         "the flow from A(0) = 0 never reaches")
            else:
                t_true, _ = scalar_flow_time(L, n, d, value)
                with mpmath.workdps(30):
                    named = _flow_named(F, "time", n, d, L, xi)
                bound = finite_real(named)
                row.update(t_true=mpmath.nstr(t_true, 15), t_bound=mpmath.nstr(named, 15))
                if bound is None:  # a time that is not a real number bounds nothing
                    row.update(ok=False, why=f"the named time {row['t_bound']} is not a real "
                                             "number")
                else:
                    row["ok"] = bool(t_true <= bound)
                    near.see_le(t_true, bound, {k: row[k] for k in ("L", "n", "d", "xi")})
            rows.append(row)
            if not row["ok"] and bad is None:
                bad = row
    return Finding("hitting_time_near_the_optimal_loss", bad is None,
                   {"family": "Sigma* = I, A(0) = 0; xi = 1/2, 2, 10^6 times f(a*) and the "
                              "smallest xi the hypothesis admits, where it admits them",
                    "rows": rows}, bad,
                   "" if bad is None else (bad.get("why") or f"at L = {bad['L']}, n = {bad['n']}, "
                                           f"d = {bad['d']}, xi = {bad['xi']} the flow needs "
                                           f"{bad['t_true']} > {bad['t_bound']}"), near.margin,
                   tested=any("ok" in r for r in rows))


def _flow_steps() -> list:
    return [step("Scalar flow", r"A(0)=a_0I\Rightarrow A(t)=a(t)I,\quad \dot a=-\frac{f'(a)}{d},"
                 r"\quad t_\xi=\int_{a_0}^{a_\xi}\frac{d\,da}{-f'(a)}",
                 "L(., 0) is invariant under A -> O A O^T at Sigma* = I, so the flow from a I "
                 "stays "
                 "on the line; f is the exact loss on it (Wishart moments in n and d)."),
            step("Large n", r"\dot x=-2Lx^{2L-1},\ f=dx^{2L}\ \Rightarrow\ t_\xi\approx"
                 r"\frac{(d/\xi)^{(L-1)/L}}{4L(L-1)}",
                 "with x = 1 - a; the named bound does not grow with d, so it fails for large d."),
            step("The paper's ODE", r"g'=-\kappa g^{\frac{2L-1}{L}}\Rightarrow g(t)\le\Big("
                 r"\frac{L}{\kappa(L-1)t}\Big)^{L/(L-1)}",
                 "the proof of Thm. A.12 writes the exponents L/(2L-1) and (L-1)/(2L-1) and omits "
                 "the minus sign of g'; with kappa = 1/(16 d^{(L-1)/L}) (the corrected gradient "
                 "dominance) the time is 16 L d^{(L-1)/L} xi^{-(L-1)/L} / (L-1).")]


def _flow_symbolic(ctx: Context, form: FlowForm) -> TierResult:
    F = ctx.formulas
    findings = [_hitting_finding(ctx)]
    findings += [flow_xi_probe(F), flow_farthest_time_probe(F)]
    if form.with_closeness:
        findings += [search_finding(CLOSENESS_SEARCH, CLOSENESS_SEARCH.families[0], F, ctx),
                     flow_radius_probe(F)]
    return combine(findings, steps=_flow_steps())


def _diag_flow(C: Poly, lam0: np.ndarray, n: int, xi: float, t_end: float) -> dict:
    """The full-matrix flow from A(0) = diag(lam0) (it stays diagonal: the loss is invariant under
    sign flips of coordinates), integrated by solve_ivp on the eigenvalues with the derived loss
    (torch autograd, float64)."""
    from scipy.integrate import solve_ivp

    d = len(lam0)

    def loss_grad(lam):
        t = torch.tensor(lam, dtype=torch.float64, requires_grad=True)
        val = C.evaluate({"A": torch.diag(t)}, {"n": n, "d": d})
        g, = torch.autograd.grad(val, t)
        return float(val.detach()), g.numpy()

    # in s = log(1 + t) (as scalar_flow_ivp): a named time of 10^50 is 115 units of s, not
    # 10^50 of t, which solve_ivp never finished
    hit = lambda s, y: loss_grad(y)[0] - xi  # noqa: E731
    s_end = float(np.log1p(t_end))
    sol = solve_ivp(lambda s, y: -np.exp(s) * loss_grad(y)[1], (0.0, s_end), lam0,
                    method="LSODA", events=hit, rtol=1e-9, atol=1e-12)
    t_hit = float(np.expm1(sol.t_events[0][0])) if len(sol.t_events[0]) else None
    return {"t_hit": t_hit, "lam_end": sol.y[:, -1].tolist(), "status": int(sol.status),
            "loss0": loss_grad(lam0)[0]}


FLOW_T_CAP = 1e6  # the numeric flows stop here: a named time of 10^50 took solve_ivp forever


def _numeric_xi(F, n: int, d: int, L: int) -> float | None:
    """The target loss of the numeric flows: just above the hypothesis's threshold on xi (at
    least 10^-3), found by bisection where the hypothesis is a conjunction (the corrections add
    a size condition); None where it admits no xi up to 10^40."""
    hyp = _gd_expr(F, "hypothesis")
    admits = lambda x: _admits(F, n, d, L, sympy.Rational(repr(float(x))))  # noqa: E731
    with mpmath.workdps(30):
        thr = (float(mp_value(hyp.rhs, {**_gd_env(n, d, L), "xi": 1})) if hasattr(hyp, "rhs")
               else 0.0)
    xi = max(1.01 * thr, 1e-3)
    if admits(xi):
        return xi
    edge = _smallest_admitted_xi(admits, mpmath.mpf(xi), mpmath.mpf(10) ** 40)
    if edge is None:
        return None
    xi = 1.01 * float(edge)
    return xi if admits(xi) else None


def _flow_numeric(ctx: Context, form: FlowForm) -> TierResult:
    """Full-matrix flows at small d: random diagonal starts (every symmetric start is a rotation of
    one), n large enough that the hypothesis admits xi; the hitting time vs the named time."""
    F = ctx.formulas
    rng = ctx.rng("flow")
    starts = li.by_budget(ctx, 2, 6, 12)
    n = 10 ** 12
    rows, bad = [], None
    times = Closest(TIME_MEASURE)
    radii = Closest("max_i |lambda_i(t) / a* - 1| at the named time / the radius c")
    for L in [L for L in li.loops(ctx) if L >= 2]:
        C = li.derived_loss(L, isotropic=True, with_u=False)
        for d in li.by_budget(ctx, (2,), (1, 2, 3)):
            xi = _numeric_xi(F, n, d, L)
            if xi is None:  # the hypothesis admits no xi up to 10^40: nothing to compare
                continue
            for s in range(starts):
                lam0 = rng.uniform(-1.0, 2.5, d) if s else np.zeros(d)
                with mpmath.workdps(30):
                    T = finite_real(_flow_named(F, "time", n, d, L, sympy.Rational(repr(xi))))
                T = float("nan") if T is None else float(T)
                if not np.isfinite(T):  # solve_ivp never ends on a nan interval
                    row = {"L": L, "d": d, "n": n, "xi": xi, "named_time": str(T), "ok": False,
                           "why": "the named time is not a real number"}
                    rows.append(row)
                    bad = bad or row
                    continue
                out = _diag_flow(C, lam0, n, xi, min(max(T, 1e-9), FLOW_T_CAP))
                if out["loss0"] <= xi:
                    continue
                # not reached by the cap < T: undecided (the farthest-start probe has that ground)
                ok = (out["t_hit"] <= T if out["t_hit"] is not None
                      else None if T > FLOW_T_CAP else False)
                row = {"L": L, "d": d, "n": n, "xi": xi, "A0_eigenvalues": lam0.tolist(),
                       "loss0": out["loss0"], "t_hit": out["t_hit"], "named_time": T,
                       "ok": ok}
                where = {"L": L, "n": size_text(n), "d": d, "xi": xi, "start": s}
                if out["t_hit"] is not None:
                    times.see_le(out["t_hit"], T, where)
                if T > FLOW_T_CAP:
                    row["integrated_to"] = FLOW_T_CAP
                elif form.with_closeness:
                    with mpmath.workdps(30):
                        c = finite_real(_flow_named(F, "c", n, d, L, sympy.Rational(repr(xi))))
                    a_opt = float(_mp_a_star(L, n, d))
                    lam_T = np.array(out["lam_end"])
                    if c is None:  # a radius that is not a real number bounds nothing
                        close, c = False, "not a real number"
                        row["why"] = "the named radius c is not a real number"
                    else:
                        c = float(c)
                        close = bool(np.all(((1 - c) * a_opt <= lam_T)
                                            & (lam_T <= (1 + c) * a_opt)))
                        radii.see_le(float(np.abs(lam_T / a_opt - 1).max()), c, where)
                    row.update({"c": c, "eigenvalues_at_named_time": lam_T.tolist(),
                                "close": close})
                    ok = ok and close
                row["ok"] = ok
                rows.append(row)
                if ok is False and bad is None:
                    bad = row
    undecided = any(r["ok"] is None for r in rows)
    return combine([Finding("flows_at_small_d", False if bad else None if undecided else True,
                            {"flows": rows, "integrated_up_to": FLOW_T_CAP}, bad,
                            "" if bad is None and not undecided else
                            bad.get("why", "a flow misses the named bound") if bad else f"a flow has not reached xi by t = {FLOW_T_CAP:g}, below "
                            "the named time",
                            max((m for m in (times.margin, radii.margin) if m is not None),
                                key=lambda m: m.used, default=None), tested=bool(rows))])


THM_A12_FORMULAS = (
    NamedFormula("hypothesis", "xi >= 2*(4*delta)**(2*L)", _FLOW_SYMBOLS, equation="Thm. A.12",
                 description="xi >= 2 (4 delta)^{2L}", weaker="narrower"),
    sec35_delta(),
    NamedFormula("time", "(1/xi)**((L - 1)/L)*(16*L/(L - 1))**((L - 1)/(2*L - 1))", _FLOW_SYMBOLS,
                 equation="Thm. A.12", description="after this time L(A(t), 0) <= xi", weaker="larger"),
)
FLOW_CORRECTION = {"time": "(d/xi)**((L - 1)/L)*16*L/(L - 1)",
                   "hypothesis": f"(xi >= 2*(4*delta)**(2*L)) & ({A10_SIZE_CONDITION})"}
FLOW_REASON = ("the corrected gradient dominance (Thm. 3.4 with the factor d^{-(L-1)/L}, under "
               "Lemma A.10's sample-size condition 4 d delta^{4L-2} <= 1) and the correct "
               "solution of g' = -kappa g^{(2L-1)/L}; the paper's ODE solution has the exponents "
               "L/(2L-1), (L-1)/(2L-1) for L/(L-1), 1.  Without the condition xi >= 2 (4 "
               "delta)^{2L} admits xi below the optimal loss where n ~ d: at L = 2, n = d = 10^9, "
               "xi = 2.59e8 < f(a*) = 3.75e8, which the flow never reaches")

THM_A12 = Claim(
    id="gatmiry2024.thm_a12",
    title="Convergence of the gradient flow (time to reach loss xi)",
    paper=PAPER,
    statement=r"For $\xi\ge2(4\delta)^{2L}$, after $t\ge(1/\xi)^{(L-1)/L}(\frac{16L}{L-1})^{(L-1)/"
              r"(2L-1)}$ the flow $\dot A=-\nabla_AL(A,0)$ has $L(A(t),0)\le\xi$.",
    assumptions=("Sigma* = I, u = 0", "L >= 2 (the time divides by L - 1)",
                 "delta = (8 L d / sqrt(n))^{1/(2L)}"),
    formulas=THM_A12_FORMULAS,
    ranges=("L >= 2",),
    checks={"symbolic": lambda ctx: _flow_symbolic(ctx, FlowForm(False)),
            "numeric": single_threaded(lambda ctx: _flow_numeric(ctx, FlowForm(False)))},
    setting=FLOW_SETTING,
    correction=Correction(description="t >= 16 L d^{(L-1)/L} xi^{-(L-1)/L} / (L - 1), and n "
                                      "large enough that 4 d delta^{4L-2} <= 1",
                          reason=FLOW_REASON, formulas=FLOW_CORRECTION),
    notes="The proof writes f' <= (1/16) f^{(2L-1)/L} for f' <= -(1/16) f^{(2L-1)/L}.",
)

THM3_3 = Claim(
    id="gatmiry2024.thm3_3",
    title="Convergence of the gradient flow (loss and closeness to A^opt)",
    paper=PAPER,
    statement=r"For $\xi\ge2(4\delta)^{2L}$, after $t\ge(1/\xi)^{(L-1)/L}(\frac{16L}{L-1})^{(L-1)/"
              r"(2L-1)}$: (1) $L(A(t))\le\xi$; (2) $(1-8(1+4d^{1/(2L)})\xi^{1/(2L)})A^{opt}"
              r"\preccurlyeq A\preccurlyeq(1+8(1+4d^{1/(2L)})\xi^{1/(2L)})A^{opt}$.",
    assumptions=THM_A12.assumptions + ("A^opt = a*(n, d, L) I (Thm. 3.2 check)",),
    formulas=THM_A12_FORMULAS + (
        NamedFormula("c", "8*(1 + 4*d**(1/(2*L)))*xi**(1/(2*L))", _FLOW_SYMBOLS,
                     equation="Thm. 3.3 (2)",
                     description="(1 - c) A^opt <= A(t) <= (1 + c) A^opt", weaker="larger"),),
    ranges=THM_A12.ranges,
    checks={"symbolic": lambda ctx: _flow_symbolic(ctx, FlowForm(True)),
            "numeric": single_threaded(lambda ctx: _flow_numeric(ctx, FlowForm(True)))},
    setting=FLOW_SETTING,
    correction=Correction(description=THM_A12.correction.description, reason=FLOW_REASON,
                          formulas=FLOW_CORRECTION),
    notes="Item (2) is printed with a lost minus sign ('(1 8(1 + ...')); read as 1 - c.",
)


