"""Prompt samplers for in-context linear regression (ahn2023 eq. (1), gatmiry2024 Sec. 3.3).

x_i, x_q ~ N(0, Sigma) i.i.d., w* ~ N(0, W_cov) (identity or Sigma^{-1}), y_i = <w*, x_i>, and the
prompt Z_0 = [[X, x_q], [y^T, 0]] of shape (d+1) x (n+1).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .device import randn


@dataclass(frozen=True)
class PromptLaw:
    """The data distribution of one in-context regression setting (float64 matrices on cpu)."""

    sigma: torch.Tensor
    n: int
    w_cov: torch.Tensor | None = None
    noise_std: float = 0.0

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError(f"n must be positive, got {self.n}")
        torch.linalg.cholesky(self.sigma)  # raises if Sigma is not positive definite

    @property
    def d(self) -> int:
        return self.sigma.shape[0]

    def factors(self, dtype=torch.float64, device: str | torch.device = "cpu",
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """(L_x, L_w) with Cov x = L_x L_x^T and Cov w* = L_w L_w^T (the identity where the law
        has no w* covariance)."""
        like = torch.empty(0, dtype=dtype, device=device)
        return _sqrt_factor(self.sigma, self.d, like), _sqrt_factor(self.w_cov, self.d, like)


@dataclass(frozen=True)
class Prompts:
    X: torch.Tensor   # (B, d, n)
    xq: torch.Tensor  # (B, d)
    w: torch.Tensor   # (B, d)
    y: torch.Tensor   # (B, n)
    yq: torch.Tensor  # (B,)

    def Z(self) -> torch.Tensor:
        """The prompt matrix Z_0 (eq. (1)) with the query label replaced by 0."""
        B, d, n = self.X.shape
        top = torch.cat([self.X, self.xq.unsqueeze(-1)], dim=-1)
        bottom = torch.cat([self.y, self.y.new_zeros(B, 1)], dim=-1).unsqueeze(1)
        return torch.cat([top, bottom], dim=1)


def _sqrt_factor(cov: torch.Tensor | None, d: int, like: torch.Tensor) -> torch.Tensor:
    if cov is None:
        return torch.eye(d, dtype=like.dtype, device=like.device)
    return torch.linalg.cholesky(cov.to(torch.float64)).to(dtype=like.dtype, device=like.device)


def sample_prompts(law: PromptLaw, batch: int, generator: torch.Generator,
                   dtype=torch.float64, device: str | torch.device = "cpu") -> Prompts:
    """Draw ``batch`` prompts (on the generator's device, then moved to ``device``)."""
    if batch <= 0:
        raise ValueError("batch must be positive")
    d, n = law.d, law.n
    Ls, Lw = law.factors(dtype, device)
    g = randn(batch, d, n + 1, generator=generator, dtype=dtype, device=device)
    xs = Ls @ g
    X, xq = xs[..., :n], xs[..., n]
    w = (Lw @ randn(batch, d, 1, generator=generator, dtype=dtype, device=device))[..., 0]
    y = torch.einsum("bdn,bd->bn", X, w)
    yq = torch.einsum("bd,bd->b", xq, w)
    if law.noise_std:
        y = y + law.noise_std * randn(y.shape, generator=generator, dtype=dtype, device=device)
    return Prompts(X, xq, w, y, yq)
