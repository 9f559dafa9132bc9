"""The points xie2025's identities are checked at (``kit.pointwise``): the prompt
E = [[X^T, x_q], [y^T, y_q]] of eq. (2) (paper notation: X is C x d), the mask W^M and the named
formulas' values there, exact (sympy: rationals or symbols) or float64 (numpy)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import sympy

from ..kit.arrays import Exact, Floats
from ..kit.pointwise import Unevaluable

SIZES = ("d", "C")


@dataclass(frozen=True)
class Point:
    """The values the formulas and the derivation read at one instance, by name."""

    values: Mapping[str, Any]
    exact: bool
    label: str
    shown: tuple = field(default=())  # the names ``describe`` prints

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def describe(self) -> dict:
        out = {"point": self.label}
        for k in self.shown or tuple(self.values):
            v = self.values[k]
            out[k] = (str(v.tolist()) if isinstance(v, sympy.MatrixBase) else str(v)) \
                if self.exact else np.round(np.asarray(v, dtype=float), 6).tolist()
        return out


def arrays(F: Mapping, p: Point) -> Exact | Floats:
    """The point as ``kit.arrays`` (its formula values and derivatives, exact or float64)."""
    return (Exact if p.exact else Floats)(dict(p.values), F, {k: p.values[k] for k in SIZES})


def formula(F: Mapping, name: str, p: Point, **at: Any) -> Any:
    """The named formula at the point (``at`` overrides values), exact or float64; an ill-typed
    formula is ``Unevaluable`` (a failure, not a crash)."""
    try:
        out = arrays(F, p).formula(name, **at)
    except (ValueError, TypeError, sympy.ShapeError, RuntimeError) as exc:
        raise Unevaluable(f"{name}: {type(exc).__name__}: {exc}") from exc
    return out if p.exact else out.numpy()


def exact_zero(e: sympy.Expr) -> sympy.Expr:
    """An entry of lhs - rhs, 0 iff it is zero: expanded (canonical for a polynomial with
    rational coefficients, the sides here), cancelled where a formula divides by a symbol."""
    e = sympy.expand(e)
    return e if e == 0 or e.is_polynomial() else sympy.cancel(e)


def prompt(X: Any, y: Any, xq: Any, yq: Any, exact: bool) -> Any:
    """E = [[X^T, x_q], [y^T, y_q]] (eq. (2)) from X (C x d), y (C x 1), x_q (d x 1), y_q (a
    scalar); numpy arrays may carry a leading batch axis."""
    if exact:
        return sympy.Matrix.vstack(sympy.Matrix.hstack(X.T, xq),
                                   sympy.Matrix.hstack(y.T, sympy.Matrix([[yq]])))
    yq = np.broadcast_to(np.asarray(yq, dtype=float), X.shape[:-2] + (1, 1))
    return np.concatenate([np.concatenate([np.swapaxes(X, -1, -2), xq], -1),
                           np.concatenate([np.swapaxes(y, -1, -2), yq], -1)], -2)


def corner(Z: Any) -> Any:
    """[Z]_{-1,-1} as a 1 x 1 matrix (a batch of them): the prediction of eq. (3)."""
    return Z[-1:, -1:] if isinstance(Z, sympy.MatrixBase) else Z[..., -1:, -1:]


def grad(F: Mapping, name: str, wrt: str, p: Point, at: Any) -> Any:
    """d(formula)/d(wrt) at ``at``, derived by ``kit.arrays`` (exact entry by entry, or torch's
    autograd), never read from a formula."""
    g = arrays(F, p).grad(name, wrt, at)
    return g if p.exact else g.numpy()


def mask(C: int, exact: bool) -> Any:
    """W^M = diag(I_C, 0): the attention reads the C context tokens."""
    if exact:
        return sympy.diag(sympy.eye(C), sympy.zeros(1, 1))
    return np.diag([1.0] * C + [0.0])


def sympy_mask(C: int) -> sympy.Matrix:
    return mask(C, True)


def symbol_matrix(name: str, rows: int, cols: int) -> sympy.Matrix:
    """Entries name{i}_{j} (a column: name{i}), each a symbol."""
    if cols == 1:
        return sympy.Matrix(rows, 1, lambda i, _: sympy.Symbol(f"{name}{i}"))
    return sympy.Matrix(rows, cols, lambda i, j: sympy.Symbol(f"{name}{i}_{j}"))


def symbolic_entries(d: int, C: int) -> tuple[sympy.Matrix, dict]:
    """E with every entry of X, y, x_q and y_q a symbol."""
    data = {"X": symbol_matrix("x", C, d), "y": symbol_matrix("y", C, 1),
            "x_q": symbol_matrix("xq", d, 1), "y_q": sympy.Symbol("yq")}
    return prompt(data["X"], data["y"], data["x_q"], data["y_q"], True), data


def gaussian_data(ctx, rng: np.random.Generator) -> dict:
    """One Gaussian prompt at the budget's instance (``--size`` reaches it): X (C x d) with
    N(0, 1) entries, y = X w_hat with w_hat ~ N(w*, I_d), x_q ~ N(0, I_d), y_q ~ N(0, 1)."""
    from .setting import SETTING

    inst = SETTING.instance(ctx.budget.name, ctx.sizes)
    d, c, ws = inst.d, inst.C, inst.w_star[:, None]
    X = rng.standard_normal((c, d))
    return {"d": d, "C": c, "w_star": ws, "X": X, "y": X @ (ws + rng.standard_normal((d, 1))),
            "x_q": rng.standard_normal((d, 1)), "y_q": rng.standard_normal()}


def rational_matrix(rows: int, cols: int, rng: np.random.Generator) -> sympy.Matrix:
    return sympy.Matrix(rows, cols, lambda i, j: sympy.Rational(int(rng.integers(-5, 6)),
                                                                 int(rng.integers(1, 4))))


def cat(parts: list, axis: int, exact: bool) -> Any:
    """Blocks side by side (axis 1) or stacked (axis 0), sympy or numpy."""
    if exact:
        return (sympy.Matrix.hstack if axis else sympy.Matrix.vstack)(*parts)
    return np.concatenate(parts, axis=axis)
