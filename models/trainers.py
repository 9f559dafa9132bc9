"""Optimisers over a loss closure: L-BFGS, Adam and plain gradient descent, on cpu or cuda.

The loss closure is what distinguishes the training modes: the exact population loss derived by
the moment kernel, a fresh batch of sampled prompts at every call (as Garg et al. and most code
bases train), or one fixed batch (as Ahn et al.'s L-BFGS experiments do).  Training stops with
status ``diverged`` (and the step and reason) as soon as the loss or a gradient is not finite.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from .lbfgs import DeviceLBFGS

METHODS = ("lbfgs", "adam", "gd")


@dataclass
class TrainResult:
    """What a run did: the loss curve, the final parameters, and why it stopped."""

    method: str
    losses: list[float] = field(default_factory=list)
    steps: int = 0
    status: str = "max_steps"  # converged | max_steps | diverged
    reason: str = ""
    seconds: float = 0.0

    @property
    def final_loss(self) -> float:
        return self.losses[-1] if self.losses else math.nan

    def summary(self, curve_points: int = 50) -> dict:
        stride = max(1, len(self.losses) // curve_points)
        return {
            "method": self.method,
            "steps": self.steps,
            "status": self.status,
            "reason": self.reason,
            "final_loss": self.final_loss,
            "seconds": round(self.seconds, 3),
            "curve": [float(v) for v in self.losses[::stride]],
        }


class _Diverged(Exception):
    pass


def optimise(loss_fn: Callable[[], torch.Tensor], params: Sequence[torch.Tensor],
             method: str = "lbfgs", steps: int = 200, lr: float = 1.0,
             grad_tol: float = 1e-12, loss_tol: float | None = None,
             progress: Callable[[int, float], None] | None = None,
             sync_every: int | None = None) -> TrainResult:
    """Minimise ``loss_fn()`` over ``params`` in place.

    ``steps`` counts optimiser iterations (L-BFGS: outer iterations of up to 20 evaluations each).
    Stops early when the gradient norm falls below ``grad_tol`` or the loss below ``loss_tol``.
    Adam and GD read the loss and gradient norm back to the host once every ``sync_every``
    steps (None: every step on cpu, every 64 on a GPU, where each read-back stalls the device);
    the stopping rules then apply to each step of the window, as if read step by step.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {METHODS}")
    params = list(params)
    result = TrainResult(method=method)
    start = time.perf_counter()

    def evaluate() -> torch.Tensor:
        loss = loss_fn()
        value = float(loss.detach())
        if not math.isfinite(value):
            raise _Diverged(f"loss became {value} at step {result.steps}")
        return loss

    try:
        if method == "lbfgs":
            opt = DeviceLBFGS(params, lr=lr, max_iter=20, history_size=50,
                              tolerance_grad=grad_tol, tolerance_change=1e-15)

            def closure():
                opt.zero_grad()
                loss = evaluate()
                loss.backward()
                return loss

            for step in range(steps):
                loss = opt.step(closure)
                result.steps = step + 1
                value = float(loss.detach())
                result.losses.append(value)
                if progress:
                    progress(result.steps, value)
                gnorm = _grad_norm(params)
                if not math.isfinite(gnorm):
                    raise _Diverged(f"gradient became {gnorm} at step {result.steps}")
                if gnorm <= grad_tol or (loss_tol is not None and value <= loss_tol):
                    result.status = "converged"
                    break
                if _stalled(result.losses):
                    result.status = "converged"
                    result.reason = "loss stopped changing"
                    break
        else:
            _first_order(loss_fn, params, method, steps, lr, grad_tol, loss_tol, progress,
                         result, _sync_every(params, sync_every))
    except _Diverged as exc:
        result.status = "diverged"
        result.reason = str(exc)
    result.seconds = time.perf_counter() - start
    return result


def _sync_every(params: Sequence[torch.Tensor], sync_every: int | None) -> int:
    if sync_every is not None:
        return max(1, int(sync_every))
    return 1 if params[0].device.type == "cpu" else 64


def first_order_optimiser(params: Sequence[torch.Tensor], method: str, lr: float,
                          fused: bool | None = None) -> torch.optim.Optimizer:
    """torch's Adam or SGD.  ``fused`` (default: on cuda) takes Adam's single-kernel path, the
    whole update one launch with its step counter on the device, where the default path is a
    few multi-tensor kernels per step: the same update up to rounding (tested on the cpu, where
    torch has the fused kernel too)."""
    params = list(params)
    if method != "adam":
        return torch.optim.SGD(params, lr=lr)
    if fused is None:
        fused = bool(params) and all(p.is_cuda for p in params)
    return torch.optim.Adam(params, lr=lr, fused=True) if fused else torch.optim.Adam(params, lr=lr)


def _first_order(loss_fn, params, method, steps, lr, grad_tol, loss_tol, progress,
                 result: TrainResult, window: int) -> None:
    """Adam or GD, with the losses and squared gradient norms kept on the device and read back
    once per ``window`` steps.  A non-finite loss or gradient at step k stops the run as
    diverged at k (with the weights of the last window that was finite throughout); a
    gradient below ``grad_tol`` or a loss below ``loss_tol`` at step k stops it as converged
    at k (the weights are those at the window's end: at most window - 1 further steps)."""
    opt = first_order_optimiser(params, method, lr)
    like = params[0]
    losses = torch.empty(window, dtype=like.dtype, device=like.device)
    gsq = torch.empty(window, dtype=like.dtype, device=like.device)
    saved = [p.detach().clone() for p in params] if window > 1 else None
    done = 0
    while done < steps:
        count = min(window, steps - done)
        for i in range(count):
            opt.zero_grad()
            loss = loss_fn()
            if window == 1:  # read at once: a non-finite loss stops before the backward pass
                losses[0] = loss.detach()
                if not math.isfinite(float(losses[0])):
                    raise _Diverged(f"loss became {float(losses[0])} at step {done}")
            loss.backward()
            losses[i] = loss.detach()
            gsq[i] = _squared_norm([p.grad.detach() for p in params if p.grad is not None])
            if window == 1 and not math.isfinite(float(gsq[0])):
                raise _Diverged(f"gradient became {math.sqrt(float(gsq[0]))} at step {done + 1}")
            opt.step()
        values, norms = losses[:count].tolist(), gsq[:count].sqrt().tolist()
        for i, (value, gnorm) in enumerate(zip(values, norms)):
            step = done + i
            if not math.isfinite(value) or not math.isfinite(gnorm):
                if saved is not None:
                    with torch.no_grad():
                        for p, old in zip(params, saved):
                            p.copy_(old)
                what = (f"loss became {value} at step {step}" if not math.isfinite(value)
                        else f"gradient became {gnorm} at step {step + 1}")
                raise _Diverged(what)
            result.steps = step + 1
            result.losses.append(value)
            if progress and (window == 1 or i == count - 1):
                progress(result.steps, value)
            if gnorm <= grad_tol or (loss_tol is not None and value <= loss_tol):
                result.status = "converged"
                return
        done += count
        if saved is not None:
            with torch.no_grad():
                for p, old in zip(params, saved):
                    old.copy_(p)


def _squared_norm(grads: list[torch.Tensor], multi_tensor: bool | None = None) -> torch.Tensor:
    """sum_p ||g_p||^2 on the device: on cuda (``multi_tensor`` None) one multi-tensor norm
    kernel for all the gradients (``torch._foreach_norm``) and a sum, where a norm per tensor
    was three launches each (the 4-layer encoder has some fifty parameter tensors)."""
    if multi_tensor is None:
        multi_tensor = bool(grads) and grads[0].device.type == "cuda"
    if multi_tensor and grads and hasattr(torch, "_foreach_norm"):
        return torch.stack(torch._foreach_norm(grads)).square().sum()
    return sum(torch.sum(g ** 2) for g in grads)


def _grad_norm(params: Sequence[torch.Tensor]) -> float:
    total = 0.0
    for p in params:
        if p.grad is not None:
            total += float(torch.sum(p.grad.detach() ** 2))
    return math.sqrt(total)


def _stalled(losses: list[float], window: int = 5) -> bool:
    if len(losses) < window:
        return False
    recent = losses[-window:]
    return max(recent) - min(recent) <= 1e-12 * max(1.0, abs(recent[-1]))


# ----------------------------------------------------------------------------------------------
# Batched training: B independent problems (one per seed) in one set of tensors
# ----------------------------------------------------------------------------------------------
def optimise_batched(loss_fn: Callable[[], torch.Tensor], params: Sequence[torch.Tensor],
                     method: str = "lbfgs", steps: int = 200, lr: float = 1.0,
                     grad_tol: float = 1e-10, rel_tol: float = 1e-13, history: int = 20,
                     progress: Callable[[int, torch.Tensor], None] | None = None,
                     sync_every: int | None = None) -> list[TrainResult]:
    """Minimise B independent losses at once: ``loss_fn()`` returns shape (B,) and every parameter
    has a leading batch axis B.  Each problem keeps its own optimiser state and stops on its own
    (converged, or diverged with the step and reason); its parameters are then frozen.

    ``lbfgs`` is a vectorised L-BFGS (two-loop recursion per problem, backtracking Armijo line
    search per problem), so restarts do not share curvature information or step sizes as they
    would if their summed loss were passed to ``torch.optim.LBFGS``.

    An L-BFGS step reads back to the host once per line-search trial, its record
    (``_StepRecord``: losses, finiteness and the stopping tests of every problem) in the same
    transfer as the next step's first trial, the stops applied on the device meanwhile; on a GPU
    every read-back waits for the queued kernels.  Adam and GD read back once per
    ``sync_every`` steps, as ``optimise`` does (every step on cpu, every 64 on a GPU).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {METHODS}")
    params = list(params)
    B = params[0].shape[0]
    rec = _StepRecord([TrainResult(method=method) for _ in range(B)], params[0].device)
    start = time.perf_counter()

    def flat(ts):
        return torch.cat([t.reshape(B, -1) for t in ts], dim=1)

    def assign(x):
        offset = 0
        with torch.no_grad():
            for p in params:
                k = p[0].numel()
                p.copy_(x[:, offset:offset + k].reshape(p.shape))
                offset += k

    def value_and_grad():
        for p in params:
            p.grad = None
        losses = loss_fn()
        losses.sum().backward()
        g = flat([p.grad if p.grad is not None else torch.zeros_like(p) for p in params])
        return losses.detach(), g.detach()

    if method == "lbfgs":
        x = flat([p.detach() for p in params])
        f, g = value_and_grad()
        # each step's record is read back with the next step's first line-search trial (one
        # transfer); a step that finds every problem stopped before it moves nothing and ends
        # the run (its problems are inactive: t = 0, and x stays x)
        rec.advance(0, f, g)
        pairs = []
        for step in range(1, steps + 1):
            if not rec.any_live():
                break
            active = rec.active
            d = -_two_loop(g, pairs)
            slope = (d * g).sum(1)
            # selections by torch.where / masked_fill, not x[mask]: a boolean index reads
            # the mask's count back to the host (nonzero) on a GPU
            d = torch.where((slope < 0)[:, None], d, -g)
            slope = (d * g).sum(1)
            t = torch.full((B,), float(lr), dtype=x.dtype, device=x.device).masked_fill_(~active, 0.0)
            accepted = ~active
            x_new, f_new, g_new = x, f, g
            for _ in range(30):
                trial = x + t[:, None] * d
                assign(trial)
                ft, gt = value_and_grad()
                ok = (~accepted) & torch.isfinite(ft) & (ft <= f + 1e-4 * t * slope)
                x_new = torch.where(ok[:, None], trial, x_new)
                f_new, g_new = torch.where(ok, ft, f_new), torch.where(ok[:, None], gt, g_new)
                accepted = accepted | ok
                # the first trial also reads the step before's record (``flush``)
                all_accepted = rec.flush(accepted.all())[0] > 0
                if all_accepted or not rec.any_live():
                    break
                t = torch.where(accepted, t, t * 0.5)
            if not rec.any_live():
                break
            stuck = ~accepted
            s_k, y_k = x_new - x, g_new - g
            pairs.append(_Pair(s_k, y_k))
            if len(pairs) > history:
                pairs.pop(0)
            rel = (f - f_new).abs() / f_new.abs().clamp_min(1.0)
            x, f, g = x_new, f_new, g_new
            assign(x)
            rec.advance(step, f, g, stuck=stuck, rel=rel <= rel_tol, grad_tol=grad_tol)
            if progress:
                progress(step, f)
        rec.flush()
        assign(x)
    else:
        _first_order_batched(loss_fn, params, method, steps, lr, grad_tol, progress, rec,
                             _sync_every(params, sync_every))
    seconds = time.perf_counter() - start
    for r in rec.results:
        r.seconds = seconds
    return rec.results


def _first_order_batched(loss_fn, params, method, steps, lr, grad_tol, progress,
                         rec: "_StepRecord", window: int) -> None:
    """Adam or GD on B problems at once, read back once per ``window`` steps, with
    ``_first_order``'s rules per problem: one whose loss or gradient is not finite at step k
    stops as diverged at k with the weights of the window's start; one whose gradient falls
    below ``grad_tol`` at step k stops as converged at k with the weights of the window's end.
    A stopped problem's parameters are put back at every window's end (they keep moving inside
    a window: the problems share the kernels, and Adam's state is elementwise, so the others
    are not affected)."""
    opt = first_order_optimiser(params, method, lr)
    like = params[0]
    B = like.shape[0]
    losses = torch.empty(window, B, dtype=like.dtype, device=like.device)
    gsq = torch.empty(window, B, dtype=like.dtype, device=like.device)
    saved = [p.detach().clone() for p in params]
    done = 0
    while done < steps and rec.any_live():
        count = min(window, steps - done)
        for i in range(count):
            opt.zero_grad()
            f = loss_fn()
            f.sum().backward()
            losses[i] = f.detach()
            gsq[i] = sum((p.grad.detach() ** 2).reshape(B, -1).sum(1)
                         for p in params if p.grad is not None)
            opt.step()
        keep = rec.read_window(done, losses[:count], gsq[:count], grad_tol)
        with torch.no_grad():
            for p, old in zip(params, saved):
                old.copy_(torch.where(keep.view(B, *[1] * (p.dim() - 1)), p, old))
                p.copy_(old)
        done += count
        if progress:
            progress(done, losses[count - 1])


class _StepRecord:
    """The host's record of B batched problems: which are still running (``active``, on the
    device, and its host copy), and each one's loss curve and status.

    ``advance`` takes one step's losses and gradients, ``flush`` reads back, in one transfer
    (with whatever the caller needs read at the same time), what the host needs of every
    problem: its loss, whether loss and gradient are finite, and the stopping tests (gradient
    below ``grad_tol``, no descent step found, loss stopped changing)."""

    REASONS = ("gradient below tolerance", "no descent step found", "loss stopped changing")

    def __init__(self, results: list[TrainResult], device: torch.device) -> None:
        self.results = results
        self.live = [True] * len(results)
        self.active = torch.ones(len(results), dtype=torch.bool, device=device)
        self.pending: tuple | None = None

    def any_live(self) -> bool:
        """Whether a problem runs on, as of the last step the host has read."""
        return any(self.live)

    def advance(self, step: int, losses: torch.Tensor, g: torch.Tensor,
                stuck: torch.Tensor | None = None, rel: torch.Tensor | None = None,
                grad_tol: float | None = None) -> None:
        """Take one step's losses and gradients: its rows stay on the device until the next
        ``flush``, and ``active`` is updated there by the rules ``flush`` applies on the host
        (running on where loss and gradient are finite and no stopping test holds), so the next
        step can start before the host has read this one."""
        tests = [(t, why) for t, why in zip(
            (None if grad_tol is None else g.norm(dim=1) <= grad_tol, stuck, rel), self.REASONS)
            if t is not None]
        rows = torch.stack([losses.to(torch.float64), _finite(losses, g).to(torch.float64),
                            *(t.to(torch.float64) for t, _ in tests)])
        # finite (1) and no test holding (0 each): 1 - 0 > 1/2; otherwise <= 0
        runs_on = (rows[1] - rows[2:].sum(0) if tests else rows[1]) > 0.5
        self.active = self.active & runs_on
        self.pending = (step, rows, [why for _, why in tests])

    def flush(self, *extra: torch.Tensor) -> list[float]:
        """Read the pending step (if any) and the 0-d tensors ``extra`` back in one transfer, take
        the step on the host; returns the values of ``extra``."""
        if self.pending is None:
            return [float(e) for e in extra]
        step, rows, reasons = self.pending
        self.pending = None
        B = rows.shape[1]
        flat = torch.cat([rows.reshape(-1), *(e.to(torch.float64).reshape(1) for e in extra)])
        values = flat.tolist()
        table = [values[i * B:(i + 1) * B] for i in range(rows.shape[0])]
        losses, ok, tested = table[0], table[1], list(zip(*table[2:])) or [()] * B
        for b in range(len(self.results)):
            if self.live[b]:
                hit = next((why for why, on in zip(reasons, tested[b]) if on), None)
                self._take(b, step, losses[b], bool(ok[b]), hit)
        self.active = torch.tensor(self.live, dtype=torch.bool, device=self.active.device)
        return values[rows.numel():]

    def _take(self, b: int, step: int, value: float, finite: bool, hit: str | None) -> bool:
        """Problem b's step: diverged where loss or gradient is not finite, else its loss is
        recorded and a stopping test that holds (``hit``) stops it as converged.  Returns
        whether it runs on."""
        r = self.results[b]
        r.steps = step
        if not finite:
            r.status, r.reason = "diverged", f"loss or gradient became non-finite at step {step}"
        else:
            r.losses.append(value)
            if hit is None:
                return True
            r.status, r.reason = "converged", hit
        self.live[b] = False
        return False

    def read_window(self, done: int, losses: torch.Tensor, gsq: torch.Tensor,
                    grad_tol: float) -> torch.Tensor:
        """Read a window of first-order steps done + 1 .. done + count (``losses`` and squared
        gradient norms, (count, B)) in one transfer; returns, on the device, which problems keep
        the weights of the window's end (running, or converged in it)."""
        values, norms2 = torch.stack([losses, gsq]).to(torch.float64).tolist()
        keep = []
        for b, r in enumerate(self.results):
            if not self.live[b]:
                keep.append(False)
                continue
            for i, (row, row2) in enumerate(zip(values, norms2)):
                gnorm = math.sqrt(row2[b]) if row2[b] >= 0 else math.nan  # nan stays nan
                finite = math.isfinite(row[b]) and math.isfinite(gnorm)
                if not self._take(b, done + i + 1, row[b], finite,
                                  self.REASONS[0] if gnorm <= grad_tol else None):
                    break
            keep.append(r.status != "diverged")
        self.active = torch.tensor(self.live, dtype=torch.bool, device=self.active.device)
        return torch.tensor(keep, dtype=torch.bool, device=self.active.device)


def _finite(losses: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Per problem (rows of g): loss and gradient are finite."""
    return torch.isfinite(losses) & torch.isfinite(g).all(dim=1)


class _Pair:
    """A stored L-BFGS pair (s, y) per problem (rows), with what the two-loop recursion reads of
    it computed once when it is stored: s.y, y.y and rho = 1 / s.y (0 where s.y <= 0)."""

    def __init__(self, s: torch.Tensor, y: torch.Tensor) -> None:
        self.s, self.y = s, y
        self.sy, self.yy = (s * y).sum(1), (y * y).sum(1)
        self.rho = torch.where(self.sy > 1e-300, 1.0 / self.sy.clamp_min(1e-300),
                               torch.zeros_like(self.sy))


def _two_loop(g: torch.Tensor, pairs: list) -> torch.Tensor:
    """The L-BFGS product H g per problem (rows), from the stored pairs (s_i, y_i), oldest
    first: the two-loop recursion in matrix form, a few batched products and two triangular
    solves whatever the history (the loops were some ten operations per pair, sequential).

    With SY_ij = s_i . y_j, the first loop's a_i = rho_i s_i . (g - sum_{j>i} a_j y_j) is the
    upper-triangular system (I + diag(rho) triu(SY, 1)) a = rho * (S g); then q = g - Y^T a and
    r0 = gamma q; the second loop's c_i = a_i - rho_i y_i . (r0 + sum_{j<i} c_j s_j) is the
    lower-triangular (I + diag(rho) tril(SY^T, -1)) c = a - rho * (Y r0); H g = r0 + S^T c.
    A pair with rho = 0 (s.y <= 0) drops out, as in the loops."""
    if not pairs:
        return g.clone()
    S = torch.stack([p.s for p in pairs], 1)                  # (B, m, n)
    Y = torch.stack([p.y for p in pairs], 1)
    rho = torch.stack([p.rho for p in pairs], 1)              # (B, m)
    SY = S @ Y.transpose(1, 2)
    eye = torch.eye(len(pairs), dtype=g.dtype, device=g.device)
    upper = rho[:, :, None] * SY.triu(1) + eye
    a = torch.linalg.solve_triangular(upper, (rho * (S @ g[:, :, None]).squeeze(-1))[..., None],
                                      upper=True)
    sy, yy = pairs[-1].sy, pairs[-1].yy
    gamma = torch.where((sy > 1e-300) & (yy > 0), sy / yy.clamp_min(1e-300), torch.ones_like(sy))
    r = (g - (Y.transpose(1, 2) @ a).squeeze(-1)) * gamma[:, None]
    lower = rho[:, :, None] * SY.transpose(1, 2).tril(-1) + eye
    c = torch.linalg.solve_triangular(lower, a - (rho * (Y @ r[:, :, None]).squeeze(-1))[..., None],
                                      upper=False)
    return r + (S.transpose(1, 2) @ c).squeeze(-1)
