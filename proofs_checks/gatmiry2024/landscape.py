"""Sec. 3.7 (line 192): "the landscape of the loss with respect to A is highly non-convex".

The loss L(A, 0) at Sigma* = I is derived from the forward pass (``models.lsa.lsa_forward`` on the
symbolic prompt, the moment kernel) with A a general d x d matrix, as Sec. 3.5 declares it
(Q = [[A_{d x d}, 0], [0, 0]]; no symmetry is imposed).  What "non-convex" can soundly mean here is
a certificate: a segment on which midpoint convexity fails, exactly.  "Highly" is not a checkable
quantity and is not checked.

* L >= 2: at d = 2, A_0 = [[0, 1], [-2, -1]], E = [[-1, 0], [1, 0]], h = 1/4, the midpoint gap
  g(h) + g(-h) - 2 g(0) of g(t) = L(A_0 + t E, 0) is a rational function of n (n symbolic); it is
  negative for every n >= n_0, certified from the real roots of its numerator.
* L = 1: L(., 0) is a quadratic in A; its Hessian (the Gram matrix of the second differences on
  the basis E_ij, d = 2) is positive definite for every n >= 1 (leading minors, exact in n): the
  loss is convex, so the remark cannot speak of one loop.
* along A = a I the loss is the strictly convex f(a) = E tr (I - a W/n)^{2L} (f'' has no real
  root, exact at n = 10, 100, d = 2).

Noticed, not decided: on symmetric A (the kit's letter, and the A^{1/2} of Lemma 4.1) a float
search found no violation (L(., 0) is orthogonally invariant there, so it is convex iff its
restriction to diagonal matrices is; that restriction's Hessian was positive definite at every
point sampled, n <= 5, d <= 3, L <= 3).  The certificate's direction E is not symmetric."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy
import torch

from models.lsa import lsa_forward, mask_matrix, readout
from models.sampler import PromptLaw, sample_prompts
from moments.montecarlo import estimate, z_critical
from moments.poly import Poly
from moments.tensor import matrix
from moments.wick import expectation
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import NamedFormula

from ..kit import looped_icl as li
from ..kit.linear_icl import symbolic_prompt
from ..kit.exact_compare import holds
from .common import _L, PAPER, _setting, single_threaded

LANDSCAPE_SETTING = _setting({"n": 10, "d": 2, "L": 2})
_T = sympy.Symbol("t")
_A0 = sympy.Matrix([[0, 1], [-2, -1]])
_E = sympy.Matrix([[-1, 0], [1, 0]])
_H = sympy.Rational(1, 4)


@lru_cache(maxsize=None)
def general_loss(L: int) -> Poly:
    """L(A, 0) at Sigma* = I from the forward pass, A a general (non-symmetric) d x d letter."""
    sp = symbolic_prompt("sigma_inverse", isotropic=True)
    A = matrix("A", symmetric=False)
    Z = lsa_forward(sp.Z, [li.sec35_weights(A, None)] * L, sp.mask, li.N, step=-1)
    err = -readout(Z) - sp.target
    return expectation(err * err).simplify()


def _at(L: int, A: sympy.Matrix) -> sympy.Expr:
    v = general_loss(L).evaluate({"A": A}, {"n": li.N, "d": A.shape[0]}, exact=True)
    return v[0, 0] if isinstance(v, sympy.MatrixBase) else v


def _negative_from(expr: sympy.Expr):
    """(n_0, True) when the rational function of n is negative for every integer n >= n_0
    (n_0 >= 1 the least such), from the real roots of numerator and denominator."""
    num, den = sympy.fraction(sympy.cancel(sympy.together(expr)))
    roots = [r for poly in (num, den) for r in sympy.Poly(poly, li.N).real_roots()]
    start = max([1] + [int(sympy.floor(r)) + 1 for r in roots])
    if not sympy.sign(expr.subs(li.N, start + 1000)) < 0:
        return None
    n0 = start
    while n0 > 1 and sympy.cancel(expr.subs(li.N, n0 - 1)) < 0:
        n0 -= 1
    return n0


@lru_cache(maxsize=None)
def midpoint_gap(L: int) -> sympy.Expr:
    """g(h) + g(-h) - 2 g(0), g(t) = L(A_0 + t E, 0), as a rational function of n (d = 2)."""
    g = [_at(L, _A0 + s * _E) for s in (_H, -_H, 0)]
    return sympy.factor(sympy.cancel(g[0] + g[1] - 2 * g[2]))


@lru_cache(maxsize=None)
def one_loop_minors() -> tuple:
    """The leading principal minors of the Hessian of L(., 0) at L = 1 (constant: a quadratic)
    on the basis E_11, E_12, E_21, E_22, d = 2, by polarising second differences."""
    basis = [sympy.Matrix(2, 2, lambda i, j, k=k: int(2 * i + j == k)) for k in range(4)]

    def q(E):  # g(1) + g(-1) - 2 g(0) = g'' for a quadratic g(t) = L(t E)
        return sympy.cancel(_at(1, E) + _at(1, -E) - 2 * _at(1, sympy.zeros(2, 2)))

    H = sympy.Matrix(4, 4, lambda i, j: sympy.cancel(
        (q(basis[i] + basis[j]) - q(basis[i]) - q(basis[j])) / 2))
    return tuple(sympy.factor(sympy.cancel(H[:m, :m].det())) for m in range(1, 5))


def _positive_for_all_n(expr) -> bool:
    num, den = sympy.fraction(sympy.cancel(sympy.together(expr)))
    roots = [r for poly in (num, den) if sympy.sympify(poly).has(li.N)
             for r in sympy.Poly(poly, li.N).real_roots()]
    return all(r < 1 for r in roots) and sympy.cancel(expr.subs(li.N, 1)) > 0


def _landscape_symbolic(ctx: Context) -> TierResult:
    """For each loop count L (1, 2 at quick; 3 too by default): is L(., 0) non-convex (the
    midpoint certificate) or convex (L = 1, the Hessian), against the named scope, read as the
    loop counts at which the loss is non-convex: inside it a certificate of non-convexity,
    outside it one of convexity."""
    scope = ctx.formulas["scope"]
    rows, bad, admitted = [], None, 0
    for L in li.loops(ctx):
        in_scope = holds(scope, {"L": L})
        row = {"L": L, "in_scope": in_scope}
        if L == 1:
            minors = one_loop_minors()
            convex = all(_positive_for_all_n(m) for m in minors)
            row.update({"hessian_leading_minors": [str(m) for m in minors],
                        "convex_for_every_n": convex})
            nonconvex = False if convex else None
        else:
            gap = midpoint_gap(L)
            n0 = _negative_from(gap)
            row.update({"A0": str(_A0.tolist()), "E": str(_E.tolist()), "h": str(_H),
                        "midpoint_gap": str(gap), "negative_for_n_from": n0,
                        "gap_at_n_100": str(gap.subs(li.N, 100))})
            nonconvex = True if n0 is not None else None
        row["nonconvex"] = nonconvex
        rows.append(row)
        admitted += nonconvex is not None
        if in_scope and nonconvex is not True and bad is None:
            bad = {**row, "why": f"L = {L} is in the named scope, but "
                   + ("L(., 0) is convex there (a quadratic with a positive definite "
                      "Hessian for every n >= 1)" if nonconvex is False else
                      "no non-convexity certificate was found")}
        if not in_scope and nonconvex is True and bad is None:
            bad = {**row, "why": f"L = {L} is outside the named scope, but L(., 0) is "
                   f"non-convex there (the midpoint certificate)"}
    # along A = a I: f(a) = E tr (I - a W / n)^{2L} strictly convex (exact, no real root of f'')
    ray = []
    for L in li.loops(ctx):
        for n in (10, 100):
            f2 = li.scalar_poly(L, n, 2).diff(li.a_sym).diff(li.a_sym)
            ray.append({"L": L, "n": n, "d": 2, "f2_real_roots": len(f2.real_roots()),
                        "f2_leading": str(f2.LC()),
                        "ok": bool(not f2.real_roots() and f2.LC() > 0)})
    ok = None if admitted == 0 else bad is None
    return combine([
        Finding("midpoint_convexity", ok, {"rows": rows}, bad,
                "" if bad is None else bad["why"], tested=admitted > 0),
        Finding("convex_along_identity", all(r["ok"] for r in ray), {"rows": ray},
                None if all(r["ok"] for r in ray) else next(r for r in ray if not r["ok"]),
                "" if all(r["ok"] for r in ray) else "f(a) = L(a I, 0) is not strictly convex")],
        steps=[step("Derived loss", r"L(A,0)=\mathbb E\|(I-\Sigma A)^L\|_F^2,\ \Sigma^*=I",
                    "lsa_forward on the symbolic prompt, A a general d x d letter, the moment "
                    "kernel (exact in n)"),
               step("Certificate", r"g(h)+g(-h)-2g(0)<0,\ g(t)=L(A_0+tE,0)",
                    "exact in n; negative for every n >= n_0 (roots of its numerator)")])


def _landscape_numeric(ctx: Context) -> TierResult:
    """Monte Carlo of the real forward pass (torch, float64) at n = 20, d = 2, Sigma* = I, u = 0:
    the squared error (TF_L - y_q)^2 at A_0 - hE, A_0 + hE and A_0 on common prompts, so that each
    prompt gives an exact second difference; its mean with a 99.9% interval (Bonferroni over the
    loop counts) against the exact gap (the derivation) and against the named scope (inside
    it the interval must lie below 0; outside it, an interval below 0 contradicts it)."""
    scope = ctx.formulas["scope"]
    n, d = 20, 2  # n >= n_0 for L = 2 (5) and L = 3 (12)
    loops = li.loops(ctx)
    z = z_critical(0.999, 2 * len(loops))
    seed = int(ctx.mc_rng("landscape-mc").integers(2 ** 31))
    law = PromptLaw(torch.eye(d, dtype=torch.float64), n)
    pr = sample_prompts(law, li.by_budget(ctx, 40_000, 200_000),
                        torch.Generator().manual_seed(seed))
    Z, M = pr.Z(), mask_matrix(n, pr.Z())
    P = torch.zeros(d + 1, d + 1, dtype=torch.float64)
    P[d, d] = 1

    def sq(A: sympy.Matrix, L: int) -> torch.Tensor:
        Q = torch.zeros(d + 1, d + 1, dtype=torch.float64)
        Q[:d, :d] = torch.tensor(np.array(A.tolist(), dtype=float))
        return (-readout(lsa_forward(Z, [(P, Q)] * L, M, n, step=-1)) - pr.yq) ** 2

    rows, agree_bad, scope_bad, unconfirmed = [], None, None, []
    for L in loops:
        e = estimate((sq(_A0 + _H * _E, L) + sq(_A0 - _H * _E, L) - 2 * sq(_A0, L)).numpy())
        lo, hi = e.mean - z * e.se, e.mean + z * e.se
        exact = float(midpoint_gap(L).subs(li.N, n))
        in_scope = holds(scope, {"L": L})
        row = {"L": L, "n": n, "samples": e.count, "seed": seed, "gap_mean": e.mean,
               "se": e.se, "ci": [lo, hi], "exact_gap": exact, "in_scope": in_scope}
        rows.append(row)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            unconfirmed.append(L)
            continue
        if not lo <= exact <= hi and agree_bad is None:
            agree_bad = row
        if in_scope and not hi < 0:
            unconfirmed.append(L)
        if not in_scope and hi < 0 and scope_bad is None:
            scope_bad = {**row, "why": f"L = {L} is outside the named scope, but the forward "
                         f"pass's midpoint gap is negative (99.9% interval below 0)"}
    ok = False if scope_bad is not None else (None if unconfirmed else True)
    return combine([
        Finding("derived_gap", agree_bad is None, {"rows": rows}, agree_bad,
                "" if agree_bad is None else "the exact midpoint gap lies outside the Monte "
                "Carlo interval of the forward pass", sampled=True),
        Finding("midpoint_convexity_mc", ok, {"rows": rows, "unconfirmed": unconfirmed},
                scope_bad, "" if scope_bad is None else scope_bad["why"], sampled=True)])


THM3_3_NONCONVEX = Claim(
    id="gatmiry2024.thm3_3_nonconvex",
    title="Sec. 3.7 (line 192): the loss landscape in A is non-convex", paper=PAPER,
    statement=r"$A\mapsto L(A,0)$ ($\Sigma^*=I$) is non-convex exactly for the loop counts of "
              r"Thm. 3.3, $L\ge2$: midpoint convexity fails on a segment (d = 2, every "
              r"$n\ge n_0$), while at $L=1$ it is a convex quadratic; along $A=aI$ it is convex.  "
              r"(``Highly'' is not a checkable quantity.)",
    assumptions=("Sigma* = I, u = 0", "A a general d x d matrix (Sec. 3.5's A_{d x d})",
                 "scope: the loop counts L the remark speaks of (Thm. 3.3's time bound divides "
                 "by L - 1)"),
    formulas=(NamedFormula("scope", "L >= 2", (_L,), equation="Thm. 3.3",
                           description="the loop counts at which the loss is non-convex"),),
    checks={"symbolic": _landscape_symbolic, "numeric": single_threaded(_landscape_numeric)},
    setting=LANDSCAPE_SETTING,
    notes="At L = 1 the loss is a convex quadratic. On symmetric A no violation was found by a "
          "float search (not certified); the certificate's direction E is not symmetric.",
)
