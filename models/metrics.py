"""Distances used to compare trained weights with derived optima (ahn2023 Sec. 5.3)."""
from __future__ import annotations

import torch


def dist_to_identity(M: torch.Tensor) -> float:
    """Dist(M, I) = min_a ||M - a I||_F / ||M||_F, attained at a = tr(M)/d (ahn2023 Sec. 5.3)."""
    d = M.shape[-1]
    a = torch.diagonal(M, dim1=-2, dim2=-1).sum(-1) / d
    eye = torch.eye(d, dtype=M.dtype, device=M.device)
    return float(torch.linalg.norm(M - a * eye) / torch.linalg.norm(M))


def relative_error(A: torch.Tensor, B: torch.Tensor) -> float:
    """||A - B||_F / ||B||_F."""
    return float(torch.linalg.norm(A - B) / torch.linalg.norm(B))
