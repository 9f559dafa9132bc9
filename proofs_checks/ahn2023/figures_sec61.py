"""ahn2023 Figures 3 and 4: the experiments of Sec. 6.1 (model (13), n = 10), trained as
``figures`` describes (the setting and the training modes shared with Sec. 5.3 live there).

Model (13): with three layers the error has degree 27 in X, beyond Isserlis.  At --budget quick
the exact-loss run uses two layers (the full-matrix loss, evaluated through whitening,
``eq13_loss``), a stand-in; at default and paper the paper's three layers are trained on a
population-accurate objective (``eq13_population``) and decide; at paper the three layers are
also trained on one fixed batch, as the paper does, for comparison.  The trained weights are
compared with the critical points of the exactly derived loss on S
(``sparse.restricted_value_torch``, ``sparse.newton_mp``).
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np
import torch

from models.device import runtime, randn
from models.metrics import dist_to_identity
from models.progress import Progress
from models.trainers import optimise_batched
from verify.claim import Claim, Context, TierResult
from verify.evidence import Finding, as_stand_ins, combine

from ..kit.figures import Panel, PaperFigure, Series, figure_entry
from ..kit.trend import Indexed, is_monotone, monotone

from . import eq13_population as eqp
from . import sparse
from .figures import (DIST_SAMPLED, INIT_SCALE, PAPER_LAYERS, _WHITENED, fit_fixed_batches,
                      _loss_panel, _metrics, _per_layer, _sqrt, restricted_star, sigmas)
from models.device import cpu_threads

from .multilayer import THM5_SETTING
from .one_layer import PAPER

# model (13): the exact-loss run has two layers (three are beyond the moment kernel, degree 54)
STAND_IN_EQ13 = ("two layers of (13) on the exact loss for the paper's three (Sec. 6.1); "
                 "--budget default and paper train three layers on a population-accurate "
                 "objective")

# the three-layer population runs: "the loss converges to a critical value" within
# max(3 standard errors, LOSS_REL_TOL).  Theorem 5 makes S critical in the off-S directions, so
# a trained point at whitened distance delta from S lies O(delta^2) above g at its projection
# (about 1% at the delta ~ 0.04 the final sample leaves, measured), and the estimate's own
# Wishart-tail error is a few 1e-3 relative (``eq13_population.draw_grams``); 2% is still
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
    # Adam step (a few GB in float64); 234 s on an H200 with the token pass (L-BFGS 44 s, Adam
    # 180 s), before the Gram pass (7x less cpu time a step).  The fixed-batch run: 4000
    # L-BFGS iterations for both seeds at once (torch's L-BFGS ran 200 outer steps of up to
    # 20 per seed, ~0.3 s a step on the H200, one seed after the other)
    "paper": dict(dist=DIST_SAMPLED, sampled=dict(seeds=2, batch=20000, steps=4000),
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

    def loss():
        return eq13_population_loss(L, n, R, eqp.sym(A), Bw)

    def snapshot():
        As = eqp.sym(A).detach().cpu().double().numpy()
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
    K = b["seeds"]
    S = sigmas(seed + 7, K, d)
    out = []
    fits = fit_fixed_batches(S, n, L, "eq13", b["batch"], b["steps"], rt,
                             [seed + 300 + k for k in range(K)], [seed + 400 + k for k in range(K)],
                             "ahn2023 Fig. 3/4", progress)
    for k, fit in enumerate(fits):
        res = fit.result
        As = ((fit.A + fit.A.transpose(-1, -2)) / 2).detach().cpu().double().numpy()
        Bs = fit.B.detach().cpu().double().numpy()
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
             "frobenius_norm": r["frobenius_norm"], "scale_B": r["scale_B"]} for r in ok_runs]
    L = out["layers"]
    star = out["g_star"]["point"]
    found = monotone("increasing_magnitudes", [
        Indexed(range(L), np.abs(r["scale_whitened"]).tolist(), "layer",
                at={"seed_index": r["seed_index"]}) for r in ok_runs], "increasing", evidence={
        "runs": rows, "restricted_optimum_a*_b*": star,
        "restricted_optimum_increasing": is_monotone(np.abs(star[:L]).tolist(), "increasing"),
        "fixed_batch_three_layers": [
            {"seed_index": r["seed_index"], "scale_whitened": r["scale_whitened"],
             "increasing": is_monotone(np.abs(r["scale_whitened"]).tolist(), "increasing")}
            for r in out["fixed_batch_three_layers"]]},
        reason="the trained |a_i| are not increasing in i")
    if found.ok is False and not all(r["status"] == "converged" for r in ok_runs):
        found = Finding(found.name, None, found.evidence, reason=found.reason + " and the runs "
                        "had not converged")  # a run stopped on its step budget: more steps decide
    return combine([replace(found, stand_in=STAND_IN_EQ13 if L < PAPER_LAYERS else "")],
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


_S61 = ("d = 5, n = 10, Sigma = U^T D^2 U per seed, w* ~ N(0, Sigma^{-1})",
        "three attention layers of eq. (13), L-BFGS from Gaussian init")

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
