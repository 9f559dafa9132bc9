"""yang2024 App. C, steps of the proof of Theorem 2: the Woodbury identity (65), compared with the
inverse of the derived loss's Hessian Z^T Z + m tau I_N, and the bound (69) on ||y||_2, compared
with the exact law of y (noncentral chi-square) at the worst lambda and with Monte Carlo."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy
from scipy.stats import ncx2

from moments.montecarlo import estimate
from verify.claim import Claim, Context, ExactValues, TierResult
from verify.evidence import Finding, combine, settle_le, step, worse
from verify.formulas import NamedFormula

from ..kit.ratio_probe import worst_margin
from .setting import (LEVEL, PAPER, SETTING, budget_and_paper_instances, exact_instances, exact_quadratic,
                      float_quadratic, make_instance)
from .common import _N, _Z, _m, _safe_exact, _tau, dimension_finding, error_finding, float_value
from .training import THM2_FORMULAS, _Bl, _Zn, _dl


# ==============================================================================================
# Eq. (65): (m tau I_N + Z^T Z)^{-1} = (1/m tau) I_N - (1/m tau) Z^T (m tau I_m + Z Z^T)^{-1} Z
# ==============================================================================================
EQ65_FORMULAS = (
    NamedFormula("G_inv", "Identity(N)/(m*tau) - Z.T*Inverse(m*tau*Identity(m) + Z*Z.T)*Z/(m*tau)",
                 (_m, _N, _tau, _Z), equation="(65)", shape=("N", "N"),
                 description="(m tau I_N + Z^T Z)^{-1} by the Sherman-Morrison-Woodbury formula"),
)


def eq65_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx)
    findings = [dimension_finding(ctx, ["G_inv"])]
    rows, bad, why = [], None, ""
    for inst in insts:
        G, _, _ = exact_quadratic(inst)                       # the derived Hessian Z^T Z + m tau I_N
        val, why = _safe_exact(F["G_inv"], {"Z": inst.Z, "m": inst.m, "N": inst.N})
        if val is None:
            break
        val = sympy.Matrix(val)
        diff = (val * G - sympy.eye(inst.N)).applyfunc(lambda x: sympy.cancel(sympy.together(x))) \
            if val.shape == G.shape else None
        ok = diff is not None and diff == sympy.zeros(inst.N, inst.N)
        rows.append({"m": inst.m, "N": inst.N, "agree": ok})
        if not ok and bad is None:
            bad = {"instance": inst.as_dict(), "paper_times_G_minus_I": None if diff is None else
                   [[str(sympy.factor(x)) for x in r] for r in diff.tolist()]}
    if why:
        findings.append(Finding("inverse_of_the_hessian", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(Finding("inverse_of_the_hessian", bad is None, {"instances": rows}, bad,
                                "" if bad is None else "(65) is not the inverse of Z^T Z + m tau I_N"))
    steps = [step("Hessian", r"\nabla^2_{\hat a}\mathcal L_k = Z^\top Z+m\tau I_N",
                  "read off the derived loss (the moment kernel), on rational instances with m < N and "
                  "m > N, tau symbolic."),
             step("(65)", r"(65)\cdot(Z^\top Z+m\tau I_N) = I_N", "exactly, as rational functions of tau.")]
    return combine(findings, {"instances": [i.as_dict() for i in insts]}, steps=steps)


def eq65_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings = []
    for tag, inst in budget_and_paper_instances(ctx).items():
        G = float_quadratic(inst).G
        try:
            val = np.asarray(float_value(F["G_inv"], {"Z": inst.dictionary.Z.numpy(), "m": inst.m,
                                                      "N": inst.N, "tau": inst.tau}))
            if val.shape != G.shape:
                raise ValueError(f"the formula is {val.shape}, Z^T Z + m tau I_N is {G.shape}")
        except Exception as exc:  # an ill-typed formula
            findings.append(error_finding(tag, exc))
            continue
        err = float(np.abs(val @ G - np.eye(inst.N)).max())
        tol = 1e3 * np.linalg.cond(G) * np.finfo(float).eps
        ok, why = settle_le(err, tol)
        findings.append(Finding(tag, ok, {"max_abs_of_paper_times_G_minus_I": err, "tolerance": tol,
                                          "why_tolerance": "float64 solves: 1000 cond(G) eps", "sizes": dict(inst.sizes)},
                                None if ok is not False else {"instance": inst.as_dict(), "error": err},
                                why or ("" if ok else "(65) is not the inverse of Z^T Z + m tau I_N")))
    return combine(findings)


EQ65 = Claim(
    id="yang2024.eq65",
    title="Woodbury: (mτI_N + ZᵀZ)⁻¹ (eq. (65))",
    paper=PAPER,
    statement=(r"$(m\tau I_N+Z^\top Z)^{-1}=\frac1{m\tau}I_N-\frac1{m\tau}Z^\top(m\tau I_m+ZZ^\top)^{-1}Z$."),
    assumptions=("tau > 0",),
    formulas=EQ65_FORMULAS,
    checks={"symbolic": eq65_symbolic, "numeric": eq65_numeric},
    setting=SETTING,
)


# ==============================================================================================
# Eq. (69): ||y||_2 <= B (||Z||_2 + sqrt(tau) (N + 2 sqrt(N log(1/delta)) + 2 log(1/delta))^{1/2}) w.p. 1 - delta
# ==============================================================================================
Y_BOUND = "B*(Z_norm + sqrt(tau)*(N + 2*sqrt(N*log(1/delta)) + 2*log(1/delta))**(1/2))"


@lru_cache(maxsize=1)
def eq69_chain() -> sympy.Expr:
    """(69) as its proof builds it: ||y|| <= ||Z^T lambda|| + ||y - Z^T lambda|| with ||Z^T lambda|| <=
    ||Z||_2 ||lambda||, the tail (68) as Thm. 2 prints it for ||y - Z^T lambda||^2, and ||lambda|| <= B
    (Assumption 4; (68) increases with ||lambda||^2)."""
    B, Zn = sympy.Symbol("B", positive=True), sympy.Symbol("Z_norm", positive=True)
    tail = next(f for f in THM2_FORMULAS if f.name == "tail").parse()
    return B * Zn + sympy.sqrt(tail.subs(sympy.Symbol("lam_sq", positive=True), B ** 2))


def worst_probability(bound: np.ndarray, B, Z_norm, tau, N) -> np.ndarray:
    """P(||y||_2 >= bound) at the worst lambda with ||lambda|| <= B: y ~ N(Z^T lambda, tau ||lambda||^2 I_N)
    (eq. (1)), so ||y||^2 / (tau ||lambda||^2) is noncentral chi-square with N degrees of freedom and
    noncentrality ||Z^T lambda||^2 / (tau ||lambda||^2); both grow toward lambda = B u_1 (u_1 the top
    left singular vector of Z), where the noncentrality is ||Z||_2^2 / tau."""
    bound = np.asarray(bound, float)
    x = np.where(bound > 0, bound, 0.0) ** 2 / (tau * B ** 2)
    return np.where(bound > 0, ncx2.sf(x, N, Z_norm ** 2 / tau), 1.0)


def y_quantile(point: dict) -> dict | None:
    """The least bound exceeded with probability at most delta at the worst lambda (ExactValues)."""
    N, dl = point.get("N"), point.get("delta")
    try:
        N, dl, tau, B, Zn = int(N), float(dl), float(point["tau"]), float(point["B"]), float(point["Z_norm"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (1 <= N <= 10 ** 5 and 0 < dl < 1 and tau > 0 and B > 0 and Zn >= 0):
        return None
    q = ncx2.isf(dl, N, Zn ** 2 / tau)
    return None if not np.isfinite(q) else {"y_bound": B * math.sqrt(tau * q)}


_Y_GRID = {"N": (1, 2, 5, 20, 200), "delta": (0.5, 0.1, 1e-3, 1e-8), "tau": (1e-3, 0.1, 1.0, 10.0),
           "Z_norm": (1e-3, 0.3, 1.0, 10.0, 100.0), "B": (0.1, 1.0, 10.0)}


def _exact_finding(F) -> Finding:
    names = ("B", "Z_norm", "tau", "N", "delta")
    by_name = {x.name: x for x in F.free_symbols}
    f = sympy.lambdify([by_name.get(n, sympy.Symbol(n)) for n in names], F, "numpy")
    worst, where = 0.0, None
    count = 0
    for N in _Y_GRID["N"]:
        for dl in _Y_GRID["delta"]:
            for tau in _Y_GRID["tau"]:
                for Zn in _Y_GRID["Z_norm"]:
                    B = np.array(_Y_GRID["B"])
                    with np.errstate(all="ignore"):
                        bound = np.asarray(f(B.astype(complex), complex(Zn), complex(tau), complex(N),
                                             complex(dl)), dtype=complex) * np.ones_like(B)
                    # a bound that is not real is exceeded with probability 1 (inf: a failure),
                    # as is -inf; NaN or +inf decides nothing: its probability is NaN
                    neginf = np.isneginf(bound.real) & ~np.isinf(bound.imag)  # -inf * 1: imag NaN
                    finite = np.isfinite(bound) | neginf
                    real = neginf | (np.isfinite(bound) &
                                     (np.abs(bound.imag) <= 1e-12 * np.abs(bound.real) + 1e-300))
                    p = np.where(real, worst_probability(np.where(real, bound.real, 0.0), B, Zn, tau, N),
                                 np.where(finite, np.inf, np.nan))
                    count += B.size
                    for i in range(B.size):
                        r = float(p[i] / dl)
                        if worse(r, worst, 1 + 1e-9):  # a NaN is kept (argmax / > drop it)
                            worst, where = r, {"N": N, "delta": dl, "tau": tau, "Z_norm": Zn,
                                               "B": float(B[i]),
                                               "bound": str(bound[i].real if real[i] else bound[i]),
                                               "probability": float(p[i])}
    ok, why = settle_le(worst, 1 + 1e-9)
    return Finding("worst_lambda_exact_law", ok, {"worst_probability_over_delta": worst, "at": where,
                                                   "grid_points": count, "grid": {k: list(v) for k, v in _Y_GRID.items()}},
                   None if ok is not False else where,
                   why or ("" if ok else "P(||y|| >= (69)) exceeds delta at the worst lambda (noncentral chi-square)"),
                   worst_margin("P(||y||_2 >= (69)) over delta", worst, where))


def eq69_symbolic(ctx: Context) -> TierResult:
    from .gradient_bounds import _chain_findings

    ch = eq69_chain()
    findings = _chain_findings(ctx, {"y_bound": ch}, ("y_bound",), "eq69-symbolic", {"y_bound": "(68)-(69)"},
                               admits=lambda p: 0 < p.get("delta", 0.5) < 1)   # delta in (0, 1), Thm. 2
    findings.append(_exact_finding(sympy.sympify(ctx.formulas["y_bound"])))
    steps = [step("Chain", r"\|y\|_2\le\|Z^\top\lambda\|_2+\|y-Z^\top\lambda\|_2\le " + sympy.latex(ch),
                  "(68) as printed for ||y - Z^T lambda||^2, ||Z^T lambda|| <= ||Z|| ||lambda||, ||lambda|| <= B."),
             step("Exact law", r"\frac{\|y\|^2}{\tau\|\lambda\|^2}\sim\chi'^2_N\Big(\frac{\|Z^\top\lambda\|^2}{\tau\|\lambda\|^2}"
                  r"\Big),\ \text{worst at }\lambda = Bu_1",
                  "P(||y|| >= (69)) <= delta on a grid of N, delta, tau, ||Z||, B (scipy's ncx2).")]
    return combine(findings, steps=steps)


def eq69_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas["y_bound"]
    inst = make_instance(ctx)
    Z = inst.dictionary.Z.numpy()
    U, s, _ = np.linalg.svd(Z)
    rng = ctx.mc_rng("eq69")
    n = ctx.budget.mc_samples
    rows, ok_all, worst, where, undecided = [], True, 0.0, {}, ""
    for B in (1.0, 3.0):
        for lam_kind in ("worst", "random"):
            lam = U[:, 0] * B if lam_kind == "worst" else rng.standard_normal(inst.m)
            if lam_kind == "random":
                lam *= 0.5 * B / np.linalg.norm(lam)
            eps = math.sqrt(inst.tau) * rng.standard_normal((n, inst.m, inst.N))
            y = (Z.T @ lam)[None] + np.einsum("m,bmn->bn", lam, eps)            # y = (Z + eps^P)^T lambda (73)
            for dl in (0.1, 0.01):
                try:
                    thr = float(float_value(F, {"B": B, "Z_norm": float(s[0]), "tau": inst.tau, "N": inst.N, "delta": dl}))
                except (TypeError, ValueError) as exc:
                    return combine([Finding("monte_carlo", False, {"error": str(exc)}, {"error": str(exc)},
                                            f"(69) is not a real number: {exc}")])
                if math.isnan(thr) or thr == math.inf:  # ||y|| >= NaN is False: it held always
                    rows.append({"B": B, "lambda": lam_kind, "delta": dl, "bound": thr,
                                 "holds": None})
                    undecided = undecided or f"(69) is not a finite number ({thr}) at B = {B}, delta = {dl}"
                    continue
                est = estimate((np.linalg.norm(y, axis=1) >= thr).astype(float))
                lo, hi = est.interval(LEVEL, 8)
                holds = lo <= dl
                ok_all &= holds
                used = est.mean / dl
                if worse(used, worst, 1.0):
                    worst, where = used, {"B": B, "lambda": lam_kind, "delta": dl}
                rows.append({"B": B, "lambda": lam_kind, "delta": dl, "bound": thr, "frequency": est.mean,
                             "ci": [lo, hi], "holds": holds})
    ok_all = None if ok_all and undecided else ok_all    # a failure is decided; else NaN undecides
    return combine([Finding("monte_carlo", ok_all, {"rows": rows, "samples": n},
                            None if ok_all is not False else {"rows": [r for r in rows if r["holds"] is not None and not r["holds"]],
                                                             "instance": inst.as_dict()},
                            undecided if ok_all is None else
                            "" if ok_all else "||y|| exceeds (69) more often than delta",
                            worst_margin("frequency of ||y|| >= (69) over delta", worst, where),
                            sampled=True)],
                   {"instance": inst.as_dict(), "Z_norm": float(s[0])})


EQ69 = Claim(
    id="yang2024.eq69",
    title="With probability 1 - δ, ‖y‖₂ ≤ B(‖Z‖₂ + √τ(N + 2√(N log(1/δ)) + 2 log(1/δ))^{1/2}) (eq. (69))",
    paper=PAPER,
    statement=(r"For any prompt with $\|\lambda\|_2\le B$, with probability at least $1-\delta$, "
               r"$\|y\|_2\le B(\|Z\|_2+\sqrt\tau(N+2\sqrt{N\log(1/\delta)}+2\log(1/\delta))^{1/2})$."),
    assumptions=("y = (Z + eps^P)^T lambda, eps_i ~ N(0, tau I_m) (eqs. (1), (73)); Assumption 4",),
    formulas=(NamedFormula("y_bound", Y_BOUND, (_Bl, _Zn, _tau, _N, _dl), equation="(69)", weaker="larger",
                           proof=eq69_chain, description="the bound on ||y||_2 holding with probability 1 - delta"),),
    checks={"symbolic": eq69_symbolic, "numeric": eq69_numeric},
    setting=SETTING,
    exact=ExactValues(y_quantile, "B sqrt(tau q), q the (1 - delta)-quantile of the noncentral chi-square "
                                  "with N degrees of freedom and noncentrality ||Z||^2 / tau (scipy)"),
)
