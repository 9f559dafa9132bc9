"""ahn2023 Figures 1-4: the experiments of Secs. 5.3 (model (9), n = 20) and 6.1 (model (13), n = 10).

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

from functools import lru_cache

import numpy as np
import torch

from models.device import runtime, randn
from models.lsa import LSAConfig, LinearTransformer
from models.metrics import dist_to_identity
from models.progress import Progress
from models.sampler import PromptLaw, sample_prompts
from models.trainers import optimise, optimise_batched
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, as_stand_ins, combine

from ..kit.figures import (Mark, Panel, PaperFigure, Series, across_runs, figure_entry,
                           per_index)

from . import eq13_population as eqp
from . import sparse
from .multilayer import D_EXPERIMENT, THM4_SETTING, THM5_SETTING, cpu_threads
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
    cp = sparse.newton_mp(layers, model, n, d, best["end"], digits=20)
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


# budget -> seeds and L-BFGS steps of the exact-loss run, batch, seeds and steps of the
# fixed-batch run (Figs. 1 and 2)
EQ9_BUDGETS = {
    "quick": dict(seeds=3, steps=150, batch=1000, sampled_seeds=1, sampled_steps=10),
    "default": dict(seeds=5, steps=400, batch=4000, sampled_seeds=2, sampled_steps=150),
    "paper": dict(seeds=5, steps=1000, batch=20000, sampled_seeds=5, sampled_steps=500),
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
            As = ((A + A.transpose(-1, -2)) / 2).detach().cpu().double().numpy()
            if step % 5 == 0 or step == 1:
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
    for b in range(ctx_b["sampled_seeds"]):
        model, _, res = _fit_fixed_batch(S[b], n, L, "eq9", ctx_b["batch"],
                                         ctx_b["sampled_steps"], rt, seed + 100 + b,
                                         seed + 200 + b, "ahn2023 Fig. 1", progress)
        Am = ((model.A + model.A.transpose(-1, -2)) / 2).detach().cpu().double()
        env = {"Sigma": torch.tensor(S[b]), "Sigma_inv": torch.linalg.inv(torch.tensor(S[b]))}
        env.update({f"A_{i}": Am[i] for i in range(L)})
        sampled.append({"seed_index": b, "batch": ctx_b["batch"],
                        "population_loss_of_trained": float(compiled(env, {"n": n})),
                        **_metrics(S[b], Am.numpy()), **res.summary(curve_points=20)})
    return {"runs": runs, "curves": curves, "g_star": star, "sampled": sampled,
            "dist_sigma_inv": [dist_to_identity(torch.tensor(np.linalg.inv(s))) for s in S],
            "n": n, "d": d, "layers": L, "runtime": rt.describe(), "seeds": B}


def _fit_fixed_batch(sigma: np.ndarray, n: int, layers: int, parametrisation: str, batch: int,
                     steps: int, rt, data_seed: int, init_seed: int, label: str, progress: bool):
    """L-BFGS on the squared error of one fixed batch of prompts (x ~ N(0, Sigma), w* ~ N(0,
    Sigma^{-1})) through the real forward pass, from a Gaussian init, as the paper trains.
    Returns (model, law, TrainResult)."""
    sig = torch.tensor(sigma)
    law = PromptLaw(sigma=sig, n=n, w_cov=torch.linalg.inv(sig))
    pr = sample_prompts(law, batch, rt.generator(data_seed), dtype=rt.dtype, device=rt.device)
    model = LinearTransformer(LSAConfig(d=len(sigma), layers=layers,
                                        parametrisation=parametrisation),
                              init_scale=INIT_SCALE, generator=rt.generator(init_seed),
                              dtype=rt.dtype, device=rt.device)
    Z = pr.Z()
    with Progress(steps, f"{label} fixed-batch L-BFGS", progress) as bar:
        res = optimise(lambda: ((model.predict(Z) - pr.yq) ** 2).mean(), model.parameters(),
                       method="lbfgs", steps=steps, progress=bar.callback())
    return model, law, res


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
        worst = max(worst, err)
        rows.append({"seed_index": r["seed_index"], "learned_scales_in_layer_order":
                     r["scale_whitened"], "sorted": c, "relative_error_to_a*": err,
                     "dist_whitened": r["dist_whitened"]})
    ok = worst <= DIST_EXACT
    figure = figure_entry(lambda: fig2_figure(rows, a_star, out))
    return combine([Finding("learned_scales_match_a*", ok,
                            {"a*_sorted": a_star, "runs": rows, "max_relative_error": worst,
                             "threshold": DIST_EXACT,
                             "note": "g is symmetric in (a_0, a_1, a_2) (Lemma 8), so the "
                                     "layer order of the scales is not determined"},
                            None if ok else {"a*": a_star, "runs": rows},
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


# model (13): the exact-loss run has two layers (three are beyond the moment kernel, degree 54)
STAND_IN_EQ13 = ("two layers of (13) on the exact loss for the paper's three (Sec. 6.1); "
                 "--budget default and paper train three layers on a population-accurate "
                 "objective")

# the three-layer population runs: "the loss converges to a critical value" within
# max(3 standard errors, LOSS_REL_TOL).  Theorem 5 makes S critical in the off-S directions, so
# a trained point at whitened distance delta from S lies O(delta^2) above g at its projection
# (about 1% at the delta ~ 0.04 the final sample leaves, measured), and the estimate's own
# Wishart-tail error is a few 1e-3 relative (``eq13_population.draw_covariates``); 2% is still
# below the gaps between the critical values of g the restarts find (0.0393, 0.0552, 0.0585:
# 40% and 6%), so it says which critical value the run reached.
LOSS_REL_TOL = 0.02


# ------------------------------------------------------------------------------------------------
# Model (13): exact-loss training (two layers), population training (three layers), and the
# paper's fixed-batch training (three layers)
# ------------------------------------------------------------------------------------------------
# budget -> the exact-loss run (quick: two layers, seeds, L-BFGS steps), the three-layer
# population run (default, paper: ``_train_eq13_population``) and the fixed-batch run (paper)
EQ13_BUDGETS = {
    "quick": dict(exact_layers=2, seeds=3, steps=400, dist=DIST_SAMPLED, sampled=None,
                  population=None),
    # 77 s wall for Figs. 3 and 4 together on one core of a shared 2-core cpu (61 s training)
    "default": dict(dist=DIST_SAMPLED, sampled=None,
                    population=dict(seeds=3, stages=3, steps=300, batch=500, final_batch=4000,
                                    polish=dict(steps=400, batch=1000, lr=2e-3, lr_final=1e-4),
                                    eval_draws=120_000)),
    # for a GPU: 5 seeds x 64000 draws per L-BFGS evaluation in the last stage, 5 x 32000 per
    # Adam step (a few GB in float64); 234 s on an H200 (L-BFGS 44 s, Adam 180 s), hours on a
    # cpu.  The fixed-batch run costs ~0.3 s per L-BFGS step per seed there (H200).
    "paper": dict(dist=DIST_SAMPLED, sampled=dict(seeds=2, batch=20000, steps=200),
                  population=dict(seeds=5, stages=4, steps=1600, batch=1000, final_batch=64000,
                                  polish=dict(steps=4000, batch=32000, lr=2e-3, lr_final=1e-5),
                                  eval_draws=4_000_000)),
}


@lru_cache(maxsize=None)
def eq13_loss(layers: int):
    """f(A, B) of model (13) at Sigma = I, w* ~ N(0, I), derived by the moment kernel (compiled).

    With R = Sigma^{1/2}, x = R x~ and w* = R^{-1} w~ the forward pass maps to the same pass on the
    whitened prompt with A~_i = R A_i R and B~_i = R^{-1} B_i R, so f_Sigma(A, B) = f_I(A~, B~)
    exactly: the same function of the trained (A_i, B_i), with 555 instead of 2613 terms at two
    layers (``tests/proofs_checks/test_ahn2023_figures.py`` checks the identity against the
    Sigma-derived loss)."""
    return sparse.full_loss(layers, "eq13", isotropic=True, w_prior="identity").compile()


def eq13_population_loss(layers: int, n: int, R: torch.Tensor, A: torch.Tensor, B: torch.Tensor):
    """f_Sigma(A, B) for batched A, B (batch, layers, d, d), A symmetric, R = Sigma^{1/2}."""
    Ri = torch.linalg.inv(R)
    env = {f"A_{i}": R @ A[:, i] @ R for i in range(layers)}
    env.update({f"B_{i}": Ri @ B[:, i] @ R for i in range(layers)})
    return eq13_loss(layers)(env, {"n": n, "d": A.shape[-1]})


@lru_cache(maxsize=None)
def train_eq13(budget: str, seed: int, device: str, progress: bool) -> dict:
    """Figures 3 and 4 share this run (cached per process)."""
    with cpu_threads(device):
        return _train_eq13(budget, seed, device, progress)


def _train_eq13(budget: str, seed: int, device: str, progress: bool) -> dict:
    b = EQ13_BUDGETS[budget]
    rt = runtime(device)
    out = (_train_eq13_exact(b, seed, rt, progress) if b["population"] is None else
           _train_eq13_population(b, seed, rt, progress))
    out["fixed_batch_three_layers"] = ([] if b["sampled"] is None else
                                       _train_eq13_sampled(b["sampled"], seed, rt, progress))
    return out


def _train_eq13_exact(b: dict, seed: int, rt, progress: bool) -> dict:
    """L-BFGS on the exact population loss of two layers (``eq13_population_loss``)."""
    n, d, L = 10, 5, b["exact_layers"]
    K = b["seeds"]
    S = sigmas(seed + 7, K, d)
    R = torch.tensor(np.array([_sqrt(s) for s in S]), dtype=rt.dtype, device=rt.device)
    gen = rt.generator(seed + 11)
    A = (INIT_SCALE * randn(K, L, d, d, generator=gen, dtype=rt.dtype,
                                  device=rt.device)).requires_grad_()
    Bw = (INIT_SCALE * randn(K, L, d, d, generator=gen, dtype=rt.dtype,
                                   device=rt.device)).requires_grad_()

    def sym(M):
        return (M + M.transpose(-1, -2)) / 2

    def loss():
        return eq13_population_loss(L, n, R, sym(A), Bw)

    def snapshot():
        As = sym(A).detach().cpu().double().numpy()
        Bs = Bw.detach().cpu().double().numpy()
        return [_metrics(S[k], As[k], Bs[k][:L - 1]) for k in range(K)]

    curves: list = []
    with Progress(b["steps"], "ahn2023 Fig. 3/4 exact-loss L-BFGS", progress) as bar:
        show = bar.callback()

        def track(step, losses):
            if step % 25 == 0 or step == 1:
                ms = snapshot()
                curves.append({"step": step, "loss": losses.detach().cpu().double().tolist(),
                               **{key: [m[key] for m in ms]
                                  for key in ("dist_whitened", "dist_B")}})
            show(step, losses)

        results = optimise_batched(loss, [A, Bw], method="lbfgs", steps=b["steps"],
                                   progress=track)
    final = loss().detach().cpu().double().numpy()
    runs = []
    for k, m in enumerate(snapshot()):
        r = {"seed_index": k, "final_loss": float(final[k]), **m,
             **results[k].summary(curve_points=20)}
        r.pop("curve", None)
        r["critical_point_of_g"] = _nearest_critical_point(L, n, d, m)
        runs.append(r)
    return {"runs": runs, "curves": curves, "g_star": restricted_star(n, d, L, "eq13"),
            "n": n, "d": d, "layers": L, "seeds": K, "steps": b["steps"],
            "dist_threshold": b["dist"], "runtime": rt.describe(), "objective": "exact",
            "dist_sigma_inv": [dist_to_identity(torch.tensor(np.linalg.inv(s))) for s in S]}


def _train_eq13_population(b: dict, seed: int, rt, progress: bool) -> dict:
    """Three layers of (13) (A_i symmetric, B_i free), K seeds at once, trained on f_Sigma by
    ``eq13_population.train_population`` (L-BFGS stages on fresh tail-stretched samples, then
    Adam on fresh draws every step with the S-part of the loss exact), then scored by an
    independent Monte Carlo of eval_draws fresh draws (``population_loss``: mean, standard
    error), the metrics of Fig. 3 and Newton on grad g = 0 (``_nearest_critical_point``).

    The init is the paper's: INIT_SCALE * Gaussian (A_i, B_i) from ``rt.generator(seed + 11)``
    (cpu, as ``_train_eq13_exact``).  The optimiser runs in the whitened coordinates (R A_i R,
    R^{-1} B_i R), R = Sigma^{1/2}, the same function of the same weights (``eq13_loss``):
    L-BFGS is not invariant under that linear change of variables, and in the paper's
    coordinates A_2 = a_2 Sigma^{-1} has entries up to 16 |a_2| ~ 190, which 300 iterations do
    not reach (measured: loss 0.127 against 0.055 whitened).  Timing: default 61 s training,
    77 s for the check (one thread of a shared 2-core cpu); paper 234 s on an H200."""
    p = b["population"]
    n, d, L, K = 10, 5, PAPER_LAYERS, p["seeds"]
    S = sigmas(seed + 7, K, d)
    R = torch.tensor(np.array([_sqrt(s) for s in S]), dtype=rt.dtype, device=rt.device)
    Ri = torch.linalg.inv(R).unsqueeze(1)
    gen = rt.generator(seed + 11)
    A0 = INIT_SCALE * randn(K, L, d, d, generator=gen, dtype=rt.dtype, device=rt.device)
    B0 = INIT_SCALE * randn(K, L, d, d, generator=gen, dtype=rt.dtype, device=rt.device)
    At, Bt = (t.detach().clone().requires_grad_() for t in eqp.whiten(R, eqp.sym(A0), B0))
    data = rt.data_generator(seed + 13)

    def paper_coordinates():
        with torch.no_grad():
            A = Ri @ eqp.sym(At) @ Ri
            B = R.unsqueeze(1) @ Bt @ Ri
        return A.cpu().double().numpy(), B.cpu().double().numpy()

    curves: list = []

    def snapshot(step: int) -> None:
        As, Bs = paper_coordinates()
        ms = [_metrics(S[k], As[k], Bs[k][:L - 1]) for k in range(K)]
        curves.append({"step": step, **{key: [m[key] for m in ms]
                                        for key in ("dist_whitened", "dist_B")}})

    snapshot(0)
    total = p["steps"] + p["polish"]["steps"]
    with Progress(total, "ahn2023 Fig. 3/4 three-layer population training", progress) as bar:
        trained = eqp.train_population(At, Bt, n, p["stages"], p["steps"], p["batch"],
                                       p["final_batch"], data, polish=p["polish"],
                                       progress=bar.callback(), snapshot=snapshot)
    mean, se = eqp.population_loss(eqp.sym(At).detach(), Bt.detach(), n, p["eval_draws"], data)
    mean, se = mean.cpu().double().numpy(), se.cpu().double().numpy()
    As, Bs = paper_coordinates()
    runs = []
    for k in range(K):
        m = _metrics(S[k], As[k], Bs[k][:L - 1])
        runs.append({"seed_index": k, "final_loss": float(mean[k]),
                     "final_loss_se": float(se[k]), "status": trained["status"][k],
                     "reason": trained["reason"][k], "steps": total, **m,
                     "training_stages": [{key: st[key][k] if isinstance(st[key], list) else
                                          st[key] for key in st} for st in trained["stages"]],
                     "critical_point_of_g": _nearest_critical_point(L, n, d, m)})
    return {"runs": runs, "curves": curves, "g_star": restricted_star(n, d, L, "eq13"),
            "n": n, "d": d, "layers": L, "seeds": K, "steps": total,
            "dist_threshold": b["dist"], "runtime": rt.describe(), "objective": "population",
            "population": {**p, "seconds_training": trained["seconds"],
                           "batches": eqp.stage_sizes(p["stages"], p["batch"],
                                                      p["final_batch"]),
                           "loss_rel_tol": LOSS_REL_TOL},
            "dist_sigma_inv": [dist_to_identity(torch.tensor(np.linalg.inv(s))) for s in S]}


def _nearest_critical_point(layers: int, n: int, d: int, metrics: dict) -> dict:
    """Newton on grad g = 0 (g = f restricted to S) from the trained scales (a_i, b_i).  Where
    Newton leaves (moves by more than DIST_SAMPLED relative, or fails: g has a valley of
    curvature ~1e-3 at three layers), descent on g from the same start and then Newton."""
    x0 = list(metrics["scale_whitened"]) + list(metrics["scale_B"])

    def newton(start, method):
        try:
            cp = sparse.newton_mp(layers, "eq13", n, d, start, digits=20)
        except Exception as exc:  # noqa: BLE001 - Newton may leave the basin; reported
            return {"start": x0, "method": method, "error": f"{type(exc).__name__}: {exc}"}
        end = cp.floats()
        return {"start": x0, "method": method, "point": end.tolist(), "value": float(cp.value),
                "grad_norm": float(cp.grad_norm),
                "hessian_eigenvalues": [float(e) for e in cp.hessian_eigenvalues],
                "relative_distance_from_start": float(np.linalg.norm(end - x0)
                                                      / np.linalg.norm(end))}

    first = newton(x0, "newton")
    if first.get("relative_distance_from_start", float("inf")) <= DIST_SAMPLED:
        return first
    descent = sparse.numeric_optimum(n, d, layers, "eq13", [x0])[0]["end"]
    second = newton(descent, "descent on g, then newton")
    second["newton_alone"] = first
    return second


def _train_eq13_sampled(b: dict, seed: int, rt, progress: bool) -> list:
    """Three layers of (13) by L-BFGS on one fixed batch of prompts, as the paper trains; the
    population loss of the result is a Monte Carlo estimate of E[e^2 | X] over fresh X."""
    n, d, L = 10, 5, 3
    S = sigmas(seed + 7, b["seeds"], d)
    out = []
    for k in range(b["seeds"]):
        model, _, res = _fit_fixed_batch(S[k], n, L, "eq13", b["batch"], b["steps"], rt,
                                           seed + 300 + k, seed + 400 + k, "ahn2023 Fig. 3/4",
                                           progress)
        As = ((model.A + model.A.transpose(-1, -2)) / 2).detach().cpu().double().numpy()
        Bs = model.B.detach().cpu().double().numpy()
        Rk = torch.tensor(_sqrt(S[k]), dtype=rt.dtype, device=rt.device).unsqueeze(0)
        At, Bt = eqp.whiten(Rk, torch.tensor(As, dtype=rt.dtype, device=rt.device)[None],
                            torch.tensor(Bs, dtype=rt.dtype, device=rt.device)[None])
        mean, se = eqp.population_loss(At, Bt, n, 100_000, rt.data_generator(seed + 500 + k))
        out.append({"seed_index": k, "batch": b["batch"], "layers": L,
                    "population_loss_mc": float(mean[0]), "population_loss_se": float(se[0]),
                    **_metrics(S[k], As, Bs[:L - 1]), **res.summary(curve_points=20)})
    return out


def _eq13_undecided(out: dict, name: str) -> TierResult | None:
    """An undecided result when every exact-loss run diverged."""
    ok = [r for r in out["runs"] if r["status"] != "diverged"]
    if ok:
        return None
    return combine([Finding(name, None, {"runs": out["runs"]}, reason=out["runs"][0]["reason"])],
                   {"restricted_optimum": out["g_star"], "runtime": out["runtime"]})


def _eq13_setting(out: dict, seed: int) -> dict:
    base = {"n": out["n"], "d": out["d"], "layers": out["layers"], "seeds": out["seeds"],
            "seed": seed}
    if out.get("objective") == "population":
        p = out["population"]
        return {**base, "population": p, "lbfgs_steps": p.get("steps"),
                "adam_steps": (p.get("polish") or {}).get("steps"),
                "objective": "f(A, B) of three layers of (13), sampled: E[e^2 | X] exact over "
                             "(w*, x_q), X drawn fresh (tail-stretched, weighted) at each L-BFGS "
                             "stage and at each Adam step, the S-part g exact from Wishart "
                             "moments in the Adam phase and the evaluation (eq13_population)",
                "note": "the plain Monte Carlo mean of E[e^2 | X] misses a Wishart tail "
                        "(lambda_max(XX^T/n) ~ 9-13, probability ~1e-10) that carries 2.5% of "
                        "g*: 10^6 plain draws give 0.0383 +- 0.00007 at the minimiser, g* = "
                        "0.039259; L-BFGS on one fixed batch of plain prompts (the paper's "
                        "training, 'fixed_batch_three_layers' at --budget paper) ends at sample "
                        "loss 0.05 with population loss > 1"}
    return {**base, "lbfgs_steps": out["steps"],
            "objective": "the exact population loss f(A, B) derived by the moment kernel",
            "note": "three layers of (13) have an error of degree 27 in X (degree 54 in the loss), "
                    "beyond Isserlis, so the exact-loss run uses two layers (Theorem 5 holds for "
                    "every k); --budget default and paper train three layers on a "
                    "population-accurate objective"}


def fig3_train(ctx: Context) -> TierResult:
    """Fig. 3: Dist(B_i, I) -> 0, Dist(Sigma^{1/2} A_i Sigma^{1/2}, I) -> 0, Dist(A_i, I) stays,
    and the loss converges: to a critical value of f on S (Theorem 5's set)."""
    out = train_eq13(ctx.budget.name, ctx.seed, ctx.device, bool(ctx.progress))
    undecided = _eq13_undecided(out, "convergence_to_S")
    if undecided is not None:
        return undecided
    return fig3_decide(out, ctx.seed)


def fig3_decide(out: dict, seed: int) -> TierResult:
    """Fig. 3's findings from a model-(13) run.  A metric missed by a run that stopped on its
    step budget (not converged) is undecided, not a counterexample: more steps decide."""
    ok_runs = [r for r in out["runs"] if r["status"] != "diverged"]
    thr = out["dist_threshold"]
    dB = float(np.mean([max(r["dist_B"]) for r in ok_runs]))
    dw = float(np.mean([max(r["dist_whitened"]) for r in ok_runs]))
    dp = float(np.mean([min(r["dist_plain"]) for r in ok_runs]))
    ds = float(np.mean(out["dist_sigma_inv"]))
    first = out["curves"][0]
    dB0 = float(np.mean([max(v) for v in first["dist_B"]]))
    dw0 = float(np.mean([max(v) for v in first["dist_whitened"]]))
    # the trained loss is a critical value of g = f|_S: Newton on grad g = 0 from the trained
    # scales (a_i, b_i) lands next to them, at the same loss (within the Monte Carlo error and
    # LOSS_REL_TOL for a population run, within thr for an exact-loss run)
    crit = [r["critical_point_of_g"] for r in ok_runs]
    gaps = [abs(r["final_loss"] / c["value"] - 1) if "value" in c else float("inf")
            for r, c in zip(ok_runs, crit)]
    allowed = [max(3 * r["final_loss_se"] / abs(c["value"]), LOSS_REL_TOL)
               if "final_loss_se" in r and "value" in c else thr for r, c in zip(ok_runs, crit)]
    moved = [c.get("relative_distance_from_start", float("inf")) for c in crit]
    loss_ok = all(g <= a for g, a in zip(gaps, allowed)) and max(moved) <= thr
    g_star = out["g_star"]["g_star"]
    findings = [
        Finding("B_distance_to_identity", dB <= thr,
                {"mean_over_seeds_of_max_i_dist_B_I": dB, "at_step_1": dB0, "threshold": thr},
                None if dB <= thr else {"runs": ok_runs, "seed": seed},
                "" if dB <= thr else "B_i are not close to multiples of I"),
        Finding("whitened_distance_to_identity", dw <= thr,
                {"mean_over_seeds_of_max_i_dist": dw, "at_step_1": dw0, "threshold": thr},
                None if dw <= thr else {"runs": ok_runs, "seed": seed},
                "" if dw <= thr else "A_i is not close to a multiple of Sigma^{-1}"),
        Finding("plain_distance_stays", dp >= 0.5 * ds,
                {"mean_over_seeds_of_min_i_dist_A_I": dp, "dist_sigma_inverse_I": ds},
                None if dp >= 0.5 * ds else {"runs": ok_runs},
                "" if dp >= 0.5 * ds else "A_i approaches a multiple of I (plain GD)"),
        Finding("loss_converges_to_a_critical_value_on_S", loss_ok,
                {"final_losses": [r["final_loss"] for r in ok_runs],
                 "critical_values_of_g_next_to_the_trained_scales":
                     [c.get("value") for c in crit],
                 "final_loss_standard_errors": [r.get("final_loss_se") for r in ok_runs],
                 "relative_gaps": gaps, "allowed_relative_gaps": allowed,
                 "relative_newton_moves": moved, "threshold": thr,
                 "g_star_min_over_S": g_star, "loss_at_0": out["d"],
                 "relative_gaps_to_g_star": [r["final_loss"] / g_star - 1 for r in ok_runs],
                 "global_minimum_on_S_reached": [
                     abs(r["final_loss"] / g_star - 1) <= (a if "final_loss_se" in r else 1e-3)
                     for r, a in zip(ok_runs, allowed)],
                 "note": "the paper reads Fig. 3c as convergence to the global minimum; the "
                         "loss does not reach 0 (g* > 0 at n = 10), and a run that stops at a "
                         "local minimum of g on S is still a point of S"},
                None if loss_ok else {"runs": ok_runs, "critical_points": crit},
                "" if loss_ok else "the trained loss is not a critical value of f on S"),
    ]
    if not all(r["status"] == "converged" for r in ok_runs):
        findings = [f if f.ok is not False else Finding(
            f.name, None, f.evidence,
            reason=f"{f.reason} within {out['steps']} training steps, and the runs had not "
                   f"converged (a larger --budget decides"
                   + ("; --budget paper is sized for a GPU)" if out.get("objective") ==
                      "population" else ")")) for f in findings]
    findings = as_stand_ins(findings, STAND_IN_EQ13 if out["layers"] < PAPER_LAYERS else "")
    return combine(findings, {"setting": _eq13_setting(out, seed), "runs": out["runs"],
                              "curves": out["curves"], "restricted_optimum": out["g_star"],
                              "fixed_batch_three_layers": out["fixed_batch_three_layers"],
                              "runtime": out["runtime"],
                              **figure_entry(lambda: fig3_figure(out))})


def _eq13_source(out: dict) -> str:
    how = ("L-BFGS on the exact population loss derived by the moment kernel" if
           out.get("objective") != "population" else
           "L-BFGS stages and Adam on the population-accurate objective (eq13_population)")
    return (f"{out['layers']} layers of (13), {how} (n = {out['n']}, d = {out['d']}, "
            f"{out['seeds']} seeds, Sigma = U^T D^2 U per seed), the mean over the seeds with a "
            f"band from the least to the largest"
            + ("; two layers stand in for the paper's three at this budget"
               if out["layers"] < PAPER_LAYERS else ""))


def fig3_figure(out: dict) -> PaperFigure:
    """Fig. 3's panels: Dist(B_i, I), Dist(Sigma^{1/2} A_i Sigma^{1/2}, I) per layer against the
    iteration, and the loss (exact-loss runs record it) against g* = min over S."""
    curves = out["curves"]
    panels = [Panel("B_i -> multiples of I", "iteration", r"$\mathrm{Dist}(B_i, I)$",
                    _per_layer(curves, "dist_B", "$B_{i}$"), y_log=True),
              Panel("whitened A_i -> multiples of I", "iteration", _WHITENED,
                    _per_layer(curves, "dist_whitened", "$A_{i}$"), y_log=True)]
    if curves and "loss" in curves[0]:
        panels.append(_loss_panel(curves, out["g_star"]["g_star"], "loss"))
    return PaperFigure("Fig. 3", panels, _eq13_source(out) +
                       "; g* = min over S of the derived loss (Newton at 20 digits)",
                       "the loss converges to an almost-0 value, B_i -> I and A_i -> Sigma^{-1}")


def fig4_train(ctx: Context) -> TierResult:
    """Fig. 4 / Sec. 6.1 observation 2: |A_0| < |A_1| < ... (increasing in the layer index),
    read in the whitened scales a_i = tr(Sigma^{1/2} A_i Sigma^{1/2}) / d."""
    out = train_eq13(ctx.budget.name, ctx.seed, ctx.device, bool(ctx.progress))
    undecided = _eq13_undecided(out, "increasing_magnitudes")
    if undecided is not None:
        return undecided
    ok_runs = [r for r in out["runs"] if r["status"] != "diverged"]
    rows = [{"seed_index": r["seed_index"], "scale_whitened": r["scale_whitened"],
             "frobenius_norm": r["frobenius_norm"], "scale_B": r["scale_B"],
             "increasing": bool(np.all(np.diff(np.abs(r["scale_whitened"])) > 0))}
            for r in ok_runs]
    L = out["layers"]
    star = out["g_star"]["point"]
    ok = all(r["increasing"] for r in rows)
    if not ok and not all(r["status"] == "converged" for r in ok_runs):
        ok = None  # a run stopped on its step budget: more steps decide
    return combine([Finding("increasing_magnitudes", ok,
                            {"runs": rows, "restricted_optimum_a*_b*": star,
                             "restricted_optimum_increasing":
                                 bool(np.all(np.diff(np.abs(star[:L])) > 0)),
                             "fixed_batch_three_layers": [
                                 {"seed_index": r["seed_index"],
                                  "scale_whitened": r["scale_whitened"],
                                  "increasing": bool(np.all(np.diff(np.abs(
                                      r["scale_whitened"])) > 0))}
                                 for r in out["fixed_batch_three_layers"]]},
                            None if ok is not False else {"runs": rows, "seed": ctx.seed},
                            "" if ok else "the trained |a_i| are not increasing in i"
                            + ("" if ok is False else " and the runs had not converged"),
                            stand_in=STAND_IN_EQ13 if L < PAPER_LAYERS else "")],
                   {"setting": _eq13_setting(out, ctx.seed),
                    **figure_entry(lambda: fig4_figure(rows, star[:L], out))})


def fig4_figure(rows: list, a_star: list, out: dict) -> PaperFigure:
    """Fig. 4's content: the magnitudes |a_i| of the whitened A_i against the layer index, per
    seed, beside the minimiser on S (and the paper-budget fixed-batch runs, where trained)."""
    layers = list(range(len(a_star)))
    series = [Series(r"minimiser on S, $|a^\star_i|$ (exact)", layers,
                     [abs(a) for a in a_star], points=False)]
    series += [Series(f"seed {r['seed_index']}", layers, [abs(a) for a in r["scale_whitened"]],
                      "trained", group=f"s{r['seed_index']}") for r in rows]
    near = [(r["seed_index"], r["critical_point_of_g"]["point"][:len(layers)])
            for r in out["runs"] if "point" in r.get("critical_point_of_g", {})]
    series += [Series("critical point next to it (exact)" if i == 0 else "", layers,
                      [abs(a) for a in point], points=True, group=f"s{k}")
               for i, (k, point) in enumerate(near)]
    series += [Series(f"fixed batch {r['seed_index']}", list(range(len(r["scale_whitened"]))),
                      [abs(a) for a in r["scale_whitened"]], "trained", group=f"f{r['seed_index']}")
               for r in out.get("fixed_batch_three_layers", [])]
    return PaperFigure("Fig. 4", (Panel("magnitude of the learned $A_i$", "layer i",
                                        r"$|a_i|$, $\Sigma^{1/2}A_i\Sigma^{1/2}\approx a_i I$",
                                        series, y_log=True),),
                       _eq13_source(out) + "; a_i = tr(Sigma^{1/2} A_i Sigma^{1/2}) / d at the "
                       "end of training; the minimiser on S and the critical point of the "
                       "derived loss on S next to each run (open diamonds, in the run's colour) "
                       "by Newton at 20 digits",
                       "A_0, A_1, A_2 have increasing magnitude, in that order")


_S53 = ("d = 5, n = 20, Sigma = U^T D^2 U, D = diag(1, 1, 0.5, 0.25, 1), w* ~ N(0, Sigma^{-1})",
        "three attention layers of eq. (9) (A_0, A_1, A_2), L-BFGS from Gaussian init")
_S61 = ("d = 5, n = 10, Sigma = U^T D^2 U per seed, w* ~ N(0, Sigma^{-1})",
        "three attention layers of eq. (13), L-BFGS from Gaussian init")

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
FIG3 = Claim(
    id="ahn2023.fig3", title="Sec. 6.1, Fig. 3: training (13) converges to S of Theorem 5",
    paper=PAPER,
    statement=(r"Dist$(B_i,I)\to0$ ($i=0,1$), Dist$(\Sigma^{1/2}A_i\Sigma^{1/2},I)\to0$, "
               r"and the loss converges (to an almost-0 value)."),
    assumptions=_S61, formulas=(), checks={"train": fig3_train}, setting=THM5_SETTING)
FIG4 = Claim(
    id="ahn2023.fig4", title="Sec. 6.1, Fig. 4: A₀, A₁, A₂ have increasing magnitude",
    paper=PAPER,
    statement=r"The trained $A_0, A_1, A_2$ have increasing magnitude, in that order.",
    assumptions=_S61, formulas=(), checks={"train": fig4_train}, setting=THM5_SETTING)
