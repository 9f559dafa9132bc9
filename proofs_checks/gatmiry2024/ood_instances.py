"""Exact out-of-distribution instances of Thm. 4.5 / A.13 at a general Sigma*.

The optimal looped model has u = 0 and A^opt = a*(n, d, L) Sigma*^{-1}: with x = Sigma*^{1/2} z
and w* = Sigma*^{-1/2} v the population loss at Sigma* (w* ~ N(0, Sigma*^{-1})) is the one at I
after A -> Sigma*^{1/2} A Sigma*^{1/2} (Lemma 4.1's tr (I - A^{1/2} Sigma A^{1/2})^{2L} keeps its
spectrum), whose minimiser is a* I.  An instance here is Sigma* (rational), a Sigma*-orthogonal
rational basis V (V^T Sigma* V = D diagonal) and X^out = Sigma* V diag(x): then
Sigma*^{-1} X X^T v_i = D_i x_i^2 v_i, so the relative spectrum of X X^T / n, which the window (10)
/ (30) bounds, is exactly {D_i x_i^2 / n}.  The error of the model is w^T E x_q, E read off the
forward pass of eqs. (2)-(4) (``error_matrix``)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import mpmath
import numpy as np
import sympy

from models.lsa import lsa_forward

# a rational rotation near 45 degrees (20/29, 21/29): in the whitened coordinates the relative
# eigenvectors of Sigma^out then mix the eigen-directions of Sigma*, which the cross pairs need
_C, _S = sympy.Rational(20, 29), sympy.Rational(21, 29)
_DIGITS = 12  # rational approximations of square roots: 10^-12


@dataclass(frozen=True)
class Covariance:
    """Sigma* of the exact instances: ``sigma`` (rational, positive definite), ``U`` rational
    (approximate, where Sigma* has irrational eigenvectors) eigenvectors as columns, largest
    eigenvalue first, and the eigenvalues ``eigs`` (exact where known, else 30 digits)."""

    name: str
    sigma: sympy.ImmutableMatrix
    U: sympy.ImmutableMatrix
    eigs: tuple

    @property
    def d(self) -> int:
        return self.sigma.shape[0]

    @property
    def isotropic(self) -> bool:
        return self.sigma == self.sigma[0, 0] * sympy.eye(self.d)

    @cached_property
    def inverse(self) -> sympy.ImmutableMatrix:
        return sympy.ImmutableMatrix(self.sigma.inv())


def covariance(name: str, sigma, U=None, eigs=None) -> Covariance:
    """A Covariance from exact Sigma* (``U``, ``eigs`` where known exactly: rational U orthogonal,
    Sigma* = U diag(eigs) U^T); otherwise the eigenvectors of the float Sigma*, rationalised."""
    sigma = sympy.ImmutableMatrix(sigma)
    if U is None or eigs is None:
        vals, vecs = np.linalg.eigh(np.array(sigma.tolist(), dtype=float))
        U = sympy.Matrix([[sympy.Rational(round(float(v) * 10 ** 9), 10 ** 9) for v in row]
                          for row in vecs])
        eigs = tuple(sympy.Float(v, 30) for v in vals)
    order = sorted(range(len(eigs)), key=lambda i: -float(eigs[i]))
    U = sympy.ImmutableMatrix(sympy.Matrix.hstack(*[sympy.Matrix(U)[:, i] for i in order]))
    return Covariance(name, sigma, U, tuple(eigs[i] for i in order))


def squared_root(B, name: str) -> Covariance:
    """Sigma* = B^2 for a rational diagonal B: every square root in the instances is rational."""
    B = sympy.ImmutableMatrix(B)
    d = B.shape[0]
    return covariance(name, B * B, sympy.eye(d), tuple(B[i, i] ** 2 for i in range(d)))


def _ratio_above(x) -> sympy.Rational:
    """A rational >= x (mpf or exact), within 10^-12 relative; x itself where rational."""
    x = sympy.sympify(x)
    if x.is_Rational:
        return x
    with mpmath.workdps(40):
        v = mpmath.mpf(str(sympy.N(x, 40)))
        scale = mpmath.mpf(10) ** (_DIGITS - int(mpmath.floor(mpmath.log10(v))))
        return sympy.Rational(int(mpmath.ceil(v * scale)), int(scale))


def _rational_sqrt(x) -> sympy.Rational:
    """sqrt(x) where it is rational, else a rational approximation from above."""
    r = sympy.sqrt(sympy.sympify(x))
    return r if r.is_Rational else _ratio_above(r)


def _rotation(d: int) -> sympy.Matrix:
    """The rational rotation by about 46 degrees in the plane of the first and last axes."""
    R = sympy.eye(d)
    if d > 1:
        R[0, 0], R[0, d - 1], R[d - 1, 0], R[d - 1, d - 1] = _C, -_S, _S, _C
    return R


def bases(cov: Covariance) -> list[tuple[str, sympy.Matrix, tuple]]:
    """(label, V, D): Sigma*-orthogonal rational bases, V^T Sigma* V = diag(D), whose whitened
    vectors Sigma*^{1/2} v_i are (close to) the eigenvectors of Sigma* ("eigen") and those turned
    by about 46 degrees ("mixed"); exactly so, with D = 1, where the eigenvalues are rational
    squares.  Gram-Schmidt in the Sigma* inner product keeps them exactly Sigma*-orthogonal."""
    d = cov.d
    h = sympy.diag(*[1 / _rational_sqrt(e) for e in cov.eigs])
    starts = [("eigen", cov.U * h)] + ([] if d == 1 or cov.isotropic
                                       else [("mixed", cov.U * h * _rotation(d))])
    out = []
    for label, T in starts:
        vs = []
        for k in range(d):
            v = T[:, k]
            for u in vs:
                v = v - (u.T * cov.sigma * v)[0, 0] / (u.T * cov.sigma * u)[0, 0] * u
            vs.append(v)
        V = sympy.Matrix.hstack(*vs)
        out.append((label, V, tuple((v.T * cov.sigma * v)[0, 0] for v in vs)))
    return out


def scaled_columns(rs, scale, D) -> list:
    """x_i = r_i * scale / sqrt(D_i) (rational from above where sqrt(D_i) is not): the relative
    eigenvalues D_i x_i^2 / n of X X^T / n are then r_i^2 scale^2 / n (or just above)."""
    return [r * scale * (1 if Di == 1 else _ratio_above(1 / sympy.sqrt(Di)))
            for r, Di in zip(rs, D)]


def error_matrix(X: sympy.Matrix, sigma_inv: sympy.Matrix, n, L: int, a_opt) -> sympy.Matrix:
    """E with TF_L - y_q = w^T E x_q, from the forward pass (eqs. (2)-(4)): u = 0,
    A = a* Sigma*^{-1}, one pass per w = e_i, with the d queries e_j as masked columns (the mask
    of eq. (2) keeps them out of the keys, so each evolves as the one query of its own prompt);
    the zero examples up to n add nothing, the 1/n of eq. (3) is kept."""
    d, m = X.shape
    P = sympy.zeros(d + 1, d + 1)
    P[d, d] = 1
    Q = sympy.zeros(d + 1, d + 1)
    Q[:d, :d] = a_opt * sigma_inv
    M = sympy.diag(*([1] * m + [0] * d))
    E = sympy.zeros(d, d)
    for i in range(d):
        Z = sympy.zeros(d + 1, m + d)
        Z[:d, :m], Z[:d, m:] = X, sympy.eye(d)
        Z[d, :m] = X[i, :]  # y^T = e_i^T X
        out = lsa_forward(Z, [(P, Q)] * L, M, sympy.Integer(n), step=-1)
        for j in range(d):
            E[i, j] = -out[d, m + j] - (1 if i == j else 0)
    return E


def relative_spectrum(sig: sympy.Matrix, V: sympy.Matrix, D: tuple) -> list | None:
    """The eigenvalues of Sigma*^{-1} Sigma^out (the extreme ones bound Sigma^out between
    multiples of Sigma*, the window (10)): exactly, via V^T Sigma^out V (diagonal when Sigma^out
    is a multiple of X X^T); None where they are not real."""
    M = V.T * sig * V
    d = len(D)
    if all(M[i, j] == 0 for i in range(d) for j in range(d) if i != j):
        return sorted((M[i, i] / D[i] for i in range(d)), key=float)
    lam = sympy.Symbol("lam")
    poly = sympy.Poly((sympy.diag(*D).inv() * M - lam * sympy.eye(d)).det(), lam)
    roots = sympy.polys.polyroots.roots(poly, multiple=True) if d <= 2 else poly.real_roots()
    if len(roots) != d or any(not sympy.sympify(r).is_real for r in roots):
        return None
    return sorted(roots, key=float)


def vector_text(v) -> str:
    return "(" + ", ".join(str(x) for x in v) + ")"


def matrix_text(m: sympy.Matrix) -> str:
    d = m.shape[0]
    if all(m[i, j] == 0 for i in range(d) for j in range(d) if i != j):
        return "diag(" + ", ".join(str(m[i, i]) for i in range(d)) + ")"
    return "[" + ", ".join(vector_text(m.row(i)) for i in range(d)) + "]"
