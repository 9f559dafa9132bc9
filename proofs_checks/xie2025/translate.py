"""Named formulas (sympy matrix expressions) as symbolic matrices of the moment kernel.

A formula such as eq. (9)'s (w_star - eta/C*X.T*(X*w_star - y)).T*x_q is read in the paper's
notation (X of shape C x d); ``to_mat`` rebuilds it from kernel letters (X -> the prompt's X^T,
y -> X^T w, ...), so its expectation, or its difference with a forward pass, is exact in d and C.
Square matrices of size d+1 become 2 x 2 block matrices (d | 1), the block structure of E.
"""
from __future__ import annotations

from typing import Any, Mapping

import sympy
from sympy.matrices.expressions import (BlockMatrix, Identity, MatAdd, MatMul, MatrixSymbol,
                                        Transpose, ZeroMatrix)
from sympy.matrices.expressions.matexpr import MatrixExpr

from moments.blocks import BlockMat
from moments.tensor import Mat, identity, scalar, zeros

from .setting import D_SYM


def _space(n) -> str:
    if n == 1:
        return "1"
    if isinstance(n, sympy.Symbol):
        return n.name
    raise ValueError(f"no index space for size {n}")


def _is_split(n) -> bool:
    return sympy.simplify(n - (D_SYM + 1)) == 0


def _identity(n):
    if _is_split(n):
        return BlockMat([[identity("d"), zeros("d", "1")], [zeros("1", "d"), scalar(1)]])
    return scalar(1) if n == 1 else identity(_space(n))


def _zeros(r, c):
    rows = ("d", "1") if _is_split(r) else (_space(r),)
    cols = ("d", "1") if _is_split(c) else (_space(c),)
    if len(rows) == 1 and len(cols) == 1:
        return zeros(rows[0], cols[0])
    return BlockMat([[zeros(a, b) for b in cols] for a in rows])


def to_mat(expr: Any, bindings: Mapping[str, Any], scalars: Mapping[str, Any] | None = None):
    """``expr`` as a Mat/BlockMat with matrix symbols from ``bindings`` and scalar symbols from
    ``scalars`` (by name; unbound scalar symbols stay symbols)."""
    scalars = dict(scalars or {})
    if isinstance(expr, MatrixSymbol):
        return bindings[expr.name]
    if isinstance(expr, Identity):
        return _identity(expr.rows)
    if isinstance(expr, ZeroMatrix):
        return _zeros(expr.rows, expr.cols)
    if isinstance(expr, Transpose):
        return to_mat(expr.arg, bindings, scalars).T
    if isinstance(expr, MatAdd):
        parts = [to_mat(a, bindings, scalars) for a in expr.args]
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out
    if isinstance(expr, MatMul):
        factor = sympy.Integer(1)
        out = None
        for a in expr.args:
            if isinstance(a, MatrixExpr):
                m = to_mat(a, bindings, scalars)
                out = m if out is None else _matmul(out, m)
            else:
                factor *= _scalar(a, scalars)
        return out * factor if factor != 1 else out
    if isinstance(expr, BlockMatrix):
        rows = []
        for i in range(expr.blockshape[0]):
            rows.append([_as_mat(to_mat(expr.blocks[i, j], bindings, scalars))
                         for j in range(expr.blockshape[1])])
        return BlockMat(rows)
    if isinstance(expr, MatrixExpr):
        raise ValueError(f"cannot translate {type(expr).__name__}: {expr}")
    return scalar(_scalar(expr, scalars))


def _scalar(a, scalars):
    subs = {s: scalars[s.name] for s in getattr(a, "free_symbols", ()) if s.name in scalars}
    return sympy.sympify(a).subs(subs) if subs else sympy.sympify(a)


def _as_mat(m):
    if isinstance(m, BlockMat):
        if len(m.row_spaces) == 1 and len(m.col_spaces) == 1:
            return m[0, 0]
        raise ValueError("nested block matrices are not supported")
    return m


def _matmul(a, b):
    """a @ b for Mat/BlockMat operands; a 1 x 1 Mat times a block matrix scales its blocks."""
    if isinstance(a, Mat) and isinstance(b, BlockMat) and a.shape == ("1", "1"):
        return _scale_block(b, a)
    if isinstance(b, Mat) and isinstance(a, BlockMat) and b.shape == ("1", "1"):
        return _scale_block(a, b)
    if isinstance(a, BlockMat) and isinstance(b, Mat):
        b = BlockMat([[b]])
    if isinstance(b, BlockMat) and isinstance(a, Mat):
        a = BlockMat([[a]])
    out = a @ b
    if isinstance(out, BlockMat) and len(out.row_spaces) == 1 and len(out.col_spaces) == 1:
        return out[0, 0]
    return out


def _scale_block(block: BlockMat, s: Mat) -> BlockMat:
    return BlockMat([[b * s for b in row] for row in block.blocks])
