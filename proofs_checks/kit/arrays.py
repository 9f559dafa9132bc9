"""One forward pass, two number systems: exact sympy matrices (symbolic entries or rationals)
and float64 torch tensors.  A kit check writes its model and its claimed output once against
``Arrays`` and runs them in both (``Exact`` for the symbolic tier, ``Floats`` for the numeric)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import sympy
import torch

from verify.formulas import formula_value

from .evaluate import torch_value


@dataclass
class Arrays:
    """The inputs of one instance (by name), the claim's formulas, and matrix helpers."""

    values: dict[str, Any]
    formulas: Mapping[str, sympy.Basic]
    sizes: Mapping[str, int]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def blocks(self, rows: Sequence[Sequence[Any]]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def eye(self, k: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def zeros(self, r: int, c: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def mask(self, n: int, extra: int = 1) -> Any:
        """M = diag(I_n, 0_extra): attention reads the n context tokens, not the queries."""
        return self.blocks([[self.eye(n), self.zeros(n, extra)],
                            [self.zeros(extra, n), self.zeros(extra, extra)]])


class Exact(Arrays):
    """sympy: a formula is evaluated exactly; a gradient is the derivative entry by entry."""

    def blocks(self, rows):
        return sympy.Matrix(sympy.BlockMatrix([[sympy.Matrix(b) for b in r] for r in rows]))

    def eye(self, k):
        return sympy.eye(k)

    def zeros(self, r, c):
        return sympy.zeros(r, c)

    def formula(self, name: str, **at: Any) -> Any:
        env = {**self.sizes, **self.values, **at}
        out = formula_value(self.formulas[name], env)
        return sympy.Matrix(out) if isinstance(out, sympy.MatrixBase) else out

    def grad(self, name: str, wrt: str, at: Any) -> sympy.Matrix:
        """d(formula)/d(wrt) at ``at``: the scalar formula with ``wrt`` a matrix of fresh
        symbols, differentiated entry by entry (no formula for the gradient is assumed)."""
        at = sympy.Matrix(at)
        free = sympy.Matrix(*at.shape, lambda i, j: sympy.Symbol(f"_{wrt}_{i}_{j}"))
        value = self.formula(name, **{wrt: free})
        value = value[0, 0] if isinstance(value, sympy.MatrixBase) else value
        g = free.applyfunc(lambda s: sympy.diff(value, s))
        return g.xreplace(dict(zip(free, at)))


class Floats(Arrays):
    """float64 torch: formulas evaluated node by node in torch; gradients by autograd through
    that evaluation (torch's own differentiation, not a formula for the gradient)."""

    def blocks(self, rows):
        return torch.cat([torch.cat([torch.as_tensor(b, dtype=torch.float64) for b in r], dim=1)
                          for r in rows], dim=0)

    def eye(self, k):
        return torch.eye(k, dtype=torch.float64)

    def zeros(self, r, c):
        return torch.zeros(r, c, dtype=torch.float64)

    def formula(self, name: str, **at: Any) -> torch.Tensor:
        return torch_value(self.formulas[name], {**self.values, **at}, self.sizes)

    def grad(self, name: str, wrt: str, at: Any) -> torch.Tensor:
        w = torch.as_tensor(at, dtype=torch.float64).clone().requires_grad_(True)
        value = self.formula(name, **{wrt: w})
        (g,) = torch.autograd.grad(value.reshape(()), w)
        return g.detach()


