"""Multi-head linear self-attention and y_q-LSA (xie2025 eqs. (2)-(3), (5)-(6), (11)-(12)).

The prompt is E = [[X, x_q], [y^T, y_q]] of shape (d+1) x (C+1) (xie2025 eq. (2)); here, as in
``models.lsa``, X is the d x C matrix whose columns are the context inputs (the paper's X^T), and
y_q is the query's initial guess (0 in the standard embedding, w^T x_q in y_q-LSA).

    head_h(E)    = (1/C) W^P_h W^V_h E W^M (E^T (W^K_h)^T W^Q_h E)        (eq. (5))
    f_H-LSA(E)   = [E + sum_h head_h(E)]_{-1,-1}                           (eq. (6); H = 1: eq. (3))
    f_yq-LSA     = f_LSA(E_w),  E_w = E with y_q = w^T x_q                 (eqs. (11)-(12))

Only the products P_h = W^P_h W^V_h and Q_h = (W^K_h)^T W^Q_h enter, so the forward pass is written
in (P_h, Q_h) against the array protocol (``@``, ``+``, ``/``, ``.mT``/``.T``) and runs unchanged on
torch tensors, numpy arrays, sympy matrices and the symbolic ``moments.BlockMat`` prompts.  The
prediction is the bottom-right entry itself (no sign flip, unlike ahn2023).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from .device import randn
from .lsa import attention, mask_matrix, readout, transpose


def head_products(W_P: Any, W_V: Any, W_K: Any, W_Q: Any) -> tuple[Any, Any]:
    """(P, Q) = (W^P W^V, (W^K)^T W^Q): the two products a head's output depends on (eq. (5))."""
    return W_P @ W_V, transpose(W_K) @ W_Q


def multihead_forward(E: Any, heads: Sequence[tuple[Any, Any]], mask: Any, C: Any) -> Any:
    """E + sum_h (1/C) P_h E M (E^T Q_h E), the output matrix of eq. (6) before taking [.]_{-1,-1}."""
    out = E
    for P, Q in heads:
        out = out + attention(E, P, Q, mask) / C
    return out


def multihead_prediction(E: Any, heads: Sequence[tuple[Any, Any]], mask: Any, C: Any) -> Any:
    """f_H-LSA(E) = [E + sum_h head_h(E)]_{-1,-1} (eq. (6))."""
    return readout(multihead_forward(E, heads, mask, C))


def embed(X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, yq: torch.Tensor) -> torch.Tensor:
    """E = [[X, x_q], [y^T, y_q]] (eq. (2)) for batches: X (B, d, C), y (B, C), xq (B, d), yq (B,)."""
    top = torch.cat([X, xq.unsqueeze(-1)], dim=-1)
    bottom = torch.cat([y, yq.unsqueeze(-1)], dim=-1).unsqueeze(-2)
    return torch.cat([top, bottom], dim=-2)


def one_step_gd(X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, w0: torch.Tensor,
                eta: float) -> torch.Tensor:
    """<x_q, w_1> with w_1 = w_0 - (eta/C) X^T (X w_0 - y) in the paper's orientation (eqs. (9)-(10),
    Sec. 5.2): the one-step gradient-descent baseline started at w_0."""
    C = X.shape[-1]
    resid = torch.einsum("bdc,bd->bc", X, w0.expand(X.shape[0], -1)) - y
    w1 = w0 - eta / C * torch.einsum("bdc,bc->bd", X, resid)
    return torch.einsum("bd,bd->b", w1, xq)


def fast_prediction(E: torch.Tensor, P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """f_H-LSA(E) for batched prompts E (B, d+1, C+1) and stacked heads P, Q (H, d+1, d+1).

    The same number as ``multihead_prediction``, computed from what the bottom-right entry needs:
    y_q + (1/C) sum_h b_h^T (E M E^T) Q_h z_q, with b_h the last row of P_h and z_q E's last column.
    """
    C = E.shape[-1] - 1
    H, D = Q.shape[0], Q.shape[-1]
    ctx = E[..., :C]
    G = ctx @ ctx.mT
    zq = E[..., :, C]
    bG = (G.mT @ P[:, -1, :].T).mT  # (..., H, d+1): b_h^T G
    Qz = (zq @ Q.reshape(H * D, D).T).reshape(*zq.shape[:-1], H, D)  # (..., H, d+1): Q_h z_q
    return E[..., -1, C] + (bG * Qz).sum((-2, -1)) / C


class MultiHeadLSA(torch.nn.Module):
    """H heads with trainable W^P_h, W^V_h, W^K_h, W^Q_h in R^{(d+1) x (d+1)} (eqs. (5)-(6))."""

    def __init__(self, d: int, heads: int, init_scale: float = 0.1,
                 generator: torch.Generator | None = None, dtype=torch.float64,
                 device: str | torch.device = "cpu") -> None:
        super().__init__()
        if d <= 0 or heads <= 0:
            raise ValueError("d and heads must be positive")
        self.d, self.heads = d, heads

        def param():
            t = randn(heads, d + 1, d + 1, generator=generator, dtype=dtype)
            return torch.nn.Parameter((t * init_scale).to(device))

        self.W_P, self.W_V, self.W_K, self.W_Q = param(), param(), param(), param()

    def products(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(P_h, Q_h) stacked over heads: (H, d+1, d+1) each."""
        return head_products(self.W_P, self.W_V, self.W_K, self.W_Q)

    def forward(self, E: torch.Tensor) -> torch.Tensor:
        P, Q = self.products()
        return fast_prediction(E, P, Q)

    def full_forward(self, E: torch.Tensor) -> torch.Tensor:
        """The output matrix of eq. (6), through the generic forward pass (for cross-checks)."""
        P, Q = self.products()
        C = E.shape[-1] - 1
        return multihead_forward(E, list(zip(P, Q)), mask_matrix(C, E), C)


class YqLSA(torch.nn.Module):
    """y_q-LSA (Def. 3): one LSA head on E_w, whose query guess y_q = w^T x_q has a trainable w."""

    def __init__(self, d: int, init_scale: float = 0.1, generator: torch.Generator | None = None,
                 dtype=torch.float64, device: str | torch.device = "cpu") -> None:
        super().__init__()
        self.lsa = MultiHeadLSA(d, 1, init_scale, generator, dtype, device)
        w = randn(d, generator=generator, dtype=dtype) * init_scale
        self.w = torch.nn.Parameter(w.to(device))

    def forward(self, X: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        return self.lsa(embed(X, y, xq, xq @ self.w))


@dataclass(frozen=True)
class Tasks:
    """Sampled prompts of xie2025 Sec. 2: w ~ N(w*, I), x_i, x_q ~ N(0, I), y_i = <w, x_i>."""

    X: torch.Tensor   # (B, d, C)
    y: torch.Tensor   # (B, C)
    xq: torch.Tensor  # (B, d)
    w: torch.Tensor   # (B, d)

    @property
    def target(self) -> torch.Tensor:
        """The query label y = <w, x_q>."""
        return torch.einsum("bd,bd->b", self.w, self.xq)

    def E(self, yq: torch.Tensor | None = None) -> torch.Tensor:
        """The prompt of eq. (2) with query guess ``yq`` (default 0)."""
        if yq is None:
            yq = self.y.new_zeros(self.y.shape[0])
        return embed(self.X, self.y, self.xq, yq)


def sample_tasks(w_star: torch.Tensor, C: int, batch: int, generator: torch.Generator,
                 dtype=torch.float64, device: str | torch.device = "cpu") -> Tasks:
    """``batch`` prompts with prior mean ``w_star`` (d,) and context size C (drawn on the
    generator's device, then moved to ``device``)."""
    if batch <= 0 or C <= 0:
        raise ValueError("batch and C must be positive")
    d = w_star.shape[0]
    g = randn(batch, d, C + 2, generator=generator, dtype=dtype, device=device)
    X, xq = g[..., :C], g[..., C]
    w = w_star.to(dtype=dtype, device=device) + g[..., C + 1]
    y = torch.einsum("bdc,bd->bc", X, w)
    return Tasks(X, y, xq, w)
