"""The gradient flow in the remark after Thm. 3.4 (line 202) and in the proof of Thm. A.12
(lines 754-765): dL/dt along the flow, the comparison ODE (29) and its printed solution.

Along dA/dt = -grad_A L(A, 0), dL/dt = <grad L, dA/dt> = -||grad L||^2.  At Sigma* = I the flow
from A(0) = a0 I stays A(t) = a(t) I with da/dt = -f'(a)/d, f(a) = L(aI, 0) (``flow``), so
f(t) = f(a(t)) and ||grad L||_F^2 = f'(a)^2 / d exactly (``dominance.scalar_point``)."""
from __future__ import annotations

import mpmath
import numpy as np
import sympy
import torch

from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, Margin, combine, settle_le, step
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit import looped_icl as li
from ..kit.exact_compare import mpf, size_text, value
from .common import _D, _L, _LOSS, _N, PAPER, _setting
from .dominance import _gd_env, _gd_expr, scalar_point
from .flow import scalar_flow_position

FLOW_PROOF_SETTING = _setting({"n": 20, "d": 3, "L": 2})
_GRAD_SQ = FormulaSymbol("grad_sq", positive=True)
_T = FormulaSymbol("t", positive=True)
_C = FormulaSymbol("c", positive=True)
_F0 = FormulaSymbol("f0", positive=True)
_G = FormulaSymbol("g", positive=True)
_RATE_NS = (10, 10 ** 4, 10 ** 40)
_RATE_AS = tuple(sympy.Rational(v) for v in ("-1", "0", "1/4", "1/2", "9/10", "3/2", "3"))


# ----- the remark after Thm. 3.4 (line 202) -----------------------------------------------------
def _rate_symbolic(ctx: Context) -> TierResult:
    """Scalar family A = a I (Sigma* = I): dL/dt = f'(a) da/dt = -f'(a)^2 / d exactly, against
    the named rate at grad_sq = ||grad L(aI, 0)||_F^2 = f'(a)^2 / d and loss = f(a)."""
    F = ctx.formulas
    rate = _gd_expr(F, "rate")
    bad, count = None, 0
    for L in li.loops(ctx):
        for d in (1, 2, 5):
            for n in _RATE_NS:
                fp = li.scalar_poly(L, n, d).diff(li.a_sym)
                for a in _RATE_AS:
                    loss, g2 = scalar_point(L, n, d, a)
                    derived = fp.eval(a) * (-fp.eval(a) / d)
                    env = {**_gd_env(n, d, L), "loss": loss, "grad_sq": g2}
                    named = sympy.sympify(rate).subs({s: env[s.name] for s in rate.free_symbols})
                    count += 1
                    if sympy.simplify(named - derived) != 0 and bad is None:
                        bad = {"L": L, "d": d, "n": size_text(n), "A": f"{a} I",
                               "dL_dt": mpmath.nstr(mpf(derived), 15),
                               "named": mpmath.nstr(mpf(named), 15) if named.is_number
                               else str(named)}
    return combine([Finding("scalar_flow_exact", bad is None, {"points": count}, bad,
                            "" if bad is None else "dL/dt along the flow is not the named rate")],
                   steps=[step("Chain rule", r"\tfrac{d}{dt}L(A(t))=\langle\nabla L,\dot A\rangle"
                               r"=-\|\nabla L\|^2", "at A = a I: f'(a) (-f'(a)/d)")])


def _rate_numeric(ctx: Context) -> TierResult:
    """Random symmetric A (d = 2, 3, not multiples of I) and the derived loss in torch: the
    central difference (L(A - h G) - L(A + h G)) / (2h) along the flow direction -G, G = grad L,
    against the named rate at ||G||_F^2 (allowance: the O(h^2) term, bounded from h and h/2)."""
    F = ctx.formulas
    rate = _gd_expr(F, "rate")
    rng = ctx.rng("flow-rate")
    bad, undecided, count = None, [], 0
    for L in li.loops(ctx):
        C = li.derived_loss(L, isotropic=True, with_u=False)
        for d in (2, 3):
            for n in (d + 2, 50):
                for _ in range(li.by_budget(ctx, 3, 10)):
                    B = rng.uniform(-0.5, 0.5, (d, d))
                    A = torch.tensor(np.eye(d) * rng.uniform(0.2, 1.2) + (B + B.T) / 2,
                                     requires_grad=True)
                    val = C.evaluate({"A": A}, {"n": n, "d": d})
                    G, = torch.autograd.grad(val, A)
                    G = (G + G.T) / 2
                    with torch.no_grad():
                        def diff(h):
                            return float((C.evaluate({"A": A - h * G}, {"n": n, "d": d})
                                          - C.evaluate({"A": A + h * G}, {"n": n, "d": d}))
                                         / (2 * h))
                        d1, d2 = diff(1e-4), diff(5e-5)
                    g2 = float((G ** 2).sum())
                    env = {**_gd_env(n, d, L), "loss": sympy.Rational(repr(float(val))),
                           "grad_sq": sympy.Rational(repr(g2))}
                    named = float(value(rate, env))
                    allowance = 4 * abs(d1 - d2) + 1e-9 * (1 + abs(d2))
                    ok, why = settle_le(abs(d2 - named), allowance)
                    count += 1
                    if ok is None:
                        undecided.append(why)
                    elif not ok and bad is None:
                        bad = {"L": L, "d": d, "n": n, "A": A.detach().numpy().round(6).tolist(),
                               "dL_dt": d2, "named": named, "grad_sq": g2}
    ok = False if bad is not None else (None if undecided or not count else True)  # a NaN anywhere decides nothing
    return combine([Finding("flow_direction", ok, {"points": count, "undecided": undecided[:3]},
                            bad, (undecided[0] if undecided else "nothing compared") if ok is None
                            else "" if bad is None else "dL/dt along the flow is not the named "
                            "rate (float64)")])


THM3_4_REMARK = Claim(
    id="gatmiry2024.thm3_4_remark",
    title="Remark after Thm. 3.4 (line 202): dL/dt along the gradient flow", paper=PAPER,
    statement=r"Along the gradient flow, $\frac{d}{dt}L(A(t),0)$ is equal to the squared norm "
              r"of the gradient.",
    assumptions=("dA/dt = -grad_A L(A, 0) (Thm. 3.3), u = 0, Sigma* = I",
                 "the remark's 'faster when the loss is high' (dominance) and its citation of "
                 "'Theorem 3.2' for Thm. 3.3's rate are not checked here"),
    formulas=(NamedFormula("rate", "grad_sq", (_N, _D, _L, _LOSS, _GRAD_SQ),
                           equation="remark after Thm. 3.4",
                           description="dL(A(t), 0)/dt = ||grad_A L(A, 0)||^2"),),
    checks={"symbolic": _rate_symbolic, "numeric": _rate_numeric}, setting=FLOW_PROOF_SETTING,
    correction=Correction(description="dL/dt = -||grad_A L(A, 0)||^2",
                          reason="<grad L, dA/dt> = <grad L, -grad L>: the loss decreases along "
                                 "the flow (the proof of Thm. A.12 has the minus)",
                          formulas={"rate": "-grad_sq"}),
)


# ----- the proof of Thm. A.12: eq. (29), line 765 -----------------------------------------------
_P = "(2*L - 1)/L"
_ODE_SYMBOLS = (_L, _T, _C, _F0, _G)
ODE_LOOPS = (2, 3, 4)
ODE_F0 = tuple(sympy.Rational(v) for v in ("1/1000", "1", "1000"))
ODE_TIMES = tuple(sympy.Rational(v) for v in ("0", "1/10", "1", "10", "1000"))


def _solution_finding(F) -> Finding:
    """Line 765: the named g with the named c solves the named ODE (29), g(0) = f(0): the
    derivative of the named g in t (mpmath's numerical differentiation at 50 digits) against the
    named right side at g(t); a form that is not a finite real number there fails."""
    g_expr, c_expr, rhs = (_gd_expr(F, k) for k in ("g_solution", "c_const", "ode_rhs"))
    bad, worst, count = None, 0.0, 0
    with mpmath.workdps(50):
        for L in ODE_LOOPS:
            for f0 in ODE_F0:
                env = {"L": sympy.Integer(L), "f0": f0}
                c = value(c_expr, env)
                cs = sympy.Float(mpmath.nstr(c, 50), 50) if mpmath.isfinite(c) else sympy.nan

                sub = {x: {"L": env["L"], "f0": f0, "c": cs}[x.name]
                       for x in g_expr.free_symbols if x.name in ("L", "f0", "c")}
                ts = [x for x in g_expr.free_symbols if x.name == "t"]
                g_t = sympy.sympify(g_expr).xreplace(sub)
                if set(x.name for x in g_t.free_symbols) - {"t"}:
                    g = None
                else:
                    fn = sympy.lambdify(ts or [sympy.Symbol("t")], g_t, "mpmath")

                    def g(tt, fn=fn):
                        v = fn(tt)
                        return v.real if isinstance(v, mpmath.mpc) and v.imag == 0 else v

                for tv in ODE_TIMES:
                    count += 1
                    try:
                        if g is None:
                            raise ValueError("a symbol the named forms leave free")
                        gv = g(mpmath.mpf(tv))
                        lhs = mpmath.diff(g, mpmath.mpf(tv)) if tv > 0 else \
                            mpmath.diff(g, mpmath.mpf(tv), direction=1)
                        r = value(rhs, {**env, "c": cs, "t": tv,
                                        "g": sympy.Float(mpmath.nstr(gv, 50), 50)})
                    except (ValueError, TypeError, ZeroDivisionError, ArithmeticError):
                        gv = lhs = r = mpmath.nan
                    checks = [(lhs, r, "g'(t)", "the named right side of (29)")]
                    if tv == 0:
                        checks.append((gv, mpf(f0), "g(0)", "f(0)"))
                    for x, y, what, against in checks:
                        ok_num = all(isinstance(v, mpmath.mpf) and mpmath.isfinite(v)
                                     for v in (x, y))
                        err = abs(x - y) / max(abs(y), mpmath.mpf(10) ** -40) if ok_num \
                            else mpmath.inf
                        worst = max(worst, float(err)) if ok_num else float("inf")
                        if not err <= mpmath.mpf(10) ** -20 and bad is None:
                            bad = {"L": L, "f0": str(f0), "t": str(tv), "quantity": what,
                                   "value": mpmath.nstr(x, 15), "against": against,
                                   "expected": mpmath.nstr(y, 15)}
    return Finding("line_765_solves_29", bad is None, {"points": count,
                                                       "worst_relative_error": worst}, bad,
                   "" if bad is None else f"the named solution does not solve the named ODE: "
                   f"{bad['quantity']} at t = {bad['t']}")


def _comparison_finding(F, ctx: Context) -> Finding:
    """(29) and line 765's conclusion f(t) <= g(t): the scalar flow from A(0) = 0 at d = 1
    (where Thm. 3.4's dominance needs no factor in d), at the times where f(t) >= 2 (4 delta)^{2L}
    (the proof's condition), against the named g with c from f(0)."""
    g_expr, c_expr = _gd_expr(F, "g_solution"), _gd_expr(F, "c_const")
    bad, count, worst = None, 0, None
    for L in (2, 3):
        n, d = 10 ** 12, 1
        f = li.scalar_poly(L, n, d)
        f0 = f.eval(0)
        delta = (mpf(8 * L * d) / mpmath.sqrt(n)) ** (mpmath.mpf(1) / (2 * L))
        env = {**_gd_env(n, d, L), "f0": f0}
        with mpmath.workdps(30):
            c = value(c_expr, env)
            for tv in (sympy.Rational(1, 100), sympy.Rational(1, 10), sympy.Rational(1, 2), 1, 2,
                       5, 10, 30, 100):
                a = scalar_flow_position(L, n, d, tv)
                ft = mpmath.polyval([mpf(x) for x in f.all_coeffs()], a)
                if ft < 2 * (4 * delta) ** (2 * L):
                    continue
                gt = value(g_expr, {**env, "t": sympy.sympify(tv),
                                        "c": sympy.Float(mpmath.nstr(c, 30), 30)}) \
                    if mpmath.isfinite(c) else mpmath.nan
                count += 1
                ratio = float(ft / gt) if mpmath.isfinite(gt) and gt > 0 else float("inf")
                row = {"L": L, "d": d, "n": size_text(n), "t": str(tv), "f_t": mpmath.nstr(ft, 12),
                       "g_t": mpmath.nstr(gt, 12), "ratio": ratio}
                if worst is None or ratio > worst["ratio"]:
                    worst = row
                if not ratio <= 1 and bad is None:
                    bad = row
    return Finding("f_below_g", bad is None if count else None, {"points": count,
                                                                "worst": worst}, bad,
                   "" if bad is None else "the flow's loss exceeds the named g(t)"
                   if count else "no time met f >= 2 (4 delta)^{2L}",
                   Margin(worst["ratio"], "f(t) / g(t)", {"L": worst["L"], "t": worst["t"]})
                   if worst else None)


def _ode_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    return combine([_solution_finding(F), _comparison_finding(F, ctx)],
                   steps=[step("The flow's loss", r"f'(t)=-\|\nabla L\|^2=-f'(a)^2/d",
                               "the scalar flow at Sigma* = I, exact polynomials"),
                          step("The ODE", r"g'=\mp\tfrac1{16}g^{(2L-1)/L}",
                               "the named solution differentiated by sympy")])


EQ29 = Claim(
    id="gatmiry2024.eq29",
    title="Proof of Thm. A.12: the comparison ODE (29) and its solution", paper=PAPER,
    statement=r"With $g(0)="
              r"f(0)$, $g'=\frac1{16}g^{(2L-1)/L}$ (29), $f\le g$, and $g(t)=(\frac{16L}{L-1})"
              r"^{L/(2L-1)}(t+c)^{-L/(L-1)}$, $c=(\frac{16L}{L-1})^{(L-1)/(2L-1)}"
              r"f(0)^{-(L-1)/L}$ (line 765).",
    assumptions=("f(t) = L(A(t), 0) along dA/dt = -grad_A L(A, 0), Sigma* = I, A(0) = 0",
                 "L >= 2", "f <= g compared at d = 1 where f(t) >= 2 (4 delta)^{2L}, delta = "
                 "(8 L d / sqrt(n))^{1/(2L)} (the proof's condition)"),
    formulas=(NamedFormula("ode_rhs", f"g**({_P})/16", _ODE_SYMBOLS, equation="(29)",
                           description="g'(t) = ode_rhs(g)"),
              NamedFormula("g_solution", "(16*L/(L - 1))**(L/(2*L - 1))/(t + c)**(L/(L - 1))",
                           _ODE_SYMBOLS, equation="line 765", description="g(t)"),
              NamedFormula("c_const", "(16*L/(L - 1))**((L - 1)/(2*L - 1))/f0**((L - 1)/L)",
                           _ODE_SYMBOLS, equation="line 765", description="c")),
    checks={"symbolic": _ode_symbolic}, setting=FLOW_PROOF_SETTING,
    ranges=("L >= 2",),
    correction=Correction(
        description="g' = -(1/16) g^{(2L-1)/L}, solved by g(t) = (16L/(L-1))^{L/(L-1)} "
                    "(t + c)^{-L/(L-1)}, c = 16 L / ((L - 1) f(0)^{(L-1)/L})",
        reason="f' = -||grad||^2 <= -(1/16) f^{(2L-1)/L} by dominance: the comparison ODE needs "
               "the minus (as printed g grows and blows up in finite time); separating "
               "g^{-(2L-1)/L} dg = -dt/16 gives g^{-(L-1)/L} = (L-1)(t + c)/(16 L)",
        formulas={"ode_rhs": f"-g**({_P})/16",
                  "g_solution": "(16*L/(L - 1))**(L/(L - 1))/(t + c)**(L/(L - 1))",
                  "c_const": "16*L/((L - 1)*f0**((L - 1)/L))"}),
)
