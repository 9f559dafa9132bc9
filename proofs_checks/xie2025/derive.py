"""Exact risks of multi-head LSA and y_q-LSA, derived from the forward pass with the moment kernel.

Everything here starts from ``models.multihead`` run on the symbolic prompt of ``setting.py`` and
ends in ``moments.wick.expectation`` (Isserlis with the prior mean w*):

* ``single_head_risk``: R(b, A) = E[(f_LSA(E) - y)^2] for one head (eqs. (3), (4)), b the last row
  of W^P W^V and A = (W^K)^T W^Q (App. A.1: nothing else enters);
* ``cross_risk``: 2 E[phi_1 phi_2] for two heads, phi_h = head h's contribution to the prediction,
  so that the risk of H heads is R_0 + sum_h (R(b_h, A_h) - R_0) + sum_{h<h'} cross(h, h');
* the lifted quantities of App. A.1/A.2: with P = [0; p^T] and Q = q r^T the prediction is
  y_q + (p^T G q)(r^T z_q), G = (1/C) sum_i z_i z_i^T, so the prediction of any number of heads is
  y_q + sum_{ijk} T_ijk G_ij z_q[k] with T = sum_h b_h (x) A_h, and the risk is a quadratic in T
  whose coefficients are the probe polynomials below.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy

from models.multihead import multihead_prediction
from moments.blocks import BlockMat
from moments.poly import Poly
from moments.tensor import gaussian_vector, vector, zeros
from moments.wick import canonical, expectation

from .setting import BETA, C_SYM, head_letters, probe, symbolic_prompt, w_star_letter

HEAD_VECTORS = ("b_x", "a_xy", "a_yx")
HEAD_MATRICES = ("A_xx",)
HEAD_SCALARS = ("b_y", "a_yy")


def _specialise(poly: Poly, guess: str) -> Poly:
    """Restrict an ``affine``-guess polynomial to y_q = v^T x_q (``linear``) or y_q = 0."""
    if guess == "affine":
        return poly
    out = poly.subs({BETA: 0})
    if guess == "zero":
        out = out.without(["v"])
    return Poly({k: c for k, c in out.terms.items() if sympy.expand(c) != 0}, out.letters,
                out.rows, out.cols)


@lru_cache(maxsize=None)
def _affine_single_head() -> Poly:
    sp = symbolic_prompt("affine")
    err = multihead_prediction(sp.E, [head_letters()], sp.mask, C_SYM) - sp.target
    return expectation(err * err)


@lru_cache(maxsize=None)
def single_head_risk(guess: str = "zero") -> Poly:
    """R(b, A) = E[(f_LSA(E) - w^T x_q)^2] for the query guess ``guess`` (eqs. (3), (4), (11))."""
    return _specialise(_affine_single_head(), guess)


def _head_contribution(sp, tag: str):
    return multihead_prediction(sp.E, [head_letters(tag)], sp.mask, C_SYM) - sp.yq


@lru_cache(maxsize=None)
def _affine_cross() -> Poly:
    sp = symbolic_prompt("affine")
    return expectation(_head_contribution(sp, "1") * _head_contribution(sp, "2")).scale(2)


@lru_cache(maxsize=None)
def cross_risk(guess: str = "zero") -> Poly:
    """2 E[phi_1 phi_2]: the pairwise term of the multi-head risk (heads tagged 1 and 2)."""
    return _specialise(_affine_cross(), guess)


@lru_cache(maxsize=None)
def base_risk(guess: str = "zero") -> Poly:
    """R_0 = E[(y_q - y)^2], the risk with every head at zero."""
    sp = symbolic_prompt(guess)
    e0 = sp.yq - sp.target
    return expectation(e0 * e0)


@lru_cache(maxsize=None)
def two_head_risk(guess: str = "zero") -> Poly:
    """The risk of two heads straight from the forward pass of eq. (6) (for the decomposition check)."""
    sp = symbolic_prompt(guess)
    err = multihead_prediction(sp.E, [head_letters("1"), head_letters("2")], sp.mask, C_SYM) \
        - sp.target
    return expectation(err * err)


@lru_cache(maxsize=None)
def tagged_single_head_risk(tag: str, guess: str = "zero") -> Poly:
    sp = symbolic_prompt(guess)
    err = multihead_prediction(sp.E, [head_letters(tag)], sp.mask, C_SYM) - sp.target
    return expectation(err * err)


def reduction_identity(heads: int = 2) -> Poly:
    """f_H-LSA(E) - (y_q + sum_h b_h^T G A_h z_q) with full W^P_h W^V_h letters: zero iff App. A.1's
    reduction holds (only the last row of W^P W^V and A = (W^K)^T W^Q enter)."""
    sp = symbolic_prompt("affine")
    hs = [head_letters(str(h), full=True) for h in range(1, heads + 1)]
    pred = multihead_prediction(sp.E, hs, sp.mask, C_SYM)
    G = sp.gram()
    zq = BlockMat([[sp.xq], [sp.yq]])
    lifted = sp.yq
    for P, Q in hs:
        b = BlockMat([[P[1, 0].T], [P[1, 1]]])
        lifted = lifted + (b.T @ G @ Q @ zq)[0, 0]
    return canonical(pred - lifted)


# ----------------------------------------------------------------------------------------------
# Lifted (probe) polynomials
# ----------------------------------------------------------------------------------------------
CTX_SLOTS = ("p", "q", "pp", "qq")
QUERY_SLOTS = ("r", "rr")


def probe_feature(sp, p: str, q: str, r: str):
    """phi(p, q, r) = f_LSA(E) - y_q for the head P = [0; p^T], Q = q r^T: equals (p^T G q)(r^T z_q)."""
    pb, qb, rb = probe(p), probe(q), probe(r)
    P = BlockMat([[zeros("d", "d"), zeros("d", "1")], [pb[0, 0].T, pb[1, 0]]])
    return multihead_prediction(sp.E, [(P, qb @ rb.T)], sp.mask, C_SYM) - sp.yq


@dataclass(frozen=True)
class Lifted:
    """The quadratic R(T) = R_0 - 2 <c, T> + <T, K T> as probe polynomials (App. A.1-A.2).

    ``full``: E[phi(p,q,r) phi(pp,qq,rr)] from the forward pass; ``ctx``: E[(p^T G q)(pp^T G qq)];
    ``query``: E[(r^T z_q)(rr^T z_q)] (full = ctx * query since z_q is independent of the
    context); ``linear``: E[phi(p,q,r) (y - y_q)]; ``base``: E[(y - y_q)^2].
    """

    full: Poly
    ctx: Poly
    query: Poly
    linear: Poly
    base: Poly


@lru_cache(maxsize=None)
def _affine_lifted() -> Lifted:
    sp = symbolic_prompt("affine")
    f1 = probe_feature(sp, "p", "q", "r")
    f2 = probe_feature(sp, "pp", "qq", "rr")
    G = sp.gram()
    g1 = (probe("p").T @ G @ probe("q"))[0, 0]
    g2 = (probe("pp").T @ G @ probe("qq"))[0, 0]
    zq = BlockMat([[sp.xq], [sp.yq]])
    z1 = (probe("r").T @ zq)[0, 0]
    z2 = (probe("rr").T @ zq)[0, 0]
    resid = sp.target - sp.yq
    return Lifted(full=expectation(f1 * f2), ctx=expectation(g1 * g2), query=expectation(z1 * z2),
                  linear=expectation(f1 * resid), base=expectation(resid * resid))


@lru_cache(maxsize=None)
def lifted(guess: str = "zero") -> Lifted:
    L = _affine_lifted()
    return Lifted(*(_specialise(p, guess) for p in (L.full, L.ctx, L.query, L.linear, L.base)))


def factorisation_defect(guess: str = "zero") -> Poly:
    """E[phi phi'] - E[(p^T G q)(pp^T G qq)] E[(r^T z_q)(rr^T z_q)]: zero iff the Gram matrix of
    the lifted features is the Kronecker product of a context and a query Gram matrix."""
    L = lifted(guess)
    return reduced(L.full - L.ctx * L.query)


def reduced(poly: Poly) -> Poly:
    """``poly`` with every coefficient cancelled and zero terms dropped (cheaper than simplify)."""
    terms = {k: sympy.cancel(c) for k, c in poly.terms.items()}
    return Poly({k: c for k, c in terms.items() if c != 0}, poly.letters, poly.rows, poly.cols)


# ----------------------------------------------------------------------------------------------
# Moments of the context (App. A.2, A.3)
# ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def mean_gram() -> Poly:
    """E[p^T G q] = p^T M q with M = E[z z^T] (eq. (22))."""
    sp = symbolic_prompt("zero")
    return expectation((probe("p").T @ sp.gram() @ probe("q"))[0, 0])


@lru_cache(maxsize=None)
def weighted_gram() -> Poly:
    """E[(e^T w) p^T G q]: eq. (21)'s E[w[i] G] with e = e_i."""
    sp = symbolic_prompt("zero")
    return expectation((vector("e").T @ sp.w) * (probe("p").T @ sp.gram() @ probe("q"))[0, 0])


@lru_cache(maxsize=None)
def token_fourth_moment() -> Poly:
    """T(p, q, pp, qq) = E[(p^T z)(q^T z)(pp^T z)(qq^T z)] for one token z = [x; w^T x] (App. A.3)."""
    x = gaussian_vector("x", "d")
    w = gaussian_vector("w", "d", mean=w_star_letter(), latex=r"\hat w")
    z = BlockMat([[x], [w.T @ x]])
    f = [(probe(s).T @ z)[0, 0] for s in CTX_SLOTS]
    return expectation(f[0] * f[1] * f[2] * f[3])


@lru_cache(maxsize=None)
def conditional_gram_square() -> Poly:
    """E_w[(p^T M(w) q)(pp^T M(w) qq)] with M(w) = E[z z^T | w] = [[I, w], [w^T, ||w||^2]]: the
    C -> infinity limit of E[(p^T G q)(pp^T G qq)] (the tokens share w, so they are not independent)."""
    x1, x2 = gaussian_vector("x1", "d"), gaussian_vector("x2", "d")
    w = gaussian_vector("w", "d", mean=w_star_letter(), latex=r"\hat w")
    z1 = BlockMat([[x1], [w.T @ x1]])
    z2 = BlockMat([[x2], [w.T @ x2]])
    a = (probe("p").T @ z1)[0, 0] * (probe("q").T @ z1)[0, 0]
    b = (probe("pp").T @ z2)[0, 0] * (probe("qq").T @ z2)[0, 0]
    return expectation(a * b)
