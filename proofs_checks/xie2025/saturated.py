"""The saturated class: the ICL risk as a least-squares problem in T = sum_h b_h (x) A_h.

The prediction of H heads is y_q + sum_{ijk} T_ijk G_ij z_q[k] (App. A.1), so the risk is the
quadratic R(T) = R_0 - 2 <c, T> + <T, K T>, convex in T; G is symmetric, so only the symmetric part
of T in (i, j) enters and the features are G_ij z_q[k] for i <= j.  Their Gram matrix is the
Kronecker product K_ctx (x) K_q of E[G_a G_b] and E[z_q[k] z_q[n]] (``derive.factorisation_defect``
checks this), so the minimiser is Theta = K_ctx^{-1} Cmat K_q^{-1} and the optimal risk
R* = R_0 - <Cmat, Theta>, solved exactly (sympy ``DomainMatrix`` over Q or Q(C, ...)).

With d+1 heads any T is realised (b_h = e_h, A_h[j, k] = T_hjk), so R* is the optimal risk of
every H >= d+1 (Thm. 1); fewer heads realise (the symmetric part of) T iff its matrices
S_k = sym(T[:, :, k]) have a common totally isotropic subspace of dimension d+1-H.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import sympy
from sympy.polys.matrices import DomainMatrix

from . import derive
from .tensors import probe_tensor


def sym_pairs(d: int) -> list[tuple[int, int]]:
    """The feature index pairs (i <= j) over [0, d]."""
    return [(i, j) for i in range(d + 1) for j in range(i, d + 1)]


@dataclass(frozen=True)
class LiftedProblem:
    """R(Theta) = R_0 - 2 <Cmat, Theta> + <Theta, K_ctx Theta K_q> for features G_a z_q[k]."""

    d: int
    guess: str
    ks: tuple[int, ...]
    K_ctx: sympy.Matrix
    K_q: sympy.Matrix
    Cmat: sympy.Matrix
    R0: sympy.Expr

    @property
    def pairs(self) -> list[tuple[int, int]]:
        return sym_pairs(self.d)

    def risk(self, Theta: sympy.Matrix) -> sympy.Expr:
        quad = (Theta.T * self.K_ctx * Theta * self.K_q).trace()
        lin = sum((self.Cmat[a, k] * Theta[a, k] for a in range(Theta.shape[0])
                   for k in range(Theta.shape[1])), sympy.Integer(0))
        return self.R0 - 2 * lin + quad


def _vec(m) -> list:
    return [m[i, 0] for i in range(m.shape[0])]


def lifted_problem(d: int, C, w_star: sympy.Matrix, guess: str = "zero",
                   v: sympy.Matrix | None = None, beta=0, exact: bool = True) -> LiftedProblem:
    """The exact quadratic at dimension d (C a number or the symbol C; w*, v exact or symbolic)."""
    L = derive.lifted(guess)
    vectors = {"w_star": _vec(w_star)}
    if guess != "zero":
        vectors["v"] = _vec(v if v is not None else sympy.zeros(d, 1))
    scalars = {"C": C, "d": d, "beta": beta}
    ks = tuple(range(d + 1)) if (guess == "affine" and beta != 0) else tuple(range(d))
    pairs = sym_pairs(d)
    ctx = probe_tensor(L.ctx, derive.CTX_SLOTS, d, vectors, scalars, exact)
    query = probe_tensor(L.query, derive.QUERY_SLOTS, d, vectors, scalars, exact)
    lin = probe_tensor(L.linear, ("p", "q", "r"), d, vectors, scalars, exact)
    base = probe_tensor(L.base, (), d, vectors, scalars, exact).get((), 0)
    K_ctx = sympy.Matrix(len(pairs), len(pairs),
                         lambda a, b: ctx.get(pairs[a] + pairs[b], 0))
    K_q = sympy.Matrix(len(ks), len(ks), lambda k, n: query.get((ks[k], ks[n]), 0))
    Cmat = sympy.Matrix(len(pairs), len(ks), lambda a, k: lin.get(pairs[a] + (ks[k],), 0))
    return LiftedProblem(d, guess, ks, K_ctx, K_q, Cmat, sympy.sympify(base))


def _domain_matrices(*mats: sympy.Matrix):
    dms = [DomainMatrix.from_Matrix(m) for m in mats]
    dom = dms[0].domain
    for m in dms[1:]:
        dom = dom.unify(m.domain)
    dom = dom.get_field()
    return [m.convert_to(dom) for m in dms], dom


@dataclass(frozen=True)
class Solution:
    """The minimiser Theta (pairs x ks) and the optimal risk R*, exact."""

    problem: LiftedProblem
    Theta: sympy.Matrix
    R_star: sympy.Expr

    def tensor(self) -> list:
        """T[i][j][k] over [0, d]^3: Theta on i <= j, zero below the diagonal and for k not in ks."""
        d = self.problem.d
        T = [[[sympy.Integer(0)] * (d + 1) for _ in range(d + 1)] for _ in range(d + 1)]
        for a, (i, j) in enumerate(self.problem.pairs):
            for kk, k in enumerate(self.problem.ks):
                T[i][j][k] = self.Theta[a, kk]
        return T

    def S(self, k: int) -> sympy.Matrix:
        """S_k = sym(T[:, :, k]): the (d+1) x (d+1) matrix the features of query component k see."""
        d = self.problem.d
        T = self.tensor()
        M = sympy.Matrix(d + 1, d + 1, lambda i, j: T[i][j][k])
        return (M + M.T) / 2


def solve(problem: LiftedProblem, simplify: bool = True) -> Solution:
    """Theta = K_ctx^{-1} Cmat K_q^{-1}, R* = R_0 - <Cmat, Theta> (exact)."""
    (Kc, Cm, Kq), dom = _domain_matrices(problem.K_ctx, problem.Cmat, problem.K_q)
    Y = Kc.lu_solve(Cm)
    Theta = Kq.lu_solve(Y.transpose()).transpose()
    Th = Theta.to_Matrix()
    inner = sum((Cm.to_Matrix()[a, k] * Th[a, k] for a in range(Th.shape[0])
                 for k in range(Th.shape[1])), sympy.Integer(0))
    R_star = problem.R0 - inner
    if simplify:
        R_star = sympy.factor(sympy.cancel(R_star))
        Th = Th.applyfunc(lambda e: sympy.factor(sympy.cancel(e)))
    return Solution(problem, Th, R_star)


@lru_cache(maxsize=None)
def optimum(d: int, C, w_entries: tuple, guess: str = "zero", v_entries: tuple | None = None,
            beta=0) -> Solution:
    """Cached ``solve(lifted_problem(...))`` with hashable arguments."""
    w = sympy.Matrix(list(w_entries))
    v = None if v_entries is None else sympy.Matrix(list(v_entries))
    return solve(lifted_problem(d, C, w, guess, v, beta))


# ----------------------------------------------------------------------------------------------
# Heads that realise a given T
# ----------------------------------------------------------------------------------------------
def heads_for_tensor(T: list, d: int) -> list[dict]:
    """d+1 heads with b_h = e_h and A_h[j, k] = T[h][j][k] (the construction of App. A.1)."""
    heads = []
    for h in range(d + 1):
        A = sympy.Matrix(d + 1, d + 1, lambda j, k: T[h][j][k])
        b = sympy.zeros(d + 1, 1)
        b[h] = 1
        heads.append({"b": b, "A": A})
    return heads


def heads_with_isotropic_vector(S: Sequence[sympy.Matrix], u_index: int, d: int) -> list[dict]:
    """d heads with b_h = e_h (h != u_index) realising sym(M_k) = S_k for every k, valid when the
    coordinate vector e_u is isotropic for every S_k: M_k = P S_k P + 2 P S_k Q with P the projector
    onto span(e_h, h != u), Q = e_u e_u^T (so range(M_k) is in span(b_h) and sym(M_k) = S_k)."""
    P = sympy.eye(d + 1)
    P[u_index, u_index] = 0
    Qm = sympy.zeros(d + 1, d + 1)
    Qm[u_index, u_index] = 1
    Ms = [P * Sk * P + 2 * P * Sk * Qm for Sk in S]
    heads = []
    for h in range(d + 1):
        if h == u_index:
            continue
        b = sympy.zeros(d + 1, 1)
        b[h] = 1
        A = sympy.zeros(d + 1, d + 1)
        for k, Mk in enumerate(Ms):
            A[:, k] = Mk[h, :].T
        heads.append({"b": b, "A": A})
    return heads


def head_tensor(heads: Sequence[dict], d: int) -> list:
    """T_ijk = sum_h b_h[i] A_h[j, k]."""
    T = [[[sympy.Integer(0)] * (d + 1) for _ in range(d + 1)] for _ in range(d + 1)]
    for hd in heads:
        b, A = hd["b"], hd["A"]
        for i in range(d + 1):
            if b[i] == 0:
                continue
            for j in range(d + 1):
                for k in range(d + 1):
                    T[i][j][k] += b[i] * A[j, k]
    return T


