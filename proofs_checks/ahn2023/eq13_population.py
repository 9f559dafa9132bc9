"""Three layers of ahn2023 model (13) on a population-accurate objective (Sec. 6.1, Figs. 3, 4).

The exact population loss of three layers of (13) has degree 54 in X, beyond the moment kernel.
Given the in-context covariates X the error is bilinear in (w*, x_q) (the masked query column
never feeds back), so E[e^2 | X] is exact over (w*, x_q) (Rao-Blackwellisation), and only X is
sampled.  With R = Sigma^{1/2}, x = R x~, w* = R^{-1} w~ the forward pass on (X, w*, x_q) with
weights (A_i, B_i) is the pass on (X~, w~, x~_q) with A~_i = R A_i R, B~_i = R^{-1} B_i R
(``figures_sec61.eq13_loss``), so X~ ~ N(0, I) and w~, x~_q ~ N(0, I) suffice for every Sigma.

One layer of eq. (4), Z <- Z + P Z M Z^T Q Z / n with P = [[B, 0], [0, 1]], Q = [[A, 0], [0, 0]],
M = diag(I_n, 0), acts on Z = [[X, x_q], [y, y_q-slot]] as

    X   <- X   + B X X^T A X   / n        Xq <- Xq + B X X^T A Xq / n
    Y   <- Y   +   Y X^T A X   / n        S  <- S  +   Y X^T A Xq / n

(all right-hand sides before the update), run for the basis w~ = e_j, x~_q = e_k at once: Xq
(d x d) starts as I (its columns are the queries), Y (d x n) starts as X (row j: the labels for
w~ = e_j), S (d x d) starts at 0 (the query-label slots).  The prediction is -S_jk and the
target w~^T x~_q = I_jk, so E[e^2 | X] = ||S + I||_F^2 (``eq13_conditional_losses``).

The pass needs X only through its Gram W = X X^T / n: by induction X = P_i X_0 and Xq = P_i
(the same recursion from I), and Y = F_i X_0 with F_i = I + S_i, so with Q_i = W P_i^T A_i P_i

    P_{i+1} = P_i + B_i P_i Q_i,        F_{i+1} = F_i + F_i Q_i,        E[e^2 | X] = ||F_L||_F^2

(``eq13_gram_losses``: d x d products only, about a quarter of the token pass's arithmetic at
n = 10, d = 5), and the estimators below draw X once, keep W and discard X.

E[e^2 | X] has a heavy Wishart tail at trained weights (a degree-26 polynomial in the eigenvalues
of X X^T / n on S): the plain mean of 10^6 draws at the minimiser on S is 0.0383 +- 0.00007,
while g* = 0.039259 (exact from the Wishart moments, checked against a 2-d eigenvalue integral
at d = 2).  Hence (1) ``draw_grams`` stretches half the draws along fixed directions and
weights them (defensive importance sampling), (2) ``controlled_losses`` takes the S-part exactly
(a control variate with the known mean g(p) at the projection p on S), (3) ``population_loss``
also subtracts the first-order off-S term, whose mean is 0 by symmetry, and (4)
``train_population`` runs L-BFGS on fresh stretched samples, then Adam with fresh draws every
step on the controlled loss.
"""
from __future__ import annotations

import math
import time
from typing import Callable

import torch


def whiten(R: torch.Tensor, A: torch.Tensor, B: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(R A_i R, R^{-1} B_i R) for R (K, d, d) and A, B (K, L, d, d)."""
    Rl = R.unsqueeze(1)
    Ri = torch.linalg.inv(R).unsqueeze(1)
    return Rl @ A @ Rl, Ri @ B @ Rl


def eq13_conditional_losses(At: torch.Tensor, Bt: torch.Tensor, X: torch.Tensor,
                            n: int) -> torch.Tensor:
    """E[e^2 | X] of model (13) at Sigma = I, w* ~ N(0, I) (module docstring), for whitened
    weights At, Bt (K, L, d, d) (At symmetric), or scales (K, L) for A~_i = a_i I, B~_i = b_i I
    (a point of S), and covariates X (K, M, d, n): shape (K, M)."""
    K, M, d, _ = X.shape
    eye = torch.eye(d, dtype=X.dtype, device=X.device)
    if At.ndim == 2:  # on S: the weights act as scalars
        def mul(W, i, V):
            return W[:, i, None, None, None] * V
    else:
        def mul(W, i, V):
            return W[:, i].unsqueeze(1) @ V
    # U = [X | Xq] (d x (n + d)) and T = [Y | S]: one product per layer updates both
    U = torch.cat([X, eye.expand(K, M, d, d)], -1)
    T = torch.cat([X, torch.zeros_like(U[..., n:])], -1)
    L = At.shape[1]
    for i in range(L):
        Xt = U[..., :n].transpose(-1, -2)
        G = torch.cat([U[..., :n], T[..., :n]], -2) @ Xt  # [X X^T; Y X^T]  (2d x d)
        if i == L - 1:  # the last layer only writes the query-label slot
            S = T[..., n:] + G[..., d:, :] @ mul(At, i, U[..., n:]) / n
            return ((S + eye) ** 2).sum((-1, -2))
        AU = mul(At, i, U)
        U = U + mul(Bt, i, G[..., :d, :] @ AU) / n
        T = T + G[..., d:, :] @ AU / n
    raise ValueError("no layers")


def gram(X: torch.Tensor) -> torch.Tensor:
    """W = X X^T / n for covariates X (..., d, n)."""
    return X @ X.transpose(-1, -2) / X.shape[-1]


def eq13_gram_losses(At: torch.Tensor, Bt: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """``eq13_conditional_losses`` from the Gram W = X X^T / n (K, M, d, d) alone (module
    docstring): P_{i+1} = P_i + B~_i P_i Q_i, F_{i+1} = F_i + F_i Q_i, Q_i = W P_i^T A~_i P_i,
    from P_0 = F_0 = I, and E[e^2 | X] = ||F_L||_F^2.  Weights as there (K, L, d, d), or scales
    (K, L) on S.  Shape (K, M)."""
    if At.ndim == 2:  # on S: the weights act as scalars
        def left(Wts, i, V):
            return Wts[:, i, None, None, None] * V

        def right(V, Wts, i):
            return V * Wts[:, i, None, None, None]
    else:
        def left(Wts, i, V):
            return Wts[:, i].unsqueeze(1) @ V

        def right(V, Wts, i):
            return V @ Wts[:, i].unsqueeze(1)
    L = At.shape[1]
    if L == 0:
        raise ValueError("no layers")
    eye = torch.eye(W.shape[-1], dtype=W.dtype, device=W.device)
    P = F = None  # the identity, kept implicit until a layer changes it
    for i in range(L):
        if P is None:  # Q_0 = W A~_0
            Q = right(W, At, i)
        else:
            Q = (W @ P.transpose(-1, -2)) @ left(At, i, P)
        F = eye + Q if F is None else F + F @ Q
        if i < L - 1:
            BPQ = left(Bt, i, Q if P is None else P @ Q)
            P = eye + BPQ if P is None else P + BPQ
    return (F * F).sum((-1, -2))


def scales(At: torch.Tensor, Bt: torch.Tensor) -> torch.Tensor:
    """The projection on S in whitened scales: rows (a_0.., a_{L-1}, b_0.., b_{L-2}) with
    a_i = tr(A~_i)/d, b_i = tr(B~_i)/d (the order of ``sparse.variables``)."""
    d = At.shape[-1]
    a = torch.diagonal(At, dim1=-2, dim2=-1).sum(-1) / d
    b = torch.diagonal(Bt, dim1=-2, dim2=-1).sum(-1) / d
    return torch.cat([a, b[:, :-1]], 1)


def tilt_directions(d: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """The unit vectors e_i and (e_i +- e_j)/sqrt(2), i < j (d^2 of them): the directions along
    which ``draw_grams`` stretches X to reach the Wishart tail."""
    eye = torch.eye(d, dtype=dtype, device=device)
    i, j = torch.triu_indices(d, d, 1, device=device)  # i < j, row by row
    pairs = torch.stack([eye[i] + eye[j], eye[i] - eye[j]], 1) / math.sqrt(2)
    return torch.cat([eye, pairs.reshape(-1, d)])  # a handful of launches, not d^2 of them


TILT_SCALES = (4.0, 9.0)  # variances along the stretched direction
TILT_SHARE = 0.5  # the share of draws that are stretched (defensive mixture: weights <= 2)


def draw_grams(K: int, M: int, d: int, n: int, gen: torch.Generator, dtype, device,
               share: float = TILT_SHARE, scales: tuple = TILT_SCALES
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """The Grams W = X X^T / n (K, M, d, d) of covariates X (d x n) from the defensive mixture
    q = (1 - share) N(0, I) + share * (uniform over directions u and variances s of
    N(0, I + (s - 1) u u^T) on each column), and the weights w = p/q (K, M), so that mean(w h(W))
    estimates E_p h(W) without bias, w <= 1/(1 - share).  E[e^2 | X] grows like
    lambda_max(W)^26 at the trained weights, and X with lambda_max ~ 8-13 (probability ~1e-10
    under p) carry a few per cent of the loss: plain draws miss them (at the minimiser on S of
    three layers the plain mean of 10^6 draws is 2.5% below g*, 13 standard errors), stretched
    draws reach them."""
    U = tilt_directions(d, dtype, device)
    s2 = torch.tensor(scales, dtype=dtype, device=device)
    J, V = U.shape[0], s2.shape[0]
    # drawn on the generator's device (the runtime's: Runtime.data_generator), then placed
    Z = torch.randn(K, M, d, n, generator=gen, dtype=dtype, device=gen.device).to(device)
    pick = torch.randint(0, J * V, (K, M), generator=gen, device=gen.device).to(device)
    stretched = torch.rand(K, M, generator=gen, dtype=dtype, device=gen.device).to(device) < share
    u, s = U[pick // V], s2[pick % V].sqrt()
    along = torch.einsum("kmd,kmdn->kmn", u, Z)
    W = gram(Z + torch.where(stretched, s - 1, torch.zeros_like(s))[..., None, None] * (
        u.unsqueeze(-1) * along.unsqueeze(-2)))
    # q/p = (1 - share) + share/(J V) sum_{u, s} s^{-n/2} exp((1 - 1/s) n u^T W u / 2)
    uu = (U.unsqueeze(-1) * U.unsqueeze(-2)).reshape(J, d * d)
    proj = n * (W.reshape(K, M, d * d) @ uu.T)  # u^T X X^T u, (K, M, J)
    expo = (-n / 2 * torch.log(s2) + 0.5 * (1 - 1 / s2) * proj.unsqueeze(-1))
    ratio = (1 - share) + share / (J * V) * torch.exp(expo).sum((-1, -2))
    return W, 1 / ratio


def on_S_losses(p: torch.Tensor, lam: torch.Tensor, L: int) -> torch.Tensor:
    """E[e^2 | X] at the point p of S (A~_i = a_i I, B~_i = b_i I): sum_j s(lambda_j)^2 over
    the eigenvalues lam (K, M, d) of W = X X^T / n.  Shape (K, M)."""
    from .sparse import s_coefficients_torch

    c = s_coefficients_torch(p, L, "eq13")
    val = c[:, -1, None, None].expand_as(lam)
    for k in range(c.shape[1] - 2, -1, -1):
        val = val * lam + c[:, k, None, None]
    return (val ** 2).sum(-1)


def on_S_losses_gram(p: torch.Tensor, W: torch.Tensor, L: int) -> torch.Tensor:
    """``on_S_losses`` without the eigenvalues: W = X X^T / n (K, M, d, d) is symmetric, so
    sum_j s(lambda_j)^2 = ||s(W)||_F^2, with s(W) by Horner's rule in batched matrix products
    (one per degree of s).  No eigensolver: on cuda ``torch.linalg.eigvalsh`` reads its status
    back to the host for each of ``gram_eigenvalues``' chunks.  Shape (K, M)."""
    from .sparse import s_coefficients_torch

    c = s_coefficients_torch(p, L, "eq13")[:, :, None, None, None]
    eye = torch.eye(W.shape[-1], dtype=W.dtype, device=W.device)
    val = c[:, -1] * eye
    for k in range(c.shape[1] - 2, -1, -1):
        val = val @ W + c[:, k] * eye
    return (val * val).sum((-1, -2))


def gram_eigenvalues(W: torch.Tensor, chunk: int = 1 << 14) -> torch.Tensor:
    """Eigenvalues of the Grams W (K, M, d, d), (K, M, d): they do not depend on the weights.
    In chunks of ``chunk`` matrices (cusolver's batched eigensolver failed on 80000 at once,
    H200)."""
    flat = W.reshape(-1, W.shape[-2], W.shape[-1])
    lam = torch.cat([torch.linalg.eigvalsh(flat[i:i + chunk])
                     for i in range(0, flat.shape[0], chunk)])
    return lam.reshape(W.shape[:-1])


def on_S_part(p: torch.Tensor, W: torch.Tensor, L: int) -> torch.Tensor:
    """E[e^2 | X] at the point p of S for the Grams W: on a GPU by Gram powers
    (``on_S_losses_gram``: no eigensolver, so no host read-back inside a training step), on the
    cpu by eigenvalues (``on_S_losses``, 1.5x faster there, bench/eq13_onS.py).  The two agree
    to 1e-9 relative or better (tested); the control variate's mean g(p) is exact either way."""
    if W.is_cuda:
        return on_S_losses_gram(p, W, L)
    return on_S_losses(p, gram_eigenvalues(W), L)


def controlled_losses(At: torch.Tensor, Bt: torch.Tensor, W: torch.Tensor, n: int,
                      w: torch.Tensor | None = None, lam: torch.Tensor | None = None
                      ) -> torch.Tensor:
    """Per-X terms whose mean is f_I(A~, B~): g(p) exact (``sparse.restricted_value_torch``,
    from the Wishart moments E tr (W/n)^k) plus w (E[e^2 | X] at (A~, B~) minus E[e^2 | X] at
    the projection p on S, ``on_S_losses``), a control variate with known mean g(p) that
    removes the Wishart tail of the S-part; W are the Grams X X^T / n and w the weights of
    ``draw_grams`` (None: plain draws), lam the eigenvalues of W (None: ``on_S_part``).
    Differentiable in At, Bt, with an unbiased gradient.  Shape (K, M)."""
    from .sparse import restricted_value_torch

    d = W.shape[-1]
    L = At.shape[1]
    p = scales(At, Bt)
    g = restricted_value_torch(p, L, "eq13", n, d)
    diff = eq13_gram_losses(At, Bt, W) - (on_S_part(p, W, L) if lam is None else
                                          on_S_losses(p, lam, L))
    return g.unsqueeze(1) + (diff if w is None else w * diff)


def sym(M: torch.Tensor) -> torch.Tensor:
    return (M + M.transpose(-1, -2)) / 2


def first_order_term(At: torch.Tensor, Bt: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """The derivative of E[e^2 | X] at the projection p on S in the direction (A~ - a I,
    B~ - b I) (K, M), by a complex step (exact to rounding: no difference is taken).  Its mean
    is 0: f_I is invariant under (A~, B~) -> (O A~ O^T, O B~ O^T), O orthogonal, so grad f at
    a point of S is a multiple of I in each block, and the direction is traceless in each.
    W: the Grams X X^T / n (K, M, d, d)."""
    d = At.shape[-1]
    eye = torch.eye(d, dtype=At.dtype, device=At.device)
    a = torch.diagonal(At, dim1=-2, dim2=-1).mean(-1)[..., None, None] * eye
    b = torch.diagonal(Bt, dim1=-2, dim2=-1).mean(-1)[..., None, None] * eye
    h = 1e-20
    c = eq13_gram_losses(torch.complex(a, h * (At - a)), torch.complex(b, h * (Bt - b)),
                         W.to(torch.complex128 if W.dtype == torch.float64 else torch.complex64))
    return c.imag / h


def restricted_value_exact(p: torch.Tensor, L: int, n: int, d: int, digits: int = 40
                           ) -> torch.Tensor:
    """g at the rows of p (K, 2L - 1) in mpmath: in float64 the sum over the Wishart moments
    cancels terms of ~4e9 down to ~0.05 at three layers (absolute error ~1e-7 to 1e-6)."""
    import mpmath

    from .sparse import restricted_value

    out = []
    with mpmath.workdps(digits):
        conv = lambda q: mpmath.mpf(q.numerator) / q.denominator  # noqa: E731
        for row in p.detach().cpu().double().tolist():
            out.append(float(restricted_value([mpmath.mpf(x) for x in row], L, "eq13", n, d,
                                              convert=conv)))
    return torch.tensor(out, dtype=p.dtype, device=p.device)


def population_loss(At: torch.Tensor, Bt: torch.Tensor, n: int, draws: int,
                    gen: torch.Generator, chunk: int | None = None, first_order: bool = True
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Monte Carlo f_I(A~, B~) per seed, K = At.shape[0]: g at the projection p on S in mpmath
    (``restricted_value_exact``) plus the weighted mean of E[e^2 | X] at (A~, B~) minus that
    at p (``controlled_losses``) over fresh draws of ``draw_grams``, less the
    ``first_order_term`` (a second control variate, mean 0, that removes the first-order
    off-S part: about 3x smaller standard errors at trained weights).  Returns (mean,
    standard error), each (K,).  ``chunk`` draws per seed at a time (None: 4096 on cpu, where
    larger batches fall out of cache, 2^17 on a GPU)."""
    K, L, d, _ = At.shape
    chunk = chunk or (4096 if At.device.type == "cpu" else 1 << 17)
    p = scales(At, Bt)
    s1 = torch.zeros(K, dtype=At.dtype, device=At.device)
    s2 = torch.zeros_like(s1)
    with torch.no_grad():
        left = draws
        while left > 0:
            m = min(chunk, left)
            W, w = draw_grams(K, m, d, n, gen, At.dtype, At.device)
            v = eq13_gram_losses(At, Bt, W) - on_S_part(p, W, L)
            if first_order:
                v = v - first_order_term(At, Bt, W)
            v = w * v
            s1 += v.sum(1)
            s2 += (v * v).sum(1)
            left -= m
    mean = s1 / draws
    var = (s2 / draws - mean ** 2).clamp_min(0) * draws / (draws - 1)
    return mean + restricted_value_exact(p, L, n, d), (var / draws).sqrt()


def stage_sizes(stages: int, batch: int, final_batch: int) -> list[int]:
    """Batch sizes growing geometrically from ``batch`` to ``final_batch`` over the stages."""
    if stages == 1:
        return [final_batch]
    return [int(round(batch * (final_batch / batch) ** (j / (stages - 1))))
            for j in range(stages)]


def lr_at(step: int, steps: int, lr: float, lr_final: float) -> float:
    """Cosine decay from ``lr`` to ``lr_final`` over ``steps``, in log scale."""
    c = 0.5 * (1 + math.cos(math.pi * step / max(1, steps - 1)))
    return math.exp(math.log(lr_final) + c * (math.log(lr) - math.log(lr_final)))


def train_population(At: torch.Tensor, Bt: torch.Tensor, n: int, stages: int, steps: int,
                     batch: int, final_batch: int, gen: torch.Generator,
                     polish: dict | None = None,
                     progress: Callable[[int, torch.Tensor], None] | None = None,
                     snapshot: Callable[[int], None] | None = None) -> dict:
    """Two phases, on K independent seeds at once; At (symmetrised in the loss), Bt (K, L, d,
    d) are whitened leaf tensors, updated in place.

    1. Batched L-BFGS (``models.trainers.optimise_batched``) on the weighted mean of E[e^2 | X]
       over a sample of ``draw_grams``, redrawn fresh at each of ``stages`` stages of
       steps/stages iterations, the batch growing from ``batch`` to ``final_batch``: fast to
       the neighbourhood of S.  The stretched draws put the Wishart tail into every sample
       (on plain samples L-BFGS settles where the sample has no tail: sample loss 0.05,
       population loss > 1), yet a fixed sample still biases its minimiser (sample loss 0.052,
       population 0.059 at 4000 draws).
    2. ``polish`` (dict(steps, batch, lr, lr_final)): Adam on ``controlled_losses`` with FRESH
       draws every step, an unbiased gradient of f whose S-part is exact, with the learning
       rate decayed from lr to lr_final; it removes that bias.  (L-BFGS on a fixed sample of
       ``controlled_losses`` is unbounded below through its -E[e^2 | X]-on-S term: on the
       H200 a 400-iteration stage drove it to -5e10.)  The losses stay on the device, read
       once per 100 steps.

    Per seed: ``status`` converged when the polish's mean loss over its last quarter is not
    below that over the quarter before by more than 3 standard errors or 0.5% (or, without a
    polish, when the last L-BFGS stage stopped before its budget); diverged in any phase is
    kept."""
    from models.trainers import first_order_optimiser, optimise_batched

    K, _, d, _ = At.shape
    per = max(1, steps // stages)
    t0 = time.perf_counter()
    log, status, reason = [], ["max_steps"] * K, [""] * K
    done = 0
    total = steps + (polish["steps"] if polish else 0)
    for j, m in enumerate(stage_sizes(stages, batch, final_batch)):
        W, w = draw_grams(K, m, d, n, gen, At.dtype, At.device)

        def loss():
            return (w * eq13_gram_losses(sym(At), Bt, W)).mean(1)

        def show(step, values, offset=done):
            if progress is not None:
                progress(offset + step, values)

        res = optimise_batched(loss, [At, Bt], method="lbfgs", steps=per, progress=show)
        done += per
        log.append({"phase": "lbfgs", "stage": j, "batch": m,
                    "iterations": [r.steps for r in res],
                    "first_loss": [r.losses[0] if r.losses else math.nan for r in res],
                    "last_loss": [r.final_loss for r in res],
                    "status": [r.status for r in res], "reason": [r.reason for r in res]})
        for k, r in enumerate(res):
            if status[k] != "diverged":
                status[k], reason[k] = r.status, r.reason
        if snapshot is not None:
            snapshot(done)
    if polish:
        T = polish["steps"]
        losses = torch.zeros(T, K, dtype=At.dtype, device=At.device)
        opt = first_order_optimiser([At, Bt], "adam", polish["lr"])
        for t in range(T):
            for group in opt.param_groups:
                group["lr"] = lr_at(t, T, polish["lr"], polish["lr_final"])
            W, w = draw_grams(K, polish["batch"], d, n, gen, At.dtype, At.device)
            per_seed = controlled_losses(sym(At), Bt, W, n, w).mean(1)
            opt.zero_grad(set_to_none=True)
            per_seed.sum().backward()
            opt.step()
            losses[t] = per_seed.detach()
            if progress is not None and ((t + 1) % 100 == 0 or t + 1 == T):
                progress(done + t + 1, losses[max(0, t - 99):t + 1].mean(0))
        q = max(1, T // 4)
        before, last = losses[T - 2 * q:T - q], losses[T - q:]
        gap = before.mean(0) - last.mean(0)
        se = ((before.var(0) + last.var(0)) / q).sqrt()
        finite = torch.isfinite(losses).all(0)
        settled = (gap <= torch.maximum(3 * se, 0.005 * last.mean(0).abs())) & finite
        curve = losses.reshape(-1, min(T, 100), K) if T % min(T, 100) == 0 else losses[None]
        log.append({"phase": "adam", "batch": polish["batch"], "iterations": T,
                    "lr_start": polish["lr"], "lr_final": polish["lr_final"],
                    "mean_loss_per_100_steps": curve.mean(1).T.cpu().double().tolist(),
                    "last_quarter_drop": gap.cpu().double().tolist(),
                    "last_quarter_drop_se": se.cpu().double().tolist()})
        for k in range(K):
            if status[k] == "diverged":
                continue
            if not bool(finite[k]):
                status[k], reason[k] = "diverged", "the Adam polish's loss became non-finite"
            elif bool(settled[k]):
                status[k], reason[k] = "converged", "the polish's loss stopped decreasing"
            else:
                status[k], reason[k] = "max_steps", "the polish's loss was still decreasing"
        done += T
        if snapshot is not None:
            snapshot(done)
    return {"stages": log, "status": status, "reason": reason, "iterations_per_stage": per,
            "steps": total, "seconds": time.perf_counter() - t0}
