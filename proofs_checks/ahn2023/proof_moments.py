"""ahn2023 App. B: the expectations the proof steps take, by the moment kernel and by Monte Carlo.

- ``block_value``: a formula as a ``moments.BlockMat`` over the kernel's letters (X_0 = [X, x_q]),
  so ``moments.wick.expectation`` takes its expectation exactly, n and d symbolic;
- ``derived_loss``: f of (5) with the 1/n dropped (App. B), E[e^2] of the forward pass's query
  error by Isserlis;
- ``derivative_poly`` / ``directional`` / ``gradient``: d/dt f at t = 0 on S along any direction D
  (E[2 e e'] by Isserlis; for (13) at Sigma = I with the change of variables x = Sigma^{1/2} xi);
- ``ew_value`` / ``ew_loss``: E over w* ~ N(0, Sigma^{-1}) at a fixed X_0 (App. B Step 1);
- ``haar2_average``: E_U over Haar U in O(d) exactly for functions of degree <= 3 in U;
- ``mc_directional``, ``haar_mc``, ``sample_prompts``, ``query_errors``: Monte Carlo of the same
  quantities from the forward pass (numeric tiers).
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any, Callable, Mapping

import numpy as np
import sympy

from models.lsa import lsa_forward, readout
from moments.blocks import BlockMat
from moments.poly import Poly
from moments.tensor import Mat, gaussian_vector, identity, matrix, vector, zeros
from moments.wick import expectation
from verify.formulas import size_symbol

from ..kit.linear_icl import symbolic_prompt
from .sparse import a_sym, b_sym, pq_weights, weights
from .proof_points import (Dual, Point, Unevaluable, _dual_layers, _rat, _small_rotation,
                           exact_point, float_point, inv, mul)

N_SYM, D_SYM = size_symbol("n"), size_symbol("d")


# ------------------------------------------------------------------------------------------------
# formulas as kernel expressions: a BlockMat over the prompt's letters (X_0 = [X, x_q])
# ------------------------------------------------------------------------------------------------
def _spaces(dim) -> tuple:
    dim = sympy.sympify(dim)
    if dim == 1:
        return ("1",)
    if dim == D_SYM:
        return ("d",)
    if dim == N_SYM:
        return ("n",)
    if sympy.expand(dim - N_SYM - 1) == 0:
        return ("n", "1")
    raise Unevaluable(f"dimension {dim} has no block form", undecided=True)


def _block_eye(dim) -> BlockMat:
    sp = _spaces(dim)
    one = lambda a: Mat.scalar(1) if a == "1" else identity(a)  # noqa: E731 - "1" is a scalar
    return BlockMat([[one(a) if a == b else zeros(a, b) for b in sp] for a in sp])


def _as_scalar_mat(b: BlockMat) -> Mat | None:
    if b.row_spaces == ("1",) and b.col_spaces == ("1",):
        return b[0, 0]
    return None


def block_value(expr: sympy.Basic, env: Mapping[str, BlockMat]) -> Any:
    """The formula as a BlockMat (a 1 x 1 one for a scalar) over the letters ``env`` gives its
    matrix symbols; ``Inverse(Sigma)`` is the letter env["Inverse(Sigma)"].  Unevaluable for a
    node the kernel does not take (a fractional power, another inverse)."""
    ev = lambda e: block_value(e, env)  # noqa: E731
    if isinstance(expr, sympy.MatrixSymbol):
        if expr.name not in env:
            raise Unevaluable(f"no letter for {expr.name}", undecided=True)
        return env[expr.name]
    if isinstance(expr, sympy.Identity):
        return _block_eye(expr.rows)
    if isinstance(expr, sympy.ZeroMatrix):
        return BlockMat([[zeros(a, b) for b in _spaces(expr.cols)] for a in _spaces(expr.rows)])
    if isinstance(expr, sympy.Transpose):
        return ev(expr.args[0]).T
    if isinstance(expr, sympy.Inverse):
        arg = expr.args[0]
        key = f"Inverse({arg})"
        if key in env:
            return env[key]
        if isinstance(arg, sympy.Transpose) and f"Inverse({arg.args[0]})" in env:
            return env[f"Inverse({arg.args[0]})"].T  # (B^T)^{-1} = (B^{-1})^T
        raise Unevaluable(f"the kernel has no letter for {key}", undecided=True)
    if isinstance(expr, sympy.Trace):
        m = ev(expr.args[0])
        if m.row_spaces != m.col_spaces:
            raise Unevaluable("trace of a non-square matrix")
        tr = None
        for k in range(len(m.row_spaces)):
            t = m[k, k].trace()
            tr = t if tr is None else tr + t
        return BlockMat([[tr]])
    if isinstance(expr, sympy.MatPow):
        p = sympy.sympify(expr.args[1])
        if not (p.is_Integer and p > 0):
            raise Unevaluable(f"a matrix power {p}", undecided=True)
        base = ev(expr.args[0])
        out = base
        for _ in range(int(p) - 1):
            out = out @ base
        return out
    if isinstance(expr, (sympy.MatAdd, sympy.Add)):
        parts = [ev(a) for a in expr.args]
        out = parts[0]
        for p in parts[1:]:
            if not isinstance(p, BlockMat) or not isinstance(out, BlockMat):
                raise Unevaluable("a sum of a matrix and a scalar")
            if (p.row_spaces, p.col_spaces) != (out.row_spaces, out.col_spaces):
                raise Unevaluable("a sum of differently shaped matrices")
            out = out + p
        return out
    if isinstance(expr, (sympy.MatMul, sympy.Mul)):
        coeff, out = sympy.Integer(1), None
        for a in expr.args:
            v = ev(a)
            if not isinstance(v, BlockMat):
                coeff = coeff * v
                continue
            if out is None:
                out = v
            elif out.col_spaces == v.row_spaces:
                out = out @ v
            elif _as_scalar_mat(v) is not None:
                s = _as_scalar_mat(v)
                out = out._map(lambda b: b * s)
            elif _as_scalar_mat(out) is not None:
                s = _as_scalar_mat(out)
                out = v._map(lambda b: b * s)
            else:
                raise Unevaluable("a product of mismatched shapes")
        if out is None:
            return coeff
        return out * coeff if coeff != 1 else out
    if isinstance(expr, sympy.Pow) and not expr.is_Matrix:
        base, e = ev(expr.args[0]), ev(expr.args[1])
        if isinstance(base, BlockMat) or isinstance(e, BlockMat):
            raise Unevaluable("a power of a matrix written as a scalar power")
        return base ** e
    if isinstance(expr, sympy.Symbol):
        if expr.name in ("n", "d"):
            return size_symbol(expr.name)
        raise Unevaluable(f"no value for {expr.name}", undecided=True)
    if isinstance(expr, sympy.Number):
        return expr
    raise Unevaluable(f"{type(expr).__name__} is not taken by the kernel", undecided=True)


def prompt_env(w_prior: str = "sigma_inverse", isotropic: bool = False) -> dict:
    """The kernel's letters for App. B's symbols: X_0 = [X, x_q] (Gaussian columns), w*,
    M = diag(I_n, 0), Sigma and Sigma^{-1}."""
    sp = symbolic_prompt(w_prior, isotropic=isotropic)
    env = {"X_0": BlockMat([[sp.X, sp.xq]]), "w_star": BlockMat([[sp.w]]),
           "M": BlockMat([[identity("n"), zeros("n", "1")], [zeros("1", "n"), zeros("1", "1")]])}
    if not isotropic:
        env["Sigma"] = BlockMat([[sp.Sigma]])
        env["Inverse(Sigma)"] = BlockMat([[matrix("Sigma_inv", "d", "d", symmetric=True,
                                                  latex="\\Sigma^{-1}")]])
    return env


def scalar_expectation(b: Any) -> Poly:
    """E of a 1 x 1 BlockMat (a scalar formula) by Isserlis."""
    m = _as_scalar_mat(b) if isinstance(b, BlockMat) else None
    if m is None:
        raise Unevaluable("the formula is not a scalar")
    return expectation(m)


def query_error(layers: int, model: str, w_prior: str = "sigma_inverse", isotropic: bool = False,
                letters: Callable | None = None) -> Mat:
    """[Z_k]_{d+1,n+1} + <w*, x_q> on the prompt of eq. (1) (query label 0): the error of the
    in-context loss (5), with the 1/n dropped (App. B).  ``letters(i)`` gives the layer's
    (A_i, B_i) as kernel matrices (default: full letters, ``sparse.weights``)."""
    sp = symbolic_prompt(w_prior, isotropic=isotropic)
    ws = [pq_weights(*letters(i)) for i in range(layers)] if letters else weights(layers, model)
    return readout(lsa_forward(sp.Z, ws, sp.mask, 1)) + sp.target


@lru_cache(maxsize=None)
def derived_loss(layers: int, model: str = "eq9", w_prior: str = "sigma_inverse",
                 isotropic: bool = False) -> Poly:
    """f of (5) with the 1/n dropped (App. B), full letters A_i (B_i): E[e^2] by Isserlis."""
    e = query_error(layers, model, w_prior, isotropic)
    return expectation(e * e)


def same_poly(p: Poly, q: Poly) -> bool:
    """p = q as polynomials in the letters (canonical words, coefficients cancelled)."""
    return all(sympy.cancel(sympy.expand(c)) == 0 for c in (p - q).terms.values())


# ------------------------------------------------------------------------------------------------
# directional derivatives of f on S, by the kernel
# ------------------------------------------------------------------------------------------------
EPS = sympy.Symbol("epsilon")


@lru_cache(maxsize=None)
def derivative_poly(layers: int, model: str, kind: str, j: int, whitened: bool) -> Poly:
    """d/dt f(A(tD, j)) (``kind`` "A") or d/dt f(A, B(tD, j)) ("B") at t = 0 and A_i = a_i
    Sigma^{-1}, B_i = b_i I, for a free (not symmetric) direction letter D: E[2 e e'] with e the
    query error (1/n dropped: f of App. B, eqs. (23), (32)) and e' its first-order change.

    ``whitened``: at Sigma = I (A_i = a_i I), for ``directional``'s change of variables."""
    Si = identity("d") if whitened else matrix("Sigma_inv", "d", "d", symmetric=True,
                                                latex="\\Sigma^{-1}")
    D = matrix("D", "d", "d")

    def letters(perturb: bool):
        def at(i):
            A = Si * a_sym(i)
            B = identity("d") * b_sym(i) if model == "eq13" else None
            if perturb and i == j:
                if kind == "A":
                    A = A + D * EPS
                else:
                    B = B + D * EPS
            return A, B
        return at

    e0 = query_error(layers, model, isotropic=whitened, letters=letters(False))
    e1 = query_error(layers, model, isotropic=whitened, letters=letters(True)).map_coeffs(
        lambda c: sympy.diff(c, EPS).subs(EPS, 0))
    return expectation(e0 * e1).scale(2)


@lru_cache(maxsize=256)
def _at_sizes(poly: Poly, n: int, d: int) -> Poly:
    """The polynomial with n and d substituted in its coefficients (exact evaluation then
    substitutes only a_i, b_i, in expanded polynomials)."""
    sizes = {size_symbol("n"): n, size_symbol("d"): d}
    return poly.map_coeffs(lambda c: sympy.expand(c.xreplace(sizes)))


def on_set_scalars(p: Point) -> dict:
    """a_i, b_i of a point on S (A_i = a_i Sigma^{-1}, B_i = b_i I), with n and d."""
    out = {"n": p.n, "d": p.d}
    for i, (a, b) in enumerate(zip(*p.ab)):
        out[f"a_{i}"], out[f"b_{i}"] = a, b
    return out


def directional(p: Point, model: str, kind: str, j: int, D) -> Any:
    """The derived d/dt f at the point (on S) along the direction D of layer j's weight.

    Model (9): the kernel's polynomial in Sigma, Sigma^{-1}, D.  Model (13) (its full-Sigma
    polynomial takes seconds): the change of variables x = H xi, w* = H^{-1} omega (H =
    Sigma^{1/2}) maps the layers (13) at (A_i, B_i) to the layers at (H A_i H, H^{-1} B_i H) on
    Sigma = I with the same query error, so d/dt f along D is the isotropic polynomial at
    H D H (A) or H^{-1} D H (B); the numeric tier checks it against the forward pass."""
    whitened = model == "eq13"
    poly = derivative_poly(p.layers, model, kind, j, whitened)
    if p.exact:
        poly = _at_sizes(poly, p.n, p.d)
    H, Hi = p.H, inv(p.H, p.exact)
    if whitened:
        D = mul(H, D, H, exact=p.exact) if kind == "A" else mul(Hi, D, H, exact=p.exact)
        env = {"D": D}
    else:
        env = {"Sigma": p.Sigma, "Sigma_inv": p.Sigma_inv, "D": D}
    if not p.exact:
        env = {k: np.asarray(v, dtype=float) for k, v in env.items()}
    out = poly.evaluate(env, on_set_scalars(p), exact=p.exact)
    return sympy.expand(out) if p.exact else float(out)


def gradient(p: Point, model: str, kind: str, j: int) -> Any:
    """The full-matrix gradient of f at the point: <grad, D> = d/dt f along D, read off at the
    d^2 unit directions E_ab (exact or float)."""
    d = p.d
    out = sympy.zeros(d, d) if p.exact else np.zeros((d, d))
    for a in range(d):
        for b in range(d):
            E = sympy.zeros(d, d) if p.exact else np.zeros((d, d))
            E[a, b] = 1
            out[a, b] = directional(p, model, kind, j, E)
    return out


def set_point(rng: np.random.Generator, n: int, d: int, layers: int, exact: bool,
              spectrum=None, label: str = "") -> Point:
    """A point of S (A_i = a_i Sigma^{-1}, B_i = b_i I) that keeps its scalars (a, b)."""
    p = exact_point(rng, n, d, layers, False, spectrum=spectrum, label=label) if exact else \
        float_point(rng, n, d, layers, False, label=label)
    if exact:
        a = [_rat(rng, (-3, -2, -1, 1, 2), (2, 3, 4)) for _ in range(layers)]
        b = [_rat(rng, (-2, -1, 1, 2), (2, 3)) for _ in range(layers)]
        I = sympy.eye(d)
    else:
        a = list(rng.normal(0, 0.5, layers))
        b = list(rng.normal(0, 0.5, layers))
        I = np.eye(d)
    Si = p.Sigma_inv
    return replace(p, A=tuple(Si * x for x in a), B=tuple(I * x for x in b),
                   ab=(tuple(a), tuple(b)))


def _signed_permutations(d: int, Q: sympy.Matrix | None = None):
    import itertools

    for perm in itertools.permutations(range(d)):
        for signs in itertools.product((1, -1), repeat=d):
            P = sympy.zeros(d, d)
            for i, k in enumerate(perm):
                P[k, i] = signs[i]
            yield P if Q is None else Q * P * Q.T


def haar2_average(fn: Callable, d: int) -> sympy.Matrix:
    """E_U fn(U) over Haar U in O(d), exactly, for fn of degree <= 3 in U's entries on O(d): the
    average over the 2^d d! signed permutation matrices, whose moments of order <= 3 are Haar's
    (order 2: E U_ij U_kl = delta_ik delta_jl / d; odd orders vanish, -I belongs to both).

    The degree is read off fn at a symbolic U where fn is a polynomial there; where it is not
    (an inverse of U), fn is averaged element by element over the group and over its conjugate
    by a rational rotation, both 3-designs: averages that differ say the degree exceeds 3."""
    u = sympy.Matrix(d, d, lambda i, j: sympy.Symbol(f"u_{i}_{j}"))
    try:
        body = sympy.Matrix(fn(u))
        degree = max((sympy.Poly(e, *u).total_degree() for e in body if e != 0), default=0)
    except (sympy.PolynomialError, Unevaluable, ValueError, TypeError, ZeroDivisionError):
        body = None
    if body is not None:
        if degree > 3:
            raise Unevaluable(f"degree {degree} in U: the signed permutations are a 3-design")
        terms = [body.xreplace(dict(zip(u, P))) for P in _signed_permutations(d)]
        return (sum(terms, sympy.zeros(*body.shape)) / len(terms)).applyfunc(sympy.expand)
    avgs = []
    for Q in (None, _small_rotation(d, np.random.default_rng(5))):
        terms = [sympy.Matrix(fn(P)) for P in _signed_permutations(d, Q)]
        avgs.append((sum(terms, sympy.zeros(*terms[0].shape)) / len(terms)).applyfunc(
            sympy.expand))
    if any(e != 0 for e in (avgs[0] - avgs[1])):
        raise Unevaluable("the two 3-designs average differently: degree > 3 in U")
    return avgs[0]


def projection(R, K, exact: bool):
    """The multiple c K of K nearest to R (c = <R, K> / <K, K>): R is in span(K) iff equal."""
    if exact:
        R, K = sympy.Matrix(R), sympy.Matrix(K)
        return K * (sum(R.multiply_elementwise(K)) / sum(K.multiply_elementwise(K)))
    R, K = np.asarray(R, dtype=float), np.asarray(K, dtype=float)
    return K * (np.sum(R * K) / np.sum(K * K))


def inner(a, b, exact: bool):
    """<a, b> = tr(a^T b)."""
    if exact:
        return sum(sympy.Matrix(a).multiply_elementwise(sympy.Matrix(b)))
    return float(np.sum(np.asarray(a, dtype=float) * np.asarray(b, dtype=float)))


# ------------------------------------------------------------------------------------------------
# E over w* ~ N(0, Sigma^{-1}) at a fixed X_0, by the kernel (App. B.2/B.3 Step 1)
# ------------------------------------------------------------------------------------------------
def _ew_env() -> dict:
    Si = matrix("Sigma_inv", "d", "d", symmetric=True, latex="\\Sigma^{-1}")
    w = gaussian_vector("w", "d", cov=Si)
    return {"w_star": BlockMat([[w]]), "G": BlockMat([[matrix("G_c", "d", "n"), vector("g_q")]]),
            "M": BlockMat([[identity("n"), zeros("n", "1")], [zeros("1", "n"), zeros("1", "1")]]),
            "Sigma": BlockMat([[matrix("Sigma", "d", "d", symmetric=True)]]),
            "Inverse(Sigma)": BlockMat([[Si]])}


@lru_cache(maxsize=64)
def _ew_poly(expr: sympy.Basic) -> Poly:
    return scalar_expectation(block_value(expr, _ew_env()))


def ew_value(expr: sympy.Basic, p: Point, G) -> Any:
    """E over w* ~ N(0, Sigma^{-1}) of a scalar formula in G, M, w*, Sigma at this point's
    G (a fixed X_0): the kernel's polynomial in G's blocks, evaluated."""
    poly = _ew_poly(expr)
    n = p.n
    env = {"G_c": G[:, :n], "g_q": G[:, n:], "Sigma": p.Sigma, "Sigma_inv": p.Sigma_inv}
    if not p.exact:
        env = {k: np.asarray(v, dtype=float) for k, v in env.items()}
    out = poly.evaluate(env, {"n": n, "d": p.d}, exact=p.exact)
    return sympy.expand(out) if p.exact else float(out)


@lru_cache(maxsize=None)
def _ew_label_poly() -> Poly:
    env = _ew_env()
    w = env["w_star"][0, 0]
    g = vector("g_q")
    return expectation((w.T @ g) * (g.T @ w))


def ew_loss(p: Point, g) -> Any:
    """E over w* of the squared query label (w*^T g)^2, g = G's query column (G derived from
    the forward pass): the loss integrand at a fixed X_0, by the kernel."""
    env = {"g_q": g, "Sigma_inv": p.Sigma_inv}
    if not p.exact:
        env = {k: np.asarray(v, dtype=float) for k, v in env.items()}
    out = _ew_label_poly().evaluate(env, {"d": p.d}, exact=p.exact)
    return sympy.expand(out) if p.exact else float(out)


# ------------------------------------------------------------------------------------------------
# Monte Carlo: d/dt f along a direction from the real forward pass; E_U over Haar U
# ------------------------------------------------------------------------------------------------
def mc_directional(p: Point, model: str, kind: str, j: int, D, count: int,
                   rng: np.random.Generator):
    """Samples of d/dt (query error)^2 at t = 0 along the direction D of layer j's weight, over
    prompts x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1}) (query label 0), by forward-mode
    differentiation of ``lsa_forward`` (1/n dropped)."""
    from moments.montecarlo import estimate

    n, d = p.n, p.d
    H = np.asarray(p.H, dtype=float)
    X0 = H @ rng.standard_normal((count, d, n + 1))
    w = np.linalg.inv(H) @ rng.standard_normal((count, d, 1))
    Y0 = np.swapaxes(w, -1, -2) @ X0
    Y0[..., 0, n] = 0.0
    As = [Dual(np.asarray(a, dtype=float)) for a in p.A]
    Bs = None if model == "eq9" else [Dual(np.asarray(b, dtype=float)) for b in p.B]
    moved = As if kind == "A" else Bs
    moved[j] = Dual(moved[j].v, np.asarray(D, dtype=float))
    Y = _dual_layers(Dual(X0), Dual(Y0), As, Bs)[-1][1]
    target = (np.swapaxes(w, -1, -2) @ X0[..., :, n:])[..., 0, 0]
    e, de = Y.v[..., 0, n] + target, Y.d[..., 0, n]
    return estimate(2 * e * de)


def haar_mc(fn: Callable, d: int, count: int, rng: np.random.Generator):
    """Mean and standard error of fn(U) over Haar U in O(d); ``fn`` takes the batch (count, d,
    d) of U and returns (count, r, c)."""
    q, r = np.linalg.qr(rng.standard_normal((count, d, d)))
    U = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    vals = np.asarray(fn(U), dtype=float)
    return vals.mean(0), vals.std(0, ddof=1) / np.sqrt(count)
