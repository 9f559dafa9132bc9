"""The float tier of the kit's stationary-set check (``kit.stationary``): at the critical point
x* of the restricted loss g, at an instance Sigma = U^T D^2 U (exact rational rotation U):

- the full-matrix gradient of the derived loss in float64, each component against its rounding
  allowance K eps G~ (G~: the same polynomial with |coefficients| at |inputs|, ``kit.rounding``),
  decided by ``verify.evidence.settle_le`` (non-finite or underflowed: undecided);
- the derived loss g(x*) against the real torch forward pass's population loss: integrated
  exactly where the set states the error's degree (``StationarySet.error_degree``,
  ``kit.spectral_mean``: a Gauss rule from the exact Wishart moments, the premises checked at
  the instance), else by Monte Carlo (a z-test); either confirms and cannot refute (a
  disagreement means the derivation and the model differ: undecided; the Monte Carlo of a
  high-degree polynomial in X has a heavy right tail besides);
- evidence only: where the loss is integrated exactly, that loss's gradient along the set
  (autograd through the rule); else the Monte Carlo gradient of the sampled loss (autograd
  through the forward pass), z-tested for zero over every component with Bonferroni (in the
  heavy tail those z are unreliable: 17.7 at ahn2023 Thm. 5's critical point).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Mapping

import numpy as np
import sympy
import torch

from models.device import cpu_threads, randn
from moments.montecarlo import z_critical
from moments.poly import Poly
from verify.claim import Context, TierResult
from verify.evidence import Finding, combine, settle_le
from verify.formulas import formula_value
from verify.sigma import SigmaSpec

from .linear_icl import Instance, conditional_loss, law_factors
from .rounding import EPS64, magnitude, rounding_factor
from .spectral_mean import RELATIVE, SpectralMean, integrable, spectral_mean
from .stationary import (Direction, StationarySet, at_eigenvalues, direction_functions,
                         free_variables, minimise, monomial, on_set, spectrum)

LEVEL = 0.999


def stationary_instance(spec: StationarySet, ctx: Context, tag: str = "instance") -> Instance:
    """Sigma = U^T D^2 U with an exact rational rotation U (Cayley), unless --sigma is given."""
    sig = ctx.sigma or SigmaSpec("rotated", tuple(Fraction(str(v)) for v in spectrum(spec, ctx)))
    return spec.setting.instance(ctx.budget.name, ctx.sizes, sig, ctx.rng(tag))


def scalar_values(directions, x) -> dict[str, float]:
    """{scalar name: value} at x (free scalars in order; the others 0)."""
    it = iter(float(v) for v in x)
    return {dr.scalar.name: (next(it) if dr.free else 0.0) for dr in directions}


def set_point(F, inst: Instance, directions, scalars: Mapping[str, float]) -> dict:
    """W = x_W D_W(Sigma) as float64 arrays at the instance."""
    vals = {"Sigma": inst.sigma_exact, "d": inst.d}
    D = {name: np.array(sympy.Matrix(formula_value(F[name], vals)).evalf(), dtype=float)
         for name in dict.fromkeys(dr.formula for dr in directions)}
    return {dr.letter: scalars[dr.scalar.name] * D[dr.formula] for dr in directions}


# ------------------------------------------------------------------------------ Monte Carlo
def mc_loss_and_gradient(model, inst: Instance, samples: int, seed: int,
                         w_prior: str = "sigma_inverse", chunks: int = 40) -> dict:
    """Mean and standard error of the loss and of its gradient in every weight, over ``chunks``
    independent batches (``samples`` forward passes in all) of ``conditional_loss``."""
    gen = torch.Generator().manual_seed(seed)
    d = inst.d
    Lx, Lw = law_factors(inst, w_prior)
    per = max(2, samples // (chunks * d * d))
    losses, grads = [], []
    params = list(model.parameters())
    for _ in range(chunks):
        X = Lx @ randn(per, d, inst.n, generator=gen, dtype=torch.float64)
        loss = conditional_loss(model, X, Lx, Lw).mean()
        g = torch.autograd.grad(loss, params)
        losses.append(float(loss.detach()))
        grads.append(torch.cat([x.reshape(-1) for x in g]).numpy())
    losses, grads = np.array(losses), np.array(grads)
    return {"loss_mean": losses.mean(), "loss_se": losses.std(ddof=1) / np.sqrt(chunks),
            "grad_mean": grads.mean(0), "grad_se": grads.std(0, ddof=1) / np.sqrt(chunks),
            "chunks": chunks, "covariate_draws": per * chunks,
            "forward_passes": per * chunks * d * d,
            "method": "E[e^2 | X] exactly over (w*, x_q) by d^2 real forward passes per X"}


def loss_finding(derived: float, mc: dict) -> Finding:
    """g(x*) against the Monte Carlo mean, a self-check (``Finding.self_check``): inside the
    interval confirms, outside decides nothing (the conditional error's heavy right tail makes
    the normal interval unreliable; at Sigma = diag(2, 1/2, 1), seed 0 put the mean 4.1
    standard errors low, seeds 1-3 within 1.1); a wrong set moves the exact gradient, which
    decides."""
    zc = z_critical(LEVEL, 1)
    z = (mc["loss_mean"] - derived) / mc["loss_se"] if mc["loss_se"] > 0 else float("nan")
    ok = bool(abs(z) <= zc) if np.isfinite(z) else None
    return Finding("derived_loss_vs_monte_carlo", ok,
                   {"derived_g": derived, "mc_mean": mc["loss_mean"], "mc_se": mc["loss_se"],
                    "z": z, "z_critical": zc, "level": LEVEL,
                    "covariate_draws": mc["covariate_draws"], "method": mc["method"]},
                   None, "" if ok else (
                       f"the Monte Carlo loss at the named point is {z:.2g} standard errors "
                       f"from g(a*); the error's heavy right tail makes the normal interval "
                       f"unreliable, and the exact gradient decides"), self_check=True)


def forward_pass_mean(model, inst: Instance, w_prior: str, degree: int,
                      seed: int) -> tuple[SpectralMean | None, str]:
    """The real forward pass's population loss at the model's weights, integrated exactly
    (``kit.spectral_mean``, differentiable in the model's parameters), and ""; or None and why
    not: the loss is not a spectral trace of that degree at this instance, or the rule needs
    moments beyond the exact engine's reach."""
    if not integrable(degree):
        return None, (f"a loss of degree {degree} in W needs E tr W^k past the exact moment "
                      f"engine's degree")
    Lx, Lw = law_factors(inst, w_prior)
    sm = spectral_mean(lambda Xt: conditional_loss(model, Lx @ Xt, Lx, Lw), inst.n, inst.d,
                       degree, torch.Generator().manual_seed(seed))
    return (sm, "") if sm.holds() else (None, sm.why_not())


def forward_pass_loss_finding(derived: float, sm: SpectralMean) -> Finding:
    """g(x*) against ``forward_pass_mean``, a self-check (``Finding.self_check``): equal within
    ``RELATIVE`` of the magnitudes confirms; unequal leaves it undecided (the derivation and the
    model disagree: neither the claim nor its negation follows)."""
    gap = abs(sm.value - derived) / max(sm.scale, abs(derived))
    ok = bool(gap <= RELATIVE)
    return Finding("derived_loss_vs_forward_pass", ok,
                   {"derived_g": derived, "forward_pass_loss": sm.value, "relative_gap": gap,
                    **sm.as_dict(), "method": (
                        "E[e^2 | X] = tr p(W) of the real forward pass, p read on rank-one X, "
                        "integrated by the Gauss rule of W's spectral measure from its exact "
                        "moments")},
                   None, "" if ok else (
                       f"the real forward pass's population loss at the named point is "
                       f"{sm.value:.17g}, the derived g(a*) {derived:.17g} (relative gap "
                       f"{gap:.2g})"), self_check=True,
                   summary=f"the forward pass's exact population loss equals g(a*) to "
                           f"{gap:.1e} relative ({sm.nodes}-point Gauss rule)" if ok else "")


def forward_pass_set_gradient(sm: SpectralMean, model, moved: Mapping[str, object]) -> dict:
    """d/dx of the forward pass's exact population loss along the set, for each free scalar x:
    autograd through ``sm.tensor`` to the model's parameters, contracted with the parameter
    change of ``moved[x]`` (the model with x one larger; the set is linear in x).  Evidence:
    zero at a critical point of g, where the Monte Carlo gradient's heavy tail says little."""
    params = list(model.parameters())
    grads = torch.autograd.grad(sm.tensor, params, allow_unused=True)
    out = {}
    for name, other in moved.items():
        out[name] = float(sum((g * (q.detach() - p.detach())).sum() for g, p, q in
                              zip(grads, params, other.parameters()) if g is not None))
    largest = max((abs(v) for v in out.values()), default=0.0)
    return {"derivatives": out, "largest_relative": largest / sm.scale,
            "relative_to": sm.scale, "method": "autograd through the Gauss-rule forward passes",
            "note": "the real model's exact loss restricted to the set, differentiated at the "
                    "critical point of the derived g: evidence; the derived full gradient "
                    "decides"}


def gradient_z(exact, mean, se, level: float = LEVEL) -> dict:
    """z = (mean - exact) / se for every component the Monte Carlo spreads (se > 0), the largest
    |z| against the Bonferroni critical value over them; the components it does not spread (a
    gradient that is 0 on every sample) must agree with the exact ones outright."""
    exact, mean, se = (np.asarray(v, dtype=float) for v in (exact, mean, se))
    live = se > 0
    z = np.where(live, (mean - exact) / np.where(live, se, 1.0), 0.0)
    m = int(live.sum())
    return {"max_abs_z": float(np.abs(z).max()), "components": m,
            "z_critical": z_critical(level, max(m, 1)), "argmax": int(np.abs(z).argmax()),
            "nonrandom_agree": bool(np.allclose(exact[~live], mean[~live], atol=1e-12)),
            "finite": bool(np.all(np.isfinite(exact)) and np.all(np.isfinite(mean))
                           and np.all(np.isfinite(se)))}


def gradient_z_finding(name: str, exact, mean, se, samples: int, counterexample: dict,
                       level: float = LEVEL, self_check: bool = False) -> Finding:
    """The derived gradient against the Monte Carlo gradient of the real forward pass
    (``gradient_z``): inside every interval passes, outside one fails (the counterexample gets
    the worst component), non-finite numbers decide nothing.  A failure of the z-test alone is
    a sampled one (``Finding.sampled``: the sample must come from ``Context.mc_seed``); one of
    the components the sample does not spread is not.  ``self_check``: the exact gradient is
    the engine's derivation at a point, read from no formula's value (``Finding.self_check``)."""
    zt = gradient_z(exact, mean, se, level)
    i = zt["argmax"]
    evidence = {"components": zt["components"], "max_abs_z": zt["max_abs_z"],
                "z_critical": zt["z_critical"], "samples": samples, "level": level,
                "exact_gradient_norm": float(np.linalg.norm(exact)),
                "monte_carlo_gradient_norm": float(np.linalg.norm(mean))}
    if not zt["finite"]:
        return Finding(name, None, evidence, reason="the Monte Carlo or the derived gradient "
                                                    "is not finite: it decides nothing")
    ok = zt["max_abs_z"] <= zt["z_critical"] and zt["nonrandom_agree"]
    return Finding(name, ok, evidence,
                   None if ok else {**counterexample, "component": i, "exact": float(exact[i]),
                                    "monte_carlo": float(mean[i]), "se": float(se[i])},
                   "" if ok else "the derived gradient is outside the Monte Carlo interval",
                   sampled=zt["nonrandom_agree"], self_check=self_check)


def zero_gradient_z(mc: dict) -> dict:
    """The Monte Carlo gradient's largest |z| against zero (Bonferroni over the components)."""
    zt = gradient_z(np.zeros_like(mc["grad_mean"]), mc["grad_mean"], mc["grad_se"])
    return {"max_abs_z": zt["max_abs_z"], "components": zt["components"],
            "z_critical_bonferroni": zt["z_critical"],
            "max_abs_gradient": float(np.abs(mc["grad_mean"]).max()),
            "note": "evidence only: the error is a polynomial of high degree in X, whose heavy "
                    "right tail makes normal-theory intervals of the gradient unreliable at "
                    "this sample size; the exact gradient decides"}


# ------------------------------------------------------------------------------ numeric tier
def numeric_tier(spec: StationarySet, ctx: Context) -> TierResult:
    with cpu_threads(ctx.device):
        return _numeric_tier(spec, ctx)


def _numeric_tier(spec: StationarySet, ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = stationary_instance(spec, ctx)
    layers = inst.extra["layers"]
    directions = list(spec.directions(layers))
    rng = ctx.rng("numeric-starts")
    m = len(free_variables(directions))
    starts = [np.full(m, -0.5)] + [rng.standard_normal(m) * 0.7 for _ in range(7)]
    runs, cp = spec.optimum(inst, layers, starts)
    x = cp.floats()
    scalars = scalar_values(directions, x)
    weights = set_point(F, inst, directions, scalars)
    exact = exact_gradient(spec, F, inst, layers, directions, scalars, weights)
    ok_grad, why = exact.pop("decision")
    if ok_grad is False:
        # spec.optimum solves on the paper's set; the named set (a mutant, a --set) may be the
        # same set scaled (-Sigma^-1 for Sigma^-1) or hold a critical point elsewhere: decide at
        # the critical point of the loss restricted to the named set itself
        own = _own_critical_point(spec, ctx, F, inst, layers, directions, starts)
        if own is None:
            ok_grad, why = None, ("the gradient is not zero at the critical point of the paper's "
                                  "set, and the named set is not a function of Sigma, so no "
                                  "critical point on it can be located here")
        else:
            cp, x = own, own.floats()
            scalars = scalar_values(directions, x)
            weights = set_point(F, inst, directions, scalars)
            exact = exact_gradient(spec, F, inst, layers, directions, scalars, weights)
            exact["point_from"] = "the critical point of the loss restricted to the named set"
            ok_grad, why = exact.pop("decision")
    net = spec.model(inst, layers, weights)
    sm, why_mc = (None, "") if spec.error_degree is None else forward_pass_mean(
        net, inst, spec.setting.w_prior, spec.error_degree(layers), ctx.seed_for("spectral-mean"))
    # Monte Carlo only where the loss is not integrated exactly (its gradient's z-statistics
    # are unreliable in the heavy tail: the exact gradient along the set replaces them)
    mc = None if sm is not None else mc_loss_and_gradient(
        net, inst, ctx.budget.mc_samples, ctx.seed_for("mc"), spec.setting.w_prior)
    findings = [
        forward_pass_loss_finding(float(cp.value), sm) if sm is not None else
        loss_finding(float(cp.value), mc),
        Finding("exact_full_gradient_float64", ok_grad, exact,
                None if ok_grad is not False else {
                    "instance": inst.as_dict(), "point": x.tolist(),
                    "gradient_norm": exact["gradient_norm"], "seed": ctx.seed},
                why or ("" if ok_grad else "the derived full-matrix gradient is not zero at the "
                                          "named point (beyond float64 rounding)")),
    ]
    extra = {"instance": inst.as_dict(), "layers": layers, "critical_point": x.tolist(),
             "restarts": runs,
             "hessian_eigenvalues_of_g": [float(e) for e in cp.hessian_eigenvalues]}
    if mc is not None:
        extra["monte_carlo_gradient"] = zero_gradient_z(mc)
    if why_mc:
        extra["loss_by_monte_carlo_because"] = why_mc
    if sm is not None:
        moved = {name: spec.model(inst, layers, set_point(F, inst, directions,
                                                          {**scalars, name: scalars[name] + 1}))
                 for name in (s.name for s in free_variables(directions))}
        extra["forward_pass_gradient_on_the_set"] = forward_pass_set_gradient(sm, net, moved)
    return combine(findings, extra)


def _own_critical_point(spec: StationarySet, ctx: Context, F, inst: Instance, layers: int,
                        directions, starts):
    """The critical point of g on the named set at the instance's spectrum (None where the
    set is not a function of Sigma or g has no minimiser in reach)."""
    fns = direction_functions(F, directions)
    if any(f is None for f in fns.values()):
        return None
    eigs = spectrum(spec, ctx) if ctx.sigma is None else tuple(
        sympy.Float(float(v), 30) for v in np.linalg.eigvalsh(inst.sigma))
    _, g_sym, _ = on_set(spec, layers, directions, fns)
    return minimise(at_eigenvalues(g_sym, eigs, inst.n), free_variables(directions),
                    np.array(starts))


def rounding_decision(G: np.ndarray, G_mag: np.ndarray, K: int) -> tuple[dict, tuple]:
    """|G| <= K eps G~ componentwise (``settle_le``; a component with no term, G~ = 0, is
    compared as it is): the evidence and (ok, why)."""
    G, G_mag = np.asarray(G, dtype=float), np.asarray(G_mag, dtype=float)
    bound = K * EPS64 * G_mag
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, np.abs(G) / np.where(bound > 0, bound, 1.0),
                         np.where(G == 0, 0.0, np.inf))
    decision = settle_le(np.abs(G), bound, exact=(G_mag == 0))
    return {"gradient_norm": float(np.linalg.norm(G)), "max_|grad|": float(np.abs(G).max()),
            "max_|grad|/(K_eps_grad~)": float(ratio.max()), "factor_K": K,
            "why_tolerance": "float64 evaluation of a polynomial errs by at most K eps times "
                             "the same polynomial with |coefficients| at |inputs| (Higham, "
                             "Sec. 3.1)"}, decision


def exact_gradient(spec: StationarySet, F, inst: Instance, layers: int, directions,
                   scalars: Mapping[str, float], weights: Mapping[str, np.ndarray]) -> dict:
    """grad f at the point from the derived polynomials in float64, with its rounding decision
    under "decision".  On a set c Sigma^k the gradient polynomials of ``spec.loss_on_set`` are
    evaluated at the instance's Sigma; otherwise autograd of the full-matrix loss."""
    fns = direction_functions(F, directions)
    monos = {k: (monomial(f) if f is not None else None) for k, f in fns.items()}
    scal = {"n": inst.n, **scalars}
    if spec.loss_on_set is not None and all(v is not None for v in monos.values()):
        sig = inst.sigma
        env = {"Sigma": sig, "Sigma_inv": np.linalg.inv(sig)}
        env_abs = {k: np.abs(v) for k, v in env.items()}
        G, G_mag, K = [], [], 0
        for P in spec.loss_on_set(layers, monos)[1].values():
            if P is None:
                continue
            P_val, P_mag = numeric_coefficients(P, scal)
            G.append(np.ravel(np.asarray(P_val.evaluate(env, {}, exact=True), dtype=float)))
            G_mag.append(np.ravel(np.asarray(P_mag.evaluate(env_abs, {}, exact=True),
                                             dtype=float)))
            K = max(K, rounding_factor(P, inst.d - 1))  # the letters are d x d here
        G, G_mag = np.concatenate(G), np.concatenate(G_mag)
        how = "gradient polynomials on the set at the instance's Sigma"
    else:
        poly = spec.loss(layers)
        G, G_mag = (autograd_gradient(_compiled(spec.loss, layers, False), inst, directions,
                                      weights, False),
                    autograd_gradient(_compiled(spec.loss, layers, True), inst, directions,
                                      weights, True))
        K = rounding_factor(poly, inst.d - 1)
        how = "autograd of the full-matrix loss"
    evidence, decision = rounding_decision(G, G_mag, K)
    return {**evidence, "method": how, "decision": decision}


def numeric_coefficients(P: Poly, scal: Mapping[str, float]) -> tuple[Poly, Poly]:
    """P with each coefficient c(n, x) replaced by its float value, and by the sum of the
    |terms| of its expansion (the magnitude polynomial of the rounding bound)."""
    vals, mags = {}, {}
    for key, c in P.terms.items():
        subs = {s: scal[s.name] for s in c.free_symbols if s.name in scal}
        parts = [float(t.xreplace(subs)) for t in sympy.Add.make_args(sympy.expand(c))]
        vals[key] = sympy.Float(sum(parts))
        mags[key] = sympy.Float(sum(abs(v) for v in parts))
    return P._like(vals), P._like(mags)


def autograd_gradient(compiled, inst: Instance, directions: list[Direction],
                      weights: Mapping[str, np.ndarray], absval: bool) -> np.ndarray:
    """The gradient of a compiled loss in every direction's letter (at |inputs| for the
    magnitude polynomial)."""
    f = np.abs if absval else (lambda v: v)
    sig = inst.sigma
    env = {"Sigma": torch.tensor(f(sig)), "Sigma_inv": torch.tensor(f(np.linalg.inv(sig)))}
    leaves = []
    for dr in directions:
        env[dr.letter] = torch.tensor(f(weights[dr.letter]), requires_grad=True)
        leaves.append(env[dr.letter])
    val = compiled(env, {"n": inst.n})
    return torch.cat([g.reshape(-1) for g in torch.autograd.grad(
        val, leaves, allow_unused=True) if g is not None]).numpy()


_COMPILED: dict = {}


def _compiled(loss, layers: int, absval: bool):
    key = (loss, layers, absval)
    if key not in _COMPILED:
        poly = loss(layers)
        _COMPILED[key] = (magnitude(poly) if absval else poly).compile()
    return _COMPILED[key]
