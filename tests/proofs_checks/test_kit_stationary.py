"""The kit's stationary-set check on a toy claim outside any paper: one linear-attention read-out
y_hat = w*^T (X X^T / n) A x_q with w* ~ N(0, Sigma^{-1}); the set S = {A = a Sigma^{-1}} contains
the global minimum (whitening: on S the loss is E tr (a W/n - I)^2, W ~ Wishart(n, I)), so
inf_S ||grad_A f||_F^2 = 0; the set {a I} does not (the gradient there is 2(a Sigma - I)-like).
Plus the soundness rules of its float comparisons (non-finite or underflowed: undecided)."""
import dataclasses

import numpy as np
import pytest
import sympy
import torch

from moments.tensor import matrix
from moments.wick import expectation
from proofs_checks.kit.linear_icl import LinearICLSetting, symbolic_prompt
from proofs_checks.kit.stationary import (LAMBDA, Direction, StationarySet, at_eigenvalues,
                                          fast_spectral, monomial, refine, spectral_function,
                                          stationary_set)
from proofs_checks.kit.stationary_float import (gradient_z_finding, loss_finding,
                                                rounding_decision)
from verify.claim import Claim
from verify.formulas import FormulaSymbol, NamedFormula
from verify.runner import check_claim

# --- the claim ---
N = sympy.Symbol("n", positive=True, integer=True)
a0 = sympy.Symbol("a_0")


def toy_loss(layers: int):
    """E[(w*^T (X X^T / n) A x_q - w*^T x_q)^2] by Isserlis, A symmetric."""
    sp = symbolic_prompt("sigma_inverse")
    e = sp.w.T @ sp.X @ sp.X.T @ matrix("A_0", symmetric=True) @ sp.xq * (1 / N) - sp.target
    return expectation(e * e).simplify()


def toy_optimum(inst, layers, starts):
    """g(a) on S at Sigma = I (S is whitened), its critical point by Newton."""
    g = at_eigenvalues(fast_spectral(toy_loss(1), {"Sigma": LAMBDA, "Sigma_inv": 1 / LAMBDA,
                                                   "A_0": a0 / LAMBDA}), (1,) * inst.d, inst.n)
    return [], refine(g, [a0], [starts[0][0]], digits=20)


class ToyModel(torch.nn.Module):
    def __init__(self, A):
        super().__init__()
        self.A = torch.nn.Parameter(torch.tensor(A))

    def predict(self, Z):
        d, n = Z.shape[1] - 1, Z.shape[2] - 1
        X, y, xq = Z[:, :d, :n], Z[:, d, :n], Z[:, :d, n]
        return torch.einsum("bn,bdn,de,be->b", y, X, (self.A + self.A.T) / 2, xq) / n


SETTING = LinearICLSetting("sigma_inverse", {b: {"n": 10, "d": 3, "layers": 1}
                                             for b in ("quick", "default", "paper")})
SPEC = StationarySet(SETTING, directions=lambda L: [Direction("A_0", a0, "S_A")],
                     loss=toy_loss, optimum=toy_optimum,
                     model=lambda inst, L, W: ToyModel(W["A_0"]),
                     spectrum=("1", "1/4", "2"), forward="the toy read-out")
SIGMA = FormulaSymbol("Sigma", "matrix", ("d", "d"), symmetric=True)
TOY = Claim(id="toy2026.thm1", title="A whitened set contains the optimum",
            paper="toy2026", statement=r"$\inf_a \|\nabla_A f(a\Sigma^{-1})\|_F = 0$",
            assumptions=("x ~ N(0, Sigma), w* ~ N(0, Sigma^{-1})",),
            formulas=(NamedFormula("S_A", "Inverse(Sigma)", (SIGMA, FormulaSymbol("d")),
                                   equation="(T)", shape=("d", "d")),),
            checks=stationary_set(SPEC), setting=SETTING)
# --- end of the claim ---


def _verdict(tiers, **overrides):
    return check_claim(TOY, tiers=tiers, overrides=overrides, budget="quick", seed=0)


def test_the_toy_claim_is_verified():
    v = _verdict(("symbolic", "numeric"))
    assert v.verdict == "verified", v.reason
    ev = v.tiers["symbolic"].evidence["infimum_of_gradient_norms"]
    assert ev["restricted_loss_is_whitened"] is True
    assert ev["gradient_form"]["A_0"]["constant_in_Sigma"] is True
    assert float(ev["T_at_critical_point"]) < 1e-60
    # g(a) = E tr (a W/n - I)^2 = a^2 d (n + d + 1)/n - 2 a d + d: a* = n/(n + d + 1)
    assert abs(float(ev["critical_point_of_g"][0]) - 10 / 14) < 1e-15
    num = v.tiers["numeric"].evidence
    assert num["exact_full_gradient_float64"]["ok"] is True
    assert num["derived_loss_vs_monte_carlo"]["ok"] is True


@pytest.mark.parametrize("tier", ["symbolic", "numeric"])
@pytest.mark.parametrize("direction", ["Identity(d)", "Sigma"])
def test_a_wrong_set_is_refuted(tier, direction):
    v = _verdict((tier,), S_A=direction)
    assert v.verdict == "refuted", v.reason
    if tier == "symbolic":
        assert float(v.counterexample["T_at_point"]) > 1e-6


def test_a_set_that_is_no_function_of_sigma_decides_nothing():
    v = _verdict(("symbolic",), S_A="Inverse(Sigma) + OneMatrix(d, d)")
    assert v.verdict == "inconclusive"
    assert v.tiers["symbolic"].evidence["set_is_spectral"]["ok"] is None


def test_spectral_helpers():
    S_A = TOY.formulas[0]
    assert sympy.simplify(spectral_function(S_A.parse()) - 1 / LAMBDA) == 0
    assert monomial(3 / LAMBDA ** 2) == (3, -2)
    assert monomial(LAMBDA + 1) is None
    assert spectral_function(S_A.parse("Sigma + OneMatrix(d, d)")) is None


def test_rounding_decision_follows_the_soundness_rules():
    ok = rounding_decision(np.array([1e-16, 0.0]), np.array([1.0, 0.0]), 10)[1]
    assert ok == (True, "")  # 0 <= 0 where the component has no term at all
    assert rounding_decision(np.array([1e-3]), np.array([1.0]), 10)[1][0] is False
    for bad in (np.nan, np.inf):
        ok, why = rounding_decision(np.array([bad, 0.0]), np.array([1.0, 1.0]), 10)[1]
        assert ok is None and "not finite" in why
    ok, why = rounding_decision(np.array([0.0]), np.array([1e-300]), 10)[1]  # underflowed
    assert ok is None and "resolution" in why


def test_a_monte_carlo_loss_without_spread_decides_nothing():
    mc = {"loss_mean": 1.0, "loss_se": 0.0, "covariate_draws": 10, "method": "toy"}
    assert loss_finding(1.0, mc).ok is None
    assert loss_finding(1.0, {**mc, "loss_mean": float("nan"), "loss_se": 0.1}).ok is None
    assert loss_finding(1.0, {**mc, "loss_mean": 1.01, "loss_se": 0.1}).ok is True


def test_the_gradient_z_test_passes_inside_fails_outside_and_nan_decides_nothing():
    exact = np.array([0.0, 1.0, 2.0])
    se = np.array([0.1, 0.1, 0.0])  # the last component is not random: compared outright
    inside = gradient_z_finding("g", exact, exact + np.array([0.05, -0.05, 0]), se, 100, {})
    assert inside.ok is True and inside.evidence["components"] == 2
    outside = gradient_z_finding("g", exact, exact + np.array([0, 1.0, 0]), se, 100, {})
    assert outside.ok is False and outside.counterexample["component"] == 1
    off = gradient_z_finding("g", exact, exact + np.array([0, 0, 1e-3]), se, 100, {})
    assert off.ok is False
    for bad in (np.nan, np.inf):
        mean = exact.copy()
        mean[0] = bad
        assert gradient_z_finding("g", exact, mean, se, 100, {}).ok is None


def test_a_scaled_direction_is_judged_the_same_set_and_another_is_not():
    """stationary_truth: c D_W (c a nonzero number) spans the same set as D_W, so the mutated
    claim is the claim itself (true); another function of Sigma is left undecided."""
    from verify.formulas import FormulaSymbol, NamedFormula

    from proofs_checks.kit.stationary import stationary_truth

    sigma = FormulaSymbol("Sigma", "matrix", ("d", "d"), symmetric=True)
    f = NamedFormula("S_A", "Inverse(Sigma)", (sigma, FormulaSymbol("d")), shape=("d", "d"))
    judge = stationary_truth((f,)).definition
    assert judge("S_A", f.parse("-3*Inverse(Sigma)"))[0] == "true"
    for other in ("Sigma", "Identity(d)", "0*Sigma", "d*Inverse(Sigma)"):
        assert judge("S_A", f.parse(other))[0] == "undecided", other


# --- the loss integrated exactly from the forward pass (kit.spectral_mean) ---
EXACT_SPEC = dataclasses.replace(SPEC, error_degree=lambda L: 2)  # E tr (a W/n - I)^2
EXACT_TOY = dataclasses.replace(TOY, checks=stationary_set(EXACT_SPEC))


def _toy_point(a=10 / 14):
    """The toy's instance and model at A = a Sigma^{-1} (a* = n / (n + d + 1)), and
    g(a*) = d (d + 1) / (n + d + 1)."""
    from proofs_checks.kit.stationary_float import stationary_instance
    from verify.claim import BUDGETS, Context

    ctx = Context(TOY.id, {f.name: f.parse() for f in TOY.formulas}, {}, BUDGETS["quick"])
    inst = stationary_instance(EXACT_SPEC, ctx)
    return inst, ToyModel(a * np.linalg.inv(inst.sigma)), 3 * 4 / 14


def test_the_forward_pass_loss_is_integrated_exactly_where_it_is_a_spectral_trace():
    v = check_claim(EXACT_TOY, tiers=("numeric",), budget="quick", seed=0)
    assert v.verdict == "verified", v.reason
    ev = v.tiers["numeric"].evidence
    assert ev["derived_loss_vs_forward_pass"]["ok"] is True
    assert ev["derived_loss_vs_forward_pass"]["relative_gap"] < 1e-13
    assert ev["derived_loss_vs_forward_pass"]["nodes"] == 2
    assert "derived_loss_vs_monte_carlo" not in ev
    assert ev["forward_pass_gradient_on_the_set"]["largest_relative"] < 1e-13


def test_a_derived_loss_off_the_forward_pass_decides_nothing():
    from proofs_checks.kit.stationary_float import forward_pass_loss_finding, forward_pass_mean

    inst, model, g = _toy_point()
    sm, why = forward_pass_mean(model, inst, "sigma_inverse", 2, 0)
    assert why == "" and forward_pass_loss_finding(g, sm).ok is True
    off = forward_pass_loss_finding(g * (1 + 1e-6), sm)
    assert off.ok is None and "disagree" in off.reason


def test_the_forward_pass_gradient_on_the_set_is_the_derived_one_away_from_the_optimum():
    """At a = 1/2: g(a) = a^2 d (n + d + 1)/n - 2 a d + d, so g'(a) = 2 a d (n + d + 1)/n - 2 d =
    3 (14/10 - 2) = -1.8, from the forward passes by autograd."""
    from proofs_checks.kit.stationary_float import forward_pass_mean, forward_pass_set_gradient

    inst, model, _ = _toy_point(0.5)
    sm, _ = forward_pass_mean(model, inst, "sigma_inverse", 2, 0)
    assert sm.value == pytest.approx(0.25 * 3 * 14 / 10 - 3 + 3, rel=1e-12)
    moved = {"a_0": _toy_point(1.5)[1]}
    grad = forward_pass_set_gradient(sm, model, moved)["derivatives"]["a_0"]
    assert grad == pytest.approx(-1.8, rel=1e-12)


def test_a_loss_of_higher_degree_or_no_spectral_trace_falls_back_to_monte_carlo():
    """Degree 1 stated for a loss of degree 2: the 1- and 2-point rules disagree; a model that
    reads one entry of X is not a function of W's eigenvalues: the random X show it."""
    from proofs_checks.kit.stationary_float import forward_pass_mean

    inst, model, g = _toy_point()
    sm, why = forward_pass_mean(model, inst, "sigma_inverse", 1, 0)
    assert sm is None and "rules disagree" in why

    class Lopsided(ToyModel):
        def predict(self, Z):
            return super().predict(Z) * (1 + 0.1 * Z[:, 0, 0])

    sm, why = forward_pass_mean(Lopsided(model.A.detach().numpy()), inst, "sigma_inverse", 2, 0)
    assert sm is None and "not a sum over W's eigenvalues" in why
    # degree 80 (four layers of ahn2023 (13)) needs E tr W^k to k = 83: beyond the exact engine
    sm, why = forward_pass_mean(model, inst, "sigma_inverse", 80, 0)
    assert sm is None and "past the exact moment engine" in why
