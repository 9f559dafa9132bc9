"""yang2024: remarks of Secs. 3.1-3.3 and the footnote to (17), decided from the paper's formulas and
the derived quantities: footnote 1 ((61) tighter than (17)), the rate (18)'s trend in K and H, the
under- and overfitting regimes of the ridge (20) against (25), and one head against multi-head."""
from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

import numpy as np
import sympy
import torch
from scipy.optimize import nnls

from models.softmax import Dictionary, attention_weights, coefficient_matrix, random_dictionary
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, combine, settle_le, step, worse
from verify.formulas import NamedFormula

from ..kit.trend import Indexed, monotone
from ..kit.ratio_probe import worst_margin
from .setting import (BUDGET_TAU, HEADS_COVER_PROMPT, Instance, PAPER, SETTING, SIZE, TAU_SYM,
                      exact_instances, exact_quadratic, float_quadratic, make_instance)
from .common import _H, _K, _N, _m
from .convergence import THM1_FORMULAS
from .gradient_bounds import L61_TEXT, _An, _Zbn, _alp, _fbar, _gam
from .regression import _ridge_minimiser, poly_minimiser
from .reparametrisation import dynamics, init_Q


def _text(name: str) -> str:
    return next(f.text for f in THM1_FORMULAS if f.name == name)


def _fn(expr: sympy.Expr, names):
    """A parsed formula as a float function of the named values (its free symbols looked up by name)."""
    by = {s.name: s for s in sympy.sympify(expr).free_symbols}
    f = sympy.lambdify([by.get(n, sympy.Symbol(n)) for n in names], expr, "mpmath")
    return f


# ==============================================================================================
# Footnote 1: (61) is a tighter (but more complicated) expression of L than (17)
# ==============================================================================================
FN_FORMULAS = (
    NamedFormula("L_sq_17", _text("L_sq"), next(f for f in THM1_FORMULAS if f.name == "L_sq").symbols,
                 equation="(17)", weaker="larger", description="L^2 as Theorem 1 states it"),
    NamedFormula("L_sq_61", L61_TEXT, (_gam, _alp, _H, _K, _N, _Zbn, _fbar, _An), equation="(61)",
                 weaker="smaller", description="L^2 of Lemma 10, at alpha of (44) in Thm. 1"),
)
FN_NAMES = ("gamma", "alpha", "H", "K", "N", "m", "tau", "Zbar_norm", "fbar_max", "A_norm", "zeta_0",
            "Delta_0", "ZtZhat_norm")
_GAMMA_MIN = next(f for f in THM1_FORMULAS if f.name == "gamma_min").parse()
_GMIN_NAMES = tuple(sorted(s.name for s in _GAMMA_MIN.free_symbols))
_GMIN = sympy.lambdify(sorted(_GAMMA_MIN.free_symbols, key=lambda s: s.name), _GAMMA_MIN, "math")


def _gamma_min(p: dict) -> float:
    """gamma of (15) at equality."""
    return float(_GMIN(*[p[n] for n in _GMIN_NAMES]))


def _alpha44(p: dict):
    return math.sqrt(2 * p["K"]) * 4 * p["Zbar_norm"] / (p["gamma"] * p["zeta_0"]) * math.sqrt(p["Delta_0"])


def _fn_point(rng: np.random.Generator) -> dict:
    """A point of Thm. 1's domain: N <= K, N <= H, ||Zbar||^2 >= m tau, fbar_max in [sqrt(m tau), ||Zbar||]
    (a column of Zbar), ||A||_2 in [1, 1 + ||Z^T Zhat|| / (m tau)] (A = (I_N, ...) by (66); the bound of
    (17)), zeta_0 <= H ||Zbar||^2 (B_k = Zbar C_k), gamma >= (15), alpha of (44)."""
    N = int(rng.integers(1, 30))
    p = {"N": N, "K": int(rng.integers(N, 200)), "H": int(rng.integers(N, 100)), "m": int(rng.integers(1, 30)),
         "tau": 10 ** rng.uniform(-3, 1), "ZtZhat_norm": 10 ** rng.uniform(-2, 3), "Delta_0": 10 ** rng.uniform(-3, 1)}
    mt = p["m"] * p["tau"]
    p["Zbar_norm"] = math.sqrt(mt + 10 ** rng.uniform(-3, 3))
    p["fbar_max"] = math.sqrt(mt) + rng.uniform(0, 1) * (p["Zbar_norm"] - math.sqrt(mt))
    p["A_norm"] = 1 + rng.uniform(0, 1) * p["ZtZhat_norm"] / mt
    p["zeta_0"] = 10 ** rng.uniform(-5, 0) * p["H"] * p["Zbar_norm"] ** 2
    p["gamma"] = _gamma_min(p) * 10 ** rng.uniform(0, 2)
    p["alpha"] = _alpha44(p)
    return p


def footnote_symbolic(ctx: Context) -> TierResult:
    """A point of the domain where (61) at alpha of (44) exceeds (17), confirmed at 60 digits."""
    import mpmath

    F = ctx.formulas
    f17, f61 = _fn(F["L_sq_17"], FN_NAMES), _fn(F["L_sq_61"], FN_NAMES)
    rng = ctx.rng("footnote")
    worst, where, compared = 0.0, None, 0
    with mpmath.workdps(60):
        for _ in range(400):
            p = _fn_point(rng)
            try:
                r = f61(*[p[n] for n in FN_NAMES]) / f17(*[p[n] for n in FN_NAMES])
            except (ZeroDivisionError, ValueError, TypeError):
                continue
            if not isinstance(r, mpmath.mpf):
                continue
            compared += 1
            if worse(r, worst, 1.0):  # a NaN is kept: undecided, never a pass
                worst, where = float(r), {k: (float(v) if isinstance(v, float) else v) for k, v in p.items()}
    ok, why = settle_le(worst, 1.0)
    if not compared:  # every point raised or was complex: a pass would have compared nothing
        ok, why = None, "the ratio (61) / (17) has no real value at any of the 400 points"
    return combine([Finding("61_below_17_formally", ok, {"worst_ratio_61_over_17": worst, "at": where,
                                                         "points": 400, "precision": "60 digits"},
                            None if ok is not False else {**where, "ratio_61_over_17": worst},
                            why or ("" if ok else "(61) at alpha of (44) exceeds (17) at a point of Thm. 1's domain"),
                            worst_margin("(61) over (17)", worst, where or {}), search=True)],
                   steps=[step("Domain", r"\gamma\ge(15),\ \alpha=(44),\ \|A\|_2\le1+\frac{\|Z^\top\hat Z\|_2}{m\tau},\ "
                               r"\bar f_{\max}\le\|\bar Z\|_2,\ \zeta_0\le H\|\bar Z\|_2^2",
                               "random points (60-digit arithmetic) where both formulas are evaluated.")])


FN_SCALES = ((1.0, 0.25), (0.3, 0.05), (0.1, 0.01))


def footnote_numeric(ctx: Context) -> TierResult:
    """Dictionaries with the features scaled (||Zbar|| from ~0.3 to ~4): L^2 of (61) at Thm. 1's gamma
    ((15) at equality) and alpha (44), with the instance's ||A||, fbar_max, against (17)."""
    F = ctx.formulas
    f17, f61 = _fn(F["L_sq_17"], FN_NAMES), _fn(F["L_sq_61"], FN_NAMES)
    sizes = SETTING.resolve(ctx.budget.name, ctx.sizes)
    rows, worst, where = [], 0.0, None
    for scale, tau in FN_SCALES:
        for r in range(2):
            inst = make_instance(ctx, f"footnote-{r}", sizes, tau)
            D = inst.dictionary
            inst = Instance(inst.sizes, tau, Dictionary(D.V_all, D.Zhat * scale, D.N), inst.seed)
            dyn = dynamics(inst)
            Q0 = init_Q(inst, torch.Generator().manual_seed(ctx.seed_for("footnote-init", r)))
            p = {**{k: sizes[k] for k in ("H", "K", "N", "m")}, "tau": tau, "Zbar_norm": dyn.Zbar_norm,
                 "fbar_max": dyn.fbar_max, "A_norm": dyn.A_norm, "ZtZhat_norm": dyn.ZtZhat_norm,
                 "zeta_0": dyn.zeta(Q0), "Delta_0": float(dyn.excess(Q0, torch.zeros(inst.H, inst.K, dtype=torch.float64)))}
            p["gamma"] = _gamma_min(p)
            p["alpha"] = _alpha44(p)
            ratio = float(f61(*[p[n] for n in FN_NAMES]) / f17(*[p[n] for n in FN_NAMES]))
            rows.append({"feature_scale": scale, "tau": tau, "Zbar_norm": p["Zbar_norm"], "ratio_61_over_17": ratio})
            if worse(ratio, worst, 1.0):  # a NaN is kept: undecided, never a pass
                worst, where = ratio, {**p, "feature_scale": scale}
    ok, why = settle_le(worst, 1.0)
    return combine([Finding("61_below_17_at_instances", ok, {"instances": rows},
                            None if ok is not False else {**where, "ratio_61_over_17": worst, "seed": ctx.seed},
                            why or ("" if ok else f"(61) exceeds (17) at an instance with ||Zbar||_2 = "
                                                  f"{where['Zbar_norm']:.3g}"),
                            worst_margin("(61) over (17)", worst, {k: v for k, v in (where or {}).items()
                                                                     if k in ("Zbar_norm", "feature_scale")}))],
                   {"sizes": dict(sizes)})


EQ17_FOOTNOTE = Claim(
    id="yang2024.eq17_footnote",
    title="Footnote 1: (61) is a tighter expression of L than (17)",
    paper=PAPER,
    statement=(r"'We leave a tighter, but more complicated, expression of $L$ in the appendix (cf. (61))': "
               r"$L^2$ of (61) at $\alpha$ of (44) is at most $L^2$ of (17)."),
    assumptions=("Thm. 1's constants: gamma of (15), alpha of (44), ||A||_2 <= 1 + ||Z^T Zhat||/(m tau), "
                 "fbar_max <= ||Zbar||_2",),
    formulas=FN_FORMULAS,
    checks={"symbolic": footnote_symbolic, "numeric": footnote_numeric},
    setting=SETTING,
    size_ranges=HEADS_COVER_PROMPT,
)


# ==============================================================================================
# Sec. 3.1 (and 3.3): "the convergence speed decreases as K or H increases" (18)
# ==============================================================================================
TREND_FORMULAS = (dataclasses.replace(next(f for f in THM1_FORMULAS if f.name == "rate"), weaker=None,
                                      _cache={}),)
TREND_K = (1, 2, 4)           # K0 times these (the dictionary extended by query tokens)
TREND_H = (1, 2, 4, 8)        # N times these (heads appended to the same initialisation)


def _speed(F, inst: Instance, Q0: torch.Tensor) -> tuple[float, float]:
    """1 - (18) with Thm. 1's learning rates: gamma of (15) at equality, eta_Q = 1/L of (17), eta_w (16)."""
    from .convergence import _thm1_constants

    c = _thm1_constants({**{f.name: f.parse() for f in THM1_FORMULAS}, "rate": F["rate"]}, dynamics(inst), Q0)
    return 1 - c["rate"], c["zeta0"]


def trend_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    base = SETTING.resolve(ctx.budget.name, ctx.sizes)
    K0, N = base["K"], base["N"]
    findings = []
    for var, grid in (("K", TREND_K), ("H", TREND_H)):
        curves = []
        for r in range(3):
            seed = ctx.seed_for("trend", r)
            Kmax, Hmax = K0 * max(TREND_K), N * max(TREND_H)
            D = random_dictionary(Kmax, base["d"], base["m"], N, torch.Generator().manual_seed(seed))
            Qall = init_Q(Instance({**base, "H": Hmax}, 0.0, D, seed), torch.Generator().manual_seed(seed + 1))
            points = []
            for x in grid:
                K = K0 * x if var == "K" else K0
                H = N * x if var == "H" else max(base["H"], N)
                inst = Instance({**base, "K": K, "H": H}, BUDGET_TAU[ctx.budget.name],
                                Dictionary(D.V_all[:, :K], D.Zhat[:, :K], N), seed)
                points.append((K if var == "K" else H, *_speed(F, inst, Qall[:H])))
            sizes, speeds, zetas = zip(*points)
            curves.append(Indexed(sizes, speeds, var, at={"dictionary": r, "zeta_0": list(zetas),
                                                          "seed": ctx.seed}))
        # weakly, up to float64 rounding of (18): 1e-9 relative
        findings.append(monotone(f"slower_with_{var}", curves, "decreasing", strict=False,
                                 rel_tol=1e-9, reason="the guaranteed speed 1 - (18) grows with "
                                 "{name} ({before} -> {after})"))
    return combine(findings, {"sizes": dict(base), "rates": "gamma = (15) at equality, eta_Q = 1/L of (17), "
                              "eta_w = gamma^2 eta_Q; Gaussian Q^(0) (Prop. 1), nested in K and H"})


THM1_RATE_TREND = Claim(
    id="yang2024.thm1_rate_trend",
    title="(18): the guaranteed convergence slows as K or H grows (Secs. 3.1, 3.3)",
    paper=PAPER,
    statement=(r"'Our convergence guarantee (18) also indicates that the convergence speed decreases as the size "
               r"$K$ of the dictionary or the number $H$ of attention heads increases' (also Sec. 3.3: 'larger "
               r"$H$ yields slower convergence rate')."),
    assumptions=("Thm. 1's learning rates ((15) at equality, eta_Q = 1/L of (17)); Q^(0) Gaussian (Prop. 1)",),
    formulas=TREND_FORMULAS,
    checks={"numeric": trend_numeric},
    setting=SETTING,
    size_ranges=HEADS_COVER_PROMPT,
)


# ==============================================================================================
# Sec. 3.2: N < m underfits (small ||lambda||), N > m overfits (captures noise), against (25)
# ==============================================================================================
_hyp_syms = (_N, _m)
REGIME_FORMULAS = (
    NamedFormula("underfit", "N < m", _hyp_syms, equation="Sec. 3.2", weaker="narrower",
                 description="where the transformer's ridge (20) chooses a lambda of smaller l2 norm than (25)"),
    NamedFormula("overfit", "N > m", _hyp_syms, equation="Sec. 3.2", weaker="narrower",
                 description="where (20) chooses a larger-norm lambda than (25), with a larger noise gain"),
)
REGIME_SIZES = ((1, 3), (2, 3), (2, 2), (3, 3), (3, 2), (4, 2), (5, 1))   # (N, m)


def _holds(expr, N: int, m: int) -> bool:
    v = sympy.sympify(expr).subs({s: {"N": N, "m": m}[s.name] for s in sympy.sympify(expr).free_symbols})
    return bool(v)


@lru_cache(maxsize=4)
def _ridge_solution(reg_name: str):
    """The minimiser of the derived objective: (20) (reg m tau / N) or the noise-averaged (24) (reg tau,
    by Lemma 4's derivation), as a function of Z, y."""
    from .regression import _lemma4_derived

    reg = SIZE["m"] * TAU_SYM / SIZE["N"] if reg_name == "20" else None
    obj = _ridge_minimiser(reg)[0] if reg is not None else _lemma4_derived()
    return obj


def _regime_rows(F, rng: np.random.Generator, exact: bool):
    """Per (N, m): the two hypotheses and the comparisons ||lambda_hat|| vs ||lambda_hat_tau|| and the
    noise gains ||(Z^Q)^T M Z||_F of the two ridges on the query tokens."""
    rows = []
    for N, m in REGIME_SIZES:
        Zhat = rng.integers(-3, 4, size=(m, N + 2)).astype(float) / 2
        Zhat[:, :N] += np.eye(m, N)
        y = rng.integers(-3, 4, size=(N, 1)).astype(float) + 0.5
        tau = 0.3
        if exact:
            Zs = sympy.Matrix(Zhat.tolist()).applyfunc(sympy.nsimplify)
            ys = sympy.Matrix(y.tolist()).applyfunc(sympy.nsimplify)
            t = sympy.Rational(3, 10)
            lt = poly_minimiser(_ridge_solution("20"), Zs[:, :N], ys, m, N, t)
            lb = poly_minimiser(_ridge_solution("24"), Zs[:, :N], ys, m, N, t)
            n_t, n_b = (lt.T * lt)[0], (lb.T * lb)[0]
            Mt = Zs[:, N:].T * (m * t * sympy.eye(m) + Zs[:, :N] * Zs[:, :N].T).inv() * Zs[:, :N]
            Mb = Zs[:, N:].T * (N * t * sympy.eye(m) + Zs[:, :N] * Zs[:, :N].T).inv() * Zs[:, :N]
            g_t, g_b = sum(x ** 2 for x in Mt), sum(x ** 2 for x in Mb)
        else:
            Z = Zhat[:, :N]
            lt = np.linalg.solve(m * tau * np.eye(m) + Z @ Z.T, Z @ y)          # (67)
            lb = np.linalg.lstsq(np.vstack([Z.T, math.sqrt(N * tau) * np.eye(m)]),
                                 np.vstack([y, np.zeros((m, 1))]), rcond=None)[0]  # (25): reg N tau
            n_t, n_b = float((lt ** 2).sum()), float((lb ** 2).sum())
            Mt = Zhat[:, N:].T @ np.linalg.solve(m * tau * np.eye(m) + Z @ Z.T, Z)
            Mb = Zhat[:, N:].T @ np.linalg.solve(N * tau * np.eye(m) + Z @ Z.T, Z)
            g_t, g_b = float((Mt ** 2).sum()), float((Mb ** 2).sum())
        rows.append({"N": N, "m": m, "underfit": _holds(F["underfit"], N, m), "overfit": _holds(F["overfit"], N, m),
                     "norm_sq_transformer": n_t, "norm_sq_best": n_b, "noise_gain_transformer": g_t,
                     "noise_gain_best": g_b})
    return rows


def _regime_findings(rows: list) -> list:
    out = []
    for name, cmp, what in (("underfit", lambda r: r["norm_sq_transformer"] < r["norm_sq_best"],
                             "||lambda_hat|| < ||lambda_hat_tau||"),
                            ("overfit", lambda r: r["norm_sq_transformer"] > r["norm_sq_best"]
                             and r["noise_gain_transformer"] > r["noise_gain_best"],
                             "||lambda_hat|| > ||lambda_hat_tau|| and a larger noise gain")):
        bad = next(({k: (str(v) if isinstance(v, sympy.Basic) else v) for k, v in r.items()}
                    for r in rows if r[name] and not cmp(r)), None)
        tested = any(r[name] for r in rows)
        out.append(Finding(name, bad is None if tested else None,
                           {"sizes": [{k: (str(v) if isinstance(v, sympy.Basic) else v) for k, v in r.items()}
                                      for r in rows]}, bad,
                           "" if bad is None else f"the regime holds at N = {bad['N']}, m = {bad['m']} but not {what}",
                           tested=tested))
    return out


def regimes_symbolic(ctx: Context) -> TierResult:
    rows = _regime_rows(ctx.formulas, ctx.rng("regimes"), exact=True)
    steps = [step("Ridges", r"\hat\lambda = \arg\min (20),\ \hat\lambda_\tau = \arg\min (24)",
                  "minimisers of the derived objectives (the moment kernel's (24) is the ridge with tau), "
                  "exact at rational instances, tau = 3/10."),
             step("Comparison", r"\|\hat\lambda\|^2 \lessgtr \|\hat\lambda_\tau\|^2,\ "
                  r"\|(Z^Q)^\top(rI+ZZ^\top)^{-1}Z\|_F^2",
                  "the norms, and the noise gains of the query predictions (m tau for (20), N tau for (25)), "
                  "at every (N, m) where the regime's condition holds.")]
    return combine(_regime_findings(rows), steps=steps)


def regimes_numeric(ctx: Context) -> TierResult:
    return combine(_regime_findings(_regime_rows(ctx.formulas, ctx.rng("regimes-float"), exact=False)))


EQ25_REGIMES = Claim(
    id="yang2024.eq25_regimes",
    title="N < m underfits, N > m overfits: the ridge (20) against the best one (25) (Sec. 3.2)",
    paper=PAPER,
    statement=(r"'When $N<m$, the transformer tends to underfit by choosing a $\lambda$ with small $\ell_2$-norm; "
               r"when $N>m$, the transformer tends to overfit since it underestimates the noise level and in turn "
               r"captures noise in the prediction.'"),
    assumptions=("lambda_hat of (20) (regulariser m tau / 2N), lambda_hat_tau of (24)-(25) (tau / 2)",
                 "y with Z y != 0"),
    formulas=REGIME_FORMULAS,
    checks={"symbolic": regimes_symbolic, "numeric": regimes_numeric},
    setting=SETTING,
)


# ==============================================================================================
# Sec. 3.3: one head cannot approximate a column A_{:,k} with entries of both signs
# ==============================================================================================
HEADS_FORMULAS = (
    NamedFormula("heads", "1", (_H, _N, _K, _m), equation="Sec. 3.3", weaker="smaller",
                 description="with at most this many heads, a column A_{:,k} with entries of both signs cannot "
                             "be approximated by sum_h w_hk softmax(V^T Q_h v_k)"),
)


def _orthant_gap_exact(G: sympy.Matrix, a: sympy.Matrix, sign: int) -> sympy.Expr:
    """min over sign * x >= 0 of (x - a)^T G (x - a) / 2, exactly: the KKT point among the 2^N faces."""
    N = G.shape[0]
    best = None
    for mask in range(1 << N):
        free = [i for i in range(N) if mask >> i & 1]
        x = sympy.zeros(N, 1)
        if free:
            Gf = G.extract(free, free)
            rhs = (G * a).extract(free, [0])
            xf = Gf.LUsolve(rhs)
            if any(sign * v < 0 for v in xf):
                continue
            for j, i in enumerate(free):
                x[i] = xf[j]
        grad = G * (x - a)
        if any(sign * grad[i] < 0 for i in range(N) if i not in free):
            continue
        val = ((x - a).T * G * (x - a))[0] / 2
        best = val if best is None or val < best else best
    return best


def _heads_value(F, sizes: dict):
    v = sympy.sympify(F["heads"]).subs({s: sizes[s.name] for s in sympy.sympify(F["heads"]).free_symbols
                                        if s.name in sizes})
    return math.floor(float(v)) if v.is_number and v.is_real else None


def heads_symbolic(ctx: Context) -> TierResult:
    rows, bad, undecided = [], None, ""
    for inst in exact_instances(ctx):
        tau = sympy.Rational(1, 4)
        G, Bq, _ = exact_quadratic(inst, tau)               # the derived loss at tau = 1/4
        A = G.inv() * Bq                                    # its minimiser, A of (34)
        mixed = [k for k in range(inst.K) if any(x > 0 for x in A[:, k]) and any(x < 0 for x in A[:, k])]
        h = _heads_value(ctx.formulas, {"N": inst.N, "K": inst.K, "m": inst.m, "H": 6})
        if not mixed or h is None:
            undecided = "no column of A with entries of both signs" if not mixed else "the formula is not a number"
            continue
        k = mixed[0]
        a = A[:, k]
        if h <= 0:
            gap = (a.T * G * a)[0] / 2                       # no head: Ahat_k = 0
        elif h == 1:
            gap = min(_orthant_gap_exact(G, a, 1), _orthant_gap_exact(G, a, -1))   # w_1k s, s > 0
        else:
            gap = sympy.Integer(0)                           # a = |p|_1 p/|p|_1 - |n|_1 n/|n|_1: two heads
        ok = bool(gap > 0)
        rows.append({"m": inst.m, "N": inst.N, "column": k + 1, "A_column": [str(x) for x in a], "heads": h,
                     "excess_infimum": str(gap), "ok": ok})
        if not ok and bad is None:
            bad = {"instance": inst.as_dict(), "tau": "1/4", "column": k + 1, "heads": h,
                   "A_column": [str(x) for x in a],
                   "why": "a = ||p||_1 (p/||p||_1) - ||n||_1 (n/||n||_1) (p, n its positive and negative parts): "
                          "two heads at softmax outputs tending to p/||p||_1, n/||n||_1 reach it"}
    if not rows:
        return combine([Finding("one_sign_gap", None, reason=undecided)])
    steps = [step("One head", r"w_{1,k}\,\mathrm{softmax}(\cdot)\in\{x\ge0\}\cup\{x\le0\}",
                  "the least loss over each orthant, min (x - A_k)^T G (x - A_k)/2, exactly (KKT on every face), "
                  "G = Z^T Z + m tau I the derived Hessian."),
             step("Two heads", r"A_{:,k} = \|p\|_1\tfrac{p}{\|p\|_1}-\|n\|_1\tfrac{n}{\|n\|_1}",
                  "a difference of two points of the simplex, limits of softmax outputs when V has full "
                  "column rank.")]
    return combine([Finding("one_sign_gap", bad is None, {"columns": rows}, bad,
                            "" if bad is None else "with this many heads the column is reachable (gap 0)")], steps=steps)


def heads_numeric(ctx: Context) -> TierResult:
    inst = make_instance(ctx)
    fq = float_quadratic(inst)
    A, G = fq.A, fq.G
    D = inst.dictionary
    h = _heads_value(ctx.formulas, dict(inst.sizes))
    both = np.minimum(A.max(0), (-A).max(0)) / np.abs(A).max(0)   # > 0 iff the column has both signs
    k = int(both.argmax())
    if both[k] <= 1e-6 or h is None:
        return combine([Finding("one_sign_gap", None, reason="no mixed-sign column" if h is not None else "not a number")])
    a = A[:, k]
    R = np.linalg.cholesky(G).T                                   # (x - a)^T G (x - a) = ||R (x - a)||^2
    if h <= 0:
        gap, how = 0.5 * float(a @ G @ a), "no head"
    elif h == 1:
        gaps = [0.5 * nnls(R * s, R @ a)[1] ** 2 for s in (1, -1)]  # x = s * (x >= 0)
        gap, how = min(gaps), "NNLS over the two orthants"
    else:                                                         # two heads through the forward pass
        V = D.V.numpy()
        if np.linalg.matrix_rank(V) < inst.N:
            return combine([Finding("one_sign_gap", None, reason="V is not of full column rank (d < N)")])
        p, n = np.clip(a, 0, None), np.clip(-a, 0, None)
        T = 40.0
        Qs, w = [], np.zeros((2, inst.K))
        vk = D.V_all.numpy()[:, k]
        for j, part in enumerate((p, n)):
            logits = np.where(part > 0, np.log(np.where(part > 0, part, 1) / part.sum()), -T)
            u = V @ np.linalg.solve(V.T @ V, logits)
            Qs.append(np.outer(u, vk) / (vk @ vk))
            w[j, k] = part.sum() * (1 if j == 0 else -1)
        Ah = coefficient_matrix(attention_weights(D.V, D.V_all, torch.tensor(np.stack(Qs))), torch.tensor(w)).numpy()
        x = Ah[:, k]
        gap, how = 0.5 * float((x - a) @ G @ (x - a)), "two heads with logits log(p/|p|_1), -40"
    ok = gap > 1e-9 * max(1.0, float(a @ G @ a))
    return combine([Finding("one_sign_gap", ok, {"column": k + 1, "A_column": a.tolist(), "heads": h,
                                                 "excess_infimum": gap, "how": how},
                            None if ok else {"instance": inst.as_dict(), "column": k + 1, "heads": h, "gap": gap},
                            "" if ok else "with this many heads the column is reached (gap ~ 0)")],
                   {"instance": inst.as_dict()})


EQ8_ONE_HEAD = Claim(
    id="yang2024.eq8_one_head",
    title="One head cannot fit a column of A with entries of both signs (Sec. 3.3)",
    paper=PAPER,
    statement=(r"'If $H=1$, the transformer could not approximate each $A_{:,k}$ by $w_{1,k}\mathrm{softmax}"
               r"(V^\top Q_1v_k)$ in general since the entries of the latter vector are either all positive or "
               r"all negative': multi-head attention is essential."),
    assumptions=("a column A_{:,k} with entries of both signs (query columns generically have them)",
                 "V of full column rank for the two-head construction"),
    formulas=HEADS_FORMULAS,
    checks={"symbolic": heads_symbolic, "numeric": heads_numeric},
    setting=SETTING,
)
