"""The global optimum: Theorem 3.2 and its restatement A.8."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable, Sequence

import mpmath
import numpy as np
import sympy
import torch

from models.device import runtime, randn
from models.exact import ExactLoss
from models.lsa import LSAConfig, LinearTransformer
from models.progress import Progress
from models.sampler import PromptLaw, sample_prompts
from models.trainers import optimise, optimise_batched
from moments.poly import Poly
from verify.vacuity import Vacuity
from verify.claim import Claim, Context, ExactValues, TierResult
from verify.evidence import Closest, Finding, combine, step
from verify.formulas import NamedFormula, formula_value

from ..kit import looped_icl as li
from .common import (D, L_SYM, N, PAPER, RootInstance, _D, _DELTA, _L, _N, _by_budget, _exact_value,
                     _loops, _q, _setting, aligned_instance, root_instances, sec35_delta,
                     single_threaded)
from .loss import looped_model, mc_loss
from .moment_bounds import _sizes_of
from .moment_search import _huge_power


OPT_SETTING = _setting({"n": 20, "d": 3, "L": 2}, {"n": 20, "d": 5, "L": 2},
                       {"n": 20, "d": 10, "L": 3}, fixed_sigma="")  # Thm 3.2's numeric tier takes it
_OPT_SYMBOLS = (_N, _D, _L, _DELTA)


def _opt_grid(ctx: Context) -> tuple[tuple, tuple]:
    """(dimensions, loops) at which the optimum is computed exactly at the threshold sizes."""
    return (_by_budget(ctx, (1, 2, 3, 10, 1000), (1, 2, 3, 5, 10, 1000), (1, 2, 3, 5, 10, 1000)),
            _by_budget(ctx, (1, 2, 3), (1, 2, 3, 4), (1, 2, 3, 4, 5)))


def _sizes_env(n, d, L) -> dict:
    return {N: sympy.Integer(n), D: sympy.Integer(d), L_SYM: sympy.Integer(L)}


def _named_at(F, name: str, n, d, L, **extra) -> sympy.Expr:
    """A scalar named formula at sizes (delta substituted from its own formula)."""
    expr = F[name]
    sub = _sizes_env(n, d, L)
    if "delta" in F and name != "delta":
        sub[sympy.Symbol("delta", positive=True)] = F["delta"].subs(sub)
    for k, v in extra.items():
        sub[sympy.Symbol(k, positive=True)] = v
    with sympy.evaluate(False):
        held = expr.xreplace(sub)
    if _huge_power(held):  # (2 delta)^(2n) at n = 10^6: sympy would expand it for minutes
        return sympy.N(held, 80)
    return held.doit()  # the held tree, evaluated: the sizes are substituted once


def _condition(F, name: str, d: int, L: int) -> Callable[[int], bool]:
    """The named condition as a function of n: 60-digit arithmetic, exact when within 10^-40."""
    expr = F[name]
    if "delta" in F and name != "delta":  # delta first: it is written in d and L
        expr = expr.subs(sympy.Symbol("delta", positive=True), F["delta"])
    expr = expr.subs({D: d, L_SYM: L})
    if isinstance(expr, sympy.logic.boolalg.BooleanAtom):
        return lambda n: bool(expr)
    lhs, rhs = expr.lhs, expr.rhs
    fl, fr = sympy.lambdify(N, lhs, "mpmath"), sympy.lambdify(N, rhs, "mpmath")

    def holds(n: int) -> bool:
        with mpmath.workdps(60):
            x, y = fl(mpmath.mpf(n)), fr(mpmath.mpf(n))
            if abs(x - y) > mpmath.mpf(10) ** -40 * max(abs(x), abs(y), 1):
                return bool(expr.func(sympy.Float(x, 60), sympy.Float(y, 60)))
        return bool(expr.subs(N, n))

    return holds


def smallest_n(F, d: int, L: int, name: str = "hypothesis", start: int = 1) -> int | None:
    """The smallest integer n at which the named condition holds (it is monotone in n for the
    paper's conditions: exponential search, then bisection)."""
    holds = _condition(F, name, d, L)

    hi = max(start, 1)
    while not holds(hi):
        hi *= 2
        if hi > 10 ** 60:
            return None
    lo = hi // 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi if hi == start or not holds(hi - 1) else hi


def _u_structure(L: int, inst: RootInstance, ns: Sequence[int]) -> dict:
    """L(A, u) - L(A, 0) = u^T M(A) u: no term of degree 1 in u, and M(A) at the instance."""
    full = li.derived_loss(L, with_u=True)
    base = li.derived_loss(L, with_u=False)
    linear = [k for k in full.terms if _u_degree(k) % 2 == 1]
    part = (full - base).simplify()
    d = inst.d
    us = sympy.symbols(f"u_0:{d}")
    Ms = {}
    for n in ns:
        val = sympy.expand(part.evaluate({**inst.env(), "u": sympy.Matrix(us)}, {"n": n, "d": d},
                                         exact=True))
        Ms[n] = sympy.Matrix(d, d, lambda i, j: sympy.diff(val, us[i], us[j]) / 2)
    return {"odd_terms_in_u": len(linear), "M": Ms}


def _u_degree(key) -> int:
    cycles, chains = key
    return sum(1 for w in cycles + chains for name, _ in w if name == "u")


def _pd(M: sympy.Matrix) -> bool:
    return all(M[:k, :k].det() > 0 for k in range(1, M.shape[0] + 1))


def _opt_structure_findings(ctx: Context, F) -> tuple[list, list]:
    """u^opt = 0 and the reduction L_{Sigma*}(A) = L_I(Sigma*^{1/2} A Sigma*^{1/2})."""
    findings, rows_u, rows_red = [], [], []
    ok_u, ok_red, ce_u, ce_red = True, True, None, None
    u_named = F.get("u_opt")
    for L in _loops(ctx):
        for inst in root_instances(ctx):
            ns = [inst.d + 1, 50]
            st = _u_structure(L, inst, ns)
            pd = all(_pd(M) for M in st["M"].values())
            ok = st["odd_terms_in_u"] == 0 and pd
            named_zero = True
            if u_named is not None:
                uv = formula_value(u_named, {"d": inst.d})
                uv = sympy.zeros(inst.d, 1) if uv == 0 else sympy.Matrix(uv)
                named_zero = uv == sympy.zeros(inst.d, 1)
                if not named_zero:
                    quad = (uv.T * st["M"][ns[0]] * uv)[0, 0]
                    ok = False
                    ce_u = ce_u or {"instance": inst.as_dict(), "L": L, "n": ns[0],
                                    "named_u_opt": str(list(uv)),
                                    "loss_increase_at_named_u": str(quad)}
            rows_u.append({"L": L, "instance": inst.label, "odd_terms_in_u": st["odd_terms_in_u"],
                           "M_positive_definite_at_n": ns if pd else False})
            if not ok and ce_u is None:
                ce_u = {"instance": inst.as_dict(), "L": L,
                        "M": {n: str(M.tolist()) for n, M in st["M"].items()}}
            ok_u &= ok
            # the reduction to Sigma* = I
            iso = li.derived_loss(L, isotropic=True, with_u=False)
            gen = li.derived_loss(L, with_u=False)
            env = inst.env()
            lhs = _exact_value(gen, env, N)
            Bp = inst.R * env["A"] * inst.R
            rhs = _exact_value(iso, {"A": Bp, "Sigma": sympy.eye(inst.d)}, N)
            diff = sympy.cancel(lhs - rhs)
            rows_red.append({"L": L, "instance": inst.label, "difference": str(diff)})
            if diff != 0:
                ok_red = False
                ce_red = ce_red or {"instance": inst.as_dict(), "L": L, "lhs": str(lhs),
                                    "rhs": str(rhs)}
    findings.append(Finding("u_opt", ok_u, {"rows": rows_u, "statement": "L(A, u) = L(A, 0) + "
                            "u^T M(A) u with M(A) positive definite, so u^opt = 0"}, ce_u,
                            "" if ok_u else "u^opt = 0 fails"))
    findings.append(Finding("reduction_to_identity", ok_red, {"rows": rows_red}, ce_red,
                            "" if ok_red else "L_{Sigma*}(A) != L_I(Sigma*^{1/2} A Sigma*^{1/2})"))
    return findings, rows_u


def _c_ge_p_finding(ctx: Context) -> Finding:
    """C(A) - P(A) = E||M - M^T||^2 / 2 >= 0 (M = (I - A S)^L, Sigma* = I), zero at A = a I."""
    rows, ok, ce = [], True, None
    for L in _loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        P = li.paper_form(L)
        for inst in root_instances(ctx, isotropic=True) + [aligned_instance(2)]:
            if inst.label.startswith("A ="):
                inst = RootInstance(sympy.ImmutableMatrix(sympy.eye(2)),
                                    sympy.ImmutableMatrix(sympy.eye(2) * sympy.Rational(3, 4)),
                                    inst.u, "A = 9/16 I")
            A = inst.A
            cv = _exact_value(C, {"A": A, "Sigma": sympy.eye(inst.d)}, N)
            pv = sympy.cancel(li.at_spectrum(P, [sympy.nsimplify(x) for x in A.eigenvals(
                multiple=True)], N, inst.d)) if False else sympy.cancel(P.subs(D, inst.d).xreplace(
                {li.power_sum(j): (A ** j).trace() for j in range(1, 2 * L + 1)}))
            gap = sympy.factor(sympy.cancel(cv - pv))
            n_check = [inst.d, inst.d + 1, 10, 1000]
            nonneg = all(sympy.cancel(gap.subs(N, n)) >= 0 for n in n_check)
            scalar = inst.label.endswith("I")
            rows.append({"L": L, "instance": inst.label, "C_minus_P": str(gap)})
            if not nonneg or (scalar and gap != 0):
                ok = False
                ce = ce or {"L": L, "instance": inst.as_dict(), "C_minus_P": str(gap)}
    return Finding("true_loss_above_trace_form", ok, {"rows": rows}, ce,
                   "" if ok else "C(A) >= P(A) fails")


BOUND_MEASURE = "the quantity at the optimum / its named bound"
OPT_N_MULTIPLES = (1, 10, 1000, 10 ** 6)  # n / (the smallest n of the hypothesis)


def _optimum_rows(ctx: Context, F, bounds: Sequence[tuple]) -> tuple[Finding, Finding, dict]:
    """At each (d, L) and n = the smallest n the hypothesis admits times OPT_N_MULTIPLES (a bound
    of another order in n, (8Ld/sqrt(n))^(3/2) for delta, first fails a thousand times above the
    threshold): a*, f(a*), the Hessian at a* I, and the named bounds.  ``bounds``: (label,
    value(a*, f*, n, d, L) -> (lhs, rhs))."""
    dims, loops = _opt_grid(ctx)
    rows, ce, ok_b, ok_h, ce_h = [], None, True, True, None
    hyp_n, near = {}, Closest(BOUND_MEASURE)
    for L in loops:
        for d in dims:
            n0 = smallest_n(F, d, L)
            hyp_n[f"d={d},L={L}"] = n0
            if n0 is None:
                continue
            holds = _condition(F, "hypothesis", d, L)
            for n in (n0 * m for m in OPT_N_MULTIPLES):
                if not holds(n):
                    continue
                a = li.a_star_rational(n, d, L)  # within 10^-120 of a*
                fa = li.scalar_poly(L, n, d).eval(a)
                h_I, h_p = li.hessian_at_scalar(a, n, d, L)
                pos = h_I > 0 and (d == 1 or h_p > 0)
                row = {"d": d, "L": L, "n": n, "a_star": _q(sympy.N(a, 25)),
                       "optimal_loss": float(sympy.N(fa, 20)),
                       "hessian_I": float(sympy.N(h_I, 20)),
                       "hessian_traceless": None if d == 1 else float(sympy.N(h_p, 20))}
                if not pos:
                    ok_h = False
                    ce_h = ce_h or row
                for label, fn in bounds:
                    lhs, rhs = fn(a, fa, n, d, L)
                    good = _le_with_margin(lhs, rhs)
                    row[label] = {"value": float(sympy.N(lhs, 20)), "bound": float(sympy.N(rhs, 20)),
                                  "holds": good}
                    near.see_le(row[label]["value"], row[label]["bound"],
                                {"bound": label, "d": d, "L": L, "n": n})
                    if not good:
                        ok_b = False
                        ce = ce or {"d": d, "L": L, "n": n, "bound": label, "value": _q(lhs),
                                    "paper_bound": _q(rhs), "a_star": _q(sympy.N(a, 30))}
                rows.append(row)
    fb = Finding("bounds_at_threshold_sizes", ok_b if rows else None,
                 {"rows": rows, "smallest_n_of_the_hypothesis": hyp_n}, ce,
                 "" if ok_b and rows else "a bound of the statement fails at the optimum" if rows
                 else "the hypothesis admits no (d, L) of the grid up to n = 10^60", near.margin)
    fh = Finding("hessian_at_a_star_I", ok_h, {"note": "eigenvalues f''(a*)/d along I and h_perp "
                                                       "on the traceless directions"}, ce_h,
                 "" if ok_h else "a* I is not a strict local minimum")
    return fb, fh, hyp_n


LARGE_L_NS = (1, 4)            # n of the d = 1 family at large loop counts
LARGE_L_MAX_EXPONENT = 12      # L = 2^0 .. 2^12 (2^(2L) has 4300 digits at L = 7143)
LARGE_L_PER_N = 2              # the first loop counts the hypothesis admits, per n
QUAD_DIGITS = 30
QUAD_MARGIN = sympy.Float(10) ** -10  # relative: the quadrature is good to ~16 digits at n = 1


def _chi2_mean_density(n: int) -> Callable:
    """The density of s = chi^2_n / n (the 1 x 1 Wishart W/n at d = 1)."""
    k = mpmath.mpf(n) / 2
    c = k ** k / mpmath.gamma(k)
    return lambda s: c * s ** (k - 1) * mpmath.exp(-k * s)


def scalar_optimum_d1(n: int, L: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """(a*, f(a*)) at d = 1 for any L, by quadrature: f(a) = E (1 - a s)^{2L} with s ~ chi^2_n/n
    (a positive integrand: no cancellation, unlike the degree-2L polynomial in the moments,
    whose terms reach 10^6500 at L = 2048), f convex and f'(a) = -2L E s (1 - a s)^{2L-1}, so a*
    is the one root of f' (bisection in a bracket), at QUAD_DIGITS digits."""
    p = _chi2_mean_density(n)
    with mpmath.workdps(QUAD_DIGITS + 10):
        def cuts(a):
            # the bulk within 1/(2 L a) of 0, the sign change at 1/a, and the far peak of
            # |1 - a s|^{2L} e^{-n s/2} at a s - 1 = 4 L a / n, which outgrows the bulk past a*
            peak = (1 + 4 * L * a / n) / a
            return sorted({mpmath.mpf(0), 1 / (a * 2 * L), 1 / a, 2 / a, peak / 2, peak,
                           2 * peak}) + [mpmath.inf]

        def fp(a):
            return -2 * L * mpmath.quad(lambda s: s * (1 - a * s) ** (2 * L - 1) * p(s), cuts(a))

        lo, hi = mpmath.mpf(1) / (64 * L), mpmath.mpf(8) / L  # a* L -> a constant
        while fp(lo) > 0:
            lo /= 8
        while fp(hi) < 0:
            hi *= 8
        # bisection: f' jumps from -4e2 to 4e15 between a = 0.00043 and 0.00044 at n = 1,
        # L = 2048 (the far peak switches on), where a secant step goes astray
        for i in range(64):
            mid = mpmath.sqrt(lo * hi) if i < 12 else (lo + hi) / 2
            lo, hi = (mid, hi) if fp(mid) < 0 else (lo, mid)
        a = (lo + hi) / 2
        return a, mpmath.quad(lambda s: (1 - a * s) ** (2 * L) * p(s), cuts(a))


def _large_loop_finding(F, bounds: Sequence[tuple]) -> Finding:
    """The bounds at d = 1, n in LARGE_L_NS and the first LARGE_L_PER_N loop counts L = 2^j
    (j <= LARGE_L_MAX_EXPONENT) that the hypothesis admits, with a* and f(a*) by quadrature
    (``scalar_optimum_d1``).  The grid of ``_optimum_rows`` has L <= 5; a hypothesis that
    admits only larger L (delta with n and L exchanged, at n = 1: L > 1024) went unchecked.
    The printed hypothesis admits none of these: nothing to check, which passes."""
    rows, ce, unevaluated = [], None, []
    admitted, near = {n: [] for n in LARGE_L_NS}, Closest(BOUND_MEASURE)
    for L in (2 ** j for j in range(LARGE_L_MAX_EXPONENT + 1)):
        try:  # 2^(2L) past 4300 digits cannot be printed (lambdify) or converted
            holds = _condition(F, "hypothesis", 1, L)
            for n in LARGE_L_NS:
                if holds(n):
                    admitted[n].append(L)
        except (ValueError, OverflowError, TypeError):
            unevaluated.append({"L": L})
    for n in LARGE_L_NS:
        for L in admitted[n][:LARGE_L_PER_N]:
            a, fa = (sympy.Float(mpmath.nstr(x, QUAD_DIGITS), QUAD_DIGITS)
                     for x in scalar_optimum_d1(n, L))
            row = {"n": n, "d": 1, "L": L, "a_star": str(a), "optimal_loss": str(fa)}
            for label, fn in bounds:
                lhs, rhs = fn(a, fa, n, 1, L)
                gap = sympy.N(rhs - lhs, 40)
                scale = max(abs(sympy.N(lhs, 40)), abs(sympy.N(rhs, 40)), sympy.Float(1e-300))
                good = None if abs(gap) <= QUAD_MARGIN * scale else bool(gap > 0)
                row[label] = {"value": float(sympy.N(lhs, 20)), "bound": float(sympy.N(rhs, 20)),
                              "holds": good}
                near.see_le(row[label]["value"], row[label]["bound"],
                            {"bound": label, "d": 1, "L": L, "n": n})
                if good is False and ce is None:
                    ce = {"n": n, "d": 1, "L": L, "bound": label, "value": str(sympy.N(lhs, 25)),
                          "paper_bound": str(sympy.N(rhs, 25)), "a_star": str(a),
                          "optimal_loss": str(fa), "by": "quadrature at 30 digits"}
            rows.append(row)
    undecided = any(r[label]["holds"] is None for r in rows for label, _ in bounds)
    ok = False if ce else None if undecided else True
    return Finding("bounds_at_large_L_d_1", ok, {
        "family": f"d = 1, n in {list(LARGE_L_NS)}, L = 2^j (j <= {LARGE_L_MAX_EXPONENT}), the "
                  f"first {LARGE_L_PER_N} the hypothesis admits; a*, f(a*) by quadrature",
        "rows": rows, "hypothesis_not_evaluated_at": unevaluated}, ce,
        "" if ok else (f"a bound fails at the optimum at d = 1, n = {ce['n']}, L = {ce['L']} "
                       f"({ce['bound']}: {ce['value']} vs {ce['paper_bound']})") if ce
        else "a bound is within the quadrature's precision of the optimum", near.margin)


def _opt_steps() -> list:
    return [
        step("Loss", r"L(A,u) = \mathbb E\,\|\Sigma_*^{-1/2}(I-\Sigma A)^L\Sigma_*^{1/2}\|_F^2 + u^\top"
             r"\mathbb E\big[(I-(I-\Sigma A)^L)\Sigma_*(I-(I-A\Sigma)^L)\big]u",
             "From the forward pass (residual identity) and the moment kernel; the cross term is "
             "odd in w* and vanishes (no term of degree 1 in u), the u-part is positive definite: "
             "u^opt = 0."),
        step("Reduction", r"L_{\Sigma_*}(A, 0) = L_I(\Sigma_*^{1/2}A\Sigma_*^{1/2}, 0)",
             "X = Sigma*^{1/2} G with G standard: checked exactly at rational instances."),
        step("Global minimum at Sigma* = I",
             r"C(A) = \mathbb E\operatorname{tr}(MM^\top) \ge \mathbb E\operatorname{tr}(M^2) = "
             r"P(A) = \mathbb E\operatorname{tr}\, h(S^{1/2}AS^{1/2}),\ M = (I-AS)^L,\ h(x) = (1-x)^{2L}",
             "tr(MM^T) - tr(M^2) = ||M - M^T||^2/2 >= 0 with equality at A = a I; P is convex in A "
             "(trace of a convex function of the linear map A -> S^{1/2} A S^{1/2}) and invariant "
             "under A -> O A O^T, so by Jensen over O, P(A) >= P(tr(A)/d I). Hence min C = min_a "
             "f(a) with f(a) = E tr(I - a S)^{2L}, strictly convex: A^opt = a* I, unique when "
             "n >= d."),
        step("Scalar optimum", r"f(a) = \sum_{k=0}^{2L}\binom{2L}{k}\Big(-\frac an\Big)^k "
             r"\mathbb E\operatorname{tr}W^k,\quad f'(a^*) = 0",
             "E tr W^k exactly in n and d (Wishart engine); a* is the unique real root of f', "
             "computed exactly (CRootOf) at each size."),
        step("Hessian at a* I", r"h_I = f''(a^*)/d,\quad h_\perp = \sum \alpha_{ij}(\dots),\ "
             r"\mathbb E\operatorname{tr}(EW^iEW^j) = \alpha_{ij}\|E\|_F^2",
             "alpha_ij = (d(T_{i+j} + T_{i,j}) - 2 T_{i+j}) / (d(d+2)(d-1)) from E tr W^{i+j} and "
             "E[tr W^i tr W^j] (orthogonal invariance); cross-checked against the Poly Hessian."),
    ]


THM32_FORMULAS = (
    NamedFormula("hypothesis", "8*L*d**2/sqrt(n) <= 1/2**(2*L)", _OPT_SYMBOLS,
                 equation="Thm. 3.2", description="the condition on n", weaker="narrower"),
    sec35_delta(),
    NamedFormula("loss_bound", "8*L*d**2*2**(2*L)/sqrt(n)", _OPT_SYMBOLS, equation="Thm. 3.2 (1)",
                 description="upper bound on L(A^opt, u^opt)", weaker="larger"),
    NamedFormula("c", "8*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="Thm. 3.2 (2)",
                 description="(1 - c) Sigma*^{-1} <= A^opt <= (1 + c) Sigma*^{-1}", weaker="larger"),
    NamedFormula("u_opt", "ZeroMatrix(d, 1)", (_D,), equation="Thm. 3.2 (2)", shape=("d", "1"),
                 description="u^opt"),
)


def _le_with_margin(lhs, rhs, digits: int = 60) -> bool:
    """lhs <= rhs for constants where lhs is within 10^-100 of the exact value (a* replaced by
    a 120-digit rational): decided at 60 digits when the gap exceeds 10^-40, else exactly."""
    diff = sympy.N(sympy.sympify(rhs) - sympy.sympify(lhs), digits)
    if abs(diff) > sympy.Float(10) ** -40:
        return bool(diff > 0)
    return li.exact_le(lhs, rhs)


def _thm32_bounds(F):
    return [("loss_bound", lambda a, fa, n, d, L: (fa, _named_at(F, "loss_bound", n, d, L))),
            ("A_opt_upper", lambda a, fa, n, d, L: (a, 1 + _named_at(F, "c", n, d, L))),
            ("A_opt_lower", lambda a, fa, n, d, L: (1 - _named_at(F, "c", n, d, L), a))]


def thm32_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings, _ = _opt_structure_findings(ctx, F)
    findings.append(_c_ge_p_finding(ctx))
    bounds = _thm32_bounds(F)
    fb, fh, hyp_n = _optimum_rows(ctx, F, bounds)
    findings += [fh, fb, _large_loop_finding(F, bounds)]
    return combine(findings, {"A_opt": "a*(n, d, L) Sigma*^{-1} (a* the minimiser of f)",
                              "smallest_n_of_the_hypothesis": hyp_n}, steps=_opt_steps())


# ----- numeric: Monte Carlo at the optimum and a global search over spectra -------------------
def _opt_instance(ctx: Context):
    inst = OPT_SETTING.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("opt-instance"))
    L = int(inst.extra.get("L", 2))
    return inst, L


def _spectral_search(ctx: Context, n: int, d: int, L: int, starts: int) -> dict:
    """Minimise the trace form P (any L) and the true loss C (L <= 3) over spectra of A from
    random starts (L-BFGS-B); report the best values found against f(a*)."""
    from scipy.optimize import minimize

    f_star = float(sympy.N(li.optimal_loss(n, d, L), 30))
    a_star = li.a_star_float(n, d, L)
    P = li.spectral_function(li.paper_form(L), n, d, L)
    out = {"n": n, "d": d, "L": L, "a_star": a_star, "optimal_loss": f_star, "starts": starts}
    rng = ctx.rng("spectral-search", n, d, L)
    fns = {"trace_form_P": lambda lam: float(P(lam))}
    if L in _loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        fns["true_loss_C"] = lambda lam: float(C.evaluate({"A": np.diag(lam)}, {"n": n, "d": d}))
    for name, fn in fns.items():
        best, best_x, evals = math.inf, None, 0
        for s in range(starts):
            x0 = np.exp(rng.uniform(np.log(0.05), np.log(3.0), d)) * rng.choice([1, 1, 1, -1], d)
            r = minimize(fn, x0, method="L-BFGS-B", options={"maxiter": 200})
            evals += int(r.nfev)
            if r.fun < best:
                best, best_x = float(r.fun), np.sort(r.x)
        out[name] = {"best_loss": best, "at_eigenvalues": best_x.tolist(), "evaluations": evals,
                     "relative_gap_to_optimum": (best - f_star) / f_star}
    return out


def thm32_numeric(ctx: Context) -> TierResult:
    inst, L = _opt_instance(ctx)
    d, n = inst.d, inst.n
    S = inst.sigma
    a = li.a_star_float(n, d, L)
    A_opt = a * np.linalg.inv(S)
    rng = ctx.rng("opt-random-point")
    M = rng.standard_normal((d, d)) * 0.3
    A_rand, u_rand = (M + M.T) / 2 + 0.5 * np.eye(d), rng.standard_normal(d) * 0.3
    poly = li.derived_loss(L, with_u=True) if L in _loops(ctx) else None
    findings, rows = [], []
    level, comps = 0.999, 2
    if poly is not None:
        ok = True
        for label, (A, u) in (("optimum", (A_opt, np.zeros(d))), ("random", (A_rand, u_rand))):
            env = {"A": A, "u": u.reshape(-1, 1), "Sigma": S, "Sigma_inv": np.linalg.inv(S)}
            exact = float(poly.evaluate(env, {"n": n}))
            est = mc_loss(looped_model(d, L, A, u), S, n, ctx.budget.mc_samples,
                          ctx.seed_for("opt-mc", label))
            agree = est.agrees(exact, level, comps)
            ok &= agree
            rows.append({"point": label, "exact": exact, "z": est.z_score(exact),
                         **est.as_dict(level, comps)})
        findings.append(Finding("derived_loss_vs_monte_carlo", bool(ok), {"rows": rows}, None if ok
                                else {"instance": inst.as_dict(), "rows": rows, "seed": ctx.seed},
                                "" if ok else "the derived loss is outside the Monte Carlo interval"))
    starts = _by_budget(ctx, 8, 20, 50)
    search = [_spectral_search(ctx, n, dd, LL, starts) for dd, LL in
              ((min(d, 3), L), (2, 1), (3, 3))]
    tol = 1e-9
    worst = min(r[k]["relative_gap_to_optimum"] for r in search for k in
                ("trace_form_P", "true_loss_C") if k in r)
    ok = worst >= -tol
    findings.append(Finding("global_search_over_spectra", bool(ok), {
        "searches": search, "tolerance": tol,
        "why_tolerance": "float64 evaluation of polynomials of size O(1)",
        "closest_relative_gap": worst}, None if ok else {"searches": search},
        "" if ok else "a spectrum with a lower loss than a* I was found"))
    return combine(findings, {"instance": inst.as_dict(), "a_star": a})


# ----- train: the torch model on the exact loss and on sampled prompts ---------------------------
def exact_loss_closure(poly: Poly, A: torch.Tensor, u: torch.Tensor | None, sigma: np.ndarray,
                       n: int) -> ExactLoss:
    """The derived loss of batched (A, u) (shapes (B, d, d), (B, d)) as a torch closure."""
    d = A.shape[-1]
    S = torch.tensor(sigma, dtype=A.dtype, device=A.device)
    Sinv = torch.linalg.inv(S)
    compiled = _compiled(poly)

    def bind():
        env = {"A": (A + A.mT) / 2, "Sigma": S, "Sigma_inv": Sinv}
        if u is not None:
            env["u"] = u.unsqueeze(-1)
        return env, {"n": n, "d": d}

    return ExactLoss(compiled, bind)


_COMPILED: dict = {}


def _compiled(poly: Poly):
    key = id(poly)
    if key not in _COMPILED:
        _COMPILED[key] = poly.compile()
    return _COMPILED[key]


def train_exact(ctx: Context, L: int, d: int, n: int, sigma: np.ndarray, with_u: bool, tag: str,
                init_scale: float = 0.1, steps: int | None = None, method: str = "lbfgs",
                lr: float = 1.0, restarts: int | None = None):
    """Train B seeds of the looped model on the derived loss (``optimise_batched``)."""
    rt = runtime(ctx.device)
    B = restarts or ctx.budget.restarts
    gen = rt.generator(ctx.seed_for(tag))
    M = randn(B, d, d, generator=gen, dtype=rt.dtype, device=rt.device) * init_scale
    A = ((M + M.mT) / 2).requires_grad_()
    u = (randn(B, d, generator=gen, dtype=rt.dtype, device=rt.device) * init_scale
         ).requires_grad_() if with_u else None
    iso = bool(np.allclose(sigma, np.eye(d)))
    poly = li.derived_loss(L, isotropic=iso, with_u=with_u)
    params = [A] + ([u] if u is not None else [])
    loss = exact_loss_closure(poly, A, u, sigma, n)
    steps = steps or _by_budget(ctx, 150, 300, 1000)
    with Progress(steps, f"{ctx.claim_id} exact-loss {method}", ctx.progress) as bar:
        results = optimise_batched(loss, params, method=method, steps=steps, lr=lr,
                                   progress=bar.callback())
    A_sym = ((A + A.mT) / 2).detach().cpu().double().numpy()
    u_out = u.detach().cpu().double().numpy() if u is not None else None
    return results, A_sym, u_out, rt


def thm32_train(ctx: Context) -> TierResult:
    inst, L = _opt_instance(ctx)
    d, n = inst.d, inst.n
    if L not in _loops(ctx):
        return combine([Finding("exact_loss_training", None, {"L": L},
                                reason=f"the full-matrix loss is derived for L in {_loops(ctx)}")])
    S = inst.sigma
    a = li.a_star_float(n, d, L)
    A_opt = a * np.linalg.inv(S)
    f_star = float(sympy.N(li.optimal_loss(n, d, L), 30))
    results, A, u, rt = train_exact(ctx, L, d, n, S, True, "thm32-train",
                                    restarts=_by_budget(ctx, 3, ctx.budget.restarts))
    poly = li.derived_loss(L, with_u=True)
    runs, below = [], None
    loss_tol = rt.tolerance(1e-9, 1e3)
    for r, res in enumerate(results):
        env = {"A": A[r], "u": u[r].reshape(-1, 1), "Sigma": S, "Sigma_inv": np.linalg.inv(S)}
        f = float(poly.evaluate(env, {"n": n}))
        err = float(np.linalg.norm(A[r] - A_opt) / np.linalg.norm(A_opt))
        runs.append({"restart": r, "trained_loss": f, "relative_loss_gap": (f - f_star) / f_star,
                     "relative_error_A": err, "norm_u": float(np.linalg.norm(u[r])),
                     **res.summary(curve_points=40)})
        if res.status == "converged" and (f - f_star) / f_star < -loss_tol and below is None:
            below = {"restart": r, "trained_A": A[r].tolist(), "trained_u": u[r].tolist(),
                     "trained_loss": f, "optimal_loss": f_star}
    weight_tol = 1e-3
    at_opt = [x for x in runs if x["relative_error_A"] <= weight_tol and x["norm_u"] <= weight_tol]
    ev = {"runs": runs, "a_star": a, "optimal_loss": f_star, "weight_threshold": weight_tol,
          "metric": "||A - a* Sigma*^{-1}||_F / ||a* Sigma*^{-1}||_F and ||u||",
          "why": "L-BFGS on the exact loss reaches float64 stationarity; 1e-3 leaves room for "
                 "the conditioning of the loss", "reached_optimum": len(at_opt)}
    if below is not None:
        f1 = Finding("exact_loss_training", False, ev, {"instance": inst.as_dict(), **below},
                     "training found a lower loss than at a* Sigma*^{-1}")
    elif at_opt:
        f1 = Finding("exact_loss_training", True, ev)
    elif any(x["status"] == "diverged" for x in runs):
        f1 = Finding("exact_loss_training", None, ev, reason="training diverged")
    else:
        f1 = Finding("exact_loss_training", None, ev, reason="no restart reached a* Sigma*^{-1} "
                                                             "within the budget")
    # sampled prompts with the real forward pass (evidence; a counterexample if it beats f*)
    gen = rt.generator(ctx.seed_for("thm32-sampled"))
    model = LinearTransformer(LSAConfig(d=d, layers=L, parametrisation="sec35", looped=True,
                                        step=-1), init_scale=0.1, generator=gen, dtype=rt.dtype,
                              device=rt.device)
    law = PromptLaw(sigma=torch.tensor(S), n=n, w_cov=torch.linalg.inv(torch.tensor(S)))
    data = rt.data_generator(ctx.seed_for("thm32-data"))
    steps, batch = _by_budget(ctx, (150, 1024), (400, 2048), (2000, 8192))

    def sampled():
        pr = sample_prompts(law, batch, data, dtype=rt.dtype, device=rt.device)
        return ((model.predict(pr.Z()) - pr.yq) ** 2).mean()

    with Progress(steps, "gatmiry2024.thm3_2 sampled-prompt Adam", ctx.progress) as bar:
        res = optimise(sampled, model.parameters(), method="adam", steps=steps, lr=0.01,
                       progress=bar.callback())
    Am = model.A[0].detach().cpu().double().numpy()
    Am = (Am + Am.T) / 2
    um = model.u[0].detach().cpu().double().numpy()
    f = float(poly.evaluate({"A": Am, "u": um.reshape(-1, 1), "Sigma": S,
                             "Sigma_inv": np.linalg.inv(S)}, {"n": n}))
    sampled_ev = {"batch": batch, "trained_loss": f, "relative_loss_gap": (f - f_star) / f_star,
                  "relative_error_A": float(np.linalg.norm(Am - A_opt) / np.linalg.norm(A_opt)),
                  **res.summary()}
    if res.status == "diverged":
        f2 = Finding("sampled_prompt_training", None, sampled_ev, reason=res.reason)
    elif (f - f_star) / f_star < -loss_tol:
        f2 = Finding("sampled_prompt_training", False, sampled_ev,
                     {"instance": inst.as_dict(), "trained_A": Am.tolist(), **sampled_ev},
                     "sampled training found a lower exact loss than a* Sigma*^{-1}")
    else:
        f2 = Finding("sampled_prompt_training", True, sampled_ev,
                     reason="evidence only: finite-batch Adam approaches the optimum")
    return combine([f1, f2], {"instance": inst.as_dict(), "runtime": rt.describe()})


OPT_EXACT_MAX_L = 6


OPT_EXACT_DIGITS = 200


@lru_cache(maxsize=4096)
def _optimum_exact(n: int, d: int, L: int) -> tuple:
    """(|a* - 1|, f(a*)) at OPT_EXACT_DIGITS digits: a* by bisection on f' (increasing, f'(0) < 0
    < f'(1)) to 2^-640.  Not ``a_star_rational``: its 10^-100 certificate fails at L = 6 and
    n = 10^29, where f'' at a* is below 10^-25, and it then refines a CRootOf for seconds."""
    poly = li.scalar_poly(L, n, d)
    with mpmath.workdps(OPT_EXACT_DIGITS):
        f = [mpmath.mpf(int(c.p)) / int(c.q) for c in poly.all_coeffs()]
        fp = [mpmath.mpf(int(c.p)) / int(c.q) for c in poly.diff(li.a_sym).all_coeffs()]
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        if not (mpmath.polyval(fp, lo) < 0 < mpmath.polyval(fp, hi)):
            return None
        for _ in range(640):
            mid = (lo + hi) / 2
            if mpmath.polyval(fp, mid) < 0:
                lo = mid
            else:
                hi = mid
        a = (lo + hi) / 2
        return abs(a - 1), mpmath.polyval(f, a)


def optimum_exact(point: dict) -> dict | None:
    """Thms 3.2 and A.8: A^opt = a* Sigma*^{-1}, so ||A^{opt 1/2} Sigma* A^{opt 1/2} - I|| and the
    least c of (1 - c) Sigma*^{-1} <= A^opt <= (1 + c) Sigma*^{-1} are |a* - 1|, and the optimal
    loss is f(a*) (L <= OPT_EXACT_MAX_L)."""
    sizes = _sizes_of(point, ("n", "d", "L"))
    if sizes is None or sizes[2] > OPT_EXACT_MAX_L or sizes[1] > 10 ** 6:
        return None
    values = _optimum_exact(*sizes)
    if values is None:
        return None
    gap, loss = (+x for x in values)  # rounded to the caller's precision
    return {"loss_bound": loss, "spectral_bound": gap, "c": gap}


OPTIMUM_EXACT = ExactValues(optimum_exact, "a* and f(a*) of the derived loss, the optimum "
                                           f"A^opt = a* Sigma*^(-1) (L <= {OPT_EXACT_MAX_L}, "
                                           "d <= 10^6)")

# (2)'s lower bound (1 - c) Sigma*^{-1} is positive definite, so says something, only for c < 1
LOWER_BOUND_SAYS_SOMETHING = Vacuity(
    "c < 1", "the lower bound (1 - c) Sigma*^{-1} of (2) is positive definite", vary="n",
    fixed={"L": (1, 2), "d": (1, 5)})

THM3_2 = Claim(
    id="gatmiry2024.thm3_2",
    title="Characterisation of the global minimiser of the looped transformer's loss",
    paper=PAPER,
    statement=r"If $\frac{8Ld^2}{\sqrt n}\le\frac1{2^{2L}}$ then (1) $L(A^{opt},u^{opt})\le\frac{8Ld^2"
              r"2^{2L}}{\sqrt n}$ and (2) $(1-c)\Sigma^{*-1}\preccurlyeq A^{opt}\preccurlyeq(1+c)"
              r"\Sigma^{*-1}$, $c=8\delta d^{1/(2L)}$, $u^{opt}=0$, $\delta=(\frac{8Ld}{\sqrt n})^{"
              r"1/(2L)}$.",
    assumptions=("x_i, x_q ~ N(0, Sigma*), w* ~ N(0, Sigma*^{-1})",
                 "P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]] shared by the L loops (Sec. 3.5)"),
    formulas=THM32_FORMULAS,
    checks={"symbolic": thm32_symbolic, "numeric": single_threaded(thm32_numeric),
            "train": single_threaded(thm32_train)},
    setting=OPT_SETTING,
    exact=OPTIMUM_EXACT,
    vacuity=LOWER_BOUND_SAYS_SOMETHING,
    notes="The optimum is exactly A^opt = a*(n, d, L) Sigma*^{-1}, u^opt = 0, with a* the unique "
          "minimiser of f(a) = E tr (I - a W/n)^{2L}; the bounds hold with a wide margin at "
          "every size checked (and also below the hypothesis).",
)

THM_A8_FORMULAS = (
    NamedFormula("hypothesis", "delta*d**(1/(2*L)) < 1/2", _OPT_SYMBOLS, equation="Thm. A.8",
                 description="the condition on n through delta", weaker="narrower"),
    sec35_delta(),
    NamedFormula("loss_bound", "d*(2*delta)**(2*L)", _OPT_SYMBOLS, equation="Thm. A.8 (1)",
                 description="upper bound on L(A^opt, d^opt)", weaker="larger"),
    NamedFormula("spectral_bound", "4*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="(22)",
                 description="bound on ||A^{opt 1/2} Sigma* A^{opt 1/2} - I||", weaker="larger"),
    NamedFormula("c", "8*delta*d**(1/(2*L))", _OPT_SYMBOLS, equation="(23)",
                 description="(1 - c) Sigma*^{-1} <= A^opt <= (1 + c) Sigma*^{-1}", weaker="larger"),
    NamedFormula("u_opt", "ZeroMatrix(d, 1)", (_D,), equation="(22)", shape=("d", "1"),
                 description="d^opt (= u^opt)"),
)


def thm_a8_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    bounds = _thm32_bounds(F) + [("spectral_bound", lambda a, fa, n, d, L: (
        sympy.Abs(a - 1), _named_at(F, "spectral_bound", n, d, L)))]
    findings, _ = _opt_structure_findings(ctx, F)
    fb, fh, hyp_n = _optimum_rows(ctx, F, bounds)
    return combine(findings + [fh, fb, _large_loop_finding(F, bounds)],
                   {"smallest_n_of_the_hypothesis": hyp_n},
                   steps=_opt_steps())


THM_A8 = Claim(
    id="gatmiry2024.thm_a8",
    title="Restatement of Theorem 3.2 with δ (optimal loss and spectral closeness)",
    paper=PAPER,
    statement=r"If $\delta d^{1/(2L)}<\frac12$: (1) $L(A^{opt},d^{opt})\le d(2\delta)^{2L}$; (2) "
              r"$\|A^{opt\,1/2}\Sigma^*A^{opt\,1/2}-I\|\le4\delta d^{1/(2L)}$, $d^{opt}=0$; (3) "
              r"$(1-8\delta d^{1/(2L)})\Sigma^{*-1}\preccurlyeq A^{opt}\preccurlyeq(1+8\delta "
              r"d^{1/(2L)})\Sigma^{*-1}$.",
    assumptions=THM3_2.assumptions + ("delta = (8 L d / sqrt(n))^{1/(2L)}",),
    formulas=THM_A8_FORMULAS,
    checks={"symbolic": thm_a8_symbolic},
    setting=OPT_SETTING,
    exact=OPTIMUM_EXACT,
    vacuity=LOWER_BOUND_SAYS_SOMETHING,
)

