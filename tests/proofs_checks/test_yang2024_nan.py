"""yang2024: a formula value that is not a number decides nothing.  Every float search below kept
its largest error with ``if rel > worst`` (or Python's ``max``), which drops a NaN, so a formula
that evaluated to NaN at every point passed; it must leave the finding undecided (ok None)."""
import math

import numpy as np
import pytest

from proofs_checks.yang2024 import (attention, convergence, deterministic_loss, gradient_bounds,
                                    gradients, remarks, softmax)
from verify.claim import BUDGETS, Context
from verify.registry import find


def _ctx(cid):
    c = find(cid)
    F = {f.name: f.parse() for f in c.formulas}
    return Context(cid, F, {f.name: f.text for f in c.formulas}, BUDGETS["quick"], device="cpu",
                   seed=0)


def _nan_values(module, monkeypatch):
    real = module.float_value

    def nan_value(expr, values):
        try:
            v = np.asarray(real(expr, values), dtype=float)
        except ValueError:  # the paper's text ill-typed at these sizes (eq. (33)): a NaN scalar
            return math.nan
        return np.full(v.shape, math.nan) if v.shape else math.nan
    monkeypatch.setattr(module, "float_value", nan_value)


@pytest.mark.parametrize("cid, module, tier, names", [
    ("yang2024.eq45", gradients, gradients.eq45_numeric, ["autograd"]),
    ("yang2024.eq8", attention, lambda ctx: attention._prediction_numeric(ctx, "eq8"),
     ["architecture_float"]),
    ("yang2024.lemma1", softmax, softmax.lemma1_numeric, ["autograd"]),
    ("yang2024.eq33", deterministic_loss, deterministic_loss.eq33_numeric,
     ["target_vs_derived_optimum"]),
    ("yang2024.eq34", deterministic_loss, deterministic_loss.eq34_numeric,
     ["A_float", "A_woodbury_float"]),
    ("yang2024.lemma7", gradient_bounds, gradient_bounds.lemma7_numeric, ["bound_holds"]),
    ("yang2024.lemma9", gradient_bounds, lambda ctx: gradient_bounds._bounds_numeric(ctx, "lemma9"),
     ["b_bound", "delta_bound"]),
    ("yang2024.lemma8", gradient_bounds, lambda ctx: gradient_bounds._bounds_numeric(ctx, "lemma8"),
     ["b_lip", "delta_lip"]),
])
def test_a_formula_that_is_nan_everywhere_is_undecided(monkeypatch, cid, module, tier, names):
    _nan_values(module, monkeypatch)
    ev = tier(_ctx(cid)).evidence
    for name in names:
        assert ev[name]["ok"] is None, (name, ev[name])


def test_eq82_loss_display_that_is_nan_is_undecided(monkeypatch):
    monkeypatch.setattr(gradients, "float_scalar", lambda expr, values: math.nan)
    ctx = _ctx("yang2024.eq82")
    inst = gradients._grad_instance(ctx)
    dyn = gradients.dynamics(inst)
    import torch
    f = gradients._ell_numeric(ctx, ctx.formulas, inst, dyn, torch.Generator().manual_seed(0))
    assert f.ok is None


def test_thm1_with_a_rate_that_is_not_a_number_is_undecided(monkeypatch):
    real = convergence._thm1_constants
    monkeypatch.setattr(convergence, "_thm1_constants",
                        lambda *a: {**real(*a), "rate": math.nan})
    monkeypatch.setattr(convergence, "THM1_BUDGET", {"quick": (1, 5)})
    ev = convergence.thm1_numeric(_ctx("yang2024.thm1")).evidence
    assert ev["inequality_18_paper_rates"]["ok"] is None


def test_footnote_search_that_compared_nothing_or_nan_is_undecided(monkeypatch):
    import mpmath
    ctx = _ctx("yang2024.eq17_footnote")
    monkeypatch.setattr(remarks, "_fn", lambda expr, names: lambda *a: mpmath.mpf("nan"))
    assert remarks.footnote_symbolic(ctx).evidence["61_below_17_formally"]["ok"] is None

    def raises(*a):
        raise ValueError("no value")
    monkeypatch.setattr(remarks, "_fn", lambda expr, names: raises)
    assert remarks.footnote_symbolic(ctx).evidence["61_below_17_formally"]["ok"] is None


def test_lemma6_with_a_gamma_that_is_not_a_number_is_undecided():
    """Lemma 6's trajectory search kept ``max(worst, dev)``, which drops a NaN: a formula for
    gamma that is NaN made every deviation NaN and the finding passed with deviation 0."""
    import sympy
    from proofs_checks.yang2024 import reparametrisation
    ctx = _ctx("yang2024.lemma6")
    ctx.formulas["gamma"] = sympy.nan
    f = reparametrisation.lemma6_numeric(ctx).evidence["trajectories"]
    assert f["ok"] is None, f


def test_eq69_with_a_bound_that_is_not_a_number_is_undecided(monkeypatch):
    """(69)'s Monte Carlo counted ||y|| >= NaN (never true), so a NaN bound held with frequency
    0; its exact-law grid took np.argmax (a NaN first) and 'r > worst' (a NaN dropped), and a
    NaN bound was scored as a bound that is not real (a failure)."""
    import sympy
    from proofs_checks.yang2024 import inference_steps
    _nan_values(inference_steps, monkeypatch)
    ctx = _ctx("yang2024.eq69")
    assert inference_steps.eq69_numeric(ctx).evidence["monte_carlo"]["ok"] is None
    assert inference_steps._exact_finding(sympy.nan).ok is None
    assert inference_steps._exact_finding(sympy.oo).ok is None


def test_eq69_exact_law_keeps_a_nan_probability(monkeypatch):
    """A probability that is NaN at one grid point (and below delta at the others) decides
    nothing: 'r > worst' dropped it and the grid passed."""
    import sympy
    from proofs_checks.yang2024 import inference_steps
    real = inference_steps.worst_probability

    def one_nan(bound, B, Z_norm, tau, N):
        p = np.array(real(bound, B, Z_norm, tau, N), dtype=float)
        if N == 20 and tau == 1.0:
            p[1] = math.nan
        return p
    monkeypatch.setattr(inference_steps, "worst_probability", one_nan)
    F = sympy.sympify(_ctx("yang2024.eq69").formulas["y_bound"])
    assert inference_steps._exact_finding(F).ok is None


def test_thm2_tail_with_a_threshold_that_is_not_a_number_is_undecided(monkeypatch):
    """(68)'s Monte Carlo counted ||.||^2 >= NaN (never true): a NaN threshold held with
    frequency 0.  Its exact grid scored a NaN threshold as a failure (ratio inf)."""
    import sympy
    from proofs_checks.yang2024 import training
    assert training._tail_exact(sympy.nan).ok is None
    assert training._tail_exact(sympy.oo).ok is None
    _nan_values(training, monkeypatch)
    monkeypatch.setattr(training, "_thm2_chain", lambda *a: (0.5, {"spectral_bound_70_holds": True}))
    ev = training.thm2_numeric(_ctx("yang2024.thm2")).evidence
    assert ev["tail_68"]["ok"] is None
    assert ev["inference_bound_chain"]["ok"] is True


def test_thm2_chain_that_is_not_a_number_is_undecided(monkeypatch):
    """The chain (70) kept its worst ratio with 'r > worst' (a NaN dropped: a pass at ratio 0)."""
    import torch
    from proofs_checks.yang2024 import training
    training._thm2_chain.cache_clear()
    monkeypatch.setattr(training, "ridge_prediction",
                        lambda inst, y, lam: torch.full((y.shape[0], inst.K), math.nan,
                                                        dtype=torch.float64))
    inst = training.make_instance(_ctx("yang2024.thm2"))
    try:
        worst, where = training._thm2_chain(inst.seed, tuple(sorted(inst.sizes.items())), inst.tau,
                                            1, 2)
    finally:
        training._thm2_chain.cache_clear()
    assert math.isnan(worst)
    monkeypatch.setattr(training, "_thm2_chain", lambda *a: (worst, where))
    monkeypatch.setattr(training, "_tail_exact", lambda F: training.Finding("tail_68_exact", True))
    ev = training.thm2_numeric(_ctx("yang2024.thm2")).evidence
    assert ev["inference_bound_chain"]["ok"] is None
    monkeypatch.setattr(training, "_thm2_chain",
                        lambda *a: (0.5, {"spectral_bound_70_holds": None}))
    assert training.thm2_numeric(_ctx("yang2024.thm2")).evidence["inference_bound_chain"]["ok"] is None


def test_fig3_with_an_expected_gap_that_is_not_a_number_is_undecided(monkeypatch):
    """Fig. 3's curve: a NaN gap failed 'zero at N = m' (a refutation with no counterexample the
    engine could see), and a NaN change has z = copysign(inf, NaN), which passes or fails the
    z-test by the NaN's sign."""
    from proofs_checks.yang2024 import figures
    real = figures.expected_gap_poly()

    class NanAtM:
        def evaluate(self, tensors, values):
            out = real.evaluate(tensors, values)
            return math.nan if values["N"] == figures.FIG3_GRID["m"] else out

        def latex(self):
            return real.latex()
    monkeypatch.setattr(figures, "expected_gap_poly", lambda: NanAtM())
    ev = figures.fig3_numeric(_ctx("yang2024.fig3")).evidence
    assert ev["zero_at_N_equals_m"]["ok"] is None, ev["zero_at_N_equals_m"]
    assert ev["closer_is_better"]["ok"] is None, ev["closer_is_better"]


@pytest.mark.parametrize("cid, name, text", [
    ("yang2024.lemma7", "grad_bound", "-2*sqrt(2)*alpha*sqrt(excess)*fbar_max*gamma"),
    ("yang2024.lemma8", "b_lip", "-1")])
def test_a_bound_below_zero_under_a_positive_norm_is_exceeded_infinitely_and_refuted(cid, name,
                                                                                       text):
    """The infinite ratio of a bound <= 0 is a decided failure, not an overflow: refuted by the
    numeric tier (the NaN rule must not turn it undecided)."""
    from verify.runner import check_claim
    v = check_claim(find(cid), tiers=("numeric",), budget="quick", seed=0, overrides={name: text})
    assert v.verdict == "refuted" and v.tiers["numeric"].status == "fail", v.reason


def test_a_bound_of_minus_infinity_is_still_a_decided_failure():
    """Only NaN (and +inf) decide nothing: a bound of -inf is exceeded with probability 1."""
    import sympy
    from proofs_checks.yang2024 import inference_steps, training
    assert inference_steps._exact_finding(-sympy.oo).ok is False
    assert training._tail_exact(-sympy.oo).ok is False


def test_thm2_chain_keeps_an_early_failure_of_the_spectral_bound(monkeypatch):
    """(70)'s spectral bound failing at the first checkpoint (its gap norm made huge there) is
    kept when a later checkpoint holds the worst ratio: the chain used to report the spectral
    bound of the worst ratio's checkpoint only."""
    import torch
    from proofs_checks.yang2024 import training
    real, calls = torch.linalg.matrix_norm, []

    def huge_first(x, *a, **k):
        calls.append(1)
        out = real(x, *a, **k)
        return out * 1e12 if len(calls) == 1 else out

    inst = training.make_instance(_ctx("yang2024.thm2"))
    training._thm2_chain.cache_clear()
    monkeypatch.setattr(torch.linalg, "matrix_norm", huge_first)
    try:
        worst, where = training._thm2_chain(inst.seed, tuple(sorted(inst.sizes.items())), inst.tau,
                                            1, 2)
    finally:
        training._thm2_chain.cache_clear()
    assert where["spectral_bound_70_holds"] is False
    assert where["spectral_bound_70_fails_at"]["step"] == 0


def test_thm2_a_tail_that_is_not_a_real_number_is_refuted_not_an_error():
    """sqrt(log(1/N)) is complex for N > 1: (68) bounds nothing there, a failure (it raised
    TypeError in the NaN test of the Monte Carlo tail)."""
    from verify.runner import check_claim
    v = check_claim(find("yang2024.thm2"), tiers=("numeric",), budget="quick", seed=0, overrides={
        "tail": "2*sqrt(N)*lam_sq*tau*sqrt(log(1/N)) + N*lam_sq*tau + 2*lam_sq*tau*log(1/delta)"})
    assert v.verdict == "refuted" and "not a real number" in v.tiers["numeric"].reason, v.reason


def test_a_tail_that_is_not_real_on_part_of_the_grid_is_a_decided_failure():
    """sqrt(log(1/tau)) is not real for tau > 1: the mutant of (68) with delta -> tau survived
    as 'not finite' (undecided); a threshold that is no real number bounds nothing."""
    import sympy
    from proofs_checks.yang2024 import training
    N, tau, lam_sq, delta = sympy.symbols("N tau lam_sq delta", positive=True)
    bad = (2 * sympy.sqrt(N) * lam_sq * tau * sympy.sqrt(sympy.log(1 / tau)) + N * lam_sq * tau
           + 2 * lam_sq * tau * sympy.log(1 / delta))
    found = training._tail_exact(bad)
    assert found.ok is False and found.evidence["not_real_at"]["tau"] > 1
    good = N * lam_sq * tau + 2 * sympy.sqrt(N * sympy.log(1 / delta)) * lam_sq * tau \
        + 2 * lam_sq * tau * sympy.log(1 / delta)
    assert training._tail_exact(good).ok is True
