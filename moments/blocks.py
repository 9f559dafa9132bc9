"""Block matrices of symbolic expressions, e.g. the prompt Z = [[X, x_q], [y^T, 0]].

``BlockMat`` obeys the same ``@``, ``+``, ``*``, ``/``, ``.T``/``.mT`` protocol as numpy and torch
arrays, so that a transformer's forward pass written once for arrays runs on it unchanged and
yields a symbolic expression per block.
"""
from __future__ import annotations

from typing import Sequence

import sympy

from .tensor import Mat


class BlockMat:
    """A grid of :class:`Mat` blocks with consistent row and column spaces."""

    def __init__(self, blocks: Sequence[Sequence[Mat]]) -> None:
        self.blocks = [list(row) for row in blocks]
        if not self.blocks or not self.blocks[0]:
            raise ValueError("a block matrix needs at least one block")
        width = len(self.blocks[0])
        if any(len(row) != width for row in self.blocks):
            raise ValueError("ragged block matrix")
        self.row_spaces = tuple(row[0].rows for row in self.blocks)
        self.col_spaces = tuple(b.cols for b in self.blocks[0])
        for i, row in enumerate(self.blocks):
            for j, b in enumerate(row):
                if (b.rows, b.cols) != (self.row_spaces[i], self.col_spaces[j]):
                    raise ValueError(f"block ({i},{j}) has shape {b.shape}, expected "
                                     f"{(self.row_spaces[i], self.col_spaces[j])}")

    def __getitem__(self, ij: tuple[int, int]) -> Mat:
        i, j = ij
        return self.blocks[i][j]

    def block(self, i: int, j: int) -> Mat:
        return self.blocks[i][j]

    def _map(self, fn) -> "BlockMat":
        return BlockMat([[fn(b) for b in row] for row in self.blocks])

    def __add__(self, other: "BlockMat") -> "BlockMat":
        if not isinstance(other, BlockMat):
            return NotImplemented
        return BlockMat([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(self.blocks, other.blocks)])

    def __sub__(self, other: "BlockMat") -> "BlockMat":
        return self + other * -1

    def __mul__(self, factor) -> "BlockMat":
        factor = sympy.sympify(factor)
        return self._map(lambda b: b.scale(factor))

    __rmul__ = __mul__

    def __truediv__(self, factor) -> "BlockMat":
        factor = sympy.sympify(factor)
        return self._map(lambda b: b.scale(1 / factor))

    def __neg__(self) -> "BlockMat":
        return self * -1

    def __matmul__(self, other: "BlockMat") -> "BlockMat":
        if not isinstance(other, BlockMat):
            return NotImplemented
        if self.col_spaces != other.row_spaces:
            raise ValueError(f"block shape mismatch: {self.col_spaces} vs {other.row_spaces}")
        out = []
        for i in range(len(self.row_spaces)):
            row = []
            for j in range(len(other.col_spaces)):
                acc = Mat.zeros(self.row_spaces[i], other.col_spaces[j])
                for k in range(len(self.col_spaces)):
                    a, b = self.blocks[i][k], other.blocks[k][j]
                    if a.is_zero or b.is_zero:
                        continue
                    acc = acc + a @ b
                row.append(acc)
            out.append(row)
        return BlockMat(out)

    @property
    def T(self) -> "BlockMat":
        return BlockMat([[self.blocks[i][j].T for i in range(len(self.row_spaces))]
                         for j in range(len(self.col_spaces))])

    mT = T

    def map_coeffs(self, fn) -> "BlockMat":
        return self._map(lambda b: b.map_coeffs(fn))

    def __repr__(self) -> str:
        return f"BlockMat({self.row_spaces} x {self.col_spaces})"
