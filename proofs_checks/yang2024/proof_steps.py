"""yang2024 App. B, the induction of Theorem 1's proof and the inequalities it uses: Lemma 3 (31),
(43a) with Step 3's (62), (43b) with the line after (48), the PL inequality (49) and the descent
steps (63)-(64).  The symbolic tiers rebuild each bound from the proof's chain (its constants
computed); the numeric tiers test the inequalities along GD runs at Theorem 1's learning rates
((15) at equality, eta_Q = 1/L of (17)) and, for (49), at points built to make it tight."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np
import sympy
import torch

from models.device import randn
from models.softmax import attention_weights, head_matrix
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, settle_le, step, worse
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit.ratio_probe import probed, proof_margin, ratio_at_least_one, worst_margin
from .setting import (BUDGET_TAU, HEADS_COVER_PROMPT, PAPER, SETTING, SIZE, make_instance,
                      small_threads)
from .common import _K, _in_symbols_of
from .convergence import THM1_FORMULAS, _D0, _thm1_constants, _z0
from .gradient_bounds import _Zbn, _chain_findings, _exc, _extreme_points, _gam, _random_points, lemma8_chain
from .reparametrisation import Dynamics, _etaQ, _grads, _grads_xi, dynamics, init_Q


def scalar_fn(expr: sympy.Expr):
    """A parsed scalar formula as a numpy function of keyword arrays (its free symbols by name)."""
    syms = sorted(sympy.sympify(expr).free_symbols, key=str)
    f = sympy.lambdify(syms, expr, "numpy")
    return lambda **kw: np.asarray(f(*[kw[s.name] for s in syms]), dtype=float)


# ==============================================================================================
# Lemma 3 (31): ||sum_{i<=l} x_i||^2 <= l sum_i ||x_i||^2
# ==============================================================================================
_l = FormulaSymbol("l", positive=True)
_L_SYM = sympy.Symbol("l", positive=True)
LEMMA3_FORMULAS = (
    NamedFormula("C", "l", (_l,), equation="(31)", weaker="larger",
                 description="||sum_{i<=l} x_i||_2^2 <= C sum_i ||x_i||_2^2", sharp=lambda: _L_SYM),
)
LEMMA3_L = (1, 2, 3, 5, 8, 30)


def lemma3_symbolic(ctx: Context) -> TierResult:
    C = sympy.sympify(ctx.formulas["C"])
    a = sympy.symbols("a0:4", real=True)                  # |x_i| (Cauchy-Schwarz, l = 4)
    gap = sympy.expand(4 * sum(x ** 2 for x in a) - sum(a) ** 2
                       - sum((a[i] - a[j]) ** 2 for i in range(4) for j in range(i + 1, 4)))
    # equal vectors x_i = x: ||l x||^2 / (l ||x||^2) = l, the least constant
    sharp = sympy.simplify((_L_SYM * 1) ** 2 / (_L_SYM * 1))
    rows, bad = [], None
    for l in LEMMA3_L + (10 ** 6,):
        val = C.subs(_L_SYM, l) if C.free_symbols <= {_L_SYM} else None
        ok = val is not None and val.is_real and bool(val >= sharp.subs(_L_SYM, l))
        rows.append({"l": l, "paper_C": str(val), "sharp": l, "ok": ok})
        if not ok and bad is None:
            bad = {"l": l, "paper_C": str(val), "ratio_at_equal_vectors": l}
    findings = [Finding("derivation", gap == 0, {"lagrange_identity_l4": str(gap)},
                        reason="" if gap == 0 else "the Cauchy-Schwarz identity failed"),
                Finding("sharp_constant", bad is None, {"per_l": rows}, bad,
                        "" if bad is None else "C is below the ratio l that equal vectors attain")]
    steps = [step("Cauchy-Schwarz", r"\Big\|\sum_i x_i\Big\|^2\le\Big(\sum_i\|x_i\|\Big)^2\le l\sum_i\|x_i\|^2,\ "
                  r"l\sum a_i^2-\big(\sum a_i\big)^2=\sum_{i<j}(a_i-a_j)^2", "checked by sympy at l = 4."),
             step("Sharpness", r"x_1=\dots=x_l:\ \|lx\|^2 = l\cdot l\|x\|^2", "so C >= l, checked at l = "
                  + ", ".join(map(str, LEMMA3_L + (10 ** 6,))) + ".")]
    return combine(findings, steps=steps)


def lemma3_numeric(ctx: Context) -> TierResult:
    C = scalar_fn(ctx.formulas["C"])
    rng = ctx.rng("lemma3")
    worst, where = 0.0, None
    for l in LEMMA3_L:
        for p in (1, 3):
            X = rng.standard_normal((200, l, p))
            X[0] = X[0, :1]                                           # equal vectors: ratio l
            ratio = (X.sum(1) ** 2).sum(-1) / (X ** 2).sum((1, 2))
            bound = float(C(l=l))
            r = float(ratio.max()) / bound if bound > 0 else math.inf
            if worse(r, worst, 1 + 1e-12):  # a NaN is kept: undecided, never a pass
                worst, where = r, {"l": l, "p": p, "max_ratio": float(ratio.max()), "paper_C": bound}
    ok, why = settle_le(worst, 1 + 1e-12)
    return combine([Finding("ratio", ok, {"worst_ratio_over_C": worst, "at": where},
                            None if ok is not False else {**where, "seed": ctx.seed},
                            why or ("" if ok else "equal vectors exceed C"),
                            worst_margin("||sum x_i||^2 / sum ||x_i||^2 over C", worst, where))])


LEMMA3 = Claim(
    id="yang2024.lemma3",
    title="Young's inequality (Lemma 3, eq. (31))",
    paper=PAPER,
    statement=r"$\|\sum_{i=1}^l x_i\|_2^2\le l\sum_{i=1}^l\|x_i\|_2^2$ for any $x_1,\dots,x_l\in\mathbb R^p$.",
    assumptions=("any l >= 1 and p",),
    formulas=LEMMA3_FORMULAS,
    checks={"symbolic": lemma3_symbolic, "numeric": lemma3_numeric},
    setting=SETTING,
)


# ==============================================================================================
# GD runs at Theorem 1's learning rates, recorded once per instance (formula-free)
# ==============================================================================================
@dataclass(frozen=True)
class Run:
    """One GD run of (41) from (Q^(0), w^(0) = 0): per step t the excess l - L*, ||grad_xi l||^2 and
    max_h ||alpha_h||_2; at checkpoints min_k lambda_min(B_k B_k^T) and, for x in R^N of several
    norms, the pairs (||x||, min_k ||x^T B_k||); the constants of Thm. 1 at the instance."""

    constants: dict
    excess: np.ndarray
    grad_sq: np.ndarray
    alpha_max: np.ndarray
    zeta: np.ndarray
    x_norms: np.ndarray
    row_norms: np.ndarray


RUNS = {"quick": (3, 120), "default": (6, 300), "paper": (8, 800)}
X_NORMS = (0.0, 0.1, 0.5, 1.0, 3.0)


@lru_cache(maxsize=16)
def _run(seed: int, sizes: tuple, tau: float, seed_init: int, seed_x: int, steps: int) -> Run:
    from models.softmax import random_dictionary
    from .setting import Instance

    s = dict(sizes)
    inst = Instance(s, tau, random_dictionary(s["K"], s["d"], s["m"], s["N"],
                                              torch.Generator().manual_seed(seed)), seed)
    dyn = dynamics(inst)
    Q0 = init_Q(inst, torch.Generator().manual_seed(seed_init))
    c = {**_thm1_constants({f.name: f.parse() for f in THM1_FORMULAS}, dyn, Q0), "Zbar_norm": dyn.Zbar_norm}
    gamma, eta_Q, eta_w = c["gamma"], c["eta_Q"], c["eta_w"]
    Q, w = Q0.clone(), torch.zeros(inst.H, inst.K, dtype=torch.float64)
    gen_x = torch.Generator().manual_seed(seed_x)
    ex, gsq, amax, zeta, xn, rn = [], [], [], [], [], []
    every = max(1, steps // 10)
    for t in range(steps + 1):
        e, gQ, gw = _grads(dyn, Q, w)
        ex.append(e)
        gsq.append(float((gQ ** 2).sum() + gamma ** 2 * (gw ** 2).sum()))   # grad_alpha = gamma grad_w
        amax.append(float((w / gamma).norm(dim=1).max()))
        if t % every == 0 or t == steps:
            with torch.no_grad():
                B = dyn.B(Q)                                                 # (K, N, H)
                x = randn(len(X_NORMS), 4, inst.N, generator=gen_x, dtype=torch.float64)
                lam, U = torch.linalg.eigh(B @ B.mT)
                weak = U[int(lam[:, 0].argmin()), :, 0]                       # the weakest direction, (14)
                zeta.append(float(lam[:, 0].min()))
                x = torch.cat([x, weak.expand(len(X_NORMS), 1, -1)], dim=1)
                x = x / x.norm(dim=-1, keepdim=True) * torch.tensor(X_NORMS, dtype=torch.float64)[:, None, None]
                rows = torch.einsum("rin,knh->rikh", x, B).norm(dim=-1).min(-1).values   # min over k
                xn.append(x.norm(dim=-1).numpy().ravel())
                rn.append(rows.numpy().ravel())
        if not math.isfinite(e):
            break
        Q, w = Q - eta_Q * gQ, w - eta_w * gw
    return Run(c, np.array(ex), np.array(gsq), np.array(amax), np.array(zeta),
               np.concatenate(xn), np.concatenate(rn))


def runs(ctx: Context) -> tuple[list[Run], dict]:
    count, steps = RUNS[ctx.budget.name]
    sizes = SETTING.resolve(ctx.budget.name, ctx.sizes)
    out = []
    for r in range(count):
        inst = make_instance(ctx, f"thm1-{r}", sizes)
        out.append(_run(inst.seed, tuple(sorted(sizes.items())), inst.tau, ctx.seed_for("thm1-init", r),
                        ctx.seed_for("proof-steps-x", r), steps))
    return out, {"sizes": dict(sizes), "tau": BUDGET_TAU[ctx.budget.name], "runs": count, "steps": steps,
                 "rates": "gamma = (15) at equality, eta_Q = 1/L of (17), eta_w = gamma^2 eta_Q (16), "
                          "w^(0) = 0, Q^(0) ~ N(0, 1)"}


def _run_scalars(r: Run, sizes: Mapping[str, int]) -> dict:
    c = r.constants
    return {"K": sizes["K"], "N": sizes["N"], "H": sizes["H"], "gamma": c["gamma"], "zeta_0": c["zeta0"],
            "Delta_0": c["Delta0"], "eta_Q": c["eta_Q"], "Zbar_norm": c["Zbar_norm"]}


def _bound_finding(name: str, triples: list, what: str, measure: str, seed: int, rel_tol: float = 1e-12,
                   search: bool = True) -> Finding:
    """Every (lhs, rhs, where): lhs <= rhs + rel_tol |rhs| (settle_le: non-finite or underflowed
    operands decide nothing); the margin is the largest lhs / rhs over rhs > 0."""
    if not triples:
        return Finding(name, None, reason="no comparison was made")
    lhs = np.array([float(t[0]) for t in triples])
    rhs = np.array([float(t[1]) for t in triples])
    ok, why = settle_le(lhs, rhs + rel_tol * np.abs(rhs))
    with np.errstate(divide="ignore", invalid="ignore"):
        used = np.where(rhs > 0, lhs / np.where(rhs > 0, rhs, 1.0), np.where(lhs > rhs, np.inf, 0.0))
    i = int(np.nanargmax(used))
    where = {**triples[i][2], "lhs": float(lhs[i]), "rhs": float(rhs[i])}
    worst = float(used[i])
    return Finding(name, ok, {"worst_ratio": worst, "at": where, "comparisons": len(triples),
                              "relative_allowance": rel_tol},
                   None if ok is not False else {**where, "seed": seed},
                   why or ("" if ok else f"{what} fails (lhs / rhs = {worst:.6g})"),
                   worst_margin(measure, worst, {k: v for k, v in where.items() if not isinstance(v, (list, dict))}),
                   search=search)


# ==============================================================================================
# Eq. (62) and (43a): the gradient in alpha_h and the bound alpha of (44) on ||alpha_h^(t)||
# ==============================================================================================
EQ62_TEXT = "Zbar_norm*gamma*sqrt(2*excess/K)"


@lru_cache(maxsize=1)
def eq62_chain() -> sympy.Expr:
    """Step 3: d l / d alpha_hk = (gamma/K) (b_k^h)^T Zbar delta_k (45), |.| <= (gamma/K) ||b_k^h||
    ||Zbar delta_k|| with ||b_k^h|| <= ||Zbar|| (52, as Lemma 9's proof gives it), summed over k with
    sum_k ||Zbar delta_k||^2 = 2K (l - L*) (36)."""
    g, ex, Zb = (sympy.Symbol(n, positive=True) for n in ("gamma", "excess", "Zbar_norm"))
    K = SIZE["K"]
    b = lemma8_chain()["b_bound"]
    return sympy.sqrt((g / K) ** 2 * b ** 2 * 2 * K * ex).subs(sympy.Symbol("Zbar_norm", positive=True), Zb)


EQ62_FORMULAS = (
    NamedFormula("grad_bound", EQ62_TEXT, (_Zbn, _gam, _exc, _K), equation="(62)", weaker="larger",
                 description="bound on ||d l(xi) / d alpha_h||_2", proof=eq62_chain),
)


def eq62_symbolic(ctx: Context) -> TierResult:
    ch = eq62_chain()
    findings = _chain_findings(ctx, {"grad_bound": ch}, ("grad_bound",), "eq62-symbolic",
                               {"grad_bound": "Step 3, (45) with (52)"})
    steps = [step("Step 3", r"\Big(\frac{\partial\ell}{\partial\alpha_{h,k}}\Big)^2\le\frac{\gamma^2}{K^2}\|\bar Z\|_2^2"
                  r"\|\bar Z\delta_k\|_2^2,\ \sum_k\|\bar Z\delta_k\|^2 = 2K(\ell-\mathcal L^\star)",
                  "(45) with ||b_k^h|| <= ||Zbar|| (52, Lemma 9's proof), summed over k by (36)."),
             step("(62)", r"\Big\|\frac{\partial\ell}{\partial\alpha_h}\Big\|_2\le " + sympy.latex(ch), "")]
    return combine(findings, steps=steps)


def eq62_numeric(ctx: Context) -> TierResult:
    inst = make_instance(ctx)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(ctx.seed_for("eq62"))
    f = scalar_fn(ctx.formulas["grad_bound"])
    ratios = []
    pts = list(_random_points(inst, gen, 9)) + list(_extreme_points(inst, gen))
    for gamma in (0.1, 1.0, 10.0):
        for i, (Q, w) in enumerate(pts):
            ex, _, gw = _grads(dyn, Q, w)
            lhs = float((gamma * gw).norm(dim=1).max())                  # max_h ||d l / d alpha_h||
            bound = float(f(Zbar_norm=dyn.Zbar_norm, gamma=gamma, excess=ex, K=inst.K))
            ratios.append((lhs, bound, {"gamma": gamma, "point": i}))
    return combine([_bound_finding("bound_holds", ratios, "(62)", "max_h ||d l / d alpha_h|| over (62)",
                                   ctx.seed, 1e-12)], {"instance": inst.as_dict()})


EQ62 = Claim(
    id="yang2024.eq62",
    title="Gradient bound in α_h (Step 3 of Thm. 1's proof, eq. (62))",
    paper=PAPER,
    statement=r"$\|\partial\ell(\xi)/\partial\alpha_h\|_2\le\|\bar Z\|_2\gamma\sqrt{2(\ell(\xi)-\mathcal L^\star)/K}$.",
    assumptions=("unit-norm tokens; L* the infimum of the loss",),
    formulas=EQ62_FORMULAS,
    checks={"symbolic": eq62_symbolic, "numeric": small_threads(eq62_numeric)},
    setting=SETTING,
)

ALPHA44_TEXT = "sqrt(2*K)*4*Zbar_norm/(gamma*zeta_0)*sqrt(Delta_0)"


@lru_cache(maxsize=1)
def eq43a_chain() -> sympy.Expr:
    """Step 3: ||alpha_h^(t)|| <= ||alpha_h^(0)|| + eta_Q sum_i ||d l / d alpha_h (xi^(i))|| with (62)
    as printed at l - L* <= (1 - eta_Q sigma / 2)^i Delta^(0) (43c), the geometric sum
    sum_i q^i <= 1/(1 - q) <= 4/(eta_Q sigma) (q = sqrt(1 - x), x = eta_Q sigma / 2:
    (1 - x/2)^2 >= 1 - x), sigma = zeta_0 gamma^2 / K (44) and alpha^(0) = 0."""
    eta, g, z0, D0, Zb, x = (sympy.Symbol(n, positive=True) for n in
                             ("eta_Q", "gamma", "zeta_0", "Delta_0", "Zbar_norm", "x"))
    K = SIZE["K"]
    if sympy.expand((1 - x / 2) ** 2 - (1 - x) - x ** 2 / 4) != 0:
        raise RuntimeError("the geometric-sum step failed")
    sigma = z0 * g ** 2 / K
    per_step = EQ62_FORMULAS[0].parse().subs(sympy.Symbol("excess", positive=True), D0)
    return sympy.simplify(eta * per_step * 4 / (eta * sigma))


EQ43A_FORMULAS = (
    NamedFormula("alpha_bound", ALPHA44_TEXT, (_K, _Zbn, _gam, _z0, _D0), equation="(43a), (44)",
                 weaker="larger", proof=eq43a_chain,
                 description="alpha of (44), the bound on ||alpha_h^(t)||_2 along GD"),
)


def eq43a_symbolic(ctx: Context) -> TierResult:
    ch = eq43a_chain()
    findings = _chain_findings(ctx, {"alpha_bound": ch}, ("alpha_bound",), "eq43a-symbolic",
                               {"alpha_bound": "Step 3, (62) and (43c)"})
    return combine(findings, steps=[step("Step 3", r"\|\alpha_h^{(t)}\|_2\le\eta_Q\sum_{i<t}\Big\|\frac{\partial\ell"
                                         r"(\xi^{(i)})}{\partial\alpha_h}\Big\|\le " + sympy.latex(ch),
                                         "(62) as printed, (43c), sum_i q^i <= 4/(eta_Q sigma), sigma of (44).")])


def eq43a_numeric(ctx: Context) -> TierResult:
    rs, meta = runs(ctx)
    f = scalar_fn(ctx.formulas["alpha_bound"])
    sizes = meta["sizes"]
    ratios = []
    for i, r in enumerate(rs):
        bound = float(f(**_run_scalars(r, sizes)))
        t = int(np.argmax(r.alpha_max))
        ratios.append((float(r.alpha_max[t]), bound, {"run": i, "step": t}))
    return combine([_bound_finding("bound_along_gd", ratios, "(43a)", "max_{h,t} ||alpha_h^(t)|| over alpha of (44)",
                                   ctx.seed)], meta)


EQ43A = Claim(
    id="yang2024.eq43a",
    title="GD keeps ‖α_h⁽ᵗ⁾‖ below α of (44) (eq. (43a))",
    paper=PAPER,
    statement=(r"Along GD with the learning rates of Thm. 1, $\|\alpha_h^{(t)}\|_2\le\alpha=\sqrt{2K}\frac{4\|\bar Z\|_2}"
               r"{\gamma\zeta_0}\sqrt{\mathcal L(\theta^{(0)})-\mathcal L^\star}$ for every $h$ and $t$."),
    assumptions=("Assumptions 1, 2; w^(0) = 0; gamma of (15), eta_Q <= 1/L (17), eta_w = gamma^2 eta_Q",),
    formulas=EQ43A_FORMULAS,
    checks={"symbolic": eq43a_symbolic, "numeric": small_threads(eq43a_numeric)},
    setting=SETTING,
    size_ranges=HEADS_COVER_PROMPT,
)


# ==============================================================================================
# Eq. (43b) and the line after (48): lambda_min(B_k^(t) B_k^(t)T) >= zeta_0 / 2 along GD
# ==============================================================================================
_xn = FormulaSymbol("x_norm", positive=True)
C48 = 1 - 1 / sympy.sqrt(2)     # (48): ||B_k^(t) - B_k^(0)||_F <= (1 - 1/sqrt(2)) sqrt(zeta_0)


def eq43b_chain(which: str) -> sympy.Expr:
    """After (48): ||x^T B_k^(t)|| >= ||x^T B_k^(0)|| - ||x^T (B_k^(t) - B_k^(0))|| >= (sqrt(zeta_0) -
    (1 - 1/sqrt 2) sqrt(zeta_0)) ||x|| (||x^T B^(0)|| >= sqrt(zeta_0) ||x|| by (14), ||x^T M|| <= ||x||
    ||M||_F); squared at ||x|| = 1 it is lambda_min of (43b)."""
    z0, xn = sympy.Symbol("zeta_0", positive=True), sympy.Symbol("x_norm", positive=True)
    row = (sympy.sqrt(z0) - C48 * sympy.sqrt(z0)) * xn
    return sympy.simplify(row if which == "row" else (row / xn) ** 2)


EQ43B_FORMULAS = (
    NamedFormula("eig_lower", "zeta_0/2", (_z0,), equation="(43b)", weaker="smaller",
                 proof=lambda: eq43b_chain("eig"),
                 description="lower bound on lambda_min(B_k^(t) B_k^(t)T) along GD"),
    NamedFormula("row_lower", "sqrt(zeta_0/2)", (_z0, _xn), equation="App. B, after (48)", weaker="smaller",
                 proof=lambda: eq43b_chain("row"),
                 description="lower bound on ||x^T B_k^(t)||_2 'for all x' (x_norm = ||x||_2)"),
)


def eq43b_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    ch = {"eig_lower": eq43b_chain("eig"), "row_lower": eq43b_chain("row")}
    # a lower bound must be at least the proof's: printed / chain <= 1, i.e. chain / printed >= 1
    findings = []
    for name, where in (("eig_lower", "(48) and Weyl"), ("row_lower", "after (48)")):
        findings.append(_lower_chain_finding(ctx, name, ch[name], where))
    # the statement at x = 0: ||0^T B|| = 0, so a bound for every x must vanish there
    rows, bad = [], None
    for z in (sympy.Rational(1, 100), sympy.Integer(1), sympy.Integer(7)):
        val = sympy.sympify(F["row_lower"]).subs({sympy.Symbol("zeta_0", positive=True): z,
                                                  sympy.Symbol("x_norm", positive=True): 0})
        ok = val.is_real is True and bool(val <= 0)
        rows.append({"zeta_0": str(z), "bound_at_x_0": str(val), "ok": ok})
        if not ok and bad is None:
            bad = {"x": "0", "zeta_0": str(z), "bound": str(val), "norm_of_x_T_B": "0"}
    findings.append(Finding("at_x_zero", bad is None, {"points": rows}, bad,
                            "" if bad is None else "the bound is positive at x = 0, where ||x^T B_k|| = 0"))
    steps = [step("After (48)", r"\|x^\top B_k^{(t)}\|\ge\|x^\top B_k^{(0)}\|-\|x\|\,\|B_k^{(t)}-B_k^{(0)}\|_F\ge "
                  + sympy.latex(ch["row_lower"]), "(14) and (48); x ranges over R^N (B_k is N x H)."),
             step("(43b)", r"\lambda_{\min}(B_k^{(t)}B_k^{(t)\top})\ge " + sympy.latex(ch["eig_lower"]),
                  "the square at ||x|| = 1.")]
    return combine(findings, steps=steps)


def _lower_chain_finding(ctx: Context, name: str, chain: sympy.Expr, where: str,
                         upper: bool = False) -> Finding:
    """Does the proof (the chain ``where``) give the printed bound: printed <= chain for a lower bound
    (printed >= chain for an upper one, ``upper``) at every positive point?  Decided on the
    difference, 1 + (chain - printed) / (chain^2 + printed^2 + 1) >= 1 (probed as
    ratio_at_least_one does), so that a bound of either sign is compared as a number."""
    printed = sympy.sympify(ctx.formulas[name])
    chain = _in_symbols_of(chain, printed)
    ev = {"derived_bound": str(chain), "paper_bound": str(printed)}
    gap = (printed - chain) if upper else (chain - printed)
    diff = 1 + gap / (chain ** 2 + printed ** 2 + 1)
    ok, ce = ratio_at_least_one(diff, ctx.rng(f"{name}-order"))
    ratio = printed / chain if upper else chain / printed
    margin = proof_margin(ratio, ctx.rng(f"{name}-order-margin")) if ok else None
    return Finding(name, ok, ev, None if ok is not False else {**ev, **(ce or {})},
                   "" if ok else ce["why"] if ok is None else f"{name} is {'below' if upper else 'above'} the bound the proof {where} "
                                 f"gives at a positive point", margin, proof_step=where,
                   search=probed(diff))


def _lower_finding(name: str, bound: np.ndarray, actual: np.ndarray, where: list, what: str, seed: int,
                   rel_tol: float = 1e-10, exact: np.ndarray | None = None) -> Finding:
    """bound <= actual (a lower bound), entrywise, through settle_le with a relative allowance
    ``rel_tol`` for the rounding of the computed ``actual``."""
    bound, actual = np.asarray(bound, float), np.asarray(actual, float)
    ok, why = settle_le(bound, actual + rel_tol * np.abs(actual), exact=exact)
    with np.errstate(divide="ignore", invalid="ignore"):
        used = np.where(actual > 0, bound / np.where(actual > 0, actual, 1), np.where(bound > 0, np.inf, 0))
    i = int(np.nanargmax(used)) if used.size else 0
    at = {**where[i], "bound": float(bound[i]), "actual": float(actual[i])} if used.size else {}
    return Finding(name, ok, {"worst_bound_over_actual": float(used[i]) if used.size else None, "at": at,
                              "comparisons": int(used.size), "relative_allowance": rel_tol},
                   None if ok is not False else {**at, "seed": seed},
                   why or ("" if ok else f"{what} fails"),
                   worst_margin(f"{what}: bound over the actual value", float(used[i]), at) if used.size
                   else None, search=True)


def eq43b_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    rs, meta = runs(ctx)
    eig, row = scalar_fn(F["eig_lower"]), scalar_fn(F["row_lower"])
    b1, a1, w1, b2, a2, w2, ex2 = [], [], [], [], [], [], []
    for i, r in enumerate(rs):
        z0 = r.constants["zeta0"]
        for t, z in enumerate(r.zeta):
            b1.append(float(eig(zeta_0=z0)))
            a1.append(z)
            w1.append({"run": i, "checkpoint": t, "zeta_0": z0})
        bounds = np.broadcast_to(row(zeta_0=z0, x_norm=r.x_norms), r.x_norms.shape)
        b2 += list(bounds)
        a2 += list(r.row_norms)
        w2 += [{"run": i, "x_norm": float(x), "zeta_0": z0} for x in r.x_norms]
        ex2 += list(r.x_norms == 0)
    findings = [_lower_finding("eigenvalues_along_gd", np.array(b1), np.array(a1), w1,
                               "lambda_min(B_k^(t) B_k^(t)T) >= (43b)", ctx.seed),
                _lower_finding("rows_along_gd", np.array(b2), np.array(a2), w2,
                               "||x^T B_k^(t)|| >= the bound after (48)", ctx.seed, exact=np.array(ex2))]
    return combine(findings, {**meta, "x": "x in R^N (B_k is N x H): random directions and the weakest "
                                            "left singular vector of each B_k, ||x|| in " + str(X_NORMS)})


EQ43B = Claim(
    id="yang2024.eq43b",
    title="GD keeps λ_min(B_k Bₖᵀ) ≥ ζ₀/2 (eq. (43b)) and the row bound after (48)",
    paper=PAPER,
    statement=(r"Along GD with Thm. 1's learning rates, $\lambda_{\min}(B_k^{(t)}B_k^{(t)\top})\ge\zeta_0/2$ "
               r"(43b), since '$\forall x\in\mathbb R^K$: $\|x^\top B_k^{(t)}\|_2\ge\|x^\top B_k^{(0)}\|_2-"
               r"\|x^\top(B_k^{(t)}-B_k^{(0)})\|_2\ge\sqrt{\zeta_0/2}$'."),
    assumptions=("Assumptions 1, 2; w^(0) = 0; gamma of (15), eta_Q <= 1/L (17), eta_w = gamma^2 eta_Q",),
    formulas=EQ43B_FORMULAS,
    checks={"symbolic": eq43b_symbolic, "numeric": small_threads(eq43b_numeric)},
    setting=SETTING,
    size_ranges=HEADS_COVER_PROMPT,
    correction=Correction(
        description="after (48): for all x in R^N, ||x^T B_k^(t)||_2 >= sqrt(zeta_0/2) ||x||_2",
        reason="B_k is N x H, so x^T B_k needs x in R^N (not R^K), and the bound must scale with ||x||: "
               "at x = 0 the left side is 0 < sqrt(zeta_0/2); the chain (14), (48) gives "
               "(1 - (1 - 1/sqrt 2)) sqrt(zeta_0) ||x||, whose square at ||x|| = 1 is (43b)",
        formulas={"row_lower": "sqrt(zeta_0/2)*x_norm"}),
)


# ==============================================================================================
# Eq. (49): the PL inequality ||grad_xi l||^2 >= sigma (l - L*) while (43b) holds
# ==============================================================================================
SIGMA_TEXT = "zeta_0*gamma**2/K"


@lru_cache(maxsize=1)
def eq49_chain() -> sympy.Expr:
    """(49): ||grad l||^2 >= sum_{h,k} (d l / d alpha_hk)^2 = (gamma^2/K^2) sum_k u_k^T B_k B_k^T u_k
    (45), u_k = Zbar delta_k, >= (gamma^2/K^2) (zeta_0/2) sum_k ||u_k||^2 (43b as printed) and
    sum_k ||u_k||^2 = 2K (l - L*) (36)."""
    g, z0 = sympy.Symbol("gamma", positive=True), sympy.Symbol("zeta_0", positive=True)
    K = SIZE["K"]
    lam = EQ43B_FORMULAS[0].parse()
    return sympy.simplify((g / K) ** 2 * lam * 2 * K).subs(sympy.Symbol("zeta_0", positive=True), z0)


EQ49_FORMULAS = (
    NamedFormula("sigma", SIGMA_TEXT, (_z0, _gam, _K), equation="(49), (44)", weaker="smaller",
                 proof=eq49_chain,
                 description="sigma in ||grad_xi l(xi)||^2 >= sigma (l(xi) - L*) (sigma of (44))"),
)


def _tight_points(dyn: Dynamics, gen: torch.Generator, gamma: float, count: int):
    """Points where (49) is nearly tight: for random Q, alpha_j solves gamma C_j alpha_j = A_{:,j}
    (delta_j = 0) except at the k with the least lambda_min(B_k B_k^T), where Zbar delta_k is its
    weakest eigenvector (C_j has full row rank when H >= N: the least-norm solution)."""
    inst = dyn.inst
    Zbar_inv = torch.tensor(np.linalg.inv(dyn.Zbar))
    for i in range(count):
        Q = (0.5, 1.5)[i % 2] * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64)
        with torch.no_grad():
            S = attention_weights(dyn.V, dyn.V_all, Q)
            B = dyn.B(Q)
            lam, U = torch.linalg.eigh(B @ B.mT)
            k = int(lam[:, 0].argmin())
            target = dyn.A.clone()
            target[:, k] += (Zbar_inv @ U[k, :, 0]) * (0.3 + i)
            alpha = torch.stack([torch.linalg.pinv(head_matrix(S, j)) @ target[:, j] for j in range(inst.K)], 1) / gamma
        yield Q, alpha, float(lam[k, 0])


def eq49_numeric(ctx: Context) -> TierResult:
    f = scalar_fn(ctx.formulas["sigma"])
    findings = []
    # 1. along GD at Thm. 1's rates, with zeta_0 of the run ((43b) holds along it)
    rs, meta = runs(ctx)
    ratios = []
    for i, r in enumerate(rs):
        sig = float(f(**_run_scalars(r, meta["sizes"])))
        for t in range(len(r.grad_sq)):
            ratios.append((sig * r.excess[t], r.grad_sq[t], {"run": i, "step": t, "sigma": sig}))
    findings.append(_bound_finding("pl_along_gd", ratios, "(49) along GD", "sigma (l - L*) over ||grad l||^2",
                                   ctx.seed, 1e-10))
    # 2. at points built to make it tight, zeta_0 = 2 min_k lambda_min(B_k B_k^T) ((43b) with equality)
    inst = make_instance(ctx)
    tight = []
    if inst.H >= inst.N:
        dyn = dynamics(inst)
        gen = torch.Generator().manual_seed(ctx.seed_for("eq49-tight"))
        for scale in (0.05, 1.0, 10.0):                 # features scaled: zeta_0 from ~1e-4 to ~10
            d2 = _scaled(dyn, scale)
            for gamma in (1.0, 1e3):
                for Q, alpha, lam in _tight_points(d2, gen, gamma, 2):
                    ex, gQ, ga = _grads_xi(d2, Q, alpha, gamma)
                    ex = float(ex)
                    z0 = 2 * min(lam, d2.zeta(Q))
                    sig = float(f(zeta_0=z0, gamma=gamma, K=inst.K))
                    tight.append((sig * ex, float((gQ ** 2).sum() + (ga ** 2).sum()),
                                  {"feature_scale": scale, "gamma": gamma, "zeta_0": z0, "excess": ex}))
        findings.append(_bound_finding("pl_at_tight_points", tight, "(49) at its near-tight points",
                                       "sigma (l - L*) over ||grad l||^2", ctx.seed, 1e-10))
    return combine(findings, {**meta, "tight_points": len(tight)})


def _scaled(dyn: Dynamics, scale: float) -> Dynamics:
    """The instance with every feature z_k multiplied by ``scale`` (the tokens unchanged)."""
    from dataclasses import replace as _replace
    from models.softmax import Dictionary

    inst = dyn.inst
    D = inst.dictionary
    return dynamics(_replace(inst, dictionary=Dictionary(D.V_all, D.Zhat * scale, D.N)))


def eq49_symbolic(ctx: Context) -> TierResult:
    ch = eq49_chain()
    f = _lower_chain_finding(ctx, "sigma", ch, "(45), (43b), (36)")
    return combine([f], steps=[step("(49)", r"\|\nabla\ell\|^2\ge\frac{\gamma^2}{K^2}\sum_k(\bar Z\delta_k)^\top B_kB_k^\top"
                                    r"\bar Z\delta_k\ge " + sympy.latex(ch) + r"\,(\ell-\mathcal L^\star)",
                                    "(45); lambda_min >= zeta_0/2 as (43b) prints it; (36).")])


EQ49 = Claim(
    id="yang2024.eq49",
    title="The Polyak-Łojasiewicz inequality (49)",
    paper=PAPER,
    statement=(r"While $\lambda_{\min}(B_kB_k^\top)\ge\zeta_0/2$ for all $k$: $\|\nabla_\xi\ell(\xi)\|_F^2\ge"
               r"\sigma(\ell(\xi)-\mathcal L^\star)$ with $\sigma=\zeta_0\gamma^2/K$ (written $\nabla_\theta$ in (49))."),
    assumptions=("(43b) at the point: lambda_min(B_k B_k^T) >= zeta_0/2 for every k",),
    formulas=EQ49_FORMULAS,
    checks={"symbolic": eq49_symbolic, "numeric": small_threads(eq49_numeric)},
    setting=SETTING,
    size_ranges=HEADS_COVER_PROMPT,
)


# ==============================================================================================
# Eqs. (63)-(64): one GD step, the descent lemma and the contraction
# ==============================================================================================
_Ls = FormulaSymbol("L_smooth", positive=True)
_sig = FormulaSymbol("sigma", positive=True)


@lru_cache(maxsize=1)
def eq64_chains() -> dict:
    """(63): l(y) - l(x) - <grad l(x), y - x> = int_0^1 <grad l(x + s(y - x)) - grad l(x), y - x> ds
    <= L ||y - x||^2 int_0^1 s ds; (64): y - x = -eta_Q grad l(x) gives a decrease of
    (eta_Q - q eta_Q^2) ||grad l||^2 with q the printed coefficient of (63), at L <= 1/eta_Q; then
    (49) as printed, ||grad l||^2 >= sigma (l - L*)."""
    L, s, eta, sig = (sympy.Symbol(n, positive=True) for n in ("L_smooth", "s", "eta_Q", "sigma"))
    quad = sympy.integrate(L * s, (s, 0, 1))
    q = EQ64_FORMULAS[0].parse()
    decrease = sympy.simplify(eta - q.subs(L, 1 / eta) * eta ** 2)    # the worst case L = 1/eta_Q
    dec = EQ64_FORMULAS[1].parse()
    return {"quad_coeff": quad, "decrease": decrease, "contraction": 1 - dec * sig}


EQ64_FORMULAS = (
    NamedFormula("quad_coeff", "L_smooth/2", (_Ls,), equation="(63)", weaker="larger",
                 proof=lambda: eq64_chains()["quad_coeff"],
                 description="the coefficient of ||xi^(t) - xi^(t-1)||^2 in the descent lemma (63)"),
    NamedFormula("decrease", "eta_Q/2", (_etaQ,), equation="(64)", weaker="smaller",
                 proof=lambda: eq64_chains()["decrease"],
                 description="l(xi^t) - L* <= l(xi^(t-1)) - L* - decrease ||grad l(xi^(t-1))||^2 when eta_Q <= 1/L"),
    NamedFormula("contraction", "1 - eta_Q*sigma/2", (_etaQ, _sig), equation="(64)", weaker="larger",
                 proof=lambda: eq64_chains()["contraction"],
                 description="l(xi^t) - L* <= contraction (l(xi^(t-1)) - L*) (sigma of (44))"),
)


def eq64_symbolic(ctx: Context) -> TierResult:
    ch = eq64_chains()
    findings = [_lower_chain_finding(ctx, "quad_coeff", ch["quad_coeff"], "(63)", upper=True),
                _lower_chain_finding(ctx, "decrease", ch["decrease"], "(64) with (63), eta_Q <= 1/L"),
                _lower_chain_finding(ctx, "contraction", ch["contraction"], "(64) with (49)", upper=True)]
    steps = [step("(63)", r"\ell(y)-\ell(x)-\langle\nabla\ell(x),y-x\rangle\le L\|y-x\|^2\int_0^1 s\,ds = "
                  + sympy.latex(ch["quad_coeff"]) + r"\|y-x\|^2", "L-smoothness (60) along the segment."),
             step("(64)", r"y-x=-\eta_Q\nabla\ell(x):\ \ell(y)\le\ell(x)-" + sympy.latex(ch["decrease"])
                  + r"\|\nabla\ell\|^2\le\Big(" + sympy.latex(ch["contraction"]) + r"\Big)(\ell(x)-\mathcal L^\star)",
                  "eta_Q <= 1/L, then (49).")]
    return combine(findings, steps=steps)


def eq64_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    q, dec, con = (scalar_fn(F[n]) for n in ("quad_coeff", "decrease", "contraction"))
    rs, meta = runs(ctx)
    r63, r64a, r64b = [], [], []
    for i, r in enumerate(rs):
        c = r.constants
        eta, L = c["eta_Q"], 1.0 / c["eta_Q"]                 # Thm. 1 takes eta_Q = 1/L, L of (17)
        sig = c["zeta0"] * c["gamma"] ** 2 / meta["sizes"]["K"]
        qv, dv, cv = float(q(L_smooth=L)), float(dec(eta_Q=eta)), float(con(eta_Q=eta, sigma=sig))
        for t in range(1, len(r.excess)):
            prev, now, g2 = r.excess[t - 1], r.excess[t], r.grad_sq[t - 1]
            tol = 1e-12 * prev                                 # rounding of the loss values
            at = {"run": i, "step": t}
            r63.append((now - prev + eta * g2 - tol, qv * eta ** 2 * g2, at))     # the curvature term
            r64a.append((now - tol, prev - dv * g2, at))
            r64b.append((now - tol, cv * prev, at))
    findings = [_bound_finding("descent_lemma_63", r63, "(63)", "the curvature term over (L/2)||dxi||^2", ctx.seed, 0.0),
                _bound_finding("decrease_64", r64a, "(64)'s first inequality", "l_t - L* over its bound", ctx.seed, 0.0),
                _bound_finding("contraction_64", r64b, "(64)'s contraction", "l_t - L* over its bound", ctx.seed, 0.0)]
    return combine(findings, {**meta, "L_smooth": "1/eta_Q = L of (17) (Thm. 1 sets eta_Q = 1/L)"})


EQ64 = Claim(
    id="yang2024.eq64",
    title="One GD step: the descent lemma (63) and the contraction (64)",
    paper=PAPER,
    statement=(r"$\ell(\xi^{t})-\mathcal L^\star\le\ell(\xi^{t-1})-\mathcal L^\star+\langle\nabla\ell(\xi^{t-1}),"
               r"\xi^t-\xi^{t-1}\rangle+\frac L2\|\xi^t-\xi^{t-1}\|^2$ (63), and with $\eta_Q\le1/L$: "
               r"$\ell(\xi^t)-\mathcal L^\star\le\ell(\xi^{t-1})-\mathcal L^\star-\frac{\eta_Q}2\|\nabla\ell\|_F^2\le"
               r"(1-\frac{\eta_Q\sigma}2)(\ell(\xi^{t-1})-\mathcal L^\star)$ (64)."),
    assumptions=("GD (41) with Thm. 1's learning rates: gamma of (15), eta_Q = 1/L of (17)",),
    formulas=EQ64_FORMULAS,
    checks={"symbolic": eq64_symbolic, "numeric": small_threads(eq64_numeric)},
    setting=SETTING,
    size_ranges=HEADS_COVER_PROMPT,
)
