"""Training multi-head LSA and y_q-LSA: L-BFGS on the exact risk (all restarts batched) and Adam on
sampled prompts (the paper's protocol, Sec. 5: fresh prompts at every step)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch

from models.device import runtime, randn
from models.exact import ExactLoss
from models.multihead import MultiHeadLSA, YqLSA, sample_tasks
from models.padding import head_layout
from models.progress import Progress
from models.trainers import optimise, optimise_batched
from verify.evidence import Finding

from .common import HeadsLoss, StackedHeadsLoss, heads_risk
from .setting import Instance

INIT_SCALE = 0.1


def budget_steps(budget: str) -> dict:
    """L-BFGS iterations on the exact risk; Adam steps, batch and learning rate on sampled prompts
    (the paper: 5000 Adam steps, batch 2048, lr 5e-4; a GPU budget)."""
    return {"quick": {"lbfgs": 100, "adam": 100, "batch": 256, "lr": 0.02},
            "default": {"lbfgs": 300, "adam": 1500, "batch": 1024, "lr": 0.005},
            }.get(budget, {"lbfgs": 600, "adam": 5000, "batch": 2048, "lr": 5e-4})


@dataclass
class ExactRuns:
    """Best risk over restarts of L-BFGS on the exact risk of H heads, and every run's summary."""

    heads: int
    best: float
    best_P: np.ndarray
    best_Q: np.ndarray
    runs: list = field(default_factory=list)
    diverged: int = 0


@dataclass(frozen=True)
class ExactProblem:
    """One exact-risk training problem: ``heads`` heads at context size C and task w*, the query
    guess y_q = v^T x_q + beta (v, beta unused at the guess ``zero``), restarts drawn from
    ``seed``."""

    heads: int
    seed: int
    C: int
    w_star: tuple[float, ...]
    v: tuple[float, ...] | None = None
    beta: float = 0.0

    @classmethod
    def of(cls, inst: Instance, heads: int, seed: int, w_star: np.ndarray | None = None,
           v: np.ndarray | None = None, beta: float = 0.0) -> "ExactProblem":
        ws = inst.w_star if w_star is None else w_star
        return cls(int(heads), int(seed), inst.C, tuple(float(x) for x in ws),
                   None if v is None else tuple(float(x) for x in v), float(beta))

    def loss(self, guess: str, rt) -> HeadsLoss:
        d = len(self.w_star)
        fixed = {"w_star": torch.tensor(self.w_star, dtype=rt.dtype,
                                        device=rt.device).reshape(d, 1)}
        if guess != "zero":
            v = self.v if self.v is not None else (0.0,) * d
            fixed["v"] = torch.tensor(v, dtype=rt.dtype, device=rt.device).reshape(d, 1)
        return HeadsLoss(guess, d, self.C, fixed, self.beta)


def _starts(heads: int, restarts: int, d: int, seed: int, rt) -> tuple[torch.Tensor, torch.Tensor]:
    """The restarts' (P, Q), each (restarts, heads, d+1, d+1), INIT_SCALE * N(0, 1) entries."""
    gen = rt.generator(seed)
    shape = (restarts, heads, d + 1, d + 1)
    P, Q = (INIT_SCALE * randn(*shape, generator=gen, dtype=rt.dtype, device=rt.device)
            for _ in range(2))
    return P, Q


def _exact_runs(heads: int, P: torch.Tensor, Q: torch.Tensor, final: np.ndarray,
                results: list) -> ExactRuns:
    """The best restart (least final risk among those that did not diverge) and every run."""
    restarts = len(results)
    ok = [r for r in range(restarts) if results[r].status != "diverged" and np.isfinite(final[r])]
    runs = [{"restart": r, "final_risk": float(final[r]), **results[r].summary(curve_points=30)}
            for r in range(restarts)]
    if not ok:
        return ExactRuns(heads, float("nan"), np.zeros(0), np.zeros(0), runs, restarts)
    b = min(ok, key=lambda r: final[r])
    return ExactRuns(heads, float(final[b]), P[b].detach().cpu().double().numpy(),
                     Q[b].detach().cpu().double().numpy(), runs, restarts - len(ok))


def train_exact_problems(problems: Sequence[ExactProblem], restarts: int, steps: int,
                         device: str = "auto", guess: str = "zero",
                         progress: bool = False) -> list[ExactRuns]:
    """L-BFGS on the derived risk of every problem, ``restarts`` each, in one batched run (on a
    GPU: the launches and read-backs of one run).  Problems of fewer heads are padded to the
    most with heads held at P = Q = 0 (a head enters the risk through the products of its P and
    Q, so a zero head adds nothing), and the risk reads only the real heads and pairs
    (``models.padding.head_layout``), so a padded head has gradient 0 and L-BFGS leaves it at 0;
    problems of other w*, v or beta (one C) are rows of a ``StackedHeadsLoss``.  Each restart
    starts where the problem trained alone starts it (its seed's draws) and stops on its own;
    its final risk is that of its own heads under its own risk."""
    rt = runtime(device)
    parts = [p.loss(guess, rt) for p in problems]
    Hs = [p.heads for p in problems]
    top, R, d = max(Hs), restarts, len(problems[0].w_star)
    shape = (len(Hs) * R, top, d + 1, d + 1)
    P, Q = (torch.zeros(shape, dtype=rt.dtype, device=rt.device) for _ in range(2))
    for i, p in enumerate(problems):
        P[i * R:(i + 1) * R, :p.heads], Q[i * R:(i + 1) * R, :p.heads] = _starts(p.heads, R, d,
                                                                                  p.seed, rt)
    P.requires_grad_()
    Q.requires_grad_()
    layout = head_layout(Hs, top, R, rt.device) if min(Hs) < top else None
    loss = parts[0] if len(parts) == 1 else StackedHeadsLoss(parts, R, layout)
    exact = ExactLoss(loss, lambda: ({"P": P, "Q": Q}, {}))
    label = f"H={Hs[0]}" if len(Hs) == 1 else f"{len(Hs)} problems"
    with Progress(steps, f"xie2025 exact-risk L-BFGS, {label}", progress) as bar:
        results = optimise_batched(exact, [P, Q], method="lbfgs", steps=steps,
                                   progress=bar.callback())
    out = []
    with torch.no_grad():
        for i, (p, part) in enumerate(zip(problems, parts)):
            rows = slice(i * R, (i + 1) * R)
            Ph, Qh = P[rows, :p.heads], Q[rows, :p.heads]
            final = part({"P": Ph, "Q": Qh}, {}).detach().cpu().double().numpy()
            out.append(_exact_runs(p.heads, Ph, Qh, final, results[rows]))
    return out


def train_exact(inst: Instance, heads: int, restarts: int, steps: int, seed: int,
                device: str = "auto", guess: str = "zero", v: np.ndarray | None = None,
                beta: float = 0.0, w_star: np.ndarray | None = None,
                progress: bool = False) -> ExactRuns:
    """L-BFGS on the derived risk of ``heads`` heads (P_h, Q_h free), ``restarts`` at once."""
    problem = ExactProblem.of(inst, heads, seed, w_star, v, beta)
    return train_exact_problems([problem], restarts, steps, device, guess, progress)[0]


def train_exact_heads(inst: Instance, heads: Sequence[int], restarts: int, steps: int,
                      seeds: Sequence[int], device: str = "auto",
                      progress: bool = False) -> dict[int, ExactRuns]:
    """``train_exact`` (y_q = 0) for every head count H in ``heads`` (seed per H), in one run."""
    problems = [ExactProblem.of(inst, H, seed) for H, seed in zip(heads, seeds)]
    runs = train_exact_problems(problems, restarts, steps, device, progress=progress)
    return {p.heads: r for p, r in zip(problems, runs)}


@lru_cache(maxsize=None)
def head_sweep(d: int, C: int, w_entry: int, budget: str, restarts: int, seed: int,
               device: str = "auto", max_heads: int | None = None) -> dict[int, ExactRuns]:
    """Exact-risk training for H = 1 .. d+3 heads (cached: Thm. 1 and Fig. 2 read the same runs),
    all in one batched run."""
    inst = Instance(d, C, w_entry)
    steps = budget_steps(budget)["lbfgs"]
    top = max_heads or d + 3
    return train_exact_heads(inst, range(1, top + 1), restarts, steps,
                             [seed + H for H in range(1, top + 1)], device)


def training_finding(ev: dict, below: dict | None, missed: list, inst: Instance,
                     missed_reason: str, name: str = "exact_risk_training", **kw) -> Finding:
    """Exact-risk training against the exact optimum: refuted by a trained risk below it
    (``below``), undecided where a run missed it (more restarts would decide), else a pass."""
    if below is not None:
        return Finding(name, False, ev, {"instance": inst.as_dict(), **below},
                       "training found a risk below the saturated optimum")
    if missed:
        return Finding(name, None, ev, reason=missed_reason)
    return Finding(name, True, ev, **kw)


def loss_tol(device: str = "auto") -> float:
    """Relative tolerance for "training reached the exact optimum": 1e-6 in float64 (L-BFGS on
    the exact risk gets to ~1e-10), 1e3 eps in a lower precision."""
    return runtime(device).tolerance(1e-6, 1e3)


def gap_tol(device: str = "auto") -> float:
    """Relative gap to an exact optimum that marks the trained point as that optimum: 1e-8 in
    float64 (L-BFGS ends ~1e-10 above it), 1e3 eps in a lower precision (float32 ends ~1e-5
    above it)."""
    return runtime(device).tolerance(1e-8, 1e3)


def grad_tol(device: str = "auto") -> float:
    """Gradient norm below which a trained point counts as stationary: 1e-4 in float64 (L-BFGS
    stops near 1e-6 in the flat directions of over-parametrised heads), 1e5 eps otherwise."""
    return runtime(device).tolerance(1e-4, 1e5)


def restarts_for(budget) -> int:
    """Restarts of the exact-risk runs (all batched): 3 at the quick budget (every restart of the
    sweep lands on the same value there), the budget's number otherwise."""
    return 3 if budget.name == "quick" else budget.restarts


@lru_cache(maxsize=None)
def train_sampled(inst: Instance, heads: int, budget: str, seed: int, device: str = "auto",
                  progress: bool = False) -> dict:
    """Adam on fresh sampled prompts (the paper's protocol), y_q = 0; returns the exact risk of
    the trained weights (derived formula) and the training summary."""
    rt = runtime(device)
    cfg = budget_steps(budget)
    gen = rt.generator(seed)
    model = MultiHeadLSA(inst.d, heads, init_scale=INIT_SCALE, generator=gen, dtype=rt.dtype,
                         device=rt.device)
    data = rt.data_generator(seed + 1)
    w_star = inst.w_star_torch(rt.dtype, rt.device)

    def loss():
        t = sample_tasks(w_star, inst.C, cfg["batch"], data, dtype=rt.dtype, device=rt.device)
        return ((model(t.E()) - t.target) ** 2).mean()

    with Progress(cfg["adam"], f"xie2025 sampled-prompt Adam, H={heads}", progress) as bar:
        res = optimise(loss, model.parameters(), method="adam", steps=cfg["adam"], lr=cfg["lr"],
                       progress=bar.callback())
    P, Q = (m.detach().cpu().double().numpy() for m in model.products())
    risk = float(heads_risk(list(P), list(Q), "zero", {"w_star": inst.w_star.reshape(-1, 1)},
                            {"C": inst.C, "d": inst.d}))
    return {"heads": heads, "exact_risk_of_trained_weights": risk, "batch": cfg["batch"],
            "lr": cfg["lr"], **res.summary(curve_points=40)}


def train_yq_sampled(inst: Instance, budget: str, seed: int, device: str = "auto",
                     progress: bool = False, C: int | None = None) -> tuple[YqLSA, dict]:
    """y_q-LSA (Def. 3) trained with Adam on sampled prompts: the weights and the summary."""
    rt = runtime(device)
    cfg = budget_steps(budget)
    C = C or inst.C
    model = YqLSA(inst.d, init_scale=INIT_SCALE, generator=rt.generator(seed), dtype=rt.dtype,
                  device=rt.device)
    data = rt.data_generator(seed + 1)
    w_star = inst.w_star_torch(rt.dtype, rt.device)

    def loss():
        t = sample_tasks(w_star, C, cfg["batch"], data, dtype=rt.dtype, device=rt.device)
        return ((model(t.X, t.y, t.xq) - t.target) ** 2).mean()

    with Progress(cfg["adam"], "xie2025 y_q-LSA sampled-prompt Adam", progress) as bar:
        res = optimise(loss, model.parameters(), method="adam", steps=cfg["adam"], lr=cfg["lr"],
                       progress=bar.callback())
    return model, {"batch": cfg["batch"], "lr": cfg["lr"], **res.summary(curve_points=40)}
