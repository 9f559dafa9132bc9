"""Exact population losses as torch functions of a model's parameters.

A claim derives its population loss as a polynomial in letters (``moments.Poly``); ``ExactLoss``
compiles it once and evaluates it on letters built from the parameters by ``bind``, on cpu or cuda,
with an optional leading batch axis (one problem per seed), so that L-BFGS, Adam or GD train on the
exact loss instead of sampled prompts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch


@dataclass
class ExactLoss:
    """loss() = poly(bind()) where ``bind`` maps the current parameters to (letters, scalars)."""

    compiled: Any  # moments.poly.CompiledPoly (or any callable(env, scalars))
    bind: Callable[[], tuple[Mapping[str, torch.Tensor], Mapping[str, Any]]]

    def __call__(self) -> torch.Tensor:
        env, scalars = self.bind()
        return self.compiled(env, scalars)
