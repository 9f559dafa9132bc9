"""One-layer multi-head softmax attention learning in context (yang2024 eqs. (1)-(8), (13), (35)).

Tokens v_1..v_K in R^d (unit norm, the dictionary), a representation f: R^d -> R^m with
z_k = f(v_k), and tasks y_k = lambda^T (z_k + eps_k) with E[lambda lambda^T] = I_m (Assumption 1)
and eps_k ~ N(0, tau I_m) (eq. (1)).  The prompt holds the first N tokens and their labels,
E^P = [V; y^T] (eq. (2)); the query embedding E^Q = [v_{N+1} .. v_K; 0] (eq. (4)).

The general multi-head attention of eqs. (5)-(6) and its structured weights (7) are implemented
as written, and so is the reduced prediction (8)

    yhat_k = < y, sum_h w_{h,k} softmax(V^T Q_h v_k) > = (Ahat^T y)_k,   Ahat in R^{N x K} (35),

so that (8) can be checked against (5)-(7).  The array functions run on torch and numpy arrays
(a leading batch axis where stated) and on sympy matrices (lists of heads), so the same code gives
float, autograd and exact results; ``SoftmaxICL`` is the trainable torch module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import sympy
import torch

from .device import randint, randn
from .padding import head_mask

# ----------------------------------------------------------------------------- array helpers


def _is_torch(x: Any) -> bool:
    return isinstance(x, torch.Tensor)


def _is_sympy(x: Any) -> bool:
    return isinstance(x, sympy.MatrixBase)


def _t(a: Any) -> Any:
    return a.mT if hasattr(a, "mT") else a.T


def softmax_columns(X: Any) -> Any:
    """Column-wise softmax (eq. (5)): entry (i, j) is exp(X_ij) / sum_l exp(X_lj).

    torch/numpy arrays may carry leading batch axes (softmax over axis -2); sympy matrices are
    exact (``exp`` of the entries).
    """
    if _is_torch(X):
        return torch.softmax(X, dim=-2)
    if _is_sympy(X):
        ex = X.applyfunc(sympy.exp)
        out = sympy.zeros(*X.shape)
        for j in range(X.shape[1]):
            total = sum(ex[:, j])
            for i in range(X.shape[0]):
                out[i, j] = ex[i, j] / total
        return out
    X = np.asarray(X, dtype=float)
    ex = np.exp(X - X.max(axis=-2, keepdims=True))
    return ex / ex.sum(axis=-2, keepdims=True)


def attention_logits(V: Any, V_all: Any, Q: Any) -> Any:
    """The logits V^T Q_h v_k for every head and token: shape (H, N, K).

    ``Q`` is an (H, d, d) torch/numpy array or a sequence of sympy d x d matrices (then a list of
    N x K sympy matrices is returned).
    """
    if isinstance(Q, (list, tuple)):
        return [_t(V) * Qh * V_all if _is_sympy(Qh) else _t(V) @ Qh @ V_all for Qh in Q]
    return _t(V) @ Q @ V_all


def attention_weights(V: Any, V_all: Any, Q: Any) -> Any:
    """S[h][:, k] = s_k^h = softmax(V^T Q_h v_k) (eq. (28)), shape (H, N, K)."""
    logits = attention_logits(V, V_all, Q)
    if isinstance(logits, list):
        return [softmax_columns(L) for L in logits]
    return softmax_columns(logits)


def coefficient_matrix(S: Any, w: Any) -> Any:
    """Ahat(theta) in R^{N x K} (eq. (35)): column k is sum_h w_{h,k} s_k^h.

    ``w`` is (H, K) (row h is w_h^T); torch/numpy ``S`` may be (..., H, N, K) with ``w`` (..., H, K).
    """
    if isinstance(S, list):
        H = len(S)
        N, K = S[0].shape
        out = sympy.zeros(N, K)
        for h in range(H):
            for k in range(K):
                out[:, k] += w[h, k] * S[h][:, k]
        return out
    return (S * w[..., :, None, :]).sum(-3)


def head_matrix(S: Any, k: int) -> Any:
    """C_k = [s_k^1, ..., s_k^H] in R^{N x H} (eq. (13))."""
    if isinstance(S, list):
        return sympy.Matrix.hstack(*[Sh[:, k] for Sh in S])
    return _t(S[..., :, :, k])


def predict(y: Any, Ahat: Any) -> Any:
    """yhat = Ahat^T y (eq. (8) for all k at once).

    torch/numpy: ``y`` is (..., N) and the result (..., K); sympy matrices and symbolic ``Mat``
    expressions: ``y`` is an N x 1 column and the result K x 1.
    """
    if _is_torch(y) or isinstance(y, np.ndarray):
        return y @ Ahat
    return Ahat.T * y if _is_sympy(Ahat) else _t(Ahat) @ y


# ----------------------------------------------------------------------------- eqs. (2)-(7)


def embed(V_all: Any, y: Any, N: int) -> tuple[Any, Any]:
    """E = (E^P, E^Q) in R^{(d+1) x K} with E^P = [V; y^T] (eq. (2)), E^Q = [v_{N+1}..v_K; 0] (4).

    ``y`` holds the N prompt labels (an N x 1 sympy matrix or a length-N array).
    """
    if _is_sympy(V_all):
        d, K = V_all.shape
        E = sympy.zeros(d + 1, K)
        E[:d, :] = V_all
        for i in range(N):
            E[d, i] = y[i]
        return E, E[:, :N]
    yv = y.reshape(-1)
    zeros = (torch.zeros(V_all.shape[1] - N, dtype=V_all.dtype, device=V_all.device)
             if _is_torch(V_all) else np.zeros(V_all.shape[1] - N))
    cat = torch.cat if _is_torch(V_all) else np.concatenate
    stack = torch.stack if _is_torch(V_all) else np.stack
    last = cat([yv, zeros])
    E = cat([V_all, stack([last])], 0) if _is_torch(V_all) else np.vstack([V_all, last])
    return E, E[:, :N]


def multihead_attention(E: Any, EP: Any, WQ: Sequence, WK: Sequence, WV: Sequence, WO: Any) -> Any:
    """T(E) = W^O [head_1(E); ...; head_H(E)] with head_h = W^V_h E^P softmax((E^P)^T W^K_h^T W^Q_h E)

    (eqs. (5)-(6)); the softmax is column-wise.  Works on torch, numpy and sympy matrices.
    """
    heads = []
    for q, kk, v in zip(WQ, WK, WV):
        scores = _t(EP) @ _t(kk) @ q @ E if not _is_sympy(E) else EP.T * kk.T * q * E
        A = softmax_columns(scores)
        heads.append(v @ EP @ A if not _is_sympy(E) else v * EP * A)
    if _is_sympy(E):
        return WO * sympy.Matrix.vstack(*heads)
    stacked = torch.cat(heads, 0) if _is_torch(E) else np.vstack(heads)
    return WO @ stacked


def structured_weights(Q: Any, w: Any, d: int) -> tuple[list, list, list, Any]:
    """W^Q_h, W^K_h, W^V_h and W^O of eq. (7): W^O = (I_K, ..., I_K), W^V_h = (0, w_h),
    (W^K_h)^T W^Q_h = [[Q_h, 0], [0, 0]] (realised with W^K_h = I_{d+1}, d_e = d + 1)."""
    H = len(Q) if isinstance(Q, (list, tuple)) else Q.shape[0]
    K = w.shape[1]
    if isinstance(Q, (list, tuple)) and _is_sympy(Q[0]):
        WQ, WK, WV = [], [], []
        for h in range(H):
            q = sympy.zeros(d + 1, d + 1)
            q[:d, :d] = Q[h]
            WQ.append(q)
            WK.append(sympy.eye(d + 1))
            v = sympy.zeros(K, d + 1)
            v[:, d] = w[h, :].T
            WV.append(v)
        WO = sympy.Matrix.hstack(*[sympy.eye(K)] * H)
        return WQ, WK, WV, WO
    lib = torch if _is_torch(Q) else np
    kw = {"dtype": Q.dtype, "device": Q.device} if _is_torch(Q) else {}
    WQ, WK, WV = [], [], []
    for h in range(H):
        q = lib.zeros((d + 1, d + 1), **kw)
        q[:d, :d] = Q[h]
        WQ.append(q)
        WK.append(lib.eye(d + 1, **kw))
        v = lib.zeros((K, d + 1), **kw)
        v[:, d] = w[h]
        WV.append(v)
    WO = lib.cat([lib.eye(K, **kw)] * H, 1) if _is_torch(Q) else np.hstack([np.eye(K)] * H)
    return WQ, WK, WV, WO


def full_prediction(V_all: Any, y: Any, N: int, Q: Any, w: Any) -> Any:
    """The diagonal of T(E) (eqs. (5)-(7)): the model's prediction computed the long way."""
    d = V_all.shape[0]
    E, EP = embed(V_all, y, N)
    T = multihead_attention(E, EP, *structured_weights(Q, w, d))
    if _is_sympy(T):
        return sympy.Matrix([T[k, k] for k in range(T.shape[0])])
    return T.diagonal() if _is_torch(T) else np.diag(T)


# ----------------------------------------------------------------------------- torch module


@dataclass(frozen=True)
class SoftmaxConfig:
    """Sizes of the one-layer H-head model on a K-token dictionary with N-token prompts."""

    d: int
    K: int
    N: int
    H: int

    def __post_init__(self) -> None:
        if min(self.d, self.K, self.N, self.H) <= 0:
            raise ValueError("d, K, N and H must be positive")
        if self.N > self.K:
            raise ValueError(f"the prompt holds N = {self.N} of the K = {self.K} tokens")


class SoftmaxICL(torch.nn.Module):
    """Trainable {Q_h, w_h} of eq. (7); ``forward(V_all, y)`` returns yhat (eq. (8)).

    Initialisation as in Section 3 / Prop. 1: Q_h entries i.i.d. N(0, beta^2), w_h = 0; or
    given ``weights`` (Q (H, d, d), w (H, K)), copied, with nothing drawn.
    """

    def __init__(self, config: SoftmaxConfig, beta: float = 1.0, generator=None,
                 dtype=torch.float64, device="cpu",
                 weights: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        super().__init__()
        c = config
        self.config = c
        if weights is None:
            Q = beta * randn(c.H, c.d, c.d, generator=generator, dtype=dtype, device=device)
            w = torch.zeros(c.H, c.K, dtype=dtype, device=device)
        else:
            Q, w = (t.detach().to(dtype=dtype, device=device, copy=True) for t in weights)
            if Q.shape != (c.H, c.d, c.d) or w.shape != (c.H, c.K):
                raise ValueError(f"weights of shapes {tuple(Q.shape)}, {tuple(w.shape)} for "
                                 f"H = {c.H}, d = {c.d}, K = {c.K}")
        self.Q = torch.nn.Parameter(Q)
        self.w = torch.nn.Parameter(w)

    def weights(self, V_all: torch.Tensor) -> torch.Tensor:
        """S (H, N, K): the attention weights s_k^h (eq. (28))."""
        return attention_weights(V_all[:, :self.config.N], V_all, self.Q)

    def coefficients(self, V_all: torch.Tensor) -> torch.Tensor:
        """Ahat(theta) (N, K) of eq. (35)."""
        return coefficient_matrix(self.weights(V_all), self.w)

    def forward(self, V_all: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Predictions (B, K) for prompt labels y (B, N)."""
        return predict(y, self.coefficients(V_all))


class SoftmaxICLRuns(torch.nn.Module):
    """R independent models of eq. (7) in one set of tensors, run r with H_r heads: Q (R, Hmax,
    d, d) and w (R, Hmax, K), the heads past H_r held at Q = 0, w = 0 by a mask (their share
    w_{h,k} s_k^h of (35) is 0, so is their gradient, and Adam leaves them where they are).
    Run r starts where ``SoftmaxICL(config with H_r, beta, generators[r])`` does; its
    coefficients are ``coefficients(V_all)[r]``.  On a GPU this trains R runs with the kernel
    launches of one."""

    def __init__(self, config: SoftmaxConfig, heads: Sequence[int], generators: Sequence,
                 beta: float = 1.0, dtype=torch.float64, device="cpu") -> None:
        super().__init__()
        if not heads or len(heads) != len(generators) or min(heads) <= 0:
            raise ValueError("one positive head count and one generator per run")
        c = config
        self.config = c
        self.heads = tuple(int(h) for h in heads)
        Hmax = max(self.heads)
        Q = torch.zeros(len(heads), Hmax, c.d, c.d, dtype=dtype, device=device)
        for r, (H, g) in enumerate(zip(self.heads, generators)):
            Q[r, :H] = beta * randn(H, c.d, c.d, generator=g, dtype=dtype, device=device)
        self.Q = torch.nn.Parameter(Q)
        self.w = torch.nn.Parameter(torch.zeros(len(heads), Hmax, c.K, dtype=dtype, device=device))
        mask = head_mask(self.heads, Hmax, dtype=dtype, device=device)
        self.register_buffer("mask", mask[..., None])

    def coefficients(self, V_all: torch.Tensor) -> torch.Tensor:
        """Ahat(theta_r) (R, N, K) of eq. (35)."""
        S = attention_weights(V_all[:, :self.config.N], V_all, self.Q)
        return coefficient_matrix(S, self.w * self.mask)

    def run(self, r: int) -> SoftmaxICL:
        """Run r as a ``SoftmaxICL`` of H_r heads (a copy of its weights)."""
        H = self.heads[r]
        c = self.config
        return SoftmaxICL(SoftmaxConfig(c.d, c.K, c.N, H), dtype=self.Q.dtype, device=self.Q.device,
                          weights=(self.Q[r, :H], self.w[r, :H]))


# ----------------------------------------------------------------------------- the task law


@dataclass(frozen=True)
class Dictionary:
    """Tokens V_all = (v_1..v_K) in R^{d x K} (unit columns) and Zhat = (z_1..z_K) in R^{m x K}."""

    V_all: torch.Tensor
    Zhat: torch.Tensor
    N: int

    @property
    def d(self) -> int:
        return self.V_all.shape[0]

    @property
    def K(self) -> int:
        return self.V_all.shape[1]

    @property
    def m(self) -> int:
        return self.Zhat.shape[0]

    @property
    def V(self) -> torch.Tensor:
        return self.V_all[:, :self.N]

    @property
    def Z(self) -> torch.Tensor:
        """Z = (f(v_1)..f(v_N)) in R^{m x N} (eq. (12))."""
        return self.Zhat[:, :self.N]

    @property
    def ZQ(self) -> torch.Tensor:
        """Z^Q = (f(v_{N+1})..f(v_K)) (eq. (19))."""
        return self.Zhat[:, self.N:]

    def to(self, dtype=None, device=None) -> "Dictionary":
        return Dictionary(self.V_all.to(dtype=dtype, device=device),
                          self.Zhat.to(dtype=dtype, device=device), self.N)


def random_dictionary(K: int, d: int, m: int, N: int, generator: torch.Generator,
                      dtype=torch.float64, device="cpu") -> Dictionary:
    """Gaussian tokens normalised to unit norm (Sec. 2 asks ||v_k|| = 1) and Gaussian
    representations z_k ~ N(0, I_m) (the paper's experiments, Sec. 4)."""
    V = randn(d, K, generator=generator, dtype=dtype, device=device)
    V = V / V.norm(dim=0, keepdim=True)
    Zhat = randn(m, K, generator=generator, dtype=dtype, device=device)
    return Dictionary(V, Zhat, N)


LAMBDA_LAWS = ("gaussian", "rademacher")


@dataclass(frozen=True)
class TaskLaw:
    """lambda with independent entries of mean ``mean`` and standard deviation ``std``
    (Assumption 1: mean 0, std 1; the out-of-domain test set of Sec. 4: N(1, 4 I)), noise level
    tau (eq. (1)); ``dist`` is the law of the standardised entries."""

    tau: float
    mean: float = 0.0
    std: float = 1.0
    dist: str = "gaussian"

    def __post_init__(self) -> None:
        if self.tau < 0:
            raise ValueError("the noise level tau must be non-negative")
        if self.dist not in LAMBDA_LAWS:
            raise ValueError(f"unknown lambda law {self.dist!r}")


@dataclass(frozen=True)
class Tasks:
    lam: torch.Tensor   # (B, m)
    eps: torch.Tensor   # (B, m, K)
    y: torch.Tensor     # (B, K): y_k = lambda^T (z_k + eps_k), eq. (1)
    N: int

    @property
    def prompt_labels(self) -> torch.Tensor:
        """y = (y_1..y_N) (B, N), the labels the prompt shows (eq. (2))."""
        return self.y[:, :self.N]


def sample_tasks(law: TaskLaw, dictionary: Dictionary, batch: int, generator: torch.Generator,
                 ) -> Tasks:
    """Draw ``batch`` tasks (lambda, eps) and the labels of all K tokens (eq. (1))."""
    if batch <= 0:
        raise ValueError("batch must be positive")
    Zhat = dictionary.Zhat
    m, K = Zhat.shape
    kw = {"generator": generator, "dtype": Zhat.dtype, "device": Zhat.device}
    if law.dist == "gaussian":
        g = randn(batch, m, **kw)
    else:
        g = 2.0 * randint(0, 2, (batch, m), generator=generator, device=Zhat.device).to(Zhat.dtype) - 1.0
    lam = law.mean + law.std * g
    eps = math.sqrt(law.tau) * randn(batch, m, K, **kw)
    y = torch.einsum("bm,bmk->bk", lam, Zhat.unsqueeze(0) + eps)
    return Tasks(lam, eps, y, dictionary.N)


def sampled_loss(model: SoftmaxICL, dictionary: Dictionary, tasks: Tasks) -> torch.Tensor:
    """Per-task loss (1/2K) sum_k (yhat_k - y_k)^2 (the integrand of eq. (9)), shape (B,)."""
    yhat = model(dictionary.V_all, tasks.prompt_labels)
    return 0.5 * ((yhat - tasks.y) ** 2).mean(-1)


# ----------------------------------------------------------------------------- deeper model


@dataclass(frozen=True)
class DeepConfig:
    """A standard post-norm transformer encoder (Vaswani et al.) on the K token embeddings of E
    (Sec. 4, Figs. 2(b), 5): ``layers`` layers, ``H`` heads, width ``d_model``, MLP ``d_ff``."""

    d: int
    K: int
    N: int
    H: int
    layers: int = 4
    d_model: int = 256
    d_ff: int = 512

    def __post_init__(self) -> None:
        if self.d_model % self.H:
            raise ValueError(f"d_model = {self.d_model} is not divisible by H = {self.H}")


class DeepICL(torch.nn.Module):
    """Reads the columns (v_k; y_k or 0) of E (eqs. (2), (4)) as a sequence of K tokens and predicts
    every label; trained on sampled tasks since its population loss has no closed form."""

    def __init__(self, config: DeepConfig, generator=None, dtype=torch.float32, device="cpu") -> None:
        super().__init__()
        c = config
        self.config = c
        # torch.nn's initialisers draw from the global cpu generator: seed it from ``generator``
        # inside fork_rng, so the caller's global random state is left as it was
        with torch.random.fork_rng(devices=[]):
            if generator is not None:
                torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator,
                                                    device=generator.device)))
            self.embed = torch.nn.Linear(c.d + 2, c.d_model)  # (v_k, y_k, 1{k <= N})
            layer = torch.nn.TransformerEncoderLayer(c.d_model, c.H, c.d_ff, dropout=0.0,
                                                     batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, c.layers, enable_nested_tensor=False)
            self.readout = torch.nn.Linear(c.d_model, 1)
        self.to(dtype=dtype, device=device)

    def forward(self, V_all: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Predictions (B, K) for prompt labels y (B, N)."""
        B = y.shape[0]
        K, N = self.config.K, self.config.N
        labels = torch.cat([y, y.new_zeros(B, K - N)], dim=1)
        flag = torch.cat([y.new_ones(N), y.new_zeros(K - N)])
        tokens = torch.cat([V_all.T.unsqueeze(0).expand(B, K, -1), labels.unsqueeze(-1),
                            flag.view(1, K, 1).expand(B, K, 1)], dim=-1)
        return self.readout(self.encoder(self.embed(tokens))).squeeze(-1)
