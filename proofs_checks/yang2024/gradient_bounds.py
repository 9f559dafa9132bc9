"""yang2024 Lemmas 7-10: the gradient, Lipschitz and norm bounds of the reparametrised loss and its
smoothness constant L of (61), searched numerically and rebuilt by the symbolic tiers from the
proofs' chains of steps (Lemmas 8 and 10)."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Mapping, Sequence

import sympy
import torch

from models.device import randn
from models.softmax import random_dictionary, softmax_columns
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, settle_le, step, worse
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit.ratio_probe import (Admits, probed, proof_margin, ratio_at_least_one, smallest_ratio,
                                worst_margin)
from .setting import BUDGET_TAU, Instance, PAPER, SETTING, SIZE, make_instance, small_threads
from .common import _H, _K, _N, float_value
from .softmax import LEMMA2
from .reparametrisation import Dynamics, _grads, dynamics, init_Q


# ==============================================================================================
# Lemmas 7-9: gradient, Lipschitz and norm bounds
# ==============================================================================================
_gam = FormulaSymbol("gamma", positive=True)
_alp = FormulaSymbol("alpha", positive=True)
_fbar = FormulaSymbol("fbar_max", positive=True)
_exc = FormulaSymbol("excess", positive=True)
_Zbn = FormulaSymbol("Zbar_norm", positive=True)
_An = FormulaSymbol("A_norm", positive=True)
_dQh = FormulaSymbol("dQ_h", positive=True)
_dQ = FormulaSymbol("dQ", positive=True)
_dak = FormulaSymbol("dalpha_k", positive=True)

LEMMA7_FORMULAS = (
    NamedFormula("grad_bound", "2*sqrt(2)*gamma*alpha*fbar_max*sqrt(excess)", (_gam, _alp, _fbar, _exc),
                 equation="(42)", description="bound on ||d l / d Q_h||_F", weaker="larger"),
)


def _random_points(inst: Instance, gen: torch.Generator, count: int):
    """(Q, w) pairs at several scales: near-uniform and peaked attention, small and large w."""
    for i in range(count):
        qs = (0.3, 1.0, 3.0)[i % 3]
        ws = (0.1, 1.0, 5.0)[(i // 3) % 3]
        Q = qs * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64)
        w = ws * randn(inst.H, inst.K, generator=gen, dtype=torch.float64)
        yield Q, w


def _extreme_points(inst: Instance, gen: torch.Generator):
    """(Q, w) where the bounds of Lemmas 8, 9 are nearly tight: w = 0 (Ahat = 0, delta_k = -A e_k),
    and identical peaked heads with equal-sign w_hk (Ahat e_k = sum_h w_hk s_k -> H gamma alpha e_j)."""
    Q1 = 8.0 * randn(1, inst.d, inst.d, generator=gen, dtype=torch.float64)
    yield 0.3 * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64), \
        torch.zeros(inst.H, inst.K, dtype=torch.float64)
    for ws in (1.0, 30.0):
        yield Q1.expand(inst.H, inst.d, inst.d).clone(), torch.full((inst.H, inst.K), ws, dtype=torch.float64)


def _ratio(lhs: float, bound: float) -> float:
    """lhs / bound for a bound on a norm; a bound <= 0 below a positive lhs is exceeded infinitely;
    NaN where either is NaN (it decides nothing: not an infinite excess)."""
    if lhs != lhs or bound != bound:
        return math.nan
    if bound > 0:
        return lhs / bound
    return 0.0 if lhs <= 0 and bound == 0 else math.inf


def _exceeds_one(r: float) -> tuple:
    """settle_le(r, 1), but an infinite ratio (``_ratio``: a bound <= 0 below a positive norm)
    is a decided failure, not a number that overflowed."""
    return (False, "") if r == math.inf else settle_le(r, 1.0)


def _largest(ratios) -> float:
    """The largest of some ratios (each >= 0) as the search keeps it (``worse``): a NaN is kept
    unless a ratio exceeds 1, where Python's ``max`` would keep or drop it by its position."""
    out = 0.0
    for r in ratios:
        if worse(r, out, 1.0):
            out = r
    return out


def lemma7_symbolic(ctx: Context) -> TierResult:
    K = SIZE["K"]
    c83 = 2                                   # ||(v_j - v_i) v_k^T|| <= 2 for unit tokens (83)
    # (1/K) sum_k ||Zbar delta_k|| <= (1/K) sqrt(K) sqrt(sum_k ||Zbar delta_k||^2) = sqrt(2 (l - L*) / K) * sqrt(K) / sqrt(K)
    chain = sympy.simplify(c83 / K * sympy.sqrt(K) * sympy.sqrt(2 * K))
    g, a, fb, ex = (sympy.Symbol(n, positive=True) for n in ("gamma", "alpha", "fbar_max", "excess"))
    derived = chain * g * a * fb * sympy.sqrt(ex)            # (82)-(84): the bound the proof gives
    paper = sympy.sympify(ctx.formulas["grad_bound"])
    ok, ce = ratio_at_least_one(paper / derived, ctx.rng("lemma7-symbolic"))
    steps = [step("Gradient (82)", r"\frac{\partial\ell}{\partial Q_h} = \frac\gamma K\sum_{k,j}(\bar Z\delta_k)^\top"
                  r"\bar z_j\,\alpha_{h,k}s^h_{jk}\sum_i s^h_{ik}(v_j-v_i)v_k^\top",
                  "checked against autograd in the numeric tier"),
             step("Chain (83)-(84)", r"\Big\|\frac{\partial\ell}{\partial Q_h}\Big\|_F \le \frac{2\gamma\alpha\bar f_{\max}}"
                  r"{K}\sqrt K\Big(\sum_k\|\bar Z\delta_k\|^2\Big)^{1/2} = " + sympy.latex(chain) +
                  r"\,\gamma\alpha\bar f_{\max}\sqrt{\ell-\mathcal L^\star}",
                  "sum_j s_jk = 1, Cauchy-Schwarz over k, sum_k ||Zbar delta_k||^2 = 2K (l - L*).")]
    return combine([Finding("bound_from_the_proof", ok, {"derived_bound": str(derived),
                                                         "paper_bound": str(paper)},
                            None if ok is not False else {"derived_bound": str(derived),
                                                          "paper_bound": str(paper), **(ce or {})},
                            "" if ok else ce["why"] if ok is None else
                            "(42) is below the bound the proof (82)-(84) gives",
                            proof_margin(paper / derived, ctx.rng("lemma7-symbolic-margin")),
                            proof_step="(82)-(84)", search=probed(paper / derived))],
                   steps=steps)


def lemma7_numeric(ctx: Context) -> TierResult:
    inst = make_instance(ctx)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(ctx.seed_for("lemma7"))
    F = ctx.formulas["grad_bound"]
    worst, where = 0.0, None
    count = 0
    for gamma in (0.1, 1.0, 10.0):
        for Q, w in _random_points(inst, gen, 9):
            ex, gQ, _ = _grads(dyn, Q, w)
            alpha = float(w.abs().max()) / gamma
            bound = float_value(F, {"gamma": gamma, "alpha": alpha, "fbar_max": dyn.fbar_max,
                                    "excess": ex})
            norms = gQ.flatten(1).norm(dim=1)                 # ||d l / d Q_h||_F, h = 1..H
            r = _ratio(float(norms.max()), bound)
            count += 1
            if worse(r, worst, 1.0):  # a NaN is kept: undecided, never a pass
                worst, where = r, {"gamma": gamma, "alpha": alpha, "excess": ex,
                                   "grad_norm": float(norms.max()), "bound": bound}
    ok, undecided = _exceeds_one(worst)
    return combine([Finding("bound_holds", ok, {"worst_ratio_grad_over_bound": worst, "points": count,
                                                 "worst_point": where},
                            None if ok is not False else {"instance": inst.as_dict(), **where, "seed": ctx.seed},
                            undecided or ("" if ok else f"a gradient exceeds (42) by a factor {worst:.3g}"),
                            worst_margin("||d l / d Q_h||_F over (42)", worst, where),
                            search=True)],
                   {"instance": inst.as_dict()})


LEMMA7 = Claim(
    id="yang2024.lemma7",
    title="Gradient norm bound (Lemma 7, eq. (42))",
    paper=PAPER,
    statement=(r"If $|\alpha_{h,k}|\le\alpha$ then $\|\partial\ell/\partial Q_h\|_F\le 2\sqrt2\gamma\alpha"
               r"\bar f_{\max}\sqrt{\ell(\xi)-\mathcal L^\star}$."),
    assumptions=("unit-norm tokens", "L* the infimum of the loss"),
    formulas=LEMMA7_FORMULAS,
    checks={"symbolic": lemma7_symbolic, "numeric": small_threads(lemma7_numeric)},
    setting=SETTING,
)

LEMMA8_FORMULAS = (
    NamedFormula("b_lip", "2*Zbar_norm*dQ_h", (_Zbn, _dQh), equation="(50)",
                 description="bound on ||b_k^h(theta) - b_k^h(theta')||_2", weaker="larger",
                 proof=lambda: lemma8_chain()["b_lip"]),
    NamedFormula("delta_lip", "2*gamma*sqrt(H)*alpha*dQ + gamma*sqrt(H)*dalpha_k",
                 (_gam, _H, _alp, _dQ, _dak), equation="(51)",
                 description="bound on ||delta_k(theta) - delta_k(theta')||_2", weaker="larger",
                 proof=lambda: lemma8_chain()["delta_lip"]),
)
LEMMA9_FORMULAS = (
    NamedFormula("b_bound", "Zbar_norm", (_Zbn,), equation="(52)", description="bound on ||b_k^h||_2",
                 weaker="larger"),
    NamedFormula("delta_bound", "gamma*H*alpha + A_norm", (_gam, _H, _alp, _An), equation="(53)",
                 description="bound on ||delta_k||_2", weaker="larger"),
)


def _bk_delta(dyn: Dynamics, Q: torch.Tensor, w: torch.Tensor):
    B = dyn.B(Q)                                                # (K, N, H): columns b_k^h
    delta = dyn.Ahat(Q, w) - dyn.A                              # (N, K): columns delta_k
    return B, delta


def _bounds_points(inst: Instance, F, gen: torch.Generator, which: str, worst: dict, where: dict) -> None:
    """Update worst[name] (the largest lhs / bound) over the points and three gammas."""
    dyn = dynamics(inst)
    pts = list(_random_points(inst, gen, 9)) + list(_extreme_points(inst, gen))
    for gamma in (0.1, 1.0, 10.0):
        for i, (Q, w) in enumerate(pts):
            B, delta = _bk_delta(dyn, Q, w)
            al = w / gamma
            if which == "lemma9":
                alpha = float(al.abs().max())
                vals = {"gamma": gamma, "H": inst.H, "alpha": alpha, "Zbar_norm": dyn.Zbar_norm,
                        "A_norm": dyn.A_norm}
                ratios = {"b_bound": _ratio(float(B.norm(dim=1).max()), float_value(F["b_bound"], vals)),
                          "delta_bound": _ratio(float(delta.norm(dim=0).max()),
                                                float_value(F["delta_bound"], vals))}
            else:
                scale = (1e-3, 0.1, 1.0)[i % 3]
                Q2 = Q + scale * randn(Q.shape, generator=gen, dtype=torch.float64)
                w2 = w + scale * randn(w.shape, generator=gen, dtype=torch.float64)
                B2, delta2 = _bk_delta(dyn, Q2, w2)
                al2 = w2 / gamma
                alpha = max(float(al.abs().max()), float(al2.abs().max()))
                dQh = (Q - Q2).flatten(1).norm(dim=1)               # (H,)
                dQ = float(dQh.norm())
                lhs_b = (B - B2).norm(dim=1)                         # (K, H): ||b_k^h - b_k^h'||
                rhs_b = torch.tensor([float_value(F["b_lip"], {"Zbar_norm": dyn.Zbar_norm, "dQ_h": float(x)})
                                      for x in dQh], dtype=torch.float64)
                rb = _largest(_ratio(float(x), float(y)) for x, y in zip(lhs_b.flatten(), rhs_b.expand_as(lhs_b).flatten()))
                lhs_d = (delta - delta2).norm(dim=0)                 # (K,)
                dal = (al - al2).norm(dim=0)                         # (K,)
                rhs_d = torch.tensor([float_value(F["delta_lip"], {
                    "gamma": gamma, "H": inst.H, "alpha": alpha, "dQ": dQ, "dalpha_k": float(x)})
                    for x in dal], dtype=torch.float64)
                rd = _largest(_ratio(float(x), float(y)) for x, y in zip(lhs_d, rhs_d))
                ratios = {"b_lip": rb, "delta_lip": rd}
            for name, r in ratios.items():
                if worse(r, worst.get(name, 0.0), 1.0):  # a NaN is kept: undecided, never a pass
                    worst[name] = r
                    where[name] = {"gamma": gamma, "H": inst.H, "point": i, "ratio": r}


def _bounds_numeric(ctx: Context, which: str) -> TierResult:
    """Lemmas 8, 9 at random and near-tight points of the quick instance and of the same
    dictionary with one head (H enters the bounds; ||A||_2 > 1 there tells H from a constant)."""
    sizes = SETTING.resolve(ctx.budget.name, ctx.sizes)
    F = ctx.formulas
    gen = torch.Generator().manual_seed(ctx.seed_for(which))
    worst = {}
    where = {}
    for inst in (make_instance(ctx, sizes=sizes), make_instance(ctx, sizes={**sizes, "H": 1})):
        _bounds_points(inst, F, gen, which, worst, where)
    inst = make_instance(ctx, sizes=sizes)
    points = 2 * 3 * (9 + 3)                  # two instances, three gammas, 12 points
    findings = []
    for name, r in worst.items():
        ok, undecided = _exceeds_one(r)
        findings.append(Finding(name, ok, {"worst_ratio_lhs_over_bound": r, "at": where[name],
                                           "points": points},
                                None if ok is not False else {"instance": inst.as_dict(), **where[name], "seed": ctx.seed},
                                undecided or ("" if ok else f"{name} is exceeded by a factor {r:.3g}"),
                                worst_margin(f"the norm {name} bounds over {name}", r, where[name]),
                                search=True))
    return combine(findings, {"instance": inst.as_dict()})


# ---------------------------------------------------------------------------------------------
# Proof chains of Lemmas 8-10: every constant of a step is computed here (or read from the named
# formula of the lemma the step cites), and the printed bound must be at least the chain's bound.
# ---------------------------------------------------------------------------------------------
UNIT = sympy.Integer(1)   # ||v_k||_2 of every token: the dictionary's tokens have unit norm


def _l2_over_l1() -> sympy.Expr:
    """The least c with ||x||_2 <= c ||x||_1 (any length): with a_i = |x_i|,
    (sum a_i)^2 - sum a_i^2 = 2 sum_{i<j} a_i a_j has nonnegative coefficients, and e_1 attains it."""
    a = sympy.symbols("a0:4", nonnegative=True)
    gap = sympy.Poly(sympy.expand(sum(a) ** 2 - sum(x ** 2 for x in a)), *a)
    if any(c < 0 for c in gap.coeffs()):
        raise RuntimeError("||x||_2 <= ||x||_1: the expansion has a negative coefficient")
    e1 = (1, 0, 0, 0)
    return sympy.sqrt(sum(x ** 2 for x in e1)) / sum(e1)


def _softmax_l1() -> sympy.Expr:
    """||softmax(u)||_1 = sum_j softmax(u)_j, by sympy for a symbolic u of length 3."""
    u = sympy.symbols("u0:3", real=True)
    total = sympy.simplify(sum(softmax_columns(sympy.Matrix(u))))
    if total.free_symbols:
        raise RuntimeError(f"the entries of a softmax sum to {total}, not a constant")
    return total


def _bilinear_over_frobenius() -> sympy.Expr:
    """The constant c in |v^T M u| <= c ||M||_F for unit tokens v, u: Cauchy-Schwarz on vec(M)
    and vec(v u^T) (Lagrange's identity, by sympy at d = 2), ||v u^T||_F = ||v||_2 ||u||_2."""
    v = sympy.Matrix(sympy.symbols("v0:2", real=True))
    u = sympy.Matrix(sympy.symbols("u0:2", real=True))
    M = sympy.Matrix(2, 2, sympy.symbols("M0:4", real=True))
    a, b = list(M), list(v * u.T)
    lagrange = sum((a[i] * b[j] - a[j] * b[i]) ** 2 for i in range(4) for j in range(i + 1, 4))
    cs_gap = sympy.expand(sum(x ** 2 for x in a) * sum(x ** 2 for x in b) - sum(x * y for x, y in zip(a, b)) ** 2
                          - lagrange)
    outer = sympy.expand(sum(x ** 2 for x in b) - (v.T * v)[0] * (u.T * u)[0])
    if cs_gap != 0 or outer != 0 or sympy.expand((v.T * M * u)[0] - sum(x * y for x, y in zip(a, b))) != 0:
        raise RuntimeError("|v^T M u| <= ||M||_F ||v|| ||u||: an identity failed")
    return UNIT * UNIT                                         # ||v_j||_2 ||v_k||_2


def _cauchy_schwarz(n: sympy.Expr) -> sympy.Expr:
    """sum_{i<=n} x_i <= ||1_n||_2 ||x||_2: the constant ||1_n||_2 = sqrt(sum_{i<=n} 1)."""
    i = sympy.Symbol("i", positive=True, integer=True)
    return sympy.sqrt(sympy.summation(1, (i, 1, n)))


def _lemma2_C() -> sympy.Expr:
    """Lemma 2's constant C of (30), from its named formula (the chain cites the lemma)."""
    return next(f for f in LEMMA2.formulas if f.name == "C").parse()


@lru_cache(maxsize=1)
def lemma8_chain() -> dict:
    """The bounds the proofs of Lemmas 8 and 9 give, as sympy expressions in the formulas' symbols,
    with the chain's constants (each named for its step)."""
    H = SIZE["H"]
    g, a, Zb, An, dQh, dQ, dak = (sympy.Symbol(n, positive=True) for n in
                                  ("gamma", "alpha", "Zbar_norm", "A_norm", "dQ_h", "dQ", "dalpha_k"))
    l2_l1 = _l2_over_l1()                 # ||x||_2 <= ||x||_1, second line of (46)
    C = _lemma2_C()                       # Lemma 2 (30), third line of (46)
    tok = _bilinear_over_frobenius()      # |v_j^T (Q_h - Q_h') v_k| <= ||Q_h - Q_h'||_F, last line of (46)
    s_lip = l2_l1 * C * tok               # (46): ||s_k^h(theta) - s_k^h(theta')||_2 <= s_lip ||Q_h - Q_h'||_F
    s_norm = l2_l1 * _softmax_l1()        # ||s_k^h||_2 <= ||s_k^h||_1 = 1
    cs_H = _cauchy_schwarz(H)             # sum_h x_h <= sqrt(H) (sum_h x_h^2)^{1/2}
    sum_H = sympy.summation(1, (sympy.Symbol("h", positive=True, integer=True), 1, H))
    return {
        "s_lip": s_lip, "s_norm": s_norm,
        # (50): b_k^h = Zbar s_k^h, so ||b - b'||_2 <= ||Zbar||_2 ||s - s'||_2 and (46)
        "b_lip": Zb * s_lip * dQh,
        # (51): the two sums of the proof, |alpha_hk| <= alpha and (46) in the first,
        # ||s'||_2 <= 1 in the second, then Cauchy-Schwarz over h in both
        "delta_lip": g * a * s_lip * cs_H * dQ + g * s_norm * cs_H * dak,
        # (52), (53) (Lemma 9): ||b_k^h|| <= ||Zbar|| ||s||_2, ||delta_k|| <= gamma sum_h |alpha_hk| ||s||_2 + ||A e_k||
        "b_bound": Zb * s_norm, "delta_bound": g * sum_H * a * s_norm + An,
        "constants": {"l2_over_l1": l2_l1, "lemma2_C": C, "unit_tokens_bilinear": tok,
                      "softmax_l1": _softmax_l1(), "cauchy_schwarz_H": cs_H},
    }


def _chain_findings(ctx: Context, derived: Mapping[str, sympy.Expr], names: Sequence[str],
                    tag: str, where: Mapping[str, str], admits: Admits | None = None
                    ) -> list[Finding]:
    """One proof finding per formula: is the printed bound >= the chain's bound at every positive
    point?  It says whether the proof (the step ``where[name]``) establishes the printed bound,
    not whether the bound is true (the numeric tiers test that)."""
    rng = ctx.rng(tag)
    findings = []
    for name in names:
        paper = sympy.sympify(ctx.formulas[name])
        ok, ce = ratio_at_least_one(paper / derived[name], rng, admits)
        ev = {"derived_bound": str(derived[name]), "paper_bound": str(paper)}
        if not ok and ce and "at" in ce:   # the first point found may be barely below; show the worst
            ce = {**ce, "smallest_ratio_found": smallest_ratio(paper / derived[name], rng,
                                                                admits=admits)}
        low = (ce or {}).get("smallest_ratio_found", {}).get("ratio_float", (ce or {}).get("ratio_float"))
        margin = proof_margin(paper / derived[name], ctx.rng(tag + "-margin"),
                               (ce or {}).get("smallest_ratio_found"), admits)
        findings.append(Finding(name, ok, ev, None if ok is not False else {**ev, **(ce or {})},
                                "" if ok else ce["why"] if ok is None else f"{name} is below the bound the proof {where[name]} gives "
                                              f"at a positive point" + (f" (paper / proof = {low:.3g})"
                                                                        if low is not None else ""),
                                margin, proof_step=where[name],
                                search=probed(paper / derived[name])))
    return findings


def lemma8_symbolic(ctx: Context) -> TierResult:
    ch = lemma8_chain()
    findings = _chain_findings(ctx, ch, ("b_lip", "delta_lip"), "lemma8-symbolic",
                               {"b_lip": "(46)", "delta_lip": "(51)"})
    c = ch["constants"]
    lx = sympy.latex
    steps = [
        step("Softmax (46)", r"\|s_k^h-s_k^{h\prime}\|_2\le\|s_k^h-s_k^{h\prime}\|_1\le C\max_j|v_j^\top(Q_h-Q_h')v_k|"
             r"\le " + lx(ch["s_lip"]) + r"\,\|Q_h-Q_h'\|_F",
             f"||x||_2 <= {c['l2_over_l1']} ||x||_1 (the expansion of (sum |x_i|)^2); C = {c['lemma2_C']} from "
             f"Lemma 2's formula C (30); |v_j^T M v_k| <= {c['unit_tokens_bilinear']} ||M||_F by Cauchy-Schwarz "
             f"on vec(M), vec(v_j v_k^T) with unit tokens."),
        step("(50)", r"\|b_k^h-b_k^{h\prime}\|_2\le\|\bar Z\|_2\|s_k^h-s_k^{h\prime}\|_2\le " + lx(ch["b_lip"]),
             "b_k^h = Zbar s_k^h."),
        step("(51)", r"\|\delta_k-\delta_k'\|_2\le\gamma\sum_h|\alpha_{h,k}|\|s_k^h-s_k^{h\prime}\|_2+\gamma\sum_h"
             r"|\alpha_{h,k}-\alpha_{h,k}'|\|s_k^{h\prime}\|_2\le " + lx(ch["delta_lip"]),
             f"|alpha_hk| <= alpha and (46) in the first sum; ||s||_2 <= ||s||_1 = {c['softmax_l1']} in the "
             f"second; Cauchy-Schwarz over the H heads gives {c['cauchy_schwarz_H']} in both."),
    ]
    return combine(findings, {"chain_constants": {k: str(v) for k, v in c.items()}}, steps=steps)


LEMMA8 = Claim(
    id="yang2024.lemma8",
    title="Lipschitzness of b_kʰ and δ_k (Lemma 8, eqs. (50), (51))",
    paper=PAPER,
    statement=(r"$\|b_k^h(\theta)-b_k^h(\theta')\|_2\le2\|\bar Z\|_2\|Q_h-Q_h'\|_F$ and "
               r"$\|\delta_k^\theta-\delta_k^{\theta'}\|_2\le2\gamma\sqrt H\alpha(\sum_h\|Q_h-Q_h'\|_F^2)^{1/2}"
               r"+\gamma\sqrt H\|\alpha_k-\alpha_k'\|_2$ when $|\alpha_{h,k}|,|\alpha'_{h,k}|\le\alpha$."),
    assumptions=("unit-norm tokens",),
    formulas=LEMMA8_FORMULAS,
    checks={"symbolic": lemma8_symbolic, "numeric": small_threads(lambda ctx: _bounds_numeric(ctx, "lemma8"))},
    setting=SETTING,
)

LEMMA9 = Claim(
    id="yang2024.lemma9",
    title="Norm bounds on b_kʰ and δ_k (Lemma 9, eqs. (52), (53))",
    paper=PAPER,
    statement=r"$\|b_k^h\|_2\le\|\bar Z\|_2$ and $\|\delta_k^\theta\|_2\le\gamma H\alpha+\|A\|_2$.",
    assumptions=("|alpha_{h,k}| <= alpha",),
    formulas=LEMMA9_FORMULAS,
    checks={"numeric": small_threads(lambda ctx: _bounds_numeric(ctx, "lemma9"))},
    setting=SETTING,
)


# ==============================================================================================
# Lemma 10: smoothness of the loss, L of eq. (61)
# ==============================================================================================
L61_TEXT = ("2*((1/K)*(2*gamma*Zbar_norm**2*(2*gamma*H*alpha + A_norm))**2 + gamma**4/K**2*H**2*Zbar_norm**4)"
            " + 8*gamma*fbar_max*Zbar_norm*Max(1, (2*sqrt(K)*alpha)**2)*((alpha*gamma*H)**2"
            " + 4*N*(alpha*gamma*H + A_norm)**2)")
L61_CORRECTED = ("2*((1/K)*(2*gamma*Zbar_norm**2*(2*gamma*H*alpha + A_norm))**2 + gamma**4/K**2*H**2*Zbar_norm**4)"
                 " + 16*gamma**2*fbar_max**2*Zbar_norm**2/K*Max(1, (2*sqrt(K)*alpha)**2)*((alpha*gamma*H)**2"
                 " + 4*N*(alpha*gamma*H + A_norm)**2)")
LEMMA10_FORMULAS = (
    NamedFormula("L_sq", L61_TEXT, (_gam, _alp, _H, _K, _N, _Zbn, _fbar, _An), equation="(61)",
                 description="L^2, the square of the smoothness constant of l in xi", weaker="larger",
                 proof=lambda: lemma10_chain()["L_sq"]),
)
LEMMA10_SIZES = {"quick": {"K": 6, "d": 3, "m": 2, "N": 3, "H": 3},
                 "default": {"K": 8, "d": 3, "m": 2, "N": 3, "H": 4},
                 "paper": {"K": 10, "d": 4, "m": 3, "N": 4, "H": 6}}


def _ell_flat(dyn: Dynamics, gamma: float):
    inst = dyn.inst
    nQ = inst.H * inst.d * inst.d

    def ell(xi: torch.Tensor) -> torch.Tensor:
        Q = xi[:nQ].reshape(inst.H, inst.d, inst.d)
        al = xi[nQ:].reshape(inst.H, inst.K)
        return dyn.excess(Q, gamma * al)

    return ell, nQ


def _lemma10_point(dyn, gamma, alpha, gen, q_scale):
    inst = dyn.inst
    Q = q_scale * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64)
    signs = torch.sign(randn(inst.H, inst.K, generator=gen, dtype=torch.float64))
    return torch.cat([Q.reshape(-1), (0.9 * alpha * signs).reshape(-1)])


def _explicit_pair(ell, xi, v, alpha, nQ, L):
    """xi' = xi + t v along the top Hessian direction; both stay in |alpha_hk| <= alpha."""
    grad = torch.func.grad(ell)
    g0 = grad(xi)
    best = None
    for t in (1e-4, 1e-5, 1e-6):
        step_ = t * max(1.0, float(xi.abs().max())) * v
        if float((xi[nQ:] + step_[nQ:]).abs().max()) > alpha:
            continue
        xi2 = xi + step_
        ratio = float((grad(xi2) - g0).norm() / step_.norm())
        if best is None or ratio > best["ratio"]:
            best = {"t": t, "ratio": ratio, "L": L, "ratio_over_L": ratio / L}
    return best


@lru_cache(maxsize=8)
def _lemma10_search(seed: int, sizes: tuple, starts: int) -> dict:
    """The Hessian search of Lemma 10 at every (gamma, alpha) of the grids: formula-free, so it is
    computed once per instance and shared by every formula checked against it (mutants included).

    Returns the instance data, zeta_0, Delta_0, gamma*alpha of (44) and per grid point the largest
    |Hessian eigenvalue| found with its point and eigenvector."""
    from torch.func import hessian

    sizes = dict(sizes)
    gen_d = torch.Generator().manual_seed(seed)
    inst = Instance(sizes, BUDGET_TAU["quick"], random_dictionary(sizes["K"], sizes["d"], sizes["m"],
                                                                   sizes["N"], gen_d), seed)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(seed)
    # the alpha of (44) at a Gaussian initialisation with w = 0
    Q0 = init_Q(inst, gen)
    zeta0 = dyn.zeta(Q0)
    delta0 = float(dyn.excess(Q0, torch.zeros(inst.H, inst.K, dtype=torch.float64)))
    c44 = 4 * math.sqrt(2 * inst.K) * dyn.Zbar_norm * math.sqrt(delta0) / zeta0   # gamma * alpha of (44)
    generic = [(1.0, 1.0), (10.0, 1.0), (1e2, 10.0), (1e4, 1e2), (1e5, 1e2), (1e6, 1e3), (1e7, 1e4)]
    reading44 = [(g, c44 / g) for g in (1e2, 1e4, 1e5, 1e6, 1e7)]
    grids = {}
    for label, grid in (("generic_alpha", generic), ("alpha_of_44", reading44)):
        rows = []
        for gamma, alpha in grid:
            ell, nQ = _ell_flat(dyn, gamma)
            best = (0.0, None, None)
            for s in range(starts):
                xi = _lemma10_point(dyn, gamma, alpha, gen, (0.0, 1.0, 2.0, 0.5, 3.0, 1.5, 0.25, 5.0)[s])
                evals, evecs = torch.linalg.eigh(hessian(ell)(xi))
                i = int(evals.abs().argmax())
                if float(evals[i].abs()) > best[0]:
                    best = (float(evals[i].abs()), xi, evecs[:, i])
            rows.append((gamma, alpha) + best)
        grids[label] = rows
    return {"inst": inst, "dyn": dyn, "zeta0": zeta0, "delta0": delta0, "c44": c44, "grids": grids}


def lemma10_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas["L_sq"]
    sizes = LEMMA10_SIZES[ctx.budget.name]
    starts = {"quick": 3, "default": 5}.get(ctx.budget.name, 8)
    search = _lemma10_search(ctx.seed_for("lemma10"), tuple(sorted(sizes.items())), starts)
    inst, dyn, zeta0, delta0, c44 = (search[k] for k in ("inst", "dyn", "zeta0", "delta0", "c44"))

    def L_of(gamma, alpha):
        v = float_value(F, {"gamma": gamma, "alpha": alpha, "H": inst.H, "K": inst.K, "N": inst.N,
                            "Zbar_norm": dyn.Zbar_norm, "fbar_max": dyn.fbar_max, "A_norm": dyn.A_norm})
        return math.sqrt(v)

    rows = {"generic_alpha": [], "alpha_of_44": []}
    worst = None
    for label, grid in search["grids"].items():
        for gamma, alpha, top, xi, v in grid:
            L = L_of(gamma, alpha)
            row = {"gamma": gamma, "alpha": alpha, "max_abs_hessian_eigenvalue": top, "L": L,
                   "ratio": top / L}
            rows[label].append(row)
            if top > L and label == "generic_alpha" and worst is None:
                ell, nQ = _ell_flat(dyn, gamma)
                pair = _explicit_pair(ell, xi, v, alpha, nQ, L)
                if pair is not None and pair["ratio"] > L:
                    worst = {"instance": inst.as_dict(), "gamma": gamma, "alpha": alpha,
                             "xi": "Q at the search point, alpha_hk = +-0.9 alpha",
                             "gradient_lipschitz_ratio": pair["ratio"], "paper_L": L,
                             "ratio_over_L": pair["ratio_over_L"], "step": pair["t"], "seed": ctx.seed}
    ok = worst is None
    top = max(rows["generic_alpha"], key=lambda r: r["ratio"])
    evidence = {"search": f"{starts} points per (gamma, alpha), Q at several scales, |alpha_hk| = 0.9 "
                          f"alpha; sup of the gradient's Lipschitz ratio = sup of |Hessian eigenvalues|",
                "zeta0": zeta0, "Delta0": delta0, "gamma_alpha_of_44": c44,
                "max_ratio_generic": top["ratio"],
                "max_ratio_alpha_of_44": max(r["ratio"] for r in rows["alpha_of_44"]), **rows}
    findings = [Finding("smoothness_bound", ok, evidence, worst,
                        "" if ok else f"at gamma = {worst['gamma']:g}, alpha = {worst['alpha']:g} the "
                                      f"gradient changes {worst['ratio_over_L']:.3g} times faster than L "
                                      f"of (61) allows",
                        worst_margin("the largest |Hessian eigenvalue| found over L of (61)", top["ratio"],
                                      {"gamma": top["gamma"], "alpha": top["alpha"]}),
                        search=True)]
    return combine(findings, {"instance": inst.as_dict()})


def _young(l: int) -> sympy.Expr:
    """Lemma 3 (31): ||sum_{i<=l} x_i||^2 <= l sum ||x_i||^2, the square of Cauchy-Schwarz's sqrt(l)."""
    return _cauchy_schwarz(sympy.Integer(l)) ** 2


@lru_cache(maxsize=1)
def lemma10_chain() -> dict:
    """L^2 as the proof of Lemma 10 builds it from (54)-(59), on the bounds of Lemmas 8, 9 as their
    proofs give them (``lemma8_chain``).  Each part is the coefficient of a norm of xi - xi'."""
    ch = lemma8_chain()
    K, N, H = SIZE["K"], SIZE["N"], SIZE["H"]
    g, a, Zb, fb, dQ, dak = (sympy.Symbol(n, positive=True) for n in
                             ("gamma", "alpha", "Zbar_norm", "fbar_max", "dQ", "dalpha_k"))
    k = sympy.Symbol("k", positive=True, integer=True)
    sum_K = sympy.summation(1, (k, 1, K))
    coeff = lambda expr, var: sympy.expand(expr).coeff(var)      # noqa: E731  (linear in var)
    s_lip = ch["s_lip"]
    b_bound, d_bound = ch["b_bound"], ch["delta_bound"]
    dl_Q, dl_a = coeff(ch["delta_lip"], dQ), coeff(ch["delta_lip"], dak)     # (51)
    b_lip = coeff(ch["b_lip"], sympy.Symbol("dQ_h", positive=True))          # (50)
    BF = sympy.sqrt(H * b_bound ** 2)                  # ||B_k'||_F <= sqrt(H) max_h ||b_k^h|| (52)
    dB = b_lip                                         # ||B_k - B_k'||_F <= b_lip (sum_h ||dQ_h||^2)^{1/2} (50)
    # (54): (gamma/K)||Zbar|| (||B_k - B_k'||_F ||delta_k|| + ||B_k'||_F ||delta_k - delta_k'||)
    aQ = g / K * Zb * (dB * d_bound + BF * dl_Q)       # coefficient of dQ
    aA = g / K * Zb * BF * dl_a                        # coefficient of ||alpha_k - alpha_k'||
    # (55): Young (l = 2) on the two terms, summed over k; x dQ^2 + y ||dalpha||^2 <= (x + y)||dxi||^2
    c55 = _young(2) * sum_K * aQ ** 2 + _young(2) * aA ** 2
    # (56)-(57): |(Zbar delta_k)^T zbar_j| <= ||Zbar|| ||delta_k|| fbar_max and ||(v_j - v_i) v_k^T||_F
    # <= (||v_j|| + ||v_i||) ||v_k|| (the 2 of (83)); four product-rule terms
    c83 = (UNIT + UNIT) * UNIT
    P = c83 * g * fb * Zb / K
    sm1 = _softmax_l1()                                # sum_j s_jk = sum_i s_ik = 1
    cs_K, cs_N = _cauchy_schwarz(K), _cauchy_schwarz(N)
    # (58): the four terms after summing over k, as coefficients of dQ, ||dalpha||_F,
    # ||dalpha_{h,:}||_2 and ||dQ_h||_F
    T1 = a * sm1 * sm1 * sum_K * dl_Q                  # alpha sum_k ||delta - delta'||: dQ part of (51)
    T2 = a * sm1 * sm1 * dl_a * cs_K                   # ... its dalpha_k part, sum_k <= sqrt(K) ||.||_F
    T3 = d_bound * sm1 * sm1 * cs_K                    # ||delta_k'|| |alpha_hk - alpha_hk'|, (53)
    # ||delta_k'|| alpha (||s - s'||_1 sum_i s_ik + sum_j s'_jk ||s - s'||_1), ||.||_1 <= sqrt(N) ||.||_2, (46)
    T4 = d_bound * a * (sm1 + sm1) * cs_N * s_lip * sum_K
    # (59): Young (l = 4) on the four terms, summed over h: sum_h dQ^2 = H dQ^2, sum_h ||dQ_h||^2 = dQ^2,
    # sum_h ||dalpha||_F^2 = H ||dalpha||_F^2, sum_h ||dalpha_{h,:}||^2 = ||dalpha||_F^2
    cQ = _young(4) * P ** 2 * (H * T1 ** 2 + T4 ** 2)
    cA = _young(4) * P ** 2 * (H * T2 ** 2 + T3 ** 2)
    # x dQ^2 + y ||dalpha||^2 <= max(x, y) ||dxi||^2 (the proof then also bounds
    # (alpha gamma H)^2 + (alpha gamma H + ||A||)^2 by the dQ bracket, a looser max)
    c59 = sympy.Max(cQ, cA)
    # (60): ||grad l - grad l'||^2 = ||grad_alpha||^2 + sum_h ||grad_Q_h||^2
    return {"aQ": aQ, "aA": aA, "c55": c55, "P": P, "T": (T1, T2, T3, T4), "cQ": cQ, "cA": cA,
            "c59": c59, "L_sq": c55 + c59}


def lemma10_symbolic(ctx: Context) -> TierResult:
    ch = lemma10_chain()
    findings = _chain_findings(ctx, ch, ("L_sq",), "lemma10-symbolic", {"L_sq": "(54)-(59)"})
    lx = lambda e: sympy.latex(sympy.factor(e))       # noqa: E731
    T1, T2, T3, T4 = ch["T"]
    steps = [
        step("(54)", r"\|\nabla_{\alpha_k}\ell-\nabla_{\alpha_k}\ell'\|_2\le " + lx(ch["aQ"]) + r"\,\|\Delta Q\|+"
             + lx(ch["aA"]) + r"\,\|\alpha_k-\alpha_k'\|_2",
             "(45); ||B_k - B_k'||_F by (50), ||B_k'||_F <= sqrt(H) ||Zbar|| by (52), ||delta_k|| by (53), "
             "||delta_k - delta_k'|| by (51), all as their proofs give them."),
        step("(55)", r"\|\nabla_\alpha\ell-\nabla_\alpha\ell'\|_F^2\le " + lx(ch["c55"]) + r"\,\|\xi-\xi'\|_2^2",
             "Young's inequality (Lemma 3, l = 2), summed over the K tokens."),
        step("(57)-(58)", r"\|\nabla_{Q_h}\ell-\nabla_{Q_h}\ell'\|_F\le " + lx(ch["P"]) + r"\Big(" + lx(T1)
             + r"\|\Delta Q\|+" + lx(T2) + r"\|\Delta\alpha\|_F+" + lx(T3) + r"\|\Delta\alpha_{h,:}\|_2+" + lx(T4)
             + r"\|\Delta Q_h\|_F\Big)",
             "(56) with |(Zbar delta)^T zbar_j| <= ||Zbar|| ||delta|| fbar_max and the 2 of (83); the product "
             "rule gives four terms; sum_j s_jk = 1, Cauchy-Schwarz over k (sqrt(K)) and over j (sqrt(N)), "
             "(46) for ||s - s'||_2, Lemmas 8, 9 for delta."),
        step("(59)", r"\sum_h\|\nabla_{Q_h}\ell-\nabla_{Q_h}\ell'\|_F^2\le\max\Big\{" + lx(ch["cQ"]) + r",\ "
             + lx(ch["cA"]) + r"\Big\}\|\xi-\xi'\|_2^2",
             "Young's inequality (l = 4) squares the whole of (58), the prefactor included (the printed "
             "(59) keeps it to the first power), summed over the H heads."),
        step("(61)", r"L^2 = " + sympy.latex(ch["L_sq"]), "(55) + (59)."),
    ]
    return combine(findings, steps=steps)


LEMMA10 = Claim(
    id="yang2024.lemma10",
    title="Smoothness of the loss (Lemma 10, eqs. (60), (61))",
    paper=PAPER,
    statement=(r"For all $\xi,\xi'$ with $\max\{|\alpha_{h,k}|,|\alpha'_{h,k}|\}\le\alpha$: "
               r"$\|\nabla_\xi\ell(\xi)-\nabla_\xi\ell(\xi')\|_2\le L\|\xi-\xi'\|_2$ with $L$ of (61)."),
    assumptions=("gamma = sqrt(eta_w / eta_Q) > 0 and alpha > 0 arbitrary (the statement's "
                 "quantifiers); also reported: alpha of (44)",),
    formulas=LEMMA10_FORMULAS,
    checks={"symbolic": lemma10_symbolic, "numeric": small_threads(lemma10_numeric)},
    setting=SETTING,
    correction=Correction(
        description="second term of (61): 16 (gamma fbar_max ||Zbar||)^2 / K max{1, 4 K alpha^2}[...] "
                    "instead of 8 gamma fbar_max ||Zbar|| max{1, 4 K alpha^2}[...]",
        reason="(59) squares the right side of (58) but keeps (gamma fbar ||Zbar|| / K) to the first "
               "power; squaring it and Young's inequality over the four terms of (58) gives the factor "
               "16 (gamma fbar ||Zbar||)^2 / K^2 (times K for the max)",
        formulas={"L_sq": L61_CORRECTED}),
)
