"""Exact moments of a real Wishart matrix, symbolic in n and in the power sums of Sigma.

Convention: W = sum_{i<=n} x_i x_i^T with x_i i.i.d. N(0, Sigma) (real case; W, **not** W/n), so
E[W] = n Sigma.  The results are polynomials in n, in p_j = tr Sigma^j and (for matrix-valued
moments) in Sigma itself; every polynomial in Sigma commutes with Sigma, so Sigma may be treated
as a commutative symbol in them.

Recursion.  Stein's lemma E[x_i h(x_i)] = Sigma E[grad h(x_i)] applied to
W^{m+1} p_lam(W) = sum_i x_i (x_i^T W^m p_lam(W)), with p_lam(W) = prod_r tr W^{lam_r} and
d W / d x_i = e x_i^T + x_i e^T, gives for m >= 0 and a partition lam

    E[W^{m+1} p_lam] = (n + m) Sigma E[W^m p_lam]
                       + sum_{j=0}^{m-1} Sigma E[tr(W^{j+1}) W^{m-1-j} p_lam]
                       + sum_{l in lam} 2 l Sigma E[W^{m+l} p_{lam - l}],

(the n from tr-free differentiation of x_i, the m and the traces from differentiating the m
factors W, the last sum from d tr W^l / d x_i = 2 l W^{l-1} x_i), closed by E[W^0 p_lam] =
E[p_lam] I and E[tr(W^l) p_mu] = tr E[W^l p_mu].  Every term on the right has total degree
m + |lam| one less, so the states (m, lam) are memoised by degree: their number is about the
number of partitions of size <= k (7338 for k = 24), not the (2k-1)!! Wick pairings.  Check:
m = 0 gives E[W^2] = n(n+1) Sigma^2 + n tr(Sigma) Sigma.  (Hillier & Kan 2024 publish a recursion
of this kind.)

Arithmetic.  A state of degree t is sum_{s, mu, e} c n^e p_mu Sigma^s with s + |mu| = t and
integers c >= 0 (all coefficients of the recursion are non-negative).  At n = 1, Sigma = 1 the
state is E[x^{2t}] = (2t-1)!!, which bounds every coefficient.  A state's coefficients form a
dense array indexed by mu (s is implied by the degree) and by the power e of n.  The keys of one
size and length never mix under the recursion, so the engine carries each such block of keys
from the level where the trace map creates it up to the root, one sparse matrix product per level
(``_run_blocks``); Python overhead is then a few hundred calls even at k = 24.  Arithmetic is
modulo 2^64 (wrapping uint64) and, when (2k-1)!! >= 2^64, also in float64 (the float value fixes
the high part; its error is bounded a priori, all terms being non-negative) or, beyond k = 24,
modulo primes below 2^50 (Chinese remaindering).  With Sigma = I a state is a polynomial in n and
d only, and whole levels are single arrays (``_run_identity``).  ``_run`` is the plain one array
per state version of the same recursion, kept as a cross-check.

The engine only (``moment`` returns a ``WishartPolynomial``); ``moments.wishart_sympy`` turns its
results into sympy expressions in n and the p_j (``trace_moment`` .. ``expected_power``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np
import sympy

from .letters import space_size
from .partitions import Partition, count, insert, partition_index, partition_list

try:  # the key SymPy sorts the arguments of Add and Mul by (canonical order, built directly)
    from sympy.core.basic import _args_sortkey
except ImportError:  # pragma: no cover - other SymPy versions: build through Mul(...)
    _args_sortkey = None

N = space_size("n")
D = space_size("d")
SIGMA = sympy.Symbol("Sigma")
MAX_DEGREE = 40  # the dense tables grow like the partition numbers: degree 40 needs gigabytes


def power_sum(j: int) -> sympy.Symbol:
    """p_j = tr Sigma^j, the symbol ``p{j}`` (``moments.spectral`` uses the same names)."""
    return sympy.Symbol(f"p{j}", positive=True)


# ----------------------------------------------------------------------------------------------
# The plan: the states reachable from a root, with their children, by degree
# ----------------------------------------------------------------------------------------------
State = tuple  # (m, lam)


@dataclass(frozen=True)
class Plan:
    """States reachable from ``root`` by the recursion, grouped by degree t = m + |lam|.

    ``children[state]`` lists ``(child, mm, factor)``: for the first term ``mm`` is m - 1 and the
    factor is n + mm (``factor`` None); otherwise ``mm`` is None and ``factor`` an integer.
    A closing state (0, lam) has the single child (lam[0], lam - lam[0]) and the trace map.
    """

    root: State
    levels: tuple
    children: Mapping
    parents: Mapping

    @property
    def degree(self) -> int:
        m, lam = self.root
        return m + sum(lam)

    @property
    def size(self) -> int:
        return sum(len(level) for level in self.levels)


def _children(state: State) -> list:
    m, lam = state
    if m == 0:
        return [((lam[0], lam[1:]), None, 1)] if lam else []
    mm = m - 1
    out = [((mm, lam), mm, None)]
    for j in range(mm):
        out.append(((mm - 1 - j, insert(lam, j + 1)), None, 1))
    previous = 0
    for i, l in enumerate(lam):
        if l != previous:  # lam is non-increasing: each distinct part once, with its multiplicity
            previous = l
            out.append(((mm + l, lam[:i] + lam[i + 1:]), None, 2 * l * lam.count(l)))
    return out


@lru_cache(maxsize=64)
def plan(m: int, lam: Partition = ()) -> Plan:
    """The memoised state graph of E[W^m p_lam(W)]."""
    root = (m, tuple(sorted(lam, reverse=True)))
    children: dict = {}
    stack = [root]
    while stack:
        s = stack.pop()
        if s in children:
            continue
        children[s] = _children(s)
        stack.extend(c for c, _, _ in children[s] if c not in children)
    degree = root[0] + sum(root[1])
    levels = [[] for _ in range(degree + 1)]
    for s in children:
        levels[s[0] + sum(s[1])].append(s)
    # open states (m >= 1) before closing states (m = 0) of the same degree: closing reads them
    levels = tuple(tuple(sorted(level, key=lambda s: (s[0] == 0, s))) for level in levels)
    parents: dict = {s: 0 for s in children}
    for s, chs in children.items():
        for c, _, _ in chs:
            parents[c] += 1
    return Plan(root, levels, children, parents)


# ----------------------------------------------------------------------------------------------
# Bases: where the outputs of a state live, and the trace (closing) maps
# ----------------------------------------------------------------------------------------------
class _Basis:
    """Key layout: open states of degree t use keys [0, open_len(t)); closing states keys
    [closed_off(t), closed_off(t) + closed_len(t)), stored relative to closed_off(t)."""

    def open_len(self, t: int) -> int: ...
    def closed_off(self, t: int) -> int: ...
    def closed_len(self, t: int) -> int: ...
    def close_map(self, t: int): ...


class _PartitionBasis(_Basis):
    """General Sigma: key = mu (closed cycles p_mu); the open power s = t - |mu| of Sigma."""

    def __init__(self, K: int) -> None:
        self.index = partition_index(K)
        self._maps: dict = {}

    def open_len(self, t):
        return self.index.prefix(t - 1)

    def closed_off(self, t):
        return self.index.prefix(t - 1)

    def closed_len(self, t):
        return count(t)

    def close_map(self, t):
        """tr: Sigma^s p_mu -> p_{mu + (s)} for the open keys of degree t (s = t - |mu| >= 1)."""
        if t not in self._maps:
            idx = self.index
            base = idx.prefix(t - 1)
            target = np.fromiter((idx.index[insert(mu, t - len_)] - base
                                  for mu, len_ in ((mu, sum(mu)) for mu in idx.items[:base])),
                                 dtype=np.int64, count=base)
            self._maps[t] = _grouping(target)
        return self._maps[t]

    def key(self, g: int, degree: int):
        mu = self.index.items[g]
        return degree - sum(mu), mu


class _IdentityBasis(_Basis):
    """Sigma = I: key = the number j of closed cycles (a factor d^j); Sigma^s = I."""

    def open_len(self, t):
        return t

    def closed_off(self, t):
        return 1 if t else 0

    def closed_len(self, t):
        return t if t else 1

    def close_map(self, t):
        return None  # j -> j + 1, i.e. the identity in relative coordinates

    def key(self, g: int, degree: int):
        return g


def _grouping(target: np.ndarray):
    order = np.argsort(target, kind="stable")
    sorted_t = target[order]
    starts = np.flatnonzero(np.r_[True, sorted_t[1:] != sorted_t[:-1]])
    return order, starts, sorted_t[starts]


def _close(basis: _Basis, t: int, arr: np.ndarray) -> np.ndarray:
    """The trace map on an array of shape (lanes, open keys of degree t)."""
    grouping = basis.close_map(t)
    if grouping is None:
        return arr.copy()
    order, starts, targets = grouping
    out = np.zeros((arr.shape[0], basis.closed_len(t)), dtype=arr.dtype)
    out[:, targets] = np.add.reduceat(arr[:, order], starts, axis=1)
    return out


# ----------------------------------------------------------------------------------------------
# Evaluation of a plan: modulo 2^64, in float64, or modulo a prime
# ----------------------------------------------------------------------------------------------
def _double_factorial(t: int) -> int:
    out = 1
    for i in range(1, 2 * t, 2):
        out *= i
    return out


@lru_cache(maxsize=1)
def _primes() -> tuple:
    out, p = [], 2 ** 50
    for _ in range(12):
        p = sympy.prevprime(p)
        out.append(p)
    return tuple(out)


WRAP, FLOAT = "wrap", "float"
_U = 2.0 ** -53  # unit roundoff of float64


def _float_error(pl: Plan) -> float:
    """A bound on the relative error of the float64 pass.

    All terms are non-negative, so a value's relative error is at most u times the number of
    roundings on its longest chain: per level one per product and one per addition, plus the
    additions of the trace map (at most one per distinct part, fewer than 8 below degree 36).
    """
    worst = 0
    for level in pl.levels:
        worst += max((2 * len(pl.children[s]) + 1 for s in level), default=0) + 8
    return (worst + 8) * _U


def _passes(pl: Plan) -> list:
    """Which passes determine the coefficients (all <= (2t-1)!!, t the degree) exactly.

    2^64 alone when the bound fits; else 2^64 and float64 when the float error stays below
    2^61 (the float value then fixes the high part); else 2^64 and primes below 2^50.
    """
    bound = _double_factorial(pl.degree)
    if bound < 2 ** 64:
        return [WRAP]
    if bound * _float_error(pl) < 2.0 ** 61:
        return [WRAP, FLOAT]
    passes, product = [WRAP], 2 ** 64
    for p in _primes():
        if product > bound:
            break
        passes.append(p)
        product *= p
    if product <= bound:
        raise ValueError(f"degree {pl.degree} is beyond the supported range")
    return passes


def _run(pl: Plan, basis: _Basis, how, trace: bool) -> np.ndarray:
    """The root's coefficients, an array (powers of n, keys): modulo 2^64 (``WRAP``), in float64
    (``FLOAT``) or modulo the prime ``how``."""
    values: dict = {}
    pending = dict(pl.parents)
    pending[pl.root] = pending.get(pl.root, 0) + 1
    if how == FLOAT:
        dtype, mod, cast = np.float64, None, float
    else:
        dtype, cast = np.uint64, np.uint64
        mod = None if how == WRAP else np.uint64(how)
    for t, level in enumerate(pl.levels):
        for state in level:
            m, lam = state
            if m == 0:
                if not lam:
                    out = np.ones((1, 1), dtype=dtype)
                else:
                    out = _close(basis, t, values[pl.children[state][0][0]])
                    if mod is not None:
                        out %= mod
            else:
                out = np.zeros((t + 1, basis.open_len(t)), dtype=dtype)
                for child, mm, factor in pl.children[state]:
                    arr = values[child]
                    off = 0 if child[0] else basis.closed_off(t - 1)
                    cols = slice(off, off + arr.shape[1])
                    if factor is None:  # (n + mm) * child
                        out[1:, cols] += arr
                        if mm:
                            out[:t, cols] += arr * cast(mm)
                    elif factor == 1:
                        out[:t, cols] += arr
                    else:
                        out[:t, cols] += arr * cast(factor)
                if mod is not None:
                    out %= mod
            values[state] = out
            for child, _, _ in pl.children[state]:
                pending[child] -= 1
                if pending[child] == 0:
                    del values[child]
    root = values[pl.root]
    if trace:
        root = _close(basis, pl.degree, root)
        if mod is not None:
            root %= mod
    return root


# ----------------------------------------------------------------------------------------------
# The partition basis by blocks: keys of one size and length propagate independently
# ----------------------------------------------------------------------------------------------
try:  # Y += A X for CSR A without temporaries (scipy's kernel behind ``A @ X``)
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover - older or newer scipy layouts
    _csr_matvecs = None


def _accumulate(A, X: np.ndarray, Y: np.ndarray) -> None:
    """Y += A @ X for a CSR matrix A and C-contiguous 2-d X, Y (Y may be a view)."""
    if _csr_matvecs is not None and Y.flags.c_contiguous:
        _csr_matvecs(A.shape[0], A.shape[1], X.shape[1], A.indptr, A.indices, A.data,
                     X.ravel(), Y.reshape(-1))
    else:
        Y += A @ X


@dataclass(frozen=True)
class _Blocks:
    """A plan laid out by level for the block runner.

    The keys mu of size j and length l (a "sub-block") never mix under the recursion's linear
    maps; the trace map sends sub-block (j, l) at level t into sub-block (t, l + 1).  So each
    sub-block is created at level j (by the closing states) and carried up to the root by one
    sparse matrix product per level.  The power of n of a key mu in a state (m, lam) of degree t
    is at most t - len(mu) + len(lam) <= T - l + len(lam_root), which bounds the lanes.
    """

    opens: tuple
    closes: tuple
    close_child: tuple
    matrices: Mapping  # (kind, t) -> CSR over int64; kind in A_op, A_cl, B_op, B_cl
    sub: Mapping  # j -> {l: [partitions of j with l parts]}
    where: Mapping  # partition -> (l, position in its sub-block)
    lanes: Mapping  # l -> number of lanes (powers n^0 ..)
    root_row: int
    root_open: bool


@lru_cache(maxsize=16)
def _blocks(m: int, lam: Partition) -> _Blocks:
    import scipy.sparse as sps

    pl = plan(m, lam)
    T = pl.degree
    opens = [[s for s in level if s[0]] for level in pl.levels]
    closes = [[s for s in level if not s[0]] for level in pl.levels]
    oidx = [{s: i for i, s in enumerate(level)} for level in opens]
    cidx = [{s: i for i, s in enumerate(level)} for level in closes]
    matrices = {}
    for t in range(1, T + 1):
        entries = {kind: ([], [], []) for kind in ("A_op", "A_cl", "B_op", "B_cl")}
        for i, state in enumerate(opens[t]):
            for child, mm, factor in pl.children[state]:
                kind = "op" if child[0] else "cl"
                col = (oidx if child[0] else cidx)[t - 1][child]
                coeff = mm if factor is None else factor
                if coeff:
                    rows, cols, data = entries["A_" + kind]
                    rows.append(i), cols.append(col), data.append(coeff)
                if factor is None:
                    rows, cols, data = entries["B_" + kind]
                    rows.append(i), cols.append(col), data.append(1)
        for kind, (rows, cols, data) in entries.items():
            width = len(opens[t - 1]) if kind.endswith("op") else len(closes[t - 1])
            a = sps.csr_matrix((np.array(data, dtype=np.int64), (rows, cols)),
                               shape=(len(opens[t]), width))
            a.sum_duplicates()
            matrices[kind, t] = a
    close_child = tuple(np.array([oidx[t][pl.children[s][0][0]] for s in closes[t]],
                                 dtype=np.intp) if t else None for t in range(T + 1))
    sub: dict = {}
    where: dict = {}
    for j in range(T + 1):
        groups: dict = {}
        for mu in partition_list(j):
            groups.setdefault(len(mu), []).append(mu)
        sub[j] = groups
        for l, items in groups.items():
            for pos, mu in enumerate(items):
                where[mu] = (l, pos)
    extra = len(pl.root[1])
    lanes = {l: min(T + 1, T - l + 1 + extra) for l in range(T + 1)}
    lanes[0] = T + 1
    root_open = pl.root[0] > 0
    root_row = (oidx if root_open else cidx)[T][pl.root]
    return _Blocks(tuple(opens), tuple(closes), close_child, matrices, sub, where, lanes,
                   root_row, root_open)


def _run_blocks(m: int, lam: Partition, how, trace: bool) -> dict:
    """The root's coefficients by sub-block: {(j, l): array (keys, lanes)} (mod 2^64, float64
    or mod a prime, like ``_run``); with ``trace`` the keys are those of the traced root."""
    b = _blocks(m, lam)
    T = len(b.opens) - 1
    if how == FLOAT:
        dtype, mod = np.float64, None
    else:
        dtype, mod = np.uint64, (None if how == WRAP else np.uint64(how))
    mats = {key: a.astype(dtype) for key, a in b.matrices.items()}
    where = b.where
    closed: dict = {(0, 0): np.ones((1, 1, T + 1), dtype=dtype)}
    closed[(0, 0)][0, 0, 1:] = 0
    out: dict = {}

    def sink(j: int, l: int, X: np.ndarray, rows, t: int, store: dict, lanes: int) -> None:
        """Trace map: add X[rows] (sub-block (j, l), level t) into sub-block (t, l + 1) of
        ``store``: Sigma^{t-j} p_mu -> p_{mu + (t - j)}, injective on the sub-block."""
        items = b.sub[j][l]
        idx = np.fromiter((where[insert(mu, t - j)][1] for mu in items), dtype=np.intp,
                          count=len(items))
        acc = store.get((t, l + 1))
        if acc is None:
            acc = store[(t, l + 1)] = np.zeros((len(rows), len(b.sub[t][l + 1]), lanes),
                                               dtype=dtype)
        acc[:, idx, :] += X[rows, :, :lanes]
        if mod is not None:
            acc %= mod

    for j in range(T + 1):
        if j == T and b.root_open:
            break
        for l in sorted(b.sub[j]):
            X = closed.pop((j, l), None)
            if X is None:
                X = np.zeros((len(b.closes[j]), len(b.sub[j][l]), b.lanes[l]), dtype=dtype)
            if j == T:
                out[(j, l)] = X[b.root_row]
                continue
            kind = "cl"
            for t in range(j + 1, T + 1):
                A, B = mats["A_" + kind, t], mats["B_" + kind, t]
                flat = X.reshape(X.shape[0], -1)
                width = flat.shape[1]
                # (n + mm) etc.: A X, plus n (B X) as a shift by one lane; the top lane of the
                # first-term children is zero (the bound above), so nothing spills over
                buf = np.zeros(A.shape[0] * width + 1, dtype=dtype)
                _accumulate(A, flat, buf[:-1].reshape(A.shape[0], width))
                _accumulate(B, flat, buf[1:].reshape(A.shape[0], width))
                X = buf[:-1].reshape(A.shape[0], X.shape[1], X.shape[2])
                if mod is not None:
                    X %= mod
                kind = "op"
                if b.closes[t] and (t < T or not b.root_open):
                    sink(j, l, X, b.close_child[t], t, closed, b.lanes[l + 1])
            if not b.root_open:
                continue
            if trace:
                sink(j, l, X, [b.root_row], T, out, b.lanes[l])
            else:
                out[(j, l)] = X[b.root_row]
    if trace:
        out = {key: arr[0] for key, arr in out.items()}
    return out


def _run_identity(m: int, lam: Partition, how, trace: bool) -> np.ndarray:
    """Sigma = I: the root's coefficients as an array (powers of d, powers of n).

    At the identity a state is a polynomial in n and d (Sigma^s = I), so whole levels fit in one
    array (states, d-power, n-power) and each level is one sparse product, plus the trace map
    d^j -> d^{j+1} for the closing states.
    """
    b = _blocks(m, lam)
    T = len(b.opens) - 1
    if how == FLOAT:
        dtype, mod = np.float64, None
    else:
        dtype, mod = np.uint64, (None if how == WRAP else np.uint64(how))
    mats = {key: a.astype(dtype) for key, a in b.matrices.items()}
    shape = (T + 2, T + 1)  # d^0..d^{T+1} (room for the root's trace), n^0..n^T
    width = shape[0] * shape[1]
    closed = np.zeros((1,) + shape, dtype=dtype)
    closed[0, 0, 0] = 1
    opened = np.zeros((0,) + shape, dtype=dtype)
    for t in range(1, T + 1):
        rows = len(b.opens[t])
        buf = np.zeros(rows * width + 1, dtype=dtype)
        for kind, X in (("op", opened), ("cl", closed)):
            if X.shape[0] == 0:
                continue
            flat = X.reshape(X.shape[0], width)
            _accumulate(mats["A_" + kind, t], flat, buf[:-1].reshape(rows, width))
            _accumulate(mats["B_" + kind, t], flat, buf[1:].reshape(rows, width))
        opened = buf[:-1].reshape((rows,) + shape)
        if mod is not None:
            opened %= mod
        closed = np.zeros((len(b.closes[t]),) + shape, dtype=dtype)
        if len(b.closes[t]):
            closed[:, 1:, :] = opened[b.close_child[t], :-1, :]
    if not b.root_open:
        return closed[b.root_row]
    root = opened[b.root_row]
    if trace:
        root = np.concatenate([np.zeros((1, shape[1]), dtype=dtype), root[:-1]], axis=0)
    return root


def _combine(residues: Sequence[np.ndarray], passes: Sequence) -> list:
    """Exact non-negative integers (flattened row major) from the passes' arrays."""
    low = residues[0].ravel().tolist()
    if len(passes) == 1:
        return low
    if passes[1] == FLOAT:
        high = residues[1].ravel().tolist()
        out = []
        for lo, approx in zip(low, high):
            q = (approx - lo) / 2.0 ** 64
            hi = round(q)
            if abs(q - hi) > 0.25:
                raise ArithmeticError("float64 pass inconsistent with the exact low part")
            out.append(lo + (hi << 64))
        return out
    values, M = low, 2 ** 64
    for res, p in zip(residues[1:], passes[1:]):
        inv = pow(M % p, -1, p)
        values = [v + M * (((r - v) * inv) % p) for v, r in zip(values, res.ravel().tolist())]
        M *= p
    return values


# ----------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WishartPolynomial:
    """sum c n^e p_mu Sigma^s with exact integers c >= 0.

    Keys are ``(s, mu, e)`` (mu a partition, p_mu = prod_i tr Sigma^{mu_i}); with ``identity``
    (Sigma = I_d) they are ``(j, e)`` for c n^e d^j.  ``matrix`` says whether the value is a
    matrix (the factor Sigma^s, or I_d at the identity) or a scalar (then s = 0).
    """

    terms: Mapping
    degree: int
    matrix: bool
    identity: bool = False
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.terms)

    def as_expr(self) -> sympy.Expr:
        """The sympy expression in ``n``, ``p1..pk`` and ``Sigma`` (or in ``n`` and ``d``)."""
        if "expr" not in self._cache:
            self._cache["expr"] = _to_sympy(self)
        return self._cache["expr"]

    def to_string(self) -> str:
        """The expression as text that ``sympy.sympify`` reads back (fast, no sympy objects)."""
        parts = []
        for key, c in sorted(self.terms.items(), key=lambda kv: _text_order(kv[0])):
            factors = [] if c == 1 else [str(c)]
            if self.identity:
                j, e = key
                factors += _power("n", e) + _power("d", j)
            else:
                s, mu, e = key
                factors += _power("n", e)
                for part, mult in sorted(_mult(mu).items()):
                    factors += _power(f"p{part}", mult)
                if self.matrix:
                    factors += _power("Sigma", s)
            parts.append("*".join(factors) if factors else "1")
        return " + ".join(parts) if parts else "0"

    def at_identity(self) -> "WishartPolynomial":
        """Sigma = I_d: p_j -> d, Sigma^s -> I (a polynomial in n and d)."""
        if self.identity:
            return self
        out: dict = {}
        for (s, mu, e), c in self.terms.items():
            key = (len(mu), e)
            out[key] = out.get(key, 0) + c
        return WishartPolynomial(out, self.degree, self.matrix, identity=True)

    def at_n(self, n_value: int) -> "WishartPolynomial":
        """n replaced by the integer ``n_value`` (all keys then carry e = 0)."""
        out: dict = {}
        for key, c in self.terms.items():
            new = key[:-1] + (0,)
            out[new] = out.get(new, 0) + c * n_value ** key[-1]
        return WishartPolynomial({k: v for k, v in out.items() if v}, self.degree, self.matrix,
                                 self.identity)

    def to_poly(self, sigma: str = "Sigma", rows: str = "d"):
        """The same moment as a ``moments.poly.Poly`` in the symmetric letter ``sigma`` (trace
        words tr(Sigma^j) and, for a matrix, the chain Sigma^s), like ``wick.expectation``."""
        from .letters import FREE_LEFT, FREE_RIGHT, Letter
        from .poly import Poly

        letter = Letter(sigma, rows, rows, symmetric=True)
        size = space_size(rows)
        out: dict = {}
        for key, c in self.terms.items():
            if self.identity:
                j, e = key
                cycles, s, coeff = (), 0, c * N**e * size**j
            else:
                s, mu, e = key
                cycles, coeff = tuple(sorted(((sigma, False),) * part for part in mu)), c * N**e
            chains = ()
            if self.matrix:
                chains = (((FREE_LEFT, False),) + ((sigma, False),) * s + ((FREE_RIGHT, False),),)
            k = (cycles, chains)
            out[k] = out.get(k, 0) + coeff
        shape = (rows, rows) if self.matrix else ("1", "1")
        return Poly(out, {sigma: letter} if not self.identity else {}, *shape)

    def evaluate(self, sigma=None, n=None, d: int | None = None, mode: str = "exact"):
        """The value for a concrete covariance and n (``mode``: exact, mpmath or float)."""
        from .numeric import evaluate_wishart

        return evaluate_wishart(self, sigma=sigma, n=n, d=d, mode=mode)


def _mult(mu: Partition) -> dict:
    out: dict = {}
    for part in mu:
        out[part] = out.get(part, 0) + 1
    return out


def _power(name: str, exponent: int) -> list:
    if exponent == 0:
        return []
    return [name] if exponent == 1 else [f"{name}**{exponent}"]


def _text_order(key) -> tuple:
    if len(key) == 2:  # (j, e)
        return (-key[1], -key[0])
    s, mu, e = key
    return (-e, -s, tuple(-x for x in mu))


def _monomial(coeff: int, factors: list) -> sympy.Expr:
    """coeff * prod(factors) as a canonical Mul without re-flattening (factors are distinct
    powers of distinct symbols, so only SymPy's argument order has to be reproduced)."""
    if _args_sortkey is None:
        return sympy.Mul(sympy.Integer(coeff), *factors)
    factors = sorted(factors, key=_args_sortkey)
    args = factors if coeff == 1 else [sympy.Integer(coeff)] + factors
    if not args:
        return sympy.Integer(1)
    return args[0] if len(args) == 1 else sympy.Mul._from_args(args)


def _to_sympy(poly: WishartPolynomial) -> sympy.Expr:
    pows: dict = {}

    def pw(symbol, e):
        key = (symbol, e)
        if key not in pows:
            pows[key] = symbol if e == 1 else sympy.Pow(symbol, e)
        return pows[key]

    terms = []
    for key, c in poly.terms.items():
        if poly.identity:
            j, e = key
            factors = [pw(N, e)] if e else []
            if j:
                factors.append(pw(D, j))
        else:
            s, mu, e = key
            factors = [pw(N, e)] if e else []
            factors += [pw(power_sum(part), m) for part, m in _mult(mu).items()]
            if poly.matrix and s:
                factors.append(pw(SIGMA, s))
        terms.append(_monomial(c, factors))
    return sympy.Add(*terms)


def _compute(m: int, lam: Partition, trace: bool, identity: bool,
             engine: str = "auto") -> WishartPolynomial:
    """Run the passes and decode the keys.  ``engine``: ``blocks`` (sparse products by
    sub-block, general Sigma), ``states`` (one array per state; any basis) or ``auto``."""
    lam = tuple(sorted((int(x) for x in lam), reverse=True))
    if m < 0 or any(x <= 0 for x in lam):
        raise ValueError("powers must be non-negative and trace powers positive")
    if trace and m == 0:
        raise ValueError("trace of E[p_lam] I: use trace=False (the moment is already scalar)")
    degree = m + sum(lam)
    if degree > MAX_DEGREE:
        raise ValueError(f"degree {degree} exceeds the supported maximum {MAX_DEGREE}")
    if degree == 0:
        return WishartPolynomial({((0, 0) if identity else (0, (), 0)): 1}, 0, matrix=False,
                                 identity=identity)
    pl = plan(m, lam)
    passes = _passes(pl)
    closed = m == 0 or trace
    terms: dict = {}
    if engine == "auto":
        engine = "levels" if identity else "blocks"
    if engine == "levels":
        if not identity:
            raise ValueError("the level engine works at Sigma = I only")
        runs = [_run_identity(m, lam, how, trace) for how in passes]
        values = _combine(runs, passes)
        rows, lanes = runs[0].shape
        for j in range(rows):
            for e in range(lanes):
                c = values[j * lanes + e]
                if c:
                    terms[(j, e)] = c
        return WishartPolynomial(terms, degree, matrix=not closed, identity=True)
    if engine == "blocks":
        if identity:
            raise ValueError("the block engine works in the partition basis only")
        runs = [_run_blocks(m, lam, how, trace) for how in passes]
        sub = _blocks(m, lam).sub
        for key, arr in runs[0].items():
            values = _combine([r[key] for r in runs], passes)
            items = sub[key[0]][key[1]]
            lanes = arr.shape[1]
            for pos, mu in enumerate(items):
                for e in range(lanes):
                    c = values[pos * lanes + e]
                    if c:
                        terms[(0 if closed else degree - sum(mu), mu, e)] = c
        return WishartPolynomial(terms, degree, matrix=not closed, identity=False)
    basis = _IdentityBasis() if identity else _PartitionBasis(degree)
    residues = [_run(pl, basis, how, trace) for how in passes]
    values = _combine(residues, passes)
    lanes, rows = residues[0].shape
    off = basis.closed_off(degree) if closed else 0
    for e in range(lanes):
        for r in range(rows):
            c = values[e * rows + r]
            if not c:
                continue
            g = off + r
            if identity:
                terms[(g, e)] = c
            else:
                s_, mu = basis.key(g, degree)
                terms[(s_, mu, e)] = c
    return WishartPolynomial(terms, degree, matrix=not closed, identity=identity)


@lru_cache(maxsize=256)
def moment(m: int, lam: Partition = (), trace: bool = False,
           identity: bool = False) -> WishartPolynomial:
    """E[W^m p_lam(W)] exactly (``trace``: E[tr(W^m) p_lam(W)]); ``identity``: Sigma = I_d."""
    return _compute(int(m), tuple(lam), bool(trace), bool(identity))


# ----------------------------------------------------------------------------------------------
# The order check (the sympy-facing functions that use it are ``moments.wishart_sympy``)
# ----------------------------------------------------------------------------------------------
def check_order(k, maximum: int = MAX_DEGREE) -> int:
    """A positive integer order, or ValueError (k <= 0, not an integer, or too large)."""
    if isinstance(k, bool):
        raise ValueError(f"the order must be an integer, got {k!r}")
    try:
        value = int(k)
    except (TypeError, ValueError):
        raise ValueError(f"the order must be an integer, got {k!r}") from None
    if value != k:
        raise ValueError(f"the order must be an integer, got {k!r}")
    if value <= 0:
        raise ValueError(f"the order must be positive, got {value}")
    if value > maximum:
        raise ValueError(f"order {value} exceeds the supported maximum {maximum}")
    return value


__all__ = ["N", "D", "SIGMA", "MAX_DEGREE", "WishartPolynomial", "moment", "power_sum", "plan",
           "check_order"]
