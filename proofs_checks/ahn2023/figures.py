"""ahn2023 Figures 1-4: the experiments of Secs. 5.3 (model (9), n = 20; Figs. 1, 2, here) and 6.1
(model (13), n = 10; Figs. 3, 4, in ``figures_sec61``, which shares the helpers below).

Setting of both: d = 5, Sigma = U^T D^2 U with U uniformly random orthogonal (one per seed) and
D = diag(1, 1, 0.5, 0.25, 1), w* ~ N(0, Sigma^{-1}), three attention layers (A_0, A_1, A_2),
L-BFGS from i.i.d. Gaussian initialisations, 5 seeds at the paper budget.

Training modes.  Model (9): the exact population loss derived by the moment kernel
(``sparse.full_loss``, compiled, one problem per seed in one batch) and, beside it, L-BFGS on one
fixed batch of sampled prompts through the real forward pass (as the paper trains).  Model (13):
with three layers the error has degree 27 in X, beyond Isserlis.  At --budget quick the
exact-loss run uses two layers (the full-matrix loss, evaluated through whitening,
``eq13_loss``), a stand-in; at default and paper the paper's three layers are trained on a
population-accurate objective (``eq13_population``: E[e^2 | X] exact over w*, x_q, fresh
tail-stretched draws of X, the S-part exact from Wishart moments) and decide; at paper the
three layers are also trained on one fixed batch, as the paper does, for comparison.  The
trained weights are compared with the critical points of the exactly derived loss on S
(``sparse.restricted_value_torch``, ``sparse.newton_mp``).

Metrics (``models.metrics.dist_to_identity``): Dist(Sigma^{1/2} A_i Sigma^{1/2}, I) (-> 0 on S),
Dist(A_i, I) (stays at Dist(Sigma^{-1}, I) on S), Dist(B_i, I), the loss against g* = min_S f.
Thresholds: a figure's "-> 0" is read as <= DIST_EXACT after exact-loss L-BFGS and <=
DIST_SAMPLED after fixed-batch or sampled training (a finite batch moves the empirical minimiser
by O(batch^{-1/2})); a population loss is compared within max(3 standard errors, LOSS_REL_TOL).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch

from models.device import runtime, randn
from models.lsa import LSAConfig, LinearTransformer, stacked_prediction
from models.metrics import dist_to_identity
from models.progress import Progress
from models.sampler import PromptLaw, sample_prompts
from models.trainers import TrainResult, optimise_batched
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, as_stand_ins, combine, worse

from ..kit.figures import (Mark, Panel, PaperFigure, Series, across_runs, figure_entry,
                           per_index)

from . import sparse
from models.device import cpu_threads

from .multilayer import D_EXPERIMENT, THM4_SETTING
from .one_layer import PAPER

DIST_EXACT = 1e-2
DIST_SAMPLED = 0.1
INIT_SCALE = 0.2
D_DIAG = np.array([float(eval(v)) for v in D_EXPERIMENT])  # noqa: S307 - literal fractions


def sigmas(seed: int, count: int, d: int = 5) -> np.ndarray:
    """Sigma = U^T D^2 U per seed, U Haar-distributed (QR of a Gaussian with sign fix)."""
    rng = np.random.default_rng(seed)
    out = []
    D = D_DIAG if d == 5 else np.ones(d)
    for _ in range(count):
        Q, R = np.linalg.qr(rng.standard_normal((d, d)))
        U = Q * np.sign(np.diag(R))
        out.append(U.T @ np.diag(D ** 2) @ U)
    return np.array(out)


def _sqrt(S: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(S)
    return vecs @ np.diag(np.sqrt(vals)) @ vecs.T


def _metrics(S: np.ndarray, As, Bs=None) -> dict:
    R = _sqrt(S)
    t = lambda M: torch.tensor(np.asarray(M))  # noqa: E731
    out = {"dist_whitened": [dist_to_identity(t(R @ A @ R)) for A in As],
           "dist_plain": [dist_to_identity(t(A)) for A in As],
           "scale_whitened": [float(np.trace(R @ A @ R) / len(A)) for A in As],
           "frobenius_norm": [float(np.linalg.norm(A)) for A in As]}
    if Bs is not None:
        out["dist_B"] = [dist_to_identity(t(B)) for B in Bs]
        out["scale_B"] = [float(np.trace(B) / len(B)) for B in Bs]
    return out


@lru_cache(maxsize=None)
def restricted_star(n: int, d: int, layers: int, model: str) -> dict:
    """g* = min over S of the derived loss, and its minimiser (multi-start, then Newton)."""
    rng = np.random.default_rng(0)
    m = len(sparse.variables(layers, model))
    starts = [np.full(m, -0.5)] + [rng.standard_normal(m) * 0.7 for _ in range(15)]
    runs = sparse.numeric_optimum(n, d, layers, model, starts)
    best = min(runs, key=lambda r: r["loss"])
    cp = sparse.symmetric_order(sparse.newton_mp(layers, model, n, d, best["end"], digits=20),
                                model)
    return {"g_star": float(cp.value), "point": cp.floats().tolist(),
            "hessian_eigenvalues": [float(e) for e in cp.hessian_eigenvalues],
            "restart_losses": sorted(r["loss"] for r in runs)}


# ------------------------------------------------------------------------------------------------
# Model (9): exact-loss training batched over seeds, and fixed-batch training
# ------------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def train_eq9(budget: str, seed: int, device: str, progress: bool) -> dict:
    """Figures 1 and 2 share this run (cached per process)."""
    with cpu_threads(device):
        return _train_eq9(budget, seed, device, progress)


# budget -> seeds and L-BFGS steps of the exact-loss run, batch, seeds and L-BFGS iterations of
# the fixed-batch run (Figs. 1 and 2; up to 2026-11-28 torch's L-BFGS ran 10, 150 and 500 outer
# steps of up to 20 iterations each, one seed after another)
EQ9_BUDGETS = {
    "quick": dict(seeds=3, steps=150, batch=1000, sampled_seeds=1, sampled_steps=200),
    "default": dict(seeds=5, steps=400, batch=4000, sampled_seeds=2, sampled_steps=3000),
    "paper": dict(seeds=5, steps=1000, batch=20000, sampled_seeds=5, sampled_steps=10000),
}


def _train_eq9(budget: str, seed: int, device: str, progress: bool) -> dict:
    ctx_b = EQ9_BUDGETS[budget]
    n, d, L = 20, 5, 3
    rt = runtime(device)
    B = ctx_b["seeds"]
    S = sigmas(seed, B, d)
    sig = torch.tensor(S, dtype=rt.dtype, device=rt.device)
    sig_inv = torch.linalg.inv(sig)
    compiled = sparse.full_loss(L, "eq9").compile()
    gen = rt.generator(seed + 1)
    A = (INIT_SCALE * randn(B, L, d, d, generator=gen, dtype=rt.dtype,
                                  device=rt.device)).requires_grad_()

    def loss():
        As = (A + A.transpose(-1, -2)) / 2
        env = {"Sigma": sig, "Sigma_inv": sig_inv}
        env.update({f"A_{i}": As[:, i] for i in range(L)})
        return compiled(env, {"n": n})

    curves: list = []
    with Progress(ctx_b["steps"], "ahn2023 Fig. 1/2 exact-loss L-BFGS", progress) as bar:
        show = bar.callback()

        def track(step, losses):
            if step % 5 == 0 or step == 1:  # read back (a GPU wait) only for a recorded step
                As = ((A + A.transpose(-1, -2)) / 2).detach().cpu().double().numpy()
                curves.append({"step": step, "loss": losses.detach().cpu().double().tolist(),
                               **{k: [_metrics(S[b], As[b])[k] for b in range(B)]
                                  for k in ("dist_whitened", "dist_plain")}})
            show(step, losses)

        results = optimise_batched(loss, [A], method="lbfgs", steps=ctx_b["steps"],
                                   progress=track)
    final = loss().detach().cpu().double().numpy()
    As = ((A + A.transpose(-1, -2)) / 2).detach().cpu().double().numpy()
    runs = [{"seed_index": b, "final_loss": float(final[b]), **_metrics(S[b], As[b]),
             **results[b].summary(curve_points=20)} for b in range(B)]
    for r in runs:
        r.pop("curve", None)
    star = restricted_star(n, d, L, "eq9")

    # fixed-batch L-BFGS on the real forward pass (as the paper trains), scored on the exact loss
    sampled = []
    K = ctx_b["sampled_seeds"]
    fits = fit_fixed_batches(S[:K], n, L, "eq9", ctx_b["batch"], ctx_b["sampled_steps"], rt,
                             [seed + 100 + b for b in range(K)],
                             [seed + 200 + b for b in range(K)], "ahn2023 Fig. 1", progress)
    for b, fit in enumerate(fits):
        res = fit.result
        Am = ((fit.A + fit.A.transpose(-1, -2)) / 2).detach().cpu().double()
        env = {"Sigma": torch.tensor(S[b]), "Sigma_inv": torch.linalg.inv(torch.tensor(S[b]))}
        env.update({f"A_{i}": Am[i] for i in range(L)})
        sampled.append({"seed_index": b, "batch": ctx_b["batch"],
                        "population_loss_of_trained": float(compiled(env, {"n": n})),
                        **_metrics(S[b], Am.numpy()), **res.summary(curve_points=20)})
    return {"runs": runs, "curves": curves, "g_star": star, "sampled": sampled,
            "dist_sigma_inv": [dist_to_identity(torch.tensor(np.linalg.inv(s))) for s in S],
            "n": n, "d": d, "layers": L, "runtime": rt.describe(), "seeds": B}


@dataclass
class FixedBatchFit:
    """One seed's fixed-batch run: its trained A (and B for (13)) and its optimiser record."""

    A: torch.Tensor
    B: torch.Tensor | None
    result: TrainResult


def fit_fixed_batches(sigma: Sequence[np.ndarray], n: int, layers: int, parametrisation: str,
                      batch: int, steps: int, rt, data_seeds: Sequence[int],
                      init_seeds: Sequence[int], label: str, progress: bool
                      ) -> list[FixedBatchFit]:
    """L-BFGS on the squared error of one fixed batch of prompts per seed (x ~ N(0, Sigma), w* ~
    N(0, Sigma^{-1})) through the model's forward pass, from its Gaussian init, as the paper
    trains; every seed in one batched run (``models.lsa.stacked_prediction``: the weights and
    the pass of ``LinearTransformer``, seed s on its own prompts; ``optimise_batched``: one
    launch sequence for all seeds and no read-back per evaluation).  ``steps``: L-BFGS
    iterations.  Seed s draws its prompts from ``data_seeds[s]`` and its init from
    ``init_seeds[s]``, as one model trained alone would."""
    if parametrisation not in ("eq9", "eq13"):
        raise ValueError(f"fixed-batch runs train (9) or (13), not {parametrisation!r}")
    if len(sigma) == 0:
        return []
    Zs, ys, inits = [], [], []
    config = LSAConfig(d=len(sigma[0]), layers=layers, parametrisation=parametrisation)
    for sig_s, data_seed, init_seed in zip(sigma, data_seeds, init_seeds):
        sig = torch.tensor(sig_s)
        law = PromptLaw(sigma=sig, n=n, w_cov=torch.linalg.inv(sig))
        pr = sample_prompts(law, batch, rt.generator(data_seed), dtype=rt.dtype, device=rt.device)
        model = LinearTransformer(config, init_scale=INIT_SCALE, generator=rt.generator(init_seed),
                                  dtype=rt.dtype, device=rt.device)
        Zs.append(pr.Z())
        ys.append(pr.yq)
        inits.append([model.A.detach()] + ([model.B.detach()] if parametrisation == "eq13"
                                           else []))
    Z, yq = torch.stack(Zs), torch.stack(ys)
    params = [torch.stack(p).clone().requires_grad_() for p in zip(*inits)]
    A, B = params[0], (params[1] if len(params) > 1 else None)
    with Progress(steps, f"{label} fixed-batch L-BFGS", progress) as bar:
        res = optimise_batched(lambda: ((stacked_prediction(Z, A, B) - yq) ** 2).mean(-1),
                               params, method="lbfgs", steps=steps, progress=bar.callback())
    return [FixedBatchFit(A[s].detach(), None if B is None else B[s].detach(), res[s])
            for s in range(len(res))]


def _diverged(out: dict) -> str | None:
    bad = [r for r in out["runs"] if r["status"] == "diverged"]
    return None if len(bad) < len(out["runs"]) else bad[0]["reason"]


def fig1_train(ctx: Context) -> TierResult:
    out = train_eq9(ctx.budget.name, ctx.seed, ctx.device, bool(ctx.progress))
    reason = _diverged(out)
    if reason:
        return combine([Finding("convergence_to_S", None, out, reason=reason)])
    ok_runs = [r for r in out["runs"] if r["status"] != "diverged"]
    dw = float(np.mean([max(r["dist_whitened"]) for r in ok_runs]))
    dp = float(np.mean([min(r["dist_plain"]) for r in ok_runs]))
    ds = float(np.mean(out["dist_sigma_inv"]))
    g_star = out["g_star"]["g_star"]
    losses = [r["final_loss"] for r in ok_runs]
    gap = float(np.mean(losses) / g_star - 1)
    f0 = out["d"]  # f(A = 0) = E[(w*^T x_q)^2] = tr(Sigma^{-1} Sigma) = d
    small = _stand_in_eq9(out)
    findings = [
        Finding("whitened_distance_to_identity", dw <= DIST_EXACT,
                {"mean_over_seeds_of_max_i_dist": dw, "threshold": DIST_EXACT},
                None if dw <= DIST_EXACT else {"runs": ok_runs, "seed": ctx.seed},
                "" if dw <= DIST_EXACT else "Sigma^{1/2} A_i Sigma^{1/2} does not approach c I"),
        Finding("plain_distance_stays", dp >= 0.5 * ds,
                {"mean_over_seeds_of_min_i_dist_A_I": dp, "dist_sigma_inverse_I": ds,
                 "criterion": "Dist(A_i, I) >= 0.5 Dist(Sigma^{-1}, I): not plain GD"},
                None if dp >= 0.5 * ds else {"runs": ok_runs},
                "" if dp >= 0.5 * ds else "A_i approaches a multiple of I (plain GD)"),
        Finding("loss_reaches_restricted_optimum", abs(gap) <= 1e-3,
                {"mean_final_loss": float(np.mean(losses)), "g_star": g_star,
                 "relative_gap": gap, "loss_at_A=0": f0,
                 "final_over_initial_scale": float(np.mean(losses)) / f0,
                 "note": "the population loss does not reach 0: its minimum over S is g* > 0 at "
                         "n = 20 (three layers cannot invert X X^T exactly)"},
                None if abs(gap) <= 1e-3 else {"losses": losses, "g_star": g_star},
                "" if abs(gap) <= 1e-3 else "the trained loss differs from min_S f"),
    ]
    findings = as_stand_ins(findings, small)
    return combine(findings, {"setting": {"n": out["n"], "d": out["d"], "layers": out["layers"],
                                          "seeds": out["seeds"], "seed": ctx.seed},
                              "runs": out["runs"], "curves": out["curves"],
                              "restricted_optimum": out["g_star"],
                              "fixed_batch_training": out["sampled"],
                              "runtime": out["runtime"],
                              **figure_entry(lambda: fig1_figure(out))})


# ----- the figures re-drawn from the runs --------------------------------------------------------
_WHITENED = r"$\mathrm{Dist}(\Sigma^{1/2}A_i\Sigma^{1/2}, I)$"


def _per_layer(curves: list, key: str, label: str) -> list[Series]:
    """One series per layer of a recorded metric (``curves[t][key][seed][layer]``)."""
    return per_index([c["step"] for c in curves], [c[key] for c in curves], label)


def _loss_panel(curves: list, g_star: float, title: str) -> Panel:
    steps = [c["step"] for c in curves]
    mean, low, high = across_runs([[c["loss"][b] for c in curves]
                                   for b in range(len(curves[0]["loss"]))])
    return Panel(title, "L-BFGS iteration", "loss",
                 (Series("population loss (mean over seeds)", steps, mean, "trained", low, high),),
                 (Mark(r"$g^\star$ = min over S (derived loss)", g_star),), y_log=True)


def fig1_figure(out: dict) -> PaperFigure:
    """Fig. 1's panels: Dist(Sigma^{1/2} A_i Sigma^{1/2}, I) and Dist(A_i, I) per layer against
    the iteration, and the loss converging (to g* > 0, not 0)."""
    curves = out["curves"]
    return PaperFigure("Fig. 1", (
        Panel("whitened weights (-> 0 on S)", "L-BFGS iteration", _WHITENED,
              _per_layer(curves, "dist_whitened", "$A_{i}$"), y_log=True),
        Panel("plain weights (stay)", "L-BFGS iteration",
              r"$\mathrm{Dist}(A_i, I)$", _per_layer(curves, "dist_plain", "$A_{i}$"),
              (Mark(r"$\mathrm{Dist}(\Sigma^{-1}, I)$, mean over seeds",
                    float(np.mean(out["dist_sigma_inv"]))),)),
        _loss_panel(curves, out["g_star"]["g_star"], "loss")),
        f"{out['layers']} layers of (9), L-BFGS on the exact population loss derived by the "
        f"moment kernel (n = {out['n']}, d = {out['d']}, {out['seeds']} seeds: Sigma = U^T D^2 U "
        f"per seed, Gaussian init), the mean over the seeds with a band from the least to the "
        f"largest; g* = min over S of the derived loss (Newton at 20 digits)",
        "the loss converges to an almost-0 value")


def fig2_train(ctx: Context) -> TierResult:
    """Fig. 2: the learned Sigma^{1/2} A_i Sigma^{1/2} are c_i I with (c_i) a critical point of g
    (up to the permutation symmetry of Lemma 8)."""
    out = train_eq9(ctx.budget.name, ctx.seed, ctx.device, bool(ctx.progress))
    reason = _diverged(out)
    if reason:
        return combine([Finding("learned_scales", None, {}, reason=reason)])
    a_star = sorted(out["g_star"]["point"])
    rows, worst = [], 0.0
    for r in out["runs"]:
        if r["status"] == "diverged":
            continue
        c = sorted(r["scale_whitened"])
        err = float(np.max(np.abs(np.array(c) - a_star)) / np.max(np.abs(a_star)))
        worst = err if worse(err, worst, DIST_EXACT) else worst  # a NaN is kept (max drops it)
        rows.append({"seed_index": r["seed_index"], "learned_scales_in_layer_order":
                     r["scale_whitened"], "sorted": c, "relative_error_to_a*": err,
                     "dist_whitened": r["dist_whitened"]})
    ok = worst <= DIST_EXACT if worst == worst else None  # a NaN scale decides nothing
    figure = figure_entry(lambda: fig2_figure(rows, a_star, out))
    return combine([Finding("learned_scales_match_a*", ok,
                            {"a*_sorted": a_star, "runs": rows, "max_relative_error": worst,
                             "threshold": DIST_EXACT,
                             "note": "g is symmetric in (a_0, a_1, a_2) (Lemma 8), so the "
                                     "layer order of the scales is not determined"},
                            None if ok is not False else {"a*": a_star, "runs": rows},
                            "a learned scale is not a finite number" if ok is None else
                            "" if ok else "the learned scales are not a critical point of g",
                            stand_in=_stand_in_eq9(out))], figure)


def fig2_figure(rows: list, a_star: list, out: dict) -> PaperFigure:
    """Fig. 2's content: the learned Sigma^{1/2} A_i Sigma^{1/2} = c_i I, as the scales c_i
    (sorted: g is symmetric in them) against the exact critical point a*, and how far each
    whitened matrix is from a multiple of I."""
    index = list(range(len(a_star)))
    scales = [Series(f"seed {r['seed_index']}", index, r["sorted"], "trained", points=True,
                     group=f"s{r['seed_index']}") for r in rows]
    dists = [Series(f"seed {r['seed_index']}", list(range(len(r["dist_whitened"]))),
                    r["dist_whitened"], "trained", points=True, group=f"s{r['seed_index']}")
             for r in rows]
    return PaperFigure("Fig. 2", (
        Panel(r"scales $c_i$ of $\Sigma^{1/2}A_i\Sigma^{1/2} = c_i I$", "i (sorted)",
              "$c_i$", [Series(r"critical point $a^\star$ (exact)", index, a_star,
                               points=True), *scales]),
        Panel("whitened weights at the end", "layer i", _WHITENED, dists,
              y_log=True)),
        f"the end of the Fig. 1 runs ({out['layers']} layers of (9), n = {out['n']}, "
        f"d = {out['d']}, {out['seeds']} seeds): the scales c_i = tr(Sigma^{{1/2}} A_i "
        f"Sigma^{{1/2}}) / d of each seed against the minimiser a* of the derived loss on S "
        f"(Newton at 20 digits); the paper shows the matrices themselves")


PAPER_LAYERS = 3  # Secs. 5.3 and 6.1 train three attention layers (the texts say three)


def _stand_in_eq9(out: dict) -> str:
    """How a model-(9) run is smaller than Sec. 5.3's three layers, or ""."""
    L = out["layers"]
    return ("" if L >= PAPER_LAYERS else
            f"{L} layers of (9) for the paper's three (Sec. 5.3); --budget default trains "
            f"three")


_S53 = ("d = 5, n = 20, Sigma = U^T D^2 U, D = diag(1, 1, 0.5, 0.25, 1), w* ~ N(0, Sigma^{-1})",
        "three attention layers of eq. (9) (A_0, A_1, A_2), L-BFGS from Gaussian init")

FIG1 = Claim(
    id="ahn2023.fig1", title="Sec. 5.3, Fig. 1: training (9) converges to S of Theorem 4",
    paper=PAPER,
    statement=(r"Dist$(\Sigma^{1/2}A_i\Sigma^{1/2},I)\to0$, Dist$(A_i,I)$ stays constant, "
               r"and the loss converges (to an almost-0 value)."),
    assumptions=_S53, formulas=(), checks={"train": fig1_train}, setting=THM4_SETTING)
FIG2 = Claim(
    id="ahn2023.fig2", title="Sec. 5.3, Fig. 2: learned weights match the stationary point of Thm. 4",
    paper=PAPER,
    statement=r"At the end of training $\Sigma^{1/2}A_i\Sigma^{1/2}=c_iI$ at a stationary point.",
    assumptions=_S53, formulas=(), checks={"train": fig2_train}, setting=THM4_SETTING)
