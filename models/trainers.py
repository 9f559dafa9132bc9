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
             progress: Callable[[int, float], None] | None = None) -> TrainResult:
    """Minimise ``loss_fn()`` over ``params`` in place.

    ``steps`` counts optimiser iterations (L-BFGS: outer iterations of up to 20 evaluations each).
    Stops early when the gradient norm falls below ``grad_tol`` or the loss below ``loss_tol``.
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
            opt = torch.optim.LBFGS(params, lr=lr, max_iter=20, history_size=50,
                                    tolerance_grad=grad_tol, tolerance_change=1e-15,
                                    line_search_fn="strong_wolfe")

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
            opt = (torch.optim.Adam(params, lr=lr) if method == "adam"
                   else torch.optim.SGD(params, lr=lr))
            for step in range(steps):
                opt.zero_grad()
                loss = evaluate()
                loss.backward()
                gnorm = _grad_norm(params)
                if not math.isfinite(gnorm):
                    raise _Diverged(f"gradient became {gnorm} at step {step + 1}")
                opt.step()
                result.steps = step + 1
                value = float(loss.detach())
                result.losses.append(value)
                if progress:
                    progress(result.steps, value)
                if gnorm <= grad_tol or (loss_tol is not None and value <= loss_tol):
                    result.status = "converged"
                    break
    except _Diverged as exc:
        result.status = "diverged"
        result.reason = str(exc)
    result.seconds = time.perf_counter() - start
    return result


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
