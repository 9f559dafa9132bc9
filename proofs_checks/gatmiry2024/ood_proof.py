"""The proof of Thm. A.13 (Appendix, lines 785-805): the sandwich of Sigma^out between multiples
of A^{opt -1}, eq. (31), and the step at line 799 that trades the norms in A^opt for norms in
Sigma*.

With A^opt = a*(n, d, L) Sigma*^{-1} (``ood_instances``): A^{opt -1} = Sigma* / a*, the spectrum
of A^{opt 1/2} Sigma^out A^{opt 1/2} is a* times the relative spectrum [s_min, s_max] of Sigma^out
(its eigenvalues relative to Sigma*), and (w^T A^{opt -1} w)(x_q^T A^opt x_q) =
||w||^2_{Sigma*} ||x_q||^2_{Sigma*^{-1}} exactly (a* cancels)."""
from __future__ import annotations

import mpmath
import numpy as np
import sympy

from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.evidence import Finding, Margin, combine, settle_le, step
from verify.formulas import NamedFormula

from ..kit.exact_compare import finite_real, holds, mpf, real_le, size_text, value
from ..kit import looped_icl as li
from .common import PAPER, _D, _DELTA, _L, _N, _ZETA, _setting, sec35_delta
from .dominance import _gd_env, _gd_expr
from .flow import _mp_a_star
from .ood import _NORMS, _S_MAX, _S_MIN, _W2, _W2_SIG, _XQ2, _XQ2_INV, ANISOTROPIC, Pair
from .ood_instances import covariance, matrix_text, vector_text
from .proof_chain import Chain, values_at

PROOF_SETTING = _setting({"n": 20, "d": 2, "L": 2}, fixed_sigma="")
_STEP_SYMBOLS = (_N, _D, _L, _DELTA, _XQ2, _W2, _XQ2_INV, _W2_SIG)
_FACTOR = "(1 + 16*delta*d**(1/(2*L)))**2"
STEP_BOUND = _FACTOR + "*w_norm2*xq_norm2"
STEP_NS = (10 ** 8, 10 ** 40)


def _a_star(L: int, n: int, d: int) -> sympy.Rational:
    digits = len(str(n)) + 40
    return sympy.Rational(mpmath.nstr(_mp_a_star(L, n, d, digits), digits))


def _covariances(ctx: Context) -> list:
    """The --sigma covariance alone, or I_2 and the anisotropic ones of ``ood``."""
    if ctx.sigma is not None:
        inst = PROOF_SETTING.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("sigma"))
        return [covariance(f"{matrix_text(inst.sigma_exact)} (--sigma {ctx.sigma.kind})",
                           inst.sigma_exact, inst.U_exact, inst.eigs_exact)]
    return [covariance("I_2", sympy.eye(2), sympy.eye(2), (1, 1)), *ANISOTROPIC]


def _step_pairs(cov) -> list[Pair]:
    """w, x_q over the eigenvectors of Sigma* and their sum, each way round."""
    d = cov.d
    vecs = [(f"u_{i + 1}", cov.U[:, i]) for i in range(d)]
    vecs.append(("u_1 + u_d", cov.U[:, 0] + cov.U[:, d - 1]))
    return [Pair(a, va, b, vb) for a, va in vecs for b, vb in vecs]


def _step_scales(n: int):
    one, big = sympy.Integer(1), sympy.Integer(n)
    return ((one, one), (big, one), (one, big), (1 / big, one), (one, 1 / big), (10, one),
            (one, 10))


def _step_symbolic(ctx: Context) -> TierResult:
    """Exact instances: (w^T A^{opt -1} w)(x_q^T A^opt x_q) with A^opt = a* Sigma*^{-1} (a* to
    len(n) + 40 digits) against the named bound, over Sigma* (I_2, diag(9, 1/9) or --sigma),
    w, x_q along the eigenvectors of Sigma* (scaled by 1, n, 1/n, 10), n = 10^8, 10^40, L."""
    F = ctx.formulas
    bound = _gd_expr(F, "norm_bound")
    worst, bad, count = None, None, 0
    for cov in _covariances(ctx):
        for L in li.loops(ctx):
            for n in li.by_budget(ctx, STEP_NS, STEP_NS + (10 ** 100,)):
                a = _a_star(L, n, cov.d)
                A, A_inv = a * cov.inverse, cov.sigma / a
                for pair in _step_pairs(cov):
                    unit = pair.norms(cov)
                    prod = (pair.w.T * A_inv * pair.w)[0, 0] * (pair.x.T * A * pair.x)[0, 0]
                    for c_w, c_x in _step_scales(n):
                        env = {**_gd_env(n, cov.d, L),
                               **{k: v * (c_x if k.startswith("xq") else c_w) ** 2
                                  for k, v in unit.items()}}
                        scaled = prod * c_w ** 2 * c_x ** 2
                        count += 1
                        with mpmath.workdps(40):
                            b = finite_real(value(bound, env))
                            ratio = float(mpf(scaled) / b) if b is not None and b > 0 \
                                else float("inf")
                        row = {"L": L, "d": cov.d, "n": size_text(n), "Sigma_star": cov.name,
                               "w": f"{c_w} * {pair.w_name} = {vector_text(pair.w)}",
                               "x_q": f"{c_x} * {pair.x_name} = {vector_text(pair.x)}",
                               "product": mpmath.nstr(mpf(scaled), 12),
                               "bound": mpmath.nstr(b, 12) if b is not None else "not real",
                               "ratio": ratio}
                        if worst is None or ratio > worst["ratio"]:
                            worst = row
                        fails = b is None or (ratio > 1 and not real_le(
                            sympy.Symbol("e"), sympy.Symbol("b"),
                            {"e": scaled, "b": sympy.Float(mpmath.nstr(b, 40), 40)}))
                        if fails and bad is None:
                            bad = {**row, **{k: mpmath.nstr(mpf(v), 12) for k, v in env.items()
                                             if k in _NORMS}}
    ok = bad is None
    evidence = {"instances": count, "worst": worst,
                "Sigma_star": [c.name for c in _covariances(ctx)],
                "derived": "(w^T A^{opt -1} w)(x_q^T A^opt x_q) = ||w||^2_{Sigma*} "
                           "||x_q||^2_{Sigma*^{-1}} (A^opt = a* Sigma*^{-1}; a* cancels)"}
    if ctx.sigma is not None:
        evidence["sigma_read"] = ctx.sigma.describe()
    margin = Margin(worst["ratio"], "(w^T A^-1 w)(x_q^T A x_q) / the named bound",
                    {k: worst[k] for k in ("L", "n", "Sigma_star", "w", "x_q")})
    return combine([Finding("exact_instances", ok, evidence, bad,
                            "" if ok else f"the step's bound fails at Sigma* = {bad['Sigma_star']}",
                            margin)],
                   steps=[step("The norms in A^opt", r"(w^\top A^{-1}w)(x_q^\top Ax_q)="
                               r"\|w\|^2_{\Sigma^*}\|x_q\|^2_{\Sigma^{*-1}},"
                               r"\quad A=a^*\Sigma^{*-1}",
                               "A^{opt -1} = Sigma* / a*: the proof's w^T A^{-1} w is close to "
                               "||w||^2_{Sigma*}, not ||w||^2_{Sigma*^{-1}}.")])


def _step_numeric(ctx: Context) -> TierResult:
    """Float64 re-check at random Sigma* (eigenvalues log-uniform in [1/10, 10], or --sigma),
    random w, x_q and practical n, with A^opt = a* Sigma*^{-1} inverted numerically."""
    F = ctx.formulas
    bound = _gd_expr(F, "norm_bound")
    rng = ctx.rng("ood-step")
    user = _covariances(ctx)[0] if ctx.sigma is not None else None
    worst, bad, undecided, count = None, None, [], 0
    for L in li.loops(ctx):
        for n in (4, 200):
            for _ in range(li.by_budget(ctx, 20, 200)):
                if user is not None:
                    sig = np.array(user.sigma.tolist(), dtype=float)
                else:
                    Q, _r = np.linalg.qr(rng.standard_normal((2, 2)))
                    sig = Q @ np.diag(10 ** rng.uniform(-1, 1, 2)) @ Q.T
                d = sig.shape[0]
                A = float(_mp_a_star(L, n, d)) * np.linalg.inv(sig)
                w, x = rng.standard_normal(d), rng.standard_normal(d)
                prod = float(w @ np.linalg.inv(A) @ w) * float(x @ A @ x)
                inv = np.linalg.inv(sig)
                q = lambda v: sympy.Rational(repr(float(v)))  # noqa: E731
                env = {**_gd_env(n, d, L), "xq_norm2": q(x @ sig @ x), "w_norm2": q(w @ inv @ w),
                       "xq_norm2_inv": q(x @ inv @ x), "w_norm2_sig": q(w @ sig @ w)}
                with mpmath.workdps(30):
                    b = finite_real(value(bound, env))
                b = float(b) if b is not None else float("nan")
                count += 1
                ok, why = settle_le(prod, b * (1 + 1e-9) if b > 0 else -1.0)
                ratio = prod / b if b > 0 else float("inf")
                if worst is None or ratio > worst["ratio"]:
                    worst = {"L": L, "n": n, "Sigma_star": np.round(sig, 6).tolist(),
                             "ratio": ratio}
                if ok is None:
                    undecided.append(why)
                elif not ok and bad is None:
                    bad = {**worst, "w": w.tolist(), "x_q": x.tolist(), "product": prod,
                           "bound": b}
    evidence = {"instances": count, "worst": worst, "undecided": undecided[:3]}
    if ctx.sigma is not None:
        evidence["sigma_read"] = ctx.sigma.describe()
    ok = False if bad is not None else (None if undecided else True)  # any undecided: undecided
    return combine([Finding("random_instances", ok, evidence, bad,
                            "" if bad is None else "the step's bound fails at a random Sigma*",
                            Margin(worst["ratio"], "(w^T A^-1 w)(x_q^T A x_q) / the named bound",
                                   {"L": worst["L"], "n": worst["n"]}))])


def step_exact(point: dict) -> dict | None:
    """The product the step bounds, at the point's norms: ||w||^2_{Sigma*} ||x_q||^2_{Sigma*^{-1}}
    exactly (A^opt = a* Sigma*^{-1}); None at d = 1 unless the four norms agree as they must
    there (||x_q||^2_{Sigma*} ||w||^2_{Sigma*^{-1}} = ||x_q||^2_{Sigma*^{-1}} ||w||^2_{Sigma*})."""
    if any(k not in point for k in _NORMS):
        return None
    xq, w, xq_inv, w_sig = (point[k] for k in _NORMS)
    if int(point["d"]) == 1 and xq * w != xq_inv * w_sig:
        return None
    return {"norm_bound": xq_inv * w_sig}


THM_A13_NORM_STEP = Claim(
    id="gatmiry2024.thm_a13_norm_step",
    title="Proof of Thm. A.13 (line 799): the norms in A^opt traded for norms in Σ*",
    paper=PAPER,
    statement=r"$(w^{out,*\top}A^{opt-1}w^{out,*})(x_q^{out\top}A^{opt}x_q^{out})\le(1+16\delta "
              r"d^{1/(2L)})^2(w^{out,*\top}\Sigma^{*-1}w^{out,*})(x_q^{out\top}\Sigma^*x_q^{out})$ "
              r"(the second inequality of the display at line 799, with the common factor "
              r"$\|I-A^{opt1/2}\Sigma^{out}A^{opt1/2}\|^{2L}$ removed).",
    assumptions=("A^opt = a*(n, d, L) Sigma*^{-1}, u = 0 (the optimal looped model)",
                 "delta = (8 L d / sqrt(n))^{1/(2L)}", "any w^{out,*}, x_q^out"),
    formulas=(sec35_delta(),
              NamedFormula("norm_bound", STEP_BOUND, _STEP_SYMBOLS, equation="proof of Thm. A.13",
                           description="the bound on (w^T A^{opt -1} w)(x_q^T A^opt x_q)",
                           weaker="larger")),
    checks={"symbolic": _step_symbolic, "numeric": _step_numeric},
    setting=PROOF_SETTING,
    exact=ExactValues(step_exact, "(w^T A^{opt -1} w)(x_q^T A^opt x_q) = ||w||^2_{Sigma*} "
                      "||x_q||^2_{Sigma*^{-1}} at the point's norms (d >= 2)"),
    ranges=("n >= d",),
    correction=Correction(
        description="the norms paired as ||w||^2_{Sigma*} ||x_q||^2_{Sigma*^{-1}}",
        reason="A^{opt -1} = Sigma* / a*, so w^T A^{opt -1} w = ||w||^2_{Sigma*} / a* and "
               "x_q^T A^opt x_q = a* ||x_q||^2_{Sigma*^{-1}}: the product is "
               "||w||^2_{Sigma*} ||x_q||^2_{Sigma*^{-1}}, which the printed "
               "||w||^2_{Sigma*^{-1}} ||x_q||^2_{Sigma*} does not bound (w along the largest "
               "eigenvector of Sigma*, x_q along the smallest)",
        formulas={"norm_bound": _FACTOR + "*w_norm2_sig*xq_norm2_inv"}),
)


# ----- line 785 and eq. (31) ---------------------------------------------------------------
_W31_SYMBOLS = (_N, _D, _L, _DELTA, _ZETA, _S_MIN, _S_MAX)
_C16 = "16*delta*d**(1/(2*L))"
# window positions (s) and zeta: the window's ends, inside and beyond it on both sides
_S_GRID = tuple(sympy.Rational(v) for v in ("1/100", "1/64", "1/4", "1/2", "3/4", "1", "5/4",
                                            "3/2", "7/4", "127/64", "2", "3"))
_ZETAS = tuple(sympy.Rational(v) for v in ("1/64", "1/4", "1/2", "3/4", "63/64"))
W31_NS = (1, 3, 10, 10 ** 4, 10 ** 8, 10 ** 40)


def _w31_points(F, ctx: Context):
    """(n, d, L, zeta, s_min, s_max, a*) where the named window admits the relative spectrum
    [s_min, s_max] (s over ``_S_GRID`` and zeta itself, 2 - zeta)."""
    cond = _gd_expr(F, "condition")
    for L in li.loops(ctx):
        for d in (1, 2):
            for n in li.by_budget(ctx, W31_NS, W31_NS + (10 ** 100,)):
                if n < d:
                    continue
                a = _a_star(L, n, d)
                for z in _ZETAS:
                    ss = sorted(set(_S_GRID) | {z, 2 - z})
                    for i, s1 in enumerate(ss):
                        for s2 in ss[i:] if d > 1 else (s1,):
                            env = {**_gd_env(n, d, L), "zeta": z, "s_min": s1, "s_max": s2}
                            if holds(cond, env):
                                yield env, a


def _w31_symbolic(ctx: Context) -> TierResult:
    """Exact: the spectrum a* [s_min, s_max] of A^{opt 1/2} Sigma^out A^{opt 1/2} against the
    named multiples (line 785) and max |1 - a* s| against the named radius (31), wherever the
    named window admits [s_min, s_max]; and whether the multiples of line 785 give (31)."""
    F = ctx.formulas
    lower, upper, radius = (_gd_expr(F, k) for k in ("lower_mult", "upper_mult", "radius"))
    what = {"line_785_sandwich": ("Sigma^out between the named multiples of A^{opt -1}",
                                  "line 785"),
            "eq31_spectrum": ("the spectrum of I - A^{opt 1/2} Sigma^out A^{opt 1/2} within the "
                              "named radius", "(31)")}
    chain = Chain({**{name: f"{w} fails ({eq})" for name, (w, eq) in what.items()},
                   "eq31_from_the_display": "the multiples of line 785 give only I - A^{1/2} "
                   "Sigma^out A^{1/2} >= 1 - upper_mult, below -(named radius)"}, key="instances")
    e = sympy.Symbol("e")
    for env, a in _w31_points(F, ctx):
        row = {"L": int(env["L"]), "d": int(env["d"]), "n": size_text(int(env["n"])),
               "zeta": str(env["zeta"]), "s_min": str(env["s_min"]), "s_max": str(env["s_max"]),
               "a_star": mpmath.nstr(mpf(a), 15)}
        lo, hi = a * env["s_min"], a * env["s_max"]
        ok785 = real_le(lower, e, {**env, "e": lo}) and real_le(e, upper, {**env, "e": hi})
        chain.see("line_785_sandwich", ok785, {**row, "ratio": _ratio(hi, upper, env, lower, lo)},
                  near=True)
        worst = max(abs(1 - lo), abs(1 - hi))
        ok31 = real_le(e, radius, {**env, "e": worst})
        chain.see("eq31_spectrum", ok31, {**row, "ratio": _ratio(worst, radius, env)}, near=True)
        # the display before (31): its ends give 1 - upper_mult and 1 - lower_mult
        implied = real_le(-radius, 1 - upper, env) and real_le(1 - lower, radius, env)
        chain.see("eq31_from_the_display", implied, lambda: {
            **row, **values_at(env, display_lower_end=1 - upper, printed_lower_end=-radius)})
    if not chain.count["eq31_from_the_display"]:
        findings = [Finding(name, None, {"instances": 0},
                            reason="the window admits no instance of the grid") for name in what]
    else:
        findings = [chain.finding(name, f"{w}: used / allowed", ("L", "d", "n", "zeta"))
                    for name, (w, _eq) in what.items()]
        findings.append(chain.finding("eq31_from_the_display",
                                      proof_step="(31) from the display before it"))
    return combine(findings, steps=[step(
        "Spectrum at the optimum", r"\operatorname{spec}(A^{\mathrm{opt}1/2}\Sigma^{out}"
        r"A^{\mathrm{opt}1/2})=a^*\operatorname{spec}(\Sigma^{*-1}\Sigma^{out})",
        "A^opt = a* Sigma*^{-1}; a* from the derived loss along A = a I at Sigma* = I.")])


def _ratio(used, bound_expr, env, lower_expr=None, lower_value=None) -> float:
    """used / allowed: used / bound (upper), and lower_bound / lower_value (lower), the larger."""
    with mpmath.workdps(30):
        b = finite_real(value(bound_expr, env))
        r = float(mpf(used) / b) if b is not None and b > 0 else float("inf")
        if lower_expr is not None:
            lb = finite_real(value(lower_expr, env))
            r2 = float(lb / mpf(lower_value)) if lb is not None and lower_value > 0 \
                else float("inf")
            r = max(r, r2)
    return r


def _w31_numeric(ctx: Context) -> TierResult:
    """Float64: random Sigma* and Sigma^out with relative spectrum in the named window, the
    eigenvalues of I - A^{opt 1/2} Sigma^out A^{opt 1/2} by eigvalsh against the named radius."""
    F = ctx.formulas
    cond, radius = _gd_expr(F, "condition"), _gd_expr(F, "radius")
    rng = ctx.rng("eq31")
    worst, bad, undecided, count = None, None, [], 0
    for L in li.loops(ctx):
        for n in (3, 20, 200):
            d = 2
            a = float(_mp_a_star(L, n, d))
            for _ in range(li.by_budget(ctx, 20, 200)):
                z = sympy.Rational(int(rng.integers(1, 64)), 64)
                s = np.sort(rng.uniform(0, 2.2, d))
                spectrum = {"s_min": sympy.Rational(repr(float(s[0]))),
                            "s_max": sympy.Rational(repr(float(s[-1])))}
                env = {**_gd_env(n, d, L), "zeta": z, **spectrum}
                if not holds(cond, env):
                    continue
                Q, _r = np.linalg.qr(rng.standard_normal((d, d)))
                lam, U = np.linalg.eigh(Q @ np.diag(10 ** rng.uniform(-1, 1, d)) @ Q.T)
                root = U @ np.diag(np.sqrt(lam)) @ U.T
                R, _r = np.linalg.qr(rng.standard_normal((d, d)))
                sig_out = root @ R @ np.diag(s) @ R.T @ root
                A_half = np.sqrt(a) * U @ np.diag(lam ** -0.5) @ U.T
                ev = np.linalg.eigvalsh(np.eye(d) - A_half @ sig_out @ A_half)
                with mpmath.workdps(30):
                    rv = finite_real(value(radius, env))
                rv = float(rv) if rv is not None else float("nan")
                count += 1
                used = float(np.abs(ev).max())
                ok, why = settle_le(used, rv * (1 + 1e-9) + 1e-12 if rv > 0 else -1.0)
                ratio = used / rv if rv > 0 else float("inf")
                if worst is None or ratio > worst["ratio"]:
                    worst = {"L": L, "n": n, "zeta": str(z), "s": s.tolist(), "ratio": ratio}
                if ok is None:
                    undecided.append(why)
                elif not ok and bad is None:
                    bad = {**worst, "eigenvalues": ev.tolist(), "radius": rv}
    evidence = {"instances": count, "worst": worst, "undecided": undecided[:3]}
    if count == 0:
        return TierResult("skipped", {"random_instances": evidence},
                          reason="the window admits no instance drawn")
    ok = False if bad is not None else (None if undecided else True)  # any undecided: undecided
    return combine([Finding("random_instances", ok, evidence, bad,
                            "" if bad is None else "(31) fails at a random instance",
                            Margin(worst["ratio"], "max |eig| / the named radius",
                                   {"L": worst["L"], "n": worst["n"], "zeta": worst["zeta"]}))])


def w31_exact(point: dict) -> dict | None:
    """What line 785 and (31) bound at the point: the extreme eigenvalues a* s_min, a* s_max of
    A^{opt 1/2} Sigma^out A^{opt 1/2} and max |1 - a* s| over them (d >= 2, or s_min = s_max)."""
    n, d, L = (int(point[k]) for k in ("n", "d", "L"))
    s_min, s_max = point["s_min"], point["s_max"]
    if not 1 <= L <= 10 or n < d or s_min > s_max or (d == 1 and s_min != s_max):
        return None
    a = _mp_a_star(L, n, d, mpmath.mp.dps + len(str(n)))
    return {"lower_mult": a * s_min, "upper_mult": a * s_max,
            "radius": max(abs(1 - a * s_min), abs(1 - a * s_max))}


EQ31 = Claim(
    id="gatmiry2024.eq31",
    title="Proof of Thm. A.13: Σ^out between multiples of A^{opt -1}, and eq. (31)",
    paper=PAPER,
    statement=r"Under (30), $\zeta(1-16\delta d^{1/(2L)})A^{opt-1}\preccurlyeq\Sigma^{out}"
              r"\preccurlyeq(2-\zeta)(1+16\delta d^{1/(2L)})A^{opt-1}$ (line 785), which "
              r"implies (31): $-(1+16\delta d^{1/(2L)}-\zeta)I\preccurlyeq I-A^{opt1/2}"
              r"\Sigma^{out}A^{opt1/2}\preccurlyeq(1+16\delta d^{1/(2L)}-\zeta)I$.",
    assumptions=("A^opt = a*(n, d, L) Sigma*^{-1}", "delta = (8 L d / sqrt(n))^{1/(2L)}",
                 "s_min, s_max: the extreme eigenvalues of Sigma*^{-1} Sigma^out"),
    formulas=(
        NamedFormula("condition", "(s_min >= zeta) & (s_max <= 2 - zeta)", _W31_SYMBOLS,
                     equation="(30)", description="the window of Sigma^out relative to Sigma*",
                     weaker="narrower"),
        sec35_delta(),
        NamedFormula("lower_mult", f"zeta*(1 - {_C16})", _W31_SYMBOLS, equation="line 785",
                     description="Sigma^out >= lower_mult A^{opt -1}", weaker="smaller"),
        NamedFormula("upper_mult", f"(2 - zeta)*(1 + {_C16})", _W31_SYMBOLS, equation="line 785",
                     description="Sigma^out <= upper_mult A^{opt -1}", weaker="larger"),
        NamedFormula("radius", f"1 + {_C16} - zeta", _W31_SYMBOLS, equation="(31)",
                     description="|I - A^{opt 1/2} Sigma^out A^{opt 1/2}| <= radius I",
                     weaker="larger"),
    ),
    checks={"symbolic": _w31_symbolic, "numeric": _w31_numeric},
    setting=_setting({"n": 20, "d": 2, "L": 2}),
    exact=ExactValues(w31_exact, "the extreme eigenvalues a* s_min, a* s_max of A^{opt 1/2} "
                      "Sigma^out A^{opt 1/2} and max |1 - a* s|, at L <= 10"),
    ranges=("n >= d",),
    notes="'from Lemma,' names no lemma; (23) gives the bracket with 8 delta d^{1/(2L)}.",
)
