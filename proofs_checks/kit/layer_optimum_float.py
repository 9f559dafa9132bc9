"""Float64 and training tiers of the one-layer global-optimum check (``layer_optimum``).

numeric: the derived loss against a Monte Carlo of the real forward pass (at the stated point and
at a random one); the lifted gradient at the stated point from the derived polynomial, each
component against its own float64 rounding bound K eps G~ (``kit.rounding``); the same gradient by
Monte Carlo, z-tested entrywise; the stated risk against the derived loss.
train: L-BFGS on the derived loss from small random initialisations (all restarts batched), the
distance to the stated point in sym(b (x) A) (the identifiable parametrisation), spurious
stationary points with their Hessian spectrum; and sampled-prompt Adam on the real forward pass.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy
import torch

from models.device import randn, runtime
from models.exact import ExactLoss
from models.lsa import LSAConfig, LinearTransformer, lsa_forward, readout
from models.progress import Progress
from models.sampler import sample_prompts
from models.trainers import optimise_batched
from moments.montecarlo import Estimate, streaming_estimate, z_critical
from moments.poly import Poly
from verify.claim import Context, TierResult
from verify.evidence import Finding, combine, settle_le

from .layer_optimum import LayerOptimum, PointValues, exact_point, layer_loss
from .linear_icl import Instance, prompt_law, sampled_adam
from .pointwise import Unevaluable
from .rounding import EPS64, magnitude, rounding_factor

OVERFLOW = ("float64 cannot hold these numbers (the moments of this Sigma overflow or "
            "underflow); the symbolic tier decides exactly")
INIT_SCALE = 0.01  # small Gaussian init: reaches the global optimum far more often than O(1)
LEVEL = 0.999


def finite(*values) -> bool:
    return all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in values)


def sampled_budget(ctx: Context) -> tuple[int, int]:
    """(Adam steps, batch) of the sampled-prompt runs (evidence beside the exact-loss runs)."""
    return {"quick": (150, 1024), "default": (300, 2048)}.get(ctx.budget.name, (2000, 8192))


def float_point(spec: LayerOptimum, formulas, inst: Instance) -> tuple[np.ndarray, np.ndarray]:
    """The stated (b, A) at an instance in float64: b in R^{d+1}, A in R^{(d+1) x d}."""
    b, A = exact_point(spec.point, formulas, inst, inst.n)
    try:
        return (np.array(b.evalf(), dtype=float).ravel(), np.array(A.evalf(), dtype=float))
    except (TypeError, ValueError) as exc:  # a symbol left free, or a complex entry
        raise Unevaluable(f"the point is not real at {inst.spec}: {exc}") from exc


def _env(b, A, d: int) -> tuple[dict, dict]:
    return ({"Q_xx": A[:d], "q_yx": A[d:].T, "p_yx": b[:d].reshape(-1, 1)}, {"p_yy": b[d]})


@lru_cache(maxsize=None)
def _magnitude(which: str) -> Poly:
    """The derived polynomial with |coefficients|: at |inputs| it bounds the float64 rounding
    error of an evaluation, K eps p~(|x|)."""
    return magnitude(getattr(layer_loss(), which))


def loss_at(b, A, inst: Instance, magnitude: bool = False) -> float:
    """The derived loss f(b, A) at a float instance (``magnitude``: f~ at |b|, |A|, |Sigma|)."""
    if magnitude:
        b, A = np.abs(b), np.abs(A)
    env, scal = _env(b, A, inst.d)
    env["Sigma"] = np.abs(inst.sigma) if magnitude else inst.sigma
    poly = _magnitude("loss") if magnitude else layer_loss().loss
    return float(poly.evaluate(env, {"n": inst.n, **scal}))


def full_weights(b, A, rng, filler: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) with last row of P = b, first d columns of Q = A, random elsewhere (irrelevant)."""
    d = A.shape[1]
    P = filler * rng.standard_normal((d + 1, d + 1))
    Q = filler * rng.standard_normal((d + 1, d + 1))
    P[d, :] = b
    Q[:, :d] = A
    return P, Q


def _mc_forward(P, Q, inst: Instance, samples: int, seed: int, extra=None):
    """Monte Carlo of the real forward pass: squared error (and optional features) per prompt."""
    law = prompt_law(inst, "identity")
    gen = torch.Generator().manual_seed(seed)
    Pt, Qt = torch.tensor(P), torch.tensor(Q)
    mask = torch.zeros(inst.n + 1, inst.n + 1, dtype=torch.float64)
    mask[:inst.n, :inst.n] = torch.eye(inst.n, dtype=torch.float64)

    def draw(k):
        pr = sample_prompts(law, k, gen)
        Z = pr.Z()
        err = readout(lsa_forward(Z, [(Pt, Qt)], mask, inst.n)) + pr.yq
        cols = [err ** 2] + ([extra(pr, Z, err)] if extra is not None else [])
        return torch.cat([c.reshape(k, -1) for c in cols], dim=1).numpy()

    return streaming_estimate(draw, samples, chunk=20_000)


def lifted_gradient(inst: Instance, b, A, magnitude: bool | str = False) -> np.ndarray:
    """G_{klj} = 2 E[e C_kl x_qj] from the derived polynomial, in float64 (``magnitude``: G~ at
    |b|, |A|, |Sigma|, the scale of its rounding error; ``"pattern"``: G~ with every non-zero
    entry of b, A, Sigma set to 1, zero exactly where a component has no term)."""
    G = _magnitude("lifted_gradient") if magnitude else layer_loss().lifted_gradient
    d, sigma = inst.d, inst.sigma
    if magnitude == "pattern":
        b, A, sigma = ((np.asarray(x) != 0).astype(float) for x in (b, A, sigma))
    elif magnitude:
        b, A, sigma = np.abs(b), np.abs(A), np.abs(sigma)
    env, scal = _env(b, A, d)
    env["Sigma"] = sigma
    out = np.zeros((d + 1, d + 1, d))
    eye = np.eye(d)
    for k in range(d + 1):
        for l in range(d + 1):
            for j in range(d):
                px = eye[:, [k]] if k < d else np.zeros((d, 1))
                qx = eye[:, [l]] if l < d else np.zeros((d, 1))
                e = {**env, "p_x": px, "q_x": qx, "r": eye[:, [j]]}
                s = {**scal, "n": inst.n, "p_y": float(k == d), "q_y": float(l == d)}
                out[k, l, j] = G.evaluate(e, s)
    return out


def _sym(T):
    """C is symmetric: only sym_kl(T) is identifiable (numpy or torch, leading batch axes)."""
    return (T + T.swapaxes(-3, -2)) / 2


def numeric_tier(spec: LayerOptimum, ctx: Context) -> TierResult:
    inst = spec.setting.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("instance"))
    try:
        b, A = float_point(spec, ctx.formulas, inst)
    except Unevaluable as exc:
        return combine([Finding("point", False, {}, {"error": str(exc)},
                                f"{spec.what} cannot be formed: {exc}")])
    rng = ctx.rng("numeric-point")
    d = inst.d
    b_rand, A_rand = rng.standard_normal(d + 1) * 0.5, rng.standard_normal((d + 1, d)) * 0.5
    findings = [_loss_vs_monte_carlo(ctx, inst, rng, ((("paper_point", (b, A)),
                                                       ("random_point", (b_rand, A_rand)))))]
    findings.append(_gradient_float64(inst, b, A))
    findings.append(_gradient_monte_carlo(ctx, inst, b, A, rng))
    if spec.risk:
        findings.append(_risk_float64(spec, ctx, inst, b, A))
    return combine(findings, {"instance": inst.as_dict(), "optimal_loss": loss_at(b, A, inst),
                              "seed": ctx.seed})


def _loss_vs_monte_carlo(ctx, inst, rng, points) -> Finding:
    """Derived loss vs Monte Carlo of the real forward pass (Bonferroni over the points); the
    interval is widened by the float64 rounding of the exact value."""
    rows, ok = [], True
    k_loss = rounding_factor(layer_loss().loss, inst.d)
    for label, (bb, AA) in points:
        P, Q = full_weights(bb, AA, rng)
        mean, se = _mc_forward(P, Q, inst, ctx.budget.mc_samples, ctx.mc_seed("mc", label))
        est = Estimate(float(mean[0]), float(se[0]), ctx.budget.mc_samples)
        exact = loss_at(bb, AA, inst)
        rounding = k_loss * EPS64 * loss_at(bb, AA, inst, magnitude=True)
        if not finite(est.mean, est.se, exact, rounding):
            ok = None
        elif ok is not None:
            ok &= abs(est.mean - exact) <= z_critical(LEVEL, len(points)) * est.se + rounding
        rows.append({"point": label, "exact": exact, "z": est.z_score(exact),
                     "float64_rounding_of_exact": rounding, **est.as_dict(LEVEL, len(points))})
    reason = {None: OVERFLOW, True: "",
              False: "the derived loss is outside the Monte Carlo interval"}[ok]
    worst = max((abs(r["z"]) for r in rows if isinstance(r["z"], float)), default=0.0)
    return Finding("derived_loss_vs_monte_carlo", ok, {"comparisons": rows},
                   None if ok is not False else {"instance": inst.as_dict(), "rows": rows,
                                                 "seed": ctx.seed}, reason, sampled=True,
                   self_check=True,
                   summary=f"derived loss = Monte Carlo of the forward pass at {len(rows)} "
                           f"points (|z| <= {worst:.2g}, {ctx.budget.mc_samples:,} prompts each)")


def _gradient_float64(inst, b, A) -> Finding:
    """Each component of the lifted gradient at the point within its own rounding error
    K eps G~, so the test is as strict in Sigma's small-eigenvalue directions as in its large
    ones; components with no term at all are exactly zero (0 <= 0), and every other allowance
    below float64's resolution means the terms underflowed and decides nothing."""
    G = _sym(lifted_gradient(inst, b, A))
    structural = _sym(lifted_gradient(inst, b, A, magnitude="pattern")) == 0
    k_grad = rounding_factor(layer_loss().lifted_gradient, inst.d)
    bound = k_grad * EPS64 * _sym(lifted_gradient(inst, b, A, magnitude=True))
    ok, why = settle_le(np.abs(G), bound, exact=structural)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, np.abs(G) / np.where(bound > 0, bound, 1.0),
                         np.where(G == 0, 0.0, np.inf))
    finite_ratio = np.where(np.isfinite(ratio), ratio, -np.inf) if finite(G, bound) else ratio
    worst = float(np.nanmax(finite_ratio)) if np.size(ratio) else 0.0
    idx = np.unravel_index(int(np.nanargmax(finite_ratio)), G.shape)
    return Finding(
        "lifted_gradient_float64", ok,
        {"max_|G|/(K_eps_G~)": worst, "factor_K": k_grad, "eps": EPS64,
         "max_|G|": float(np.abs(G).max()),
         "why_tolerance": "float64 evaluation of a polynomial of T terms, each a product "
                          "of (d+1)-term inner products, errs by at most K eps G~ with "
                          "K = T + letters (d+1) + 2 (Higham, Sec. 3.1); a zero gradient "
                          "gives |G| <= K eps G~ in every component"},
        None if ok is not False else {"instance": inst.as_dict(),
                                      "component": [int(i) for i in idx],
                                      "value": float(G[idx]), "rounding_bound": float(bound[idx]),
                                      "ratio": worst},
        {None: f"{why} ({OVERFLOW})", True: "",
         False: "the gradient in T = b (x) A is not zero at the stated point"}[ok],
        summary=f"float64 gradient within its rounding bound (|G| <= {worst:.2g} K eps G~)")


def _gradient_monte_carlo(ctx, inst, b, A, rng) -> Finding:
    """The lifted gradient estimated by Monte Carlo of the real forward pass, z-tested."""
    d, n = inst.d, inst.n
    P, Q = full_weights(b, A, rng)

    def feats(pr, Z, err):
        Zd = Z[..., :-1]
        C = Zd @ Zd.mT / n
        return 2 * err[:, None, None, None] * C[..., None] * pr.xq[:, None, None, :]

    mean, se = _mc_forward(P, Q, inst, ctx.budget.mc_samples, ctx.mc_seed("mc-grad"), feats)
    gm, gs = mean[1:].reshape(d + 1, d + 1, d), se[1:].reshape(d + 1, d + 1, d)
    z = np.where(gs > 0, gm / np.where(gs > 0, gs, 1), 0.0)
    zc = z_critical(LEVEL, z.size)
    zmax = float(np.abs(z).max())
    ok = zmax <= zc if finite(gm, gs) else None
    return Finding(
        "lifted_gradient_monte_carlo", ok,
        {"max_abs_z": zmax, "z_critical": zc, "components": z.size,
         "samples": ctx.budget.mc_samples, "level": LEVEL},
        None if ok is not False else {"instance": inst.as_dict(), "seed": ctx.seed,
                                      "max_abs_z": zmax},
        {None: OVERFLOW, True: "",
         False: "Monte Carlo finds a non-zero gradient at the stated point"}[ok], sampled=True,
        summary=f"Monte Carlo gradient max |z| = {zmax:.2g} <= {zc:.3g} over {z.size} "
                f"components")


def _risk_float64(spec, ctx, inst, b, A) -> Finding:
    """The stated risk at the float instance against the derived loss there, within the
    rounding of both (the risk formula's own evaluation is exact, then rounded once)."""
    stated = float(sympy.N(PointValues(ctx.formulas, inst, inst.n)(spec.risk), 30))
    derived = loss_at(b, A, inst)
    allowance = rounding_factor(layer_loss().loss, inst.d) * EPS64 * loss_at(
        b, A, inst, magnitude=True) + EPS64 * abs(stated)
    ok, why = settle_le(np.array([abs(stated - derived)]), np.array([allowance]))
    return Finding("risk_float64", ok, {"stated": stated, "derived": derived,
                                        "allowance": allowance},
                   None if ok is not False else {"instance": inst.as_dict(), "stated": stated,
                                                 "derived": derived},
                   why or ("" if ok else f"the stated {spec.risk} is not the loss at the "
                                         f"optimum"),
                   summary=f"{spec.risk} = the derived loss within {allowance:.1e} in float64")


# ---------------------------------------------------------------------------------- train
def lifted(b, A):
    """sym(b (x) A): the identifiable parametrisation (numpy, or torch with a batch axis)."""
    einsum = torch.einsum if isinstance(b, torch.Tensor) else np.einsum
    return _sym(einsum("...k,...lj->...klj", b, A))


@lru_cache(maxsize=None)
def _compiled_loss():
    return layer_loss().loss.compile()


def batched_exact_loss(P: torch.Tensor, Q: torch.Tensor, inst: Instance) -> ExactLoss:
    """The derived population loss of B weight pairs (P, Q) of shape (B, d+1, d+1)."""
    d = inst.d
    sigma = torch.tensor(inst.sigma, dtype=P.dtype, device=P.device)

    def bind():
        env = {"Sigma": sigma, "Q_xx": Q[:, :d, :d], "q_yx": Q[:, d:, :d].mT,
               "p_yx": P[:, d:, :d].mT}
        return env, {"n": inst.n, "p_yy": P[:, d, d]}

    return ExactLoss(_compiled_loss(), bind)


def hessian_spectrum(b: np.ndarray, A: np.ndarray, inst: Instance) -> dict:
    """Eigenvalues of the Hessian of f in (b, A): tells a local minimum from a saddle."""
    from torch.func import hessian

    d, poly, sigma = inst.d, layer_loss().loss, torch.tensor(inst.sigma)

    def f(vec):
        bb, AA = vec[:d + 1], vec[d + 1:].reshape(d + 1, d)
        env = {"Sigma": sigma, "Q_xx": AA[:d], "q_yx": AA[d:].T, "p_yx": bb[:d].reshape(-1, 1)}
        return poly.evaluate(env, {"n": inst.n, "p_yy": bb[d]})

    vec = torch.tensor(np.concatenate([b, A.ravel()])).requires_grad_()
    grad = torch.autograd.grad(f(vec), vec)[0]
    eig = torch.linalg.eigvalsh(hessian(f)(vec.detach())).numpy()
    top = float(np.abs(eig).max())
    # stationary only up to the optimiser's tolerance: eigenvalues above -1e-5 * |largest|
    # count as zero
    kind = "local minimum" if eig.min() >= -1e-5 * top else "saddle point"
    return {"kind": kind, "min_eigenvalue": float(eig.min()), "max_eigenvalue": float(eig.max()),
            "gradient_norm": float(grad.norm()),
            "note": "one zero eigenvalue is the rescaling b -> gamma b, A -> A / gamma; "
                    "eigenvalues above -1e-5 * max count as zero"}


def train_tier(spec: LayerOptimum, ctx: Context) -> TierResult:
    inst = spec.setting.instance(ctx.budget.name, ctx.sizes, ctx.sigma, ctx.rng("instance"))
    rt = runtime(ctx.device)
    try:
        b_star, A_star = float_point(spec, ctx.formulas, inst)
    except Unevaluable as exc:
        return combine([Finding("point", False, {}, {"error": str(exc)},
                                f"{spec.what} cannot be formed: {exc}")])
    f_star = loss_at(b_star, A_star, inst)
    if not finite(f_star, b_star, A_star):
        return combine([Finding("exact_loss_training", None, {"paper_loss": f_star},
                                reason=OVERFLOW)], {"instance": inst.as_dict()})
    # the float64 rounding of f (relative to f*) is a floor under the loss threshold: with an
    # ill-conditioned Sigma, f is a difference of much larger terms
    rounding = 4 * rounding_factor(layer_loss().loss, inst.d) * EPS64 * loss_at(
        b_star, A_star, inst, magnitude=True) / f_star
    loss_tol = max(rt.tolerance(1e-7, 1e3), rounding)
    findings = [_exact_loss_training(spec, ctx, inst, rt, b_star, A_star, f_star, loss_tol,
                                     rounding),
                _sampled_training(ctx, inst, rt, b_star, A_star, f_star, loss_tol)]
    return combine(findings, {"instance": inst.as_dict(), "paper_loss": f_star,
                              "runtime": rt.describe()})


def _exact_loss_training(spec, ctx, inst, rt, b_star, A_star, f_star, loss_tol,
                         rounding) -> Finding:
    """All restarts at once (one problem per seed) from small Gaussian initialisations: f(b, A)
    is not convex in (b, A) and has spurious stationary points (reported, with their Hessian
    spectrum)."""
    d, B = inst.d, ctx.budget.restarts
    T_star = lifted(b_star, A_star)
    weight_tol = 1e-3
    gen = rt.generator(ctx.seed_for("train-init"))
    P = (INIT_SCALE * randn(B, d + 1, d + 1, generator=gen, dtype=rt.dtype,
                            device=rt.device)).requires_grad_()
    Q = (INIT_SCALE * randn(B, d + 1, d + 1, generator=gen, dtype=rt.dtype,
                            device=rt.device)).requires_grad_()
    steps = {"quick": 200, "default": 400}.get(ctx.budget.name, 1000)
    on_device: list[torch.Tensor] = []   # per step, every restart's distance (read back once)
    T_dev = torch.as_tensor(T_star, dtype=rt.dtype, device=rt.device)
    with Progress(steps, f"{ctx.claim_id} exact-loss L-BFGS", ctx.progress) as bar:
        show = bar.callback()

        def track(step, losses):
            with torch.no_grad():
                T = lifted(P[:, d, :], Q[:, :, :d])
                on_device.append(torch.linalg.vector_norm((T - T_dev).reshape(B, -1), dim=1))
            show(step, losses)

        results = optimise_batched(batched_exact_loss(P, Q, inst), [P, Q], method="lbfgs",
                                   steps=steps, progress=track)
    scale = float(np.linalg.norm(T_star))
    distances = (torch.stack(on_device).T.cpu().double().numpy() / scale).tolist() if on_device \
        else [[] for _ in range(B)]
    Pn, Qn = P.detach().cpu().double().numpy(), Q.detach().cpu().double().numpy()
    runs, other_points, below = [], [], None
    for restart, res in enumerate(results):
        b, A = Pn[restart, d, :], Qn[restart, :, :d]
        f = loss_at(b, A, inst)
        gap = (f - f_star) / f_star
        stride = max(1, len(distances[restart]) // 50)
        run = {"restart": restart, "trained_loss": f, "relative_loss_gap": gap,
               "lifted_distance": float(np.linalg.norm(lifted(b, A) - T_star) /
                                        np.linalg.norm(T_star)),
               **res.summary(curve_points=50), "distance_curve": distances[restart][::stride]}
        runs.append(run)
        if res.status != "converged":
            continue
        if gap < -loss_tol and below is None:
            below = {"trained_b": b.tolist(), "trained_A": A.tolist(), "trained_loss": f,
                     "paper_loss": f_star, **run}
        elif gap > loss_tol and not any(abs(p["loss"] - f) <= 1e-6 * f for p in other_points):
            other_points.append({"loss": f, "loss_ratio_to_optimum": f / f_star,
                                 "b": np.round(b, 6).tolist(),
                                 "A_last_row": np.round(A[d], 6).tolist(),
                                 **hessian_spectrum(b, A, inst)})
    evidence = {"runs": runs, "other_stationary_points": other_points,
                "metric": "relative Frobenius distance of sym(b (x) A) to the stated one (the "
                          "prediction map; C is symmetric so only sym_kl(T) is identifiable)",
                "weight_threshold": weight_tol, "loss_threshold": loss_tol,
                "float64_rounding_of_f_relative": rounding,
                "why": "L-BFGS on the exact loss reaches float64 stationarity; 1e-3 leaves room "
                       "for the conditioning of the loss in T",
                "reached_optimum": sum(abs(r["relative_loss_gap"]) <= loss_tol for r in runs)}
    if below is not None:
        return Finding("exact_loss_training", False, evidence,
                       {"instance": inst.as_dict(), **below},
                       f"training found weights with a lower loss than {spec.what}")
    live = [r for r in runs if r["status"] != "diverged"]
    if not live:
        return Finding("exact_loss_training", None, evidence,
                       reason=f"every restart diverged (restart 0: {runs[0]['reason']})")
    at_min = [r for r in live if abs(r["relative_loss_gap"]) <= loss_tol]
    if any(r["lifted_distance"] <= weight_tol for r in at_min):
        near = min(r["lifted_distance"] for r in at_min)
        return Finding("exact_loss_training", True, evidence, summary=(
            f"{len(at_min)} of {len(runs)} L-BFGS restarts reach {spec.what}'s loss, the nearest "
            f"weights {near:.1e} from it in sym(b (x) A)"))
    if at_min:
        # f is a positive definite quadratic in sym(T) (Sigma > 0): its minimiser is unique,
        # so the loss alone decides nothing where the weights land elsewhere
        closest = min(at_min, key=lambda r: r["lifted_distance"])
        eig = np.linalg.eigvalsh(inst.sigma)
        return Finding("exact_loss_training", None, evidence, reason=(
            f"training reached the stated loss (relative gap "
            f"{closest['relative_loss_gap']:.1e}) but its weights end "
            f"{closest['lifted_distance']:.3g} from {spec.what} in sym(b (x) A), where the "
            f"minimiser is unique: either Sigma's conditioning (eigenvalues {eig.min():.3g} "
            f"to {eig.max():.3g}) hides the difference from the float64 loss within the "
            f"budget, or {spec.what} is not the minimiser; the symbolic tier decides"))
    best = min(live, key=lambda r: r["trained_loss"])
    return Finding("exact_loss_training", None, evidence,
                   reason=f"no restart reached the stated loss (best relative gap "
                          f"{best['relative_loss_gap']:.2e}); more restarts (a larger "
                          f"--budget) would decide")


def _sampled_training(ctx, inst, rt, b_star, A_star, f_star, loss_tol) -> Finding:
    """Sampled-prompt Adam on the real forward pass: evidence, and a counterexample if it beats
    the stated loss."""
    d = inst.d
    gen = rt.generator(ctx.seed_for("train-sampled"))
    model = LinearTransformer(LSAConfig(d=d, parametrisation="full"), init_scale=INIT_SCALE,
                              generator=gen, dtype=rt.dtype, device=rt.device)
    law = prompt_law(inst, "identity")
    steps, batch = sampled_budget(ctx)
    res = sampled_adam(ctx, model, law, steps, batch, rt, ctx.seed_for("train-data"))
    P = model.P[0].detach().cpu().double().numpy()
    Q = model.Q[0].detach().cpu().double().numpy()
    b, A = P[d, :], Q[:, :d]
    f = loss_at(b, A, inst)
    sampled = {"batch": batch, "trained_loss": f, "relative_loss_gap": (f - f_star) / f_star,
               "lifted_distance": float(np.linalg.norm(lifted(b, A) - lifted(b_star, A_star)) /
                                        np.linalg.norm(lifted(b_star, A_star))), **res.summary()}
    if res.status == "diverged":
        return Finding("sampled_prompt_training", None, sampled, reason=res.reason)
    if (f - f_star) / f_star < -loss_tol:
        return Finding("sampled_prompt_training", False, sampled,
                       {"instance": inst.as_dict(), "trained_b": b.tolist(),
                        "trained_A": A.tolist(), **sampled},
                       "sampled training found a lower exact loss than the stated point")
    return Finding("sampled_prompt_training", True, sampled,
                   reason="evidence only: finite-batch Adam approaches the optimum",
                   summary=f"sampled-prompt Adam ends {sampled['relative_loss_gap']:.1e} above "
                           f"the optimal loss (evidence only)")
