"""The claim kit: generic checks a paper's claims are built from, with the engine's soundness
rules inside (formulas read through the context, non-finite comparisons undecided).

- ``forward_identity``: the model at the stated weights outputs the stated expression
  (symbolic at small sizes, float64 Monte Carlo at the budget's);
- ``Arrays`` (``Exact``, ``Floats``): one forward pass written once for sympy and torch;
- ``torch_value``: a formula's value in float64 torch, differentiable.

Dependencies point one way: ``moments``, ``models`` <- kit <- paper packages.
"""
from .arrays import Arrays, Exact, Floats
from .evaluate import torch_value
from .forward_identity import ForwardIdentity, forward_identity

__all__ = ["Arrays", "Exact", "Floats", "ForwardIdentity", "forward_identity", "torch_value"]
