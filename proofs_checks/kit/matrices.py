"""Matrix formulas outside the moment kernel: type checking, conversion to moment polynomials,
and exact (sympy) or float64 (numpy) values.

- ``shape_errors``: every ill-shaped sum, product, inverse or trace of a formula, sizes symbolic;
- ``to_mat``: a formula (no inverses) as a ``moments.tensor.Mat`` over letters;
- ``evaluate``: a formula's value, exact or float64, with ``exact_inverse`` and ``scalar_value``
  its exact inverse and scalar substitution.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

import numpy as np
import sympy

from moments.tensor import Mat, identity, matrix, vector, zeros


def _same(a, b) -> bool:
    return sympy.simplify(sympy.sympify(a) - sympy.sympify(b)) == 0


def shape_errors(expr: sympy.Basic) -> list[str]:
    """Every sum of differently shaped matrices and every product with mismatched inner sizes.

    sympy builds such expressions without complaint (MatAdd takes the first argument's shape), so
    a printed formula is type-checked here, with the sizes kept symbolic (distinct size symbols,
    e.g. m != N != K, are never taken equal).
    """
    errors: list[str] = []
    seen = set()

    def walk(e):
        if id(e) in seen or not isinstance(e, sympy.Basic):
            return
        seen.add(id(e))
        for arg in e.args:
            walk(arg)
        if isinstance(e, sympy.MatAdd):
            shapes = [a.shape for a in e.args]
            for s, a in zip(shapes[1:], e.args[1:]):
                if not (_same(s[0], shapes[0][0]) and _same(s[1], shapes[0][1])):
                    errors.append(f"{sympy.sstr(e.args[0])} is {shapes[0][0]}x{shapes[0][1]} but "
                                  f"{sympy.sstr(a)} is {s[0]}x{s[1]} in the sum {sympy.sstr(e)}")
        elif isinstance(e, sympy.MatMul):
            mats = [a for a in e.args if getattr(a, "is_Matrix", False)]
            for left, right in zip(mats, mats[1:]):
                if not _same(left.shape[1], right.shape[0]):
                    errors.append(f"{sympy.sstr(left)} ({left.shape[0]}x{left.shape[1]}) times "
                                  f"{sympy.sstr(right)} ({right.shape[0]}x{right.shape[1]}): inner "
                                  f"sizes differ")
        elif isinstance(e, (sympy.Inverse, sympy.Trace)) or (
                isinstance(e, sympy.MatPow)):
            arg = e.args[0]
            if getattr(arg, "is_Matrix", False) and not _same(arg.shape[0], arg.shape[1]):
                errors.append(f"{type(e).__name__} of the non-square {sympy.sstr(arg)}")

    walk(expr)
    return errors


def _letter_space(dim) -> str:
    """The moment kernel's name of a matrix dimension: "1", or the name of its single size symbol."""
    if dim == 1:
        return "1"
    if isinstance(dim, sympy.Symbol):
        return dim.name
    raise NotImplementedError(f"dimension {dim} is not a single size")


def to_mat(expr: sympy.Basic, symmetric: frozenset = frozenset()) -> Mat:
    """A sympy matrix expression (no inverses) as a moment-kernel expression over letters
    (``moments.tensor.Mat``): each MatrixSymbol becomes a matrix letter (a vector where it has one
    column, symmetric where its name is in ``symmetric``) over the spaces named by its size
    symbols."""
    if isinstance(expr, sympy.MatrixSymbol):
        rows, cols = (_letter_space(s) for s in expr.shape)
        if cols == "1":
            return vector(expr.name, rows)
        return matrix(expr.name, rows, cols, symmetric=expr.name in symmetric)
    if isinstance(expr, sympy.Identity):
        return identity(_letter_space(expr.rows))
    if isinstance(expr, sympy.ZeroMatrix):
        return zeros(_letter_space(expr.rows), _letter_space(expr.cols))
    if isinstance(expr, sympy.Transpose):
        return to_mat(expr.args[0], symmetric).T
    if isinstance(expr, sympy.MatAdd):
        out = None
        for a in expr.args:
            t = to_mat(a, symmetric)
            out = t if out is None else out + t
        return out
    if isinstance(expr, (sympy.MatMul, sympy.Mul)):
        coeff = sympy.Integer(1)
        out = None
        for a in expr.args:
            if getattr(a, "is_Matrix", False):
                t = to_mat(a, symmetric)
                out = t if out is None else out @ t
            else:
                coeff *= a
        if out is None:
            return Mat.scalar(coeff)
        return out.scale(coeff)
    if isinstance(expr, sympy.Add):
        out = None
        for a in expr.args:
            t = to_mat(a, symmetric)
            out = t if out is None else out + t
        return out
    if not getattr(expr, "is_Matrix", False):
        return Mat.scalar(expr)
    raise NotImplementedError(f"{type(expr).__name__} is not supported by the moment kernel")


def evaluate(expr: sympy.Basic, values: Mapping[str, Any], exact: bool) -> Any:
    """The value of a matrix formula, symbols looked up by name in ``values`` (matrices, scalars
    and sizes): exact sympy matrices with ``exact`` (symbols without a value, such as tau, stay
    symbolic), else float64 numpy arrays.

    A small recursive evaluator of matrix formulas (numpy's printer has no trace, and sympy's
    ``doit`` leaves inverses of symbolic-entry matrices alone).  A sum of differently shaped
    matrices raises ``ValueError`` instead of broadcasting."""
    ev = lambda e: evaluate(e, values, exact)  # noqa: E731

    def size(x) -> int:
        return int(scalar_value(x, values, False))

    if isinstance(expr, sympy.MatrixSymbol):
        v = values[expr.name]
        return sympy.Matrix(v) if exact else np.asarray(v, dtype=float)
    if isinstance(expr, sympy.Identity):
        return sympy.eye(size(expr.rows)) if exact else np.eye(size(expr.rows))
    if isinstance(expr, (sympy.ZeroMatrix, sympy.OneMatrix)):
        r, c = size(expr.rows), size(expr.cols)
        fill = 0 if isinstance(expr, sympy.ZeroMatrix) else 1
        return sympy.ones(r, c) * fill if exact else np.full((r, c), float(fill))
    if isinstance(expr, sympy.Transpose):
        return ev(expr.args[0]).T
    if isinstance(expr, sympy.Inverse):
        M = ev(expr.args[0])
        return sympy.Matrix(exact_inverse(sympy.ImmutableMatrix(M))) if exact else np.linalg.inv(M)
    if isinstance(expr, sympy.Trace):
        M = ev(expr.args[0])
        return M.trace() if exact else float(np.trace(M))
    if isinstance(expr, sympy.MatPow):
        base = ev(expr.args[0])
        p = sympy.sympify(expr.args[1])
        if p.is_integer:
            return base ** int(p) if exact else np.linalg.matrix_power(base, int(p))
        if exact:
            raise NotImplementedError("a fractional matrix power has no exact rational value")
        w, U = np.linalg.eigh((base + base.T) / 2)
        return (U * np.clip(w, 0, None) ** float(p)) @ U.T
    if isinstance(expr, (sympy.MatAdd, sympy.Add)):
        parts = [ev(a) for a in expr.args]
        shapes = {tuple(p.shape) if hasattr(p, "shape") and (exact and isinstance(p, sympy.MatrixBase)
                                                           or not exact and np.ndim(p) == 2) else ()
                  for p in parts}
        if len(shapes) > 1:
            raise ValueError(f"cannot add shapes {sorted(shapes)} in {sympy.sstr(expr)}")
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out
    if isinstance(expr, (sympy.MatMul, sympy.Mul)):
        coeff, out = sympy.Integer(1) if exact else 1.0, None
        for a in expr.args:
            v = ev(a)
            if (exact and isinstance(v, sympy.MatrixBase)) or (not exact and np.ndim(v) == 2):
                out = v if out is None else out * v if exact else out @ v
            else:
                coeff = coeff * v
        return coeff if out is None else out * coeff if exact else coeff * out
    if isinstance(expr, sympy.Pow) and not getattr(expr, "is_Matrix", False):
        return ev(expr.args[0]) ** ev(expr.args[1])
    if isinstance(expr, sympy.Function) and not getattr(expr, "is_Matrix", False):
        args = [ev(a) for a in expr.args]
        out = type(expr)(*[sympy.sympify(a) for a in args])
        return out if exact else float(out.evalf())
    return scalar_value(expr, values, exact)


@lru_cache(maxsize=256)
def exact_inverse(M: sympy.ImmutableMatrix) -> sympy.ImmutableMatrix:
    """Exact inverse with its entries cancelled (rational functions of any symbols, such as a noise
    level), cached: a formula's inverse recurs for every instance it is evaluated at."""
    return sympy.ImmutableMatrix(M.inv().applyfunc(sympy.cancel))


def scalar_value(expr, values: Mapping[str, Any], exact: bool) -> Any:
    """A scalar expression with the symbols named in ``values`` substituted: exact (sympy), or a
    float."""
    expr = sympy.sympify(expr)
    subs = {s: values[s.name] for s in expr.free_symbols if s.name in values}
    out = expr.subs(subs)
    return out if exact else float(out.evalf())
