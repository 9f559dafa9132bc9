"""Linear self-attention (LSA) transformers: ahn2023 eqs. (1)-(5), (9), (13); gatmiry2024 eqs. (2)-(4).

The forward pass is written once against the array protocol (``@``, ``+``, ``/``, ``.mT`` or
``.T``) so that the same function runs on torch tensors (training), numpy/mpmath arrays (numeric
checks), sympy matrices (exact identities) and ``moments.BlockMat`` (symbolic population losses).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from .device import randn


def transpose(a: Any) -> Any:
    """Transpose of the last two axes for any array type (torch/numpy ``.mT``, sympy ``.T``)."""
    return a.mT if hasattr(a, "mT") else a.T


def attention(Z: Any, P: Any, Q: Any, mask: Any) -> Any:
    """Attn_{P,Q}(Z) = P Z M (Z^T Q Z), ahn2023 eq. (3) with the mask M of eq. (2)."""
    if isinstance(Z, torch.Tensor) and Z.ndim > 2:
        # a batch of prompts: ((P (Z M Z^T)) Q) Z keeps every intermediate (d+1) x (d+1) or
        # (d+1) x (n+1), where P Z M (Z^T Q Z) forms (n+1) x (n+1) ones: some 5x fewer
        # operations and less memory at n = 20, d = 5 (the same product; rounding differs)
        G = (Z @ mask) @ Z.mT
        if P.ndim == 2:  # one weight pair: torch's broadcast matmul of a 2-D matrix with a
            # batch is ~4x slower on CPU than the same contraction as an einsum
            return torch.einsum("...ij,jk,...kn->...in", torch.einsum("ij,...jk->...ik", P, G),
                                Q, Z)
        return ((P @ G) @ Q) @ Z
    return P @ Z @ mask @ (transpose(Z) @ Q @ Z)


def lsa_forward(Z: Any, layers: Sequence[tuple[Any, Any]], mask: Any, n: Any,
                step: int = 1, keep_all: bool = False) -> Any:
    """Residual stack Z_{l+1} = Z_l + step/n Attn_{P_l,Q_l}(Z_l) (ahn2023 eq. (4)).

    ``step = -1`` gives gatmiry2024 eq. (3) (Z_t = Z_{t-1} - Attn/n); a looped transformer passes
    the same (P, Q) L times.  With ``keep_all`` the list [Z_0, ..., Z_k] is returned.
    """
    if step not in (1, -1):
        raise ValueError("step must be +1 or -1")
    outs = [Z]
    for P, Q in layers:
        update = attention(Z, P, Q, mask) / n
        Z = Z + update if step == 1 else Z - update
        outs.append(Z)
    return outs if keep_all else Z


def readout(Z: Any) -> Any:
    """The label entry [Z]_{(d+1),(n+1)}; the model predicts its negative (ahn2023 Sec. 3 D)."""
    return Z[..., -1, -1] if hasattr(Z, "ndim") else Z[-1, -1]


def mask_matrix(n: int, like: torch.Tensor) -> torch.Tensor:
    """M = [[I_n, 0], [0, 0]] of size (n+1) x (n+1)."""
    m = torch.zeros(n + 1, n + 1, dtype=like.dtype, device=like.device)
    m[:n, :n] = torch.eye(n, dtype=like.dtype, device=like.device)
    return m


PARAMETRISATIONS = ("full", "eq7", "eq9", "eq13", "sec35")


@dataclass(frozen=True)
class LSAConfig:
    """A k-layer LSA transformer over d-dimensional covariates.

    ``parametrisation``: ``full`` (free P, Q), ``eq7`` (P = [0; b^T], Q = [A 0]), ``eq9``
    (P = [[0,0],[0,1]], Q = [[A_i,0],[0,0]], A_i symmetric), ``eq13`` (P = [[B_i,0],[0,1]], same
    Q), ``sec35`` (gatmiry2024 Sec. 3.5 / eq. (11): P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]]).
    ``looped`` shares one (P, Q) across all layers (gatmiry2024); ``step`` is +1 (ahn2023)
    or -1 (gatmiry2024).
    """

    d: int
    layers: int = 1
    parametrisation: str = "full"
    looped: bool = False
    step: int = 1
    symmetric_A: bool = True

    def __post_init__(self) -> None:
        if self.d <= 0 or self.layers <= 0:
            raise ValueError("d and layers must be positive")
        if self.parametrisation not in PARAMETRISATIONS:
            raise ValueError(f"unknown parametrisation {self.parametrisation!r}")


class LinearTransformer(torch.nn.Module):
    """The LSA stack of :class:`LSAConfig` with trainable weights (torch)."""

    def __init__(self, config: LSAConfig, init_scale: float = 1.0,
                 generator: torch.Generator | None = None, dtype=torch.float64,
                 device: str | torch.device = "cpu") -> None:
        super().__init__()
        self.config = config
        d, k = config.d, (1 if config.looped else config.layers)

        def param(*shape):
            t = randn(*shape, generator=generator, dtype=dtype)
            return torch.nn.Parameter((t * init_scale).to(device))

        p = config.parametrisation
        if p == "full":
            self.P = param(k, d + 1, d + 1)
            self.Q = param(k, d + 1, d + 1)
        elif p == "eq7":
            self.b = param(k, d + 1)
            self.A = param(k, d + 1, d)
        else:
            self.A = param(k, d, d)
            if p == "eq13":
                self.B = param(k, d, d)
            elif p == "sec35":
                self.u = param(k, d)

    def weights(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The (P_l, Q_l) of every layer, assembled from the trainable blocks."""
        c = self.config
        d = c.d
        p = c.parametrisation
        like = next(self.parameters())
        out = []
        count = 1 if c.looped else c.layers
        for l in range(count):
            if p == "full":
                P, Q = self.P[l], self.Q[l]
            elif p == "eq7":
                zeros = like.new_zeros(d, d + 1)
                P = torch.cat([zeros, self.b[l].unsqueeze(0)], 0)
                Q = torch.cat([self.A[l], like.new_zeros(d + 1, 1)], 1)
            else:
                P, Q = block_weights(self.A[l], self.B[l] if p == "eq13" else None,
                                     c.symmetric_A)
                if p == "sec35":  # the bottom row of P is [u^T, 1]
                    P = P + torch.nn.functional.pad(self.u[l].unsqueeze(0), (0, 1, d, 0))
            out.append((P, Q))
        if c.looped:
            out = out * c.layers
        return out

    def forward(self, Z: torch.Tensor, keep_all: bool = False):
        n = Z.shape[-1] - 1
        mask = mask_matrix(n, Z)
        return lsa_forward(Z, self.weights(), mask, n, step=self.config.step, keep_all=keep_all)

    def predict(self, Z: torch.Tensor) -> torch.Tensor:
        """The prediction -[Z_k]_{(d+1),(n+1)} for the query (ahn2023 eq. (5))."""
        return -self.forward(Z)[..., -1, -1]


def block_weights(A: torch.Tensor, B: torch.Tensor | None = None,
                  symmetric: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """(P, Q) = ([[B, 0], [0, 1]], [[A, 0], [0, 0]]) of one layer of ahn2023 (9) (B = None: 0)
    or (13), A symmetrised with ``symmetric``; A, B (..., d, d), with any leading batch axes
    (a batch of models: ``stacked_prediction``)."""
    if symmetric:
        A = (A + A.mT) / 2
    return _block(torch.zeros_like(A) if B is None else B, 1.0), _block(A, 0.0)


def stacked_prediction(Z: torch.Tensor, A: torch.Tensor, B: torch.Tensor | None = None,
                       symmetric: bool = True, step: int = 1) -> torch.Tensor:
    """The predictions of S models of (9) (B = None) or (13) at once: ``LinearTransformer``'s
    forward pass (``block_weights``, ``lsa_forward``) with A, B (S, layers, d, d) on prompts Z
    (S, N, d+1, n+1), model s on its own prompts Z[s].  Shape (S, N)."""
    n = Z.shape[-1] - 1
    layers = [block_weights(A[:, l, None], None if B is None else B[:, l, None], symmetric)
              for l in range(A.shape[1])]
    return -readout(lsa_forward(Z, layers, mask_matrix(n, Z), n, step=step))


def _block(top_left: torch.Tensor, corner: float) -> torch.Tensor:
    """[[top_left, 0], [0, corner]] (leading batch axes kept)."""
    d = top_left.shape[-1]
    out = torch.nn.functional.pad(top_left, (0, 1, 0, 1))
    e = top_left.new_zeros(d + 1, d + 1)
    e[d, d] = corner
    return out + e
