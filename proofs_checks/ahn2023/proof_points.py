"""ahn2023 App. B and C: instances, the forward pass and the pointwise checks of proof steps.

- ``exact_point`` / ``float_point``: one instance of App. B's setting (Sigma = H^2 with H
  rational, an orthogonal U and U_Sigma = Sigma^{1/2} U Sigma^{-1/2}, X_0, w*, weights on S or
  general, the directions R_j, S_j), exact (sympy rationals) or float64;
- ``run_layers``, ``g_matrix``, ``tangent``: X_i and Y_i of the layers (9)/(13) through
  ``models.lsa.lsa_forward`` (1/n dropped, or kept with ``divisor`` n), G with Y_{k+1} = w*^T G
  (the label rows run from Y_0 = X_0), and their derivatives d/dt at t = 0 along A_j + tC or
  B_j + tC by forward-mode differentiation of the same forward pass (``Dual``), with the part of
  dG through the weight itself (the token rows held fixed: the heart of (52));
- ``value`` / ``tvalue``: a formula at a point (exact, Sigma^{k/2} as H^k; float64 torch over a
  batch axis);
- the points and directions the kit's pointwise checks (``kit.pointwise``: a proof step that
  holds at every point, exact at rational points and float64 at Gaussian ones) run on.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy
import torch

from models.lsa import lsa_forward
from verify.claim import Claim, Context, ExactValues, TierResult
from verify.formulas import FormulaSymbol, NamedFormula, formula_value, size_symbol

from ..kit.linear_icl import LinearICLSetting
from ..kit.pointwise import (Pointwise, Unevaluable, exact_compare as _exact_compare,  # noqa: F401
                             float_compare as _float_compare, merge_results as _merge,
                             pointwise_checks)
from ..kit.pointwise import pointwise_truth as _kit_pointwise_truth

# ------------------------------------------------------------------------------------------------
# the symbols of App. B (definitions.py says what each one is)
# ------------------------------------------------------------------------------------------------
SYM = {
    "n": FormulaSymbol("n"), "d": FormulaSymbol("d"),
    "Sigma": FormulaSymbol("Sigma", "matrix", ("d", "d"), symmetric=True),
    "Sigma_half": FormulaSymbol("Sigma_half", "matrix", ("d", "d"), symmetric=True),
    "U": FormulaSymbol("U", "matrix", ("d", "d")),
    "U_Sigma": FormulaSymbol("U_Sigma", "matrix", ("d", "d")),
    "X_0": FormulaSymbol("X_0", "matrix", ("d", "n+1")),
    "X_i": FormulaSymbol("X_i", "matrix", ("d", "n+1")),
    "Y_i": FormulaSymbol("Y_i", "matrix", ("1", "n+1")),
    "M": FormulaSymbol("M", "matrix", ("n+1", "n+1"), symmetric=True),
    "A": FormulaSymbol("A", "matrix", ("d", "d"), symmetric=True),
    "B": FormulaSymbol("B", "matrix", ("d", "d")),
    "A_0": FormulaSymbol("A_0", "matrix", ("d", "d"), symmetric=True),
    "A_1": FormulaSymbol("A_1", "matrix", ("d", "d"), symmetric=True),
    "w_star": FormulaSymbol("w_star", "matrix", ("d", "1")),
    "G": FormulaSymbol("G", "matrix", ("d", "n+1")),
    "dG": FormulaSymbol("dG", "matrix", ("d", "n+1")),
    "dX": FormulaSymbol("dX", "matrix", ("d", "n+1")),
    "C_j": FormulaSymbol("C_j", "matrix", ("d", "d")),
    "R_j": FormulaSymbol("R_j", "matrix", ("d", "d")),
    "S_j": FormulaSymbol("S_j", "matrix", ("d", "d")),
    "G_lt": FormulaSymbol("G_lt", "matrix", ("n+1", "n+1")),
    "G_gt": FormulaSymbol("G_gt", "matrix", ("n+1", "n+1")),
    "grad_A": FormulaSymbol("grad_A", "matrix", ("d", "d")),
    "grad_B": FormulaSymbol("grad_B", "matrix", ("d", "d")),
}


def syms(*names: str) -> tuple[FormulaSymbol, ...]:
    return tuple(SYM[n] for n in names)


PROOF_SIZES = {"quick": {"n": 3, "d": 2, "layers": 3}, "default": {"n": 3, "d": 2, "layers": 3},
               "paper": {"n": 4, "d": 3, "layers": 3}}


def proof_setting(sizes: Mapping[str, Mapping[str, int]] = PROOF_SIZES, w_prior="sigma_inverse",
                  why: str = "") -> LinearICLSetting:
    """The setting of a proof step: it draws its own Sigma = H^2 (H rational, so Sigma^{1/2} is
    exact), several of them, so --sigma is refused rather than ignored."""
    return LinearICLSetting(w_prior=w_prior, sizes=dict(sizes), fixed_sigma=why or (
        "its checks draw their own covariances Sigma = H^2 (H rational, so that Sigma^{1/2} and "
        "U_Sigma are exact), several per run"))


def sizes_of(ctx: Context, sizes: Mapping[str, Mapping[str, int]] = PROOF_SIZES) -> dict:
    out = dict(sizes[ctx.budget.name])
    out.update({k: int(v) for k, v in ctx.sizes.items() if k in out})
    return out


# ------------------------------------------------------------------------------------------------
# instances
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    """One instance of App. B's setting, exact (sympy) or float64 (numpy): Sigma = H^2, an
    orthogonal U and U_Sigma = H U H^{-1} (= Sigma^{1/2} U Sigma^{-1/2}), X_0 in R^{d x (n+1)},
    w*, the weights A_i, B_i of the layers, and the directions R_j, S_j."""

    n: int
    d: int
    H: Any
    U: Any
    X0: Any
    w: Any
    A: tuple
    B: tuple
    R: Any
    S: Any
    exact: bool
    label: str = ""
    ab: tuple = ((), ())  # (a_i), (b_i) of a point of S built by ``set_point``

    @property
    def Sigma(self):
        return self.H @ self.H if not self.exact else self.H * self.H

    @property
    def Sigma_inv(self):
        return inv(self.Sigma, self.exact)

    @property
    def U_Sigma(self):
        return mul(self.H, self.U, inv(self.H, self.exact), exact=self.exact)

    @property
    def M(self):
        m = eye(self.n + 1, self.exact)
        m[self.n, self.n] = 0
        return m

    @property
    def layers(self) -> int:
        return len(self.A)

    def values(self) -> dict:
        """The symbols every formula of App. B may read, at this point."""
        return {"n": self.n, "d": self.d, "Sigma": self.Sigma, "Sigma_half": self.H, "U": self.U,
                "U_Sigma": self.U_Sigma, "X_0": self.X0, "M": self.M, "w_star": self.w,
                "R_j": self.R, "S_j": self.S}

    def describe(self) -> dict:
        show = (lambda m: str(sympy.Matrix(m).tolist())) if self.exact else (
            lambda m: np.round(np.asarray(m, dtype=float), 6).tolist())
        return {"n": self.n, "d": self.d, "Sigma": show(self.Sigma), "U": show(self.U),
                "X_0": show(self.X0), "A": [show(a) for a in self.A],
                "B": [show(b) for b in self.B], "R_j": show(self.R), "S_j": show(self.S),
                "label": self.label}


def eye(k: int, exact: bool):
    return sympy.eye(k) if exact else np.eye(k)


def inv(m, exact: bool):
    return sympy.Matrix(m).inv() if exact else np.linalg.inv(m)


def mul(*ms, exact: bool):
    out = ms[0]
    for m in ms[1:]:
        out = out * m if exact else out @ m
    return out


def _rat(rng: np.random.Generator, choices=(-2, -1, 1, 2), dens=(1, 2, 3)) -> sympy.Rational:
    return sympy.Rational(int(rng.choice(choices)), int(rng.choice(dens)))


def _small_rotation(d: int, rng: np.random.Generator) -> sympy.Matrix:
    """A rational rotation (I - K)(I + K)^{-1} from a skew K with entries +-1/2, +-1 (small
    denominators keep exact arithmetic fast)."""
    K = sympy.zeros(d, d)
    for i in range(d):
        for j in range(i + 1, d):
            v = sympy.Rational(int(rng.choice((-1, 1))), int(rng.choice((1, 2))))
            K[i, j], K[j, i] = v, -v
    return (sympy.eye(d) - K) * (sympy.eye(d) + K).inv()


def exact_point(rng: np.random.Generator, n: int, d: int, layers: int, on_set: bool = True,
                set_dirs: Callable | None = None, spectrum: Sequence | None = None,
                label: str = "") -> Point:
    """A rational instance: H = Q diag(h) Q^T (Q a Cayley rotation), Sigma = H^2, U a Cayley
    rotation (times a reflection half of the time), X_0 and w* small integers; on S the weights
    are A_i = a_i S_A, B_i = b_i S_B (``set_dirs(Sigma)`` = (S_A, S_B), default
    (Sigma^{-1}, I)), otherwise symmetric A_i and general B_i."""
    Q = _small_rotation(d, rng)
    h = spectrum or [sympy.Rational(int(rng.integers(1, 5)), int(rng.integers(1, 3)))
                     for _ in range(d)]
    H = Q * sympy.diag(*h) * Q.T
    U = _small_rotation(d, rng)
    if rng.integers(0, 2):
        U = U * sympy.diag(*([-1] + [1] * (d - 1)))
    ints = lambda r, c: sympy.Matrix(rng.integers(-2, 3, size=(r, c)).tolist())  # noqa: E731
    X0, w = ints(d, n + 1), ints(d, 1)
    if not any(X0):
        X0[0, 0] = 1
    Sigma = H * H
    SA, SB = set_dirs(Sigma) if set_dirs is not None else (Sigma.inv(), sympy.eye(d))
    As, Bs = [], []
    for _ in range(layers):
        if on_set:
            As.append(SA * _rat(rng))
            Bs.append(SB * _rat(rng))
        else:
            A = sympy.Matrix(d, d, lambda i, j: _rat(rng, (-2, -1, 0, 1, 2)))
            As.append((A + A.T) / 2)
            Bs.append(sympy.Matrix(d, d, lambda i, j: _rat(rng, (-1, 0, 1), (1, 2))))
    R = sympy.Matrix(d, d, lambda i, j: _rat(rng, (-2, -1, 0, 1, 2)))
    S = sympy.Matrix(d, d, lambda i, j: _rat(rng, (-2, -1, 0, 1, 2)))
    return Point(n, d, H, U, X0, w, tuple(As), tuple(Bs), R, S, True, label)


def float_point(rng: np.random.Generator, n: int, d: int, layers: int, on_set: bool = True,
                set_dirs: Callable | None = None, label: str = "") -> Point:
    """A float64 instance: H = Q diag(h) Q^T with Q Haar, h in [0.6, 1.6]; U Haar (a reflection
    half of the time); X_0, w* Gaussian; weights on S (``set_dirs(Sigma)`` = (S_A, S_B), default
    (Sigma^{-1}, I)) or general."""
    def haar():
        q, r = np.linalg.qr(rng.standard_normal((d, d)))
        return q * np.sign(np.diag(r))

    Q = haar()
    H = (Q * rng.uniform(0.6, 1.6, d)) @ Q.T
    U = haar()
    X0, w = rng.standard_normal((d, n + 1)), rng.standard_normal((d, 1))
    Sigma = H @ H
    SA, SB = set_dirs(Sigma) if set_dirs is not None else (np.linalg.inv(Sigma), np.eye(d))
    As, Bs = [], []
    for _ in range(layers):
        if on_set:
            As.append(SA * rng.normal(0, 0.6))
            Bs.append(SB * rng.normal(0, 0.6))
        else:
            A = rng.normal(0, 0.4, (d, d))
            As.append((A + A.T) / 2)
            Bs.append(rng.normal(0, 0.4, (d, d)))
    R, S = rng.standard_normal((d, d)), rng.standard_normal((d, d))
    return Point(n, d, H, U, X0, w, tuple(As), tuple(Bs), R, S, False, label)


# ------------------------------------------------------------------------------------------------
# the forward pass of App. B (1/n dropped) and its derivatives
# ------------------------------------------------------------------------------------------------
def _t(x):
    return torch.as_tensor(np.asarray(x, dtype=float) if not torch.is_tensor(x) else x,
                           dtype=torch.float64)


def _weights(A, B, d: int, exact: bool):
    """(P_i, Q_i) of eq. (13) (B = None: eq. (9), top block 0), float64 torch (the batched
    Monte Carlo) or sympy."""
    if exact:
        top = sympy.zeros(d, d) if B is None else sympy.Matrix(B)
        return sympy.diag(top, 1), sympy.diag(sympy.Matrix(A), 0)
    top = torch.zeros(d, d, dtype=torch.float64) if B is None else _t(B)
    P = torch.block_diag(top, torch.ones(1, 1, dtype=torch.float64))
    Q = torch.block_diag(_t(A), torch.zeros(1, 1, dtype=torch.float64))
    return P, Q


def _arr(m, exact: bool) -> np.ndarray:
    """A matrix as a numpy array: of Fractions (exact) or float64."""
    if not exact:
        return np.asarray(m.detach().numpy() if hasattr(m, "detach") else m, dtype=float)
    rows = sympy.Matrix(m).tolist()
    if not all(sympy.sympify(x).is_Rational for r in rows for x in r):
        raise Unevaluable("a value that is not rational here", undecided=True)
    return np.array([[Fraction(int(x.p), int(x.q)) for x in r] for r in rows], dtype=object)


def _mat(a: np.ndarray, exact: bool):
    """Back from ``_arr``: a sympy matrix of rationals, or float64 numpy."""
    if not exact:
        return np.asarray(a, dtype=float)
    return sympy.Matrix(a.shape[0], a.shape[1],
                        lambda i, j: sympy.Rational(a[i, j].numerator, a[i, j].denominator))


class Dual:
    """A matrix with its derivative in t (forward-mode differentiation) over numpy arrays of
    Fractions (exact) or float64: the array protocol ``lsa_forward`` uses (@, +, scalar /, .T,
    slicing), so the real forward pass runs on it."""

    def __init__(self, v: np.ndarray, d: np.ndarray | None = None):
        self.v = v
        self.d = np.zeros(v.shape, dtype=v.dtype) if d is None else d

    @staticmethod
    def of(x) -> "Dual":
        return x if isinstance(x, Dual) else Dual(x)

    def __matmul__(self, o):
        o = Dual.of(o)
        return Dual(self.v @ o.v, self.d @ o.v + self.v @ o.d)

    def __rmatmul__(self, o):
        return Dual.of(o) @ self

    def __add__(self, o):
        o = Dual.of(o)
        return Dual(self.v + o.v, self.d + o.d)

    __radd__ = __add__

    def __truediv__(self, c):
        return Dual(self.v / c, self.d / c)

    @property
    def T(self) -> "Dual":
        return Dual(np.swapaxes(self.v, -1, -2), np.swapaxes(self.d, -1, -2))

    mT = T

    @property
    def shape(self):
        return self.v.shape

    def __getitem__(self, key):
        return Dual(self.v[key], self.d[key])

    @staticmethod
    def vstack(*parts) -> "Dual":
        """Stacked rows (the last-but-one axis; a leading batch axis is kept)."""
        parts = [Dual.of(p) for p in parts]
        shape = np.broadcast_shapes(*[p.v.shape[:-2] for p in parts])
        grow = lambda a: np.broadcast_to(a, shape + a.shape[-2:])  # noqa: E731
        return Dual(np.concatenate([grow(p.v) for p in parts], axis=-2),
                    np.concatenate([grow(p.d) for p in parts], axis=-2))


def _corner(top: np.ndarray, c, rows: int = 1) -> np.ndarray:
    """diag(top, c I_rows) as a numpy array of the same dtype."""
    d = top.shape[0]
    out = np.zeros((d + rows, d + rows), dtype=top.dtype)
    out[:d, :d] = top
    for r in range(rows):
        out[d + r, d + r] = c
    return out


def _dual_layers(X0: Dual, Y0: Dual, As, Bs, divisor=1, frozen=None) -> list:
    """[(X_i, Y_i)], i = 0..L: the layers (13) (``Bs`` None: (9)) through ``lsa_forward`` on
    Zbar_0 = [[X_0], [Y_0]], on Duals (the weights may carry a derivative: A_j + tC).  Y_0 may
    have several rows (label rows evolve independently: P_i = diag(B_i, I)).  ``frozen``: token
    rows put back before each layer (the label rows then run with the token rows held fixed)."""
    d, n1 = X0.shape[-2:]
    rows = Y0.shape[-2]
    dtype = X0.v.dtype
    Z = Dual.vstack(X0, Y0)
    mask = np.eye(n1, dtype=dtype)
    mask[n1 - 1, n1 - 1] = 0
    out = [(Z[..., :d, :], Z[..., d:, :])]
    zero = Dual(np.zeros((d, d), dtype=dtype))
    for i, A in enumerate(As):
        if frozen is not None:
            Z = Dual.vstack(frozen[i], Z[..., d:, :])
        A = Dual.of(A)
        B = zero if Bs is None else Dual.of(Bs[i])
        P = Dual(_corner(B.v, 1, rows), _corner(B.d, 0, rows))
        Q = Dual(_corner(A.v, 0, rows), _corner(A.d, 0, rows))
        Z = lsa_forward(Z, [(P, Q)], mask, divisor)
        out.append((Z[..., :d, :], Z[..., d:, :]))
    return out


def run_layers(X0, Y0, As, Bs, exact: bool, divisor=1) -> list:
    """[(X_i, Y_i)] for i = 0..L of the layers (9) (``Bs`` None) or (13), 1/n dropped
    (``divisor`` 1), through ``lsa_forward`` on Zbar_0 = [[X_0], [Y_0]]; sympy in and out
    (exact) or float64 numpy."""
    traj = _dual_layers(Dual(_arr(X0, exact)), Dual(_arr(Y0, exact)),
                        [_arr(a, exact) for a in As],
                        None if Bs is None else [_arr(b, exact) for b in Bs], divisor)
    return [(_mat(x.v, exact), _mat(y.v, exact)) for x, y in traj]


def g_matrix(X0, As, Bs, exact: bool):
    """G with Y_{k+1} = w*^T G for every w* (eqs. (22), (31)): the label rows of the last layer
    run from Y_0 = X_0, i.e. row m from Y_0 = e_m^T X_0 (the label rows evolve independently and
    linearly in Y_0: P_i = diag(B_i, 1) acts on each, and Z^T Q_i Z = X^T A_i X)."""
    X = Dual(_arr(X0, exact))
    As_ = [_arr(a, exact) for a in As]
    Bs_ = None if Bs is None else [_arr(b, exact) for b in Bs]
    return _mat(_dual_layers(X, X, As_, Bs_)[-1][1].v, exact)


@dataclass(frozen=True)
class Tangent:
    """The trajectory at t = 0 and its derivative along one weight (App. B.2 Step 2, B.3 Steps
    2-3, 5): X_i and dX_i/dt for i = 0..L, G and dG/dt, and the part of dG through the weight
    itself with the token rows held fixed (the heart of (52)); exact values are sympy, float
    values numpy."""

    X: tuple
    dX: tuple
    G: Any
    dG: Any
    dG_direct: Any
    dq: Any = None  # d/dt of g_q^T K g_q (g_q = G's query column), where ``quad`` = K was given


def tangent(X0, As, Bs, kind: str, j: int, C, exact: bool, quad=None) -> Tangent:
    """d/dt at t = 0 of the forward pass with A_j + tC (``kind`` "A") or B_j + tC ("B"), by
    forward-mode differentiation of ``lsa_forward`` (``Dual``); with ``quad`` = K also of the
    loss integrand g_q(t)^T K g_q(t) = Tr((I - M) G^T K G (I - M))."""
    X = Dual(_arr(X0, exact))
    As_ = [Dual(_arr(a, exact)) for a in As]
    Bs_ = None if Bs is None else [Dual(_arr(b, exact)) for b in Bs]
    moved = As_ if kind == "A" else Bs_
    moved[j] = Dual(moved[j].v, _arr(C, exact))
    traj = _dual_layers(X, X, As_, Bs_)
    Xs, G = [x for x, _ in traj], traj[-1][1]
    fixed = [Dual(x.v) for x in Xs[:-1]]
    Gd = _dual_layers(X, X, As_, Bs_, frozen=fixed)[-1][1]
    dq = None
    if quad is not None:
        g = G[:, G.shape[1] - 1:]
        q = g.T @ _arr(quad, exact) @ g
        dq = sympy.Rational(q.d[0, 0].numerator, q.d[0, 0].denominator) if exact else float(
            q.d[0, 0])
    m = lambda a: _mat(a, exact)  # noqa: E731
    return Tangent(tuple(m(x.v) for x in Xs), tuple(m(x.d) for x in Xs), m(G.v), m(G.d),
                   m(Gd.d), dq)


# ------------------------------------------------------------------------------------------------
# formulas at a point
# ------------------------------------------------------------------------------------------------
class IllTyped(ValueError):
    """A sum or product of mismatched shapes met while evaluating a formula in float64."""


class NotReal(ValueError):
    """A fractional power of a matrix that is not symmetric positive semidefinite here: the
    formula has no (real) value at a point its claim quantifies over, so it is not a value of
    the stated kind there (decided, like an ill-typed formula)."""


def _given_inverses(expr: sympy.Basic, values: Mapping) -> sympy.Basic:
    """Inverse(U_Sigma) as the value given under the key "Inverse(U_Sigma)" (on the orthogonal
    group U^{-1} = U^T, a polynomial in U's entries where sympy's inverse is rational)."""
    keys = [k for k in values if k.startswith("Inverse(")]
    for key in keys:
        name = key[len("Inverse("):-1]
        expr = expr.replace(
            lambda e: isinstance(e, sympy.Inverse) and isinstance(e.args[0], sympy.MatrixSymbol)
            and e.args[0].name == name,
            lambda e: sympy.MatrixSymbol(f"inverse_of_{name}", *e.shape))
    return expr


def _half_powers(expr: sympy.Basic, values: Mapping) -> tuple:
    """Sigma^{k/2} as H^k where the point gives H = Sigma^{1/2} (``Sigma_half``): the exact
    value of the symmetric positive square root, without sympy's Jordan form and radicals."""
    H = values.get("Sigma_half")
    if H is None:
        return expr, values
    extra = {}

    def is_sigma(b) -> bool:
        b = b.args[0] if isinstance(b, sympy.Transpose) else b  # Sigma is symmetric
        return isinstance(b, sympy.MatrixSymbol) and b.name == "Sigma"

    def is_half(e) -> bool:
        return (isinstance(e, sympy.MatPow) and is_sigma(e.args[0])
                and (2 * sympy.sympify(e.args[1])).is_Integer)

    def swap(e):
        k = int(2 * sympy.sympify(e.args[1]))
        name = f"Sigma_half_pow_{'m' if k < 0 else ''}{abs(k)}"
        Hm = sympy.Matrix(H)
        extra[name] = (Hm.inv() if k < 0 else Hm) ** abs(k)
        return sympy.MatrixSymbol(name, *e.shape)

    out = expr.replace(is_half, swap)
    return out, {**values, **extra}


def value(F: Mapping, name: str, values: Mapping, exact: bool):
    """The formula's value with ``values`` (sympy exact, or float64 numpy); ``Unevaluable``
    where it is ill-typed, or where this point cannot give it a value (``undecided``)."""
    try:
        if exact:
            expr, vals = _half_powers(_given_inverses(F[name], values), values)
            left = [e for e in expr.atoms(sympy.MatPow) if not sympy.sympify(e.args[1]).is_Integer]
            for e in left:
                base = sympy.Matrix(formula_value(e.args[0], dict(vals)))
                if base != base.T:
                    raise Unevaluable(f"{name}: {e} is a fractional power of a matrix that is "
                                      "not symmetric here: it has no (real, symmetric) value")
            if left:
                raise Unevaluable(f"{name}: a fractional power {left[0]} has no rational value "
                                  "here", undecided=True)
            vals = {**vals, **{f"inverse_of_{k[8:-1]}": v for k, v in values.items()
                               if k.startswith("Inverse(")}}
            out = formula_value(expr, dict(vals))
            return sympy.Matrix(out) if isinstance(out, sympy.MatrixBase) else sympy.Matrix(
                [[sympy.expand(out)]])
        mats = {k: v for k, v in values.items() if hasattr(v, "shape")}
        sizes = {k: int(v) for k, v in values.items() if k in ("n", "d")}
        out = tvalue(F[name], mats, sizes)
        return np.atleast_2d(out.detach().numpy())
    except Unevaluable:
        raise
    except (sympy.ShapeError, IllTyped, NotReal) as exc:
        raise Unevaluable(f"{name}: {exc}") from exc
    except (ValueError, TypeError, KeyError, NotImplementedError, AttributeError, RuntimeError,
            ZeroDivisionError, np.linalg.LinAlgError) as exc:
        raise Unevaluable(f"{name}: {exc}", undecided=True) from exc


def tvalue(expr: sympy.Basic, values: Mapping[str, Any], sizes: Mapping[str, int]) -> torch.Tensor:
    """A formula's value in float64 torch over a leading batch axis (matrices (..., r, c));
    matrix and scalar nodes are told apart by sympy's ``is_Matrix``, not by the array's rank.
    A fractional power of a (symmetric) matrix through its eigendecomposition."""
    def ev(e):
        if isinstance(e, (sympy.MatrixSymbol, sympy.Symbol)):
            if e.name in values:
                return _t(values[e.name])
            if e.name in sizes:
                return torch.tensor(float(sizes[e.name]), dtype=torch.float64)
            raise KeyError(f"no value for {e.name}")
        if isinstance(e, (sympy.Identity, sympy.ZeroMatrix, sympy.OneMatrix)):
            r, c = (int(sympy.sympify(x).subs({size_symbol(k): v for k, v in sizes.items()}))
                    for x in e.shape)
            if isinstance(e, sympy.Identity):
                return torch.eye(r, dtype=torch.float64)
            fill = 0.0 if isinstance(e, sympy.ZeroMatrix) else 1.0
            return torch.full((r, c), fill, dtype=torch.float64)
        if isinstance(e, sympy.Transpose):
            return ev(e.args[0]).transpose(-2, -1)
        if isinstance(e, sympy.Inverse):
            return torch.linalg.inv(ev(e.args[0]))
        if isinstance(e, sympy.Trace):
            return torch.diagonal(ev(e.args[0]), dim1=-2, dim2=-1).sum(-1)[..., None, None]
        if isinstance(e, sympy.MatPow):
            base = ev(e.args[0])
            p = sympy.sympify(e.args[1]).subs({size_symbol(k): v for k, v in sizes.items()})
            if p.is_Integer:
                return torch.linalg.matrix_power(base, int(p))
            sym = (base + base.transpose(-2, -1)) / 2
            scale = 1e-12 * (1 + base.abs().amax())
            if (base - sym).abs().amax() > scale:
                raise NotReal(f"a power {p} of a matrix that is not symmetric")
            w, V = torch.linalg.eigh(sym)
            if (w < -scale).any():
                raise NotReal(f"a power {p} of a matrix that is not positive semidefinite")
            return (V * w.clamp(min=0)[..., None, :] ** float(p)) @ V.transpose(-2, -1)
        if isinstance(e, (sympy.MatAdd, sympy.Add)):
            parts = [(a, ev(a)) for a in e.args]
            shapes = {tuple(v.shape[-2:]) for a, v in parts if a.is_Matrix}
            if len(shapes) > 1 or (shapes and any(not a.is_Matrix for a, _ in parts)):
                raise IllTyped(f"cannot add shapes {sorted(shapes)}")
            return sum((v for _, v in parts[1:]), parts[0][1])
        if isinstance(e, (sympy.MatMul, sympy.Mul)):
            out, coeff = None, torch.tensor(1.0, dtype=torch.float64)
            for a in e.args:
                v = ev(a)
                if a.is_Matrix:
                    if out is not None and out.shape[-1] != v.shape[-2]:
                        if tuple(v.shape[-2:]) == (1, 1):
                            coeff = coeff * v[..., 0, 0][..., None, None]
                            continue
                        if tuple(out.shape[-2:]) == (1, 1):
                            coeff, out = coeff * out[..., 0, 0][..., None, None], v
                            continue
                        raise IllTyped(f"cannot multiply {tuple(out.shape)} by {tuple(v.shape)}")
                    out = v if out is None else out @ v
                else:
                    coeff = coeff * v
            return coeff if out is None else coeff * out
        if isinstance(e, sympy.Pow):
            return ev(e.args[0]) ** ev(e.args[1])
        if isinstance(e, sympy.Number):
            return torch.tensor(float(e), dtype=torch.float64)
        raise ValueError(f"cannot evaluate {type(e).__name__}")

    return ev(expr)


def set_dirs(F: Mapping, d: int, exact: bool) -> Callable:
    """Sigma -> (S_A, S_B) from the formulas of the set S (defaults Sigma^{-1}, I)."""
    def dirs(Sigma):
        vals = {"Sigma": Sigma, "d": d}
        SA = value(F, "S_A", vals, exact) if "S_A" in F else inv(Sigma, exact)
        SB = value(F, "S_B", vals, exact) if "S_B" in F else eye(d, exact)
        return SA, SB
    return dirs


def on_set_points(seeds: int = 2, on_set: bool = True, layers: int | None = None):
    """The exact and float points of a step that holds on S (or everywhere, ``on_set=False``)."""
    def exact(ctx: Context, F) -> list:
        s = sizes_of(ctx)
        rng = ctx.rng("exact-points")
        out = []
        dirs = set_dirs(F, s["d"], True) if on_set else None
        for k in range(seeds):
            out.append(exact_point(rng, s["n"], s["d"], layers or s["layers"], on_set, dirs,
                                   label=f"exact {k}"))
        return out

    def floats(ctx: Context, F) -> list:
        s = sizes_of(ctx)
        rng = ctx.rng("float-points")
        dirs = set_dirs(F, s["d"], False) if on_set else None
        return [float_point(rng, s["n"], s["d"], layers or s["layers"], on_set, dirs,
                            label=f"float {k}") for k in range(4)]

    return exact, floats


def more_points(on_set: bool = True):
    """Other sizes for ``pointwise_truth``: d = 1 and d = 3, two layers."""
    def more(ctx: Context, F) -> list:
        rng = np.random.default_rng(11)
        out = []
        for n, d in ((2, 1), (2, 3)):
            dirs = set_dirs(F, d, True) if on_set else None
            out.append(exact_point(rng, n, d, 2, on_set, dirs, label=f"judge d={d}"))
        return out
    return more


def pointwise_truth(spec: Pointwise, formulas: Sequence[NamedFormula],
                    more: Callable[[Context, Mapping], list],
                    base: Mapping[str, str] | None = None,
                    extra: Callable[[Context], TierResult] | None = None) -> ExactValues:
    """The kit's judge of a surviving mutant, its points drawn as this paper's always were."""
    return _kit_pointwise_truth(spec, formulas, more, base, extra, judge_id="ahn2023.judge")


def judged(spec: Pointwise, more: Callable[[Context, Mapping], list], claim: Claim,
           extra: Callable[[Context], TierResult] | None = None) -> Claim:
    """``claim`` with mutate's judge of a surviving mutant (``pointwise_truth``): the exact step
    at more points, the other formulas at its correction (the base its mutants start from)."""
    base = claim.correction.formulas if claim.correction is not None else None
    return replace(claim, exact=pointwise_truth(spec, claim.formulas, more, base, extra))
