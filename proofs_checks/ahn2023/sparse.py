"""The derived in-context losses of the multi-layer models (9) and (13) of ahn2023.

Everything here starts from the forward pass ``models.lsa.lsa_forward`` run on the symbolic prompt
of eq. (1) with w* ~ N(0, Sigma^{-1}) (Secs. 5.2, 6), and takes expectations with the moment
kernel: ``moments.wick.expectation`` (Isserlis) for full matrices A_i, B_i, and the Wishart moments
``moments.wishart`` once the error is shown to be w*^T s(W) x_q with s a polynomial in W = X X^T.

``layers`` counts attention layers: the paper's "k-layer transformer" A_0..A_k has k+1 of them.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np
import sympy

from models.lsa import lsa_forward, readout
from moments.blocks import BlockMat
from moments.poly import Poly
from moments.tensor import Mat, identity, matrix, scalar, zeros
from moments.wick import canonical, expectation
from moments.wishart_sympy import expected_trace

from ..kit.linear_icl import symbolic_prompt
from ..kit.stationary import CriticalPoint

n_sym = sympy.Symbol("n", positive=True, integer=True)
d_sym = sympy.Symbol("d", positive=True, integer=True)
W_SYM = sympy.Symbol("w")  # the commutative stand-in for W = X X^T in s(W)
SIGMA_FUNCS = ("Sigma", "Sigma_inv")


def a_sym(i: int) -> sympy.Symbol:
    return sympy.Symbol(f"a_{i}")


def b_sym(i: int) -> sympy.Symbol:
    return sympy.Symbol(f"b_{i}")


def pq_weights(A: Mat, B: Mat | None) -> tuple[BlockMat, BlockMat]:
    """(P_i, Q_i) of eq. (9) (B = None) or eq. (13)."""
    top = zeros("d", "d") if B is None else B
    P = BlockMat([[top, zeros("d", "1")], [zeros("1", "d"), scalar(1)]])
    Q = BlockMat([[A, zeros("d", "1")], [zeros("1", "d"), zeros("1", "1")]])
    return P, Q


def weights(layers: int, model: str = "eq9", restricted: bool = False) -> list:
    """Symbolic weights: full letters A_i (symmetric) and B_i, or a_i I and b_i I (``restricted``)."""
    out = []
    for i in range(layers):
        if restricted:
            A = identity("d") * a_sym(i)
            B = identity("d") * b_sym(i) if model == "eq13" else None
        else:
            A = matrix(f"A_{i}", symmetric=True)
            B = matrix(f"B_{i}") if model == "eq13" else None
        out.append(pq_weights(A, B))
    return out


def forward_error(layers: int, model: str = "eq9", restricted: bool = False,
                  isotropic: bool = False, w_prior: str = "sigma_inverse") -> Mat:
    """e = [Z_k]_{(d+1),(n+1)} + w*^T x_q on the symbolic prompt (the error of eq. (5))."""
    sp = symbolic_prompt(w_prior, isotropic=isotropic)
    Zk = lsa_forward(sp.Z, weights(layers, model, restricted), sp.mask, n_sym)
    return readout(Zk) + sp.target


@lru_cache(maxsize=None)
def full_loss(layers: int, model: str = "eq9", isotropic: bool = False,
              w_prior: str = "sigma_inverse") -> Poly:
    """f({A_i}) (eq. (9)) or f({A_i, B_i}) (eq. (13)) for full matrices: E[e^2] by Isserlis.

    Letters: Sigma, Sigma_inv (the covariance of w*; I_d for ``w_prior='identity'``), A_i, B_i;
    exact in n and d."""
    e = forward_error(layers, model, isotropic=isotropic, w_prior=w_prior)
    poly = expectation(e * e)
    # coefficients are rational in n; factoring 2613 of them (model (13)) costs minutes
    return poly.simplify() if model == "eq9" else poly


# ------------------------------------------------------------------------------------------------
# On S (A_i = a_i Sigma^{-1}, B_i = b_i I) at Sigma = I: the error is w*^T s(W) x_q
# ------------------------------------------------------------------------------------------------
def error_polynomial(layers: int, model: str = "eq9") -> sympy.Expr:
    """s(w) with e = w*^T s(W) x_q at A_i = a_i I, B_i = b_i I, Sigma = I (eqs. (31), (54)).

    With Ybar = w*^T F_i, X_i = q_i(W) X_0 (X_0 includes the query column) the updates
    X_{i+1} = X_i + B_i X_i M X_i^T A_i X_i / n and Ybar_{i+1} = Ybar_i (I + M X_i^T A_i X_i / n)
    give F_{i+1} = s_i (1 + a_i W q_i^2 / n) X_0 and q_{i+1} = q_i + a_i b_i q_i^3 W / n."""
    s, q = sympy.Integer(1), sympy.Integer(1)
    for i in range(layers):
        a = a_sym(i)
        b = b_sym(i) if model == "eq13" else 0
        s, q = s * (1 + a * W_SYM * q ** 2 / n_sym), q + a * b * q ** 3 * W_SYM / n_sym
    return sympy.expand(s)


def _poly_in_W(expr: sympy.Expr) -> Mat:
    """The Mat sum_k c_k (X X^T)^k for a polynomial in ``W_SYM`` (X the prompt's data letter)."""
    sp = symbolic_prompt("sigma_inverse", isotropic=True)
    W = sp.X @ sp.X.T
    poly = sympy.Poly(expr, W_SYM)
    out, power = None, identity("d")
    coeffs = dict(poly.terms())
    for k in range(poly.degree() + 1):
        c = coeffs.get((k,), 0)
        if c != 0:
            term = power * c
            out = term if out is None else out + term
        power = power @ W
    return out


@lru_cache(maxsize=None)
def error_identity(layers: int, model: str = "eq9") -> Poly:
    """canonical(e - w*^T s(W) x_q) from the forward pass: zero iff the reduction holds."""
    sp = symbolic_prompt("sigma_inverse", isotropic=True)
    e = forward_error(layers, model, restricted=True, isotropic=True)
    reduced = sp.w.T @ _poly_in_W(error_polynomial(layers, model)) @ sp.xq
    return canonical(e - reduced).simplify()


@lru_cache(maxsize=None)
def restricted_loss(layers: int, model: str = "eq9") -> sympy.Expr:
    """g(a, b) = f on S = E tr s(W)^2, W ~ Wishart(n, I_d): exact in n, d, a_i, b_i.

    E over w*, x_q ~ N(0, I) first (E[x_q x_q^T] = E[w* w*^T] = I, s(W) symmetric), then the
    Wishart moments E tr W^m of ``moments.wishart``."""
    s = error_polynomial(layers, model)
    return sympy.expand(expected_trace(sympy.expand(s * s), W_SYM, identity=True))


@lru_cache(maxsize=None)
def restricted_loss_kernel(layers: int, model: str = "eq9") -> sympy.Expr:
    """The same g by Isserlis on the isotropic forward pass (a cross-check of the W-route)."""
    e = forward_error(layers, model, restricted=True, isotropic=True)
    L = expectation(e * e).simplify()
    return sympy.expand(sum(L.terms.values()))


def variables(layers: int, model: str = "eq9") -> list[sympy.Symbol]:
    """The free scalars of g: a_0..a_{L-1}, and b_0..b_{L-2} for eq. (13) (b_{L-1} is unused)."""
    out = [a_sym(i) for i in range(layers)]
    if model == "eq13":
        out += [b_sym(i) for i in range(layers - 1)]
    return out


# ------------------------------------------------------------------------------------------------
# g evaluated numerically: coefficients of s(u), u = W/n, against the exact moments E tr (W/n)^k
# ------------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def scaled_trace_moments(n: int, d: int, K: int) -> tuple:
    """mu_k = E tr (W/n)^k, k = 0..K, exactly (Fractions) from ``moments.wishart``."""
    from fractions import Fraction

    from moments.wishart import moment

    out = [Fraction(d)]
    for k in range(1, K + 1):
        terms = moment(k, (), trace=True, identity=True).terms
        out.append(Fraction(sum(c * n ** e * d ** j for (j, e), c in terms.items()), n ** k))
    return tuple(out)


def _pmul(p: list, q: list) -> list:
    out = [0] * (len(p) + len(q) - 1)
    for i, pi in enumerate(p):
        for j, qj in enumerate(q):
            out[i + j] = out[i + j] + pi * qj
    return out


def _padd(p: list, q: list) -> list:
    m = max(len(p), len(q))
    return [(p[i] if i < len(p) else 0) + (q[i] if i < len(q) else 0) for i in range(m)]


def s_coefficients(a: list, b: list | None) -> list:
    """Coefficients of s(u), u = W/n, for numbers a_i (b_i): any ring (floats, torch, mpmath).

    The recursion of ``error_polynomial``: s <- s (1 + a_i u q^2), q <- q + a_i b_i q^3 u."""
    s, q = [1], [1]
    for i, ai in enumerate(a):
        q2 = _pmul(q, q)
        s_next = _padd(s, [0] + [ai * c for c in _pmul(s, q2)])
        if b is not None and i < len(b):
            q = _padd(q, [0] + [ai * b[i] * c for c in _pmul(q2, q)])
        s = s_next
    return s


def restricted_value(params, layers: int, model: str, n: int, d: int, convert=float):
    """g(a, b) at numbers ``params`` (a_0.., then b_0..b_{L-2}) as sum_k [s^2]_k mu_k."""
    a = list(params[:layers])
    b = list(params[layers:]) if model == "eq13" else None
    s = s_coefficients(a, b)
    s2 = _pmul(s, s)
    mu = scaled_trace_moments(n, d, len(s2) - 1)
    total = 0
    for c, m in zip(s2, mu):
        total = total + c * convert(m)
    return total


# ------------------------------------------------------------------------------------------------
# Critical points of g (the minimiser and Newton refinement are the kit's: kit.stationary)
# ------------------------------------------------------------------------------------------------
def symmetric_order(cp: CriticalPoint, model: str) -> CriticalPoint:
    """The minimiser on S as a set for (9): there s(u) = prod_i (1 + a_i u) (``s_coefficients``
    without b), so g is symmetric in the a_i (Lemma 8) and every ordering of a critical point is
    one, with the same value, gradient norm and Hessian spectrum; sorted, the reported point
    does not follow the order the restarts' rounding happened to reach.  (13) is returned as
    it is: its b_i tie the layers to their places."""
    return replace(cp, point=tuple(sorted(cp.point))) if model == "eq9" else cp


def restricted_optimum(n: int, d: int, layers: int, model: str = "eq9",
                       seed: int = 0, starts: int = 8) -> CriticalPoint:
    """The best critical point (a*, and b* for eq. (13)) of g at sizes (n, d): multi-start
    L-BFGS on the exactly derived g, refined by Newton in mpmath (for bench/train.py's
    "Thm 4 setting" row: A_i* = a_i* Sigma^{-1} is the optimum within S, loss g*)."""
    rng = np.random.default_rng(seed)
    m = len(variables(layers, model))
    x0 = [np.full(m, -0.5)] + [rng.standard_normal(m) * 0.7 for _ in range(starts - 1)]
    runs = numeric_optimum(n, d, layers, model, x0)
    best = min(runs, key=lambda r: r["loss"])
    return symmetric_order(newton_mp(layers, model, n, d, best["end"], digits=20), model)


def restricted_value_torch(P, layers: int, model: str, n: int, d: int):
    """g at a batch of parameter rows P (B, m) in torch (autograd, cpu or cuda): the same sum
    over the coefficients of s(u)^2, with polynomials as (B, degree+1) tensors."""
    import torch

    s = s_coefficients_torch(P, layers, model)
    s2 = _series_mul(s, s)
    mu = torch.tensor([float(m) for m in scaled_trace_moments(n, d, s2.shape[1] - 1)],
                      dtype=P.dtype, device=P.device)
    return (s2 * mu).sum(1)


def s_coefficients_torch(P, layers: int, model: str):
    """``s_coefficients`` for a batch of parameter rows P (B, m) (a_0.., then b_0.. for eq13):
    the coefficients (B, degree+1) of s(u), in torch (autograd, cpu or cuda)."""
    import torch.nn.functional as F

    s = q = P.new_ones(P.shape[0], 1)
    for i in range(layers):
        ai = P[:, i:i + 1]
        q2 = _series_mul(q, q)
        s_next = _series_add(s, F.pad(ai * _series_mul(s, q2), (1, 0)))   # s + u a_i s q^2
        if model == "eq13" and i < layers - 1:                            # q + u a_i b_i q^3
            q = _series_add(q, F.pad(ai * P[:, layers + i:layers + i + 1] * _series_mul(q2, q),
                                     (1, 0)))
        s = s_next
    return s


def _series_mul(p, q):
    """Rows of polynomial coefficients (B, lp) x (B, lq) -> (B, lp + lq - 1): the outer
    products p_i q_j summed into i + j by one matrix product with a fixed 0/1 map (two
    operations, deterministic on cuda, where a loop over p's coefficients launched three
    operations per coefficient)."""
    lp, lq = p.shape[1], q.shape[1]
    outer = (p[:, :, None] * q[:, None, :]).reshape(p.shape[0], lp * lq)
    return outer @ _sum_map(lp, lq, p.dtype, p.device)


@lru_cache(maxsize=None)
def _sum_map(lp: int, lq: int, dtype, device):
    """The 0/1 matrix (lp * lq, lp + lq - 1) sending entry (i, j) of an outer product to i + j."""
    import torch

    rows = torch.arange(lp * lq)
    out = torch.zeros(lp * lq, lp + lq - 1, dtype=dtype)
    out[rows, rows // lq + rows % lq] = 1.0
    return out.to(device)


def _series_add(p, q):
    import torch.nn.functional as F

    m = max(p.shape[1], q.shape[1])
    return F.pad(p, (0, m - p.shape[1])) + F.pad(q, (0, m - q.shape[1]))


def numeric_optimum(n: int, d: int, layers: int, model: str, starts, steps: int = 500) -> list:
    """Minimise g from each start at once (batched L-BFGS of ``models.trainers``)."""
    import torch

    from models.trainers import optimise_batched

    P = torch.tensor(np.asarray(starts, dtype=float), dtype=torch.float64).requires_grad_()
    results = optimise_batched(lambda: restricted_value_torch(P, layers, model, n, d), [P],
                               method="lbfgs", steps=steps, grad_tol=1e-13)
    v = restricted_value_torch(P, layers, model, n, d)
    gr = torch.autograd.grad(v.sum(), P)[0]
    return [{"start": list(map(float, x0)), "end": P[r].detach().tolist(),
             "loss": float(v[r].detach()), "grad_norm": float(gr[r].norm()), "status": results[r].status}
            for r, x0 in enumerate(starts)]


def newton_mp(layers: int, model: str, n: int, d: int, x0, digits: int = 40) -> CriticalPoint:
    """Newton's method on grad g = 0 in mpmath (derivatives by mpmath.diff at high precision)."""
    import mpmath

    m = len(x0)
    with mpmath.workdps(2 * digits + 20):
        conv = lambda q: mpmath.mpf(q.numerator) / q.denominator  # noqa: E731
        f = lambda *x: restricted_value(list(x), layers, model, n, d, convert=conv)  # noqa: E731
        x = [mpmath.mpf(float(v)) for v in x0]

        def grad(x):
            return mpmath.matrix([mpmath.diff(f, x, tuple(int(i == j) for i in range(m)))
                                  for j in range(m)])

        def hess(x):
            H = mpmath.matrix(m, m)
            for i in range(m):
                for j in range(i, m):
                    order = [0] * m
                    order[i] += 1
                    order[j] += 1
                    H[i, j] = H[j, i] = mpmath.diff(f, x, tuple(order))
            return H

        for _ in range(40):
            G = grad(x)
            if mpmath.norm(G) < mpmath.mpf(10) ** (-(digits + 5)):
                break
            step = mpmath.lu_solve(hess(x), G)
            x = [x[i] - step[i] for i in range(m)]
        G, H = grad(x), hess(x)
        eig = mpmath.eigsy(H)[0]
        return CriticalPoint(tuple(x), f(*x), mpmath.norm(G),
                             tuple(sorted(eig[i] for i in range(m))), digits)


# ------------------------------------------------------------------------------------------------
# On a named set A_i = a_i c_A Sigma^{k_A}, B_i = b_i c_B Sigma^{k_B}: the loss and the full-matrix
# gradients by first-order perturbation (far fewer trace words than full letters)
# ------------------------------------------------------------------------------------------------
EPS = sympy.Symbol("epsilon")


def _sigma_power(c, k: int) -> Mat:
    """c Sigma^k as a Mat over the prompt's letters (Sigma_inv for negative k)."""
    sp = symbolic_prompt("sigma_inverse")
    if k == 0:
        return identity("d") * c
    base = sp.Sigma if k > 0 else matrix("Sigma_inv", "d", "d", symmetric=True,
                                         latex="\\Sigma^{-1}")
    out = base
    for _ in range(abs(k) - 1):
        out = out @ base
    return out * c


def _set_layers(layers: int, model: str, mono_A, mono_B, perturb=None) -> list:
    out = []
    for i in range(layers):
        A = _sigma_power(*mono_A) * a_sym(i)
        B = _sigma_power(*mono_B) * b_sym(i) if model == "eq13" else None
        if perturb == ("A", i):
            A = A + matrix("R", symmetric=True) * EPS
        if perturb == ("B", i):
            B = B + matrix("R") * EPS
        out.append(pq_weights(A, B))
    return out


@lru_cache(maxsize=None)
def loss_and_gradients_on_set(layers: int, model: str, mono_A: tuple, mono_B: tuple = (1, 0)):
    """(g, {letter: grad}) on the set: g = E[e0^2] and grad_{A_j} f = d/dR E[2 e0 e1] where e1
    is the first-order change of the error when A_j -> A_j + epsilon R (R a free letter, the
    direction); every gradient is a matrix polynomial in Sigma, Sigma^{-1}."""
    sp = symbolic_prompt("sigma_inverse")

    def err(perturb=None):
        return readout(lsa_forward(sp.Z, _set_layers(layers, model, mono_A, mono_B, perturb),
                                   sp.mask, n_sym)) + sp.target

    e0 = err()
    g = expectation(e0 * e0)
    grads = {}
    kinds = ("A", "B") if model == "eq13" else ("A",)
    for kind in kinds:
        for j in range(layers):
            e1 = err((kind, j)).map_coeffs(lambda c: sympy.diff(c, EPS).subs(EPS, 0))
            L1 = expectation(e0 * e1).scale(2)
            grads[f"{kind}_{j}"] = L1.diff("R") if "R" in L1.letters and len(L1.terms) else None
    return g, grads
