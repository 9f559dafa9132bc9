"""A formula's value in float64 torch, node by node (sympy's printers have no trace for numpy
or torch, and a compiled function would hide the tree from autograd): the matrix and scalar
nodes the formula parser admits, with shapes checked where two are added."""
from __future__ import annotations

from typing import Any, Mapping

import sympy
import torch

from verify.formulas import as_sympy, size_symbol

F64 = torch.float64


def torch_value(expr: sympy.Basic, values: Mapping[str, Any],
                sizes: Mapping[str, int]) -> torch.Tensor:
    """The value of ``expr`` with symbols looked up by name in ``values`` (tensors or numbers)
    and size symbols in ``sizes``; differentiable in every tensor that requires grad."""
    subs = {size_symbol(k): sympy.Integer(v) for k, v in sizes.items()}

    def ev(e: sympy.Basic) -> torch.Tensor:
        if isinstance(e, (sympy.MatrixSymbol, sympy.Symbol)):
            if e.name in values:
                return torch.as_tensor(values[e.name], dtype=F64)
            if e.name in sizes:
                return torch.tensor(float(sizes[e.name]), dtype=F64)
            raise KeyError(f"no value for {e.name}")
        if isinstance(e, sympy.Identity):
            return torch.eye(_size(e.rows), dtype=F64)
        if isinstance(e, sympy.ZeroMatrix):
            return torch.zeros(_size(e.rows), _size(e.cols), dtype=F64)
        if isinstance(e, sympy.OneMatrix):
            return torch.ones(_size(e.rows), _size(e.cols), dtype=F64)
        if isinstance(e, sympy.Transpose):
            return ev(e.args[0]).transpose(-2, -1)
        if isinstance(e, sympy.Inverse):
            return torch.linalg.inv(ev(e.args[0]))
        if isinstance(e, sympy.Trace):
            return torch.diagonal(ev(e.args[0]), dim1=-2, dim2=-1).sum(-1)
        if isinstance(e, sympy.MatPow):
            p = e.args[1].xreplace(subs)
            if not p.is_integer:
                raise ValueError(f"a matrix power {p} that is not an integer")
            return torch.linalg.matrix_power(ev(e.args[0]), int(p))
        if isinstance(e, sympy.BlockMatrix):
            return torch.cat([torch.cat([ev(b) for b in row], dim=1)
                              for row in e.blocks.tolist()], dim=0)
        if isinstance(e, (sympy.MatAdd, sympy.Add)):
            parts = [ev(a) for a in e.args]
            if any(p.ndim > 2 for p in parts):
                raise ValueError(f"a batch of matrices in {sympy.sstr(e)}: evaluate one "
                                 f"instance at a time")
            shapes = {tuple(p.shape) for p in parts if p.ndim == 2}
            if len(shapes) > 1 or (shapes and any(p.ndim < 2 for p in parts)):
                raise ValueError(f"cannot add shapes {sorted(shapes)} in {sympy.sstr(e)}")
            return sum(parts[1:], parts[0])
        if isinstance(e, (sympy.MatMul, sympy.Mul)):
            out, coeff = None, torch.tensor(1.0, dtype=F64)
            for a in e.args:
                v = ev(a)
                if v.ndim > 2:  # a batch would be multiplied entrywise, as a scalar is
                    raise ValueError(f"a batch of matrices (shape {tuple(v.shape)}) in "
                                     f"{sympy.sstr(e)}: evaluate one instance at a time")
                if v.ndim == 2:
                    out = v if out is None else out @ v
                else:
                    coeff = coeff * v
            return coeff if out is None else coeff * out
        if isinstance(e, sympy.Pow):
            return ev(e.args[0]) ** ev(e.args[1])
        if isinstance(e, sympy.Number):
            return torch.tensor(float(e), dtype=F64)
        if isinstance(e, sympy.Function) and type(e).__name__ in _FUNCTIONS:
            return _FUNCTIONS[type(e).__name__](*[ev(a) for a in e.args])
        raise ValueError(f"cannot evaluate {type(e).__name__} in torch")

    def _size(x: sympy.Basic) -> int:
        v = as_sympy(x).xreplace(subs)
        if not v.is_Integer:
            raise ValueError(f"size {x} is not known")
        return int(v)

    return ev(expr)


_FUNCTIONS = {"sqrt": torch.sqrt, "exp": torch.exp, "log": torch.log, "Abs": torch.abs,
              "Max": torch.maximum, "Min": torch.minimum}
