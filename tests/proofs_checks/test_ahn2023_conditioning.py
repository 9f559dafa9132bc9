"""ahn2023 Sec. 6 (line 279) and Sec. 6.1 / Fig. 4 (line 302): do B_0, B_1 improve the
conditioning of the Gram matrices X_i M X_i^T at the minimiser of f on S?"""
import numpy as np
import pytest
import torch

from proofs_checks.ahn2023 import conditioning as cond
from verify.registry import find
from verify.runner import check_claim

EACH = "ahn2023.thm5_conditioning"
PAIR = "ahn2023.fig4_conditioning"


def verdict(cid, **overrides):
    return check_claim(find(cid), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


def test_the_minimiser_on_S_is_sec_61s_critical_value():
    """The derived minimiser is the critical point the Fig. 3 runs reach (g* = 0.039259)."""
    p = cond.s_minimiser(cond.N, cond.D, cond.LAYERS, **cond.MINIMISER_BUDGETS["quick"])
    assert abs(p["value"] - 0.0392593209468) < 1e-10
    assert np.allclose(p["a"], [-0.53899, -1.57036, -11.78100], atol=1e-4)
    assert np.allclose(p["b"], [0.29698, 0.94821], atol=1e-4)
    assert min(p["hessian_eigenvalues"]) > 0 and p["grad_norm"] < 1e-8


def test_the_forward_pass_maps_the_gram_spectrum_by_the_layer_polynomial():
    """At Sigma = I on S, layer 0 sends the eigenvalues lambda of X M X^T to
    lambda (1 + a_0 b_0 lambda / n)^2, so cond(X_1 M X_1^T) is that map's ratio: the Monte Carlo
    reads the real forward pass with the right weights."""
    a, b = [-0.5, -1.5, -2.0], [0.3, 0.9]
    lc = cond.log_conditions(np.eye(cond.D), a, b, 50, seed=3)
    g = torch.Generator().manual_seed(3)
    from models.sampler import PromptLaw, sample_prompts
    law = PromptLaw(torch.eye(cond.D, dtype=torch.float64), cond.N,
                    w_cov=torch.eye(cond.D, dtype=torch.float64))
    X = sample_prompts(law, 50, g).X.numpy()
    lam = np.linalg.eigvalsh(X @ X.transpose(0, 2, 1))
    phi = lam * (1 + a[0] * b[0] * lam / cond.N) ** 2
    assert np.allclose(lc[0], np.log(lam[:, -1] / lam[:, 0]))
    assert np.allclose(lc[1], np.log(phi.max(1) / phi.min(1)))


def test_compare_decides_by_both_intervals():
    rng = np.random.default_rng(0)
    base = rng.standard_normal(4000)
    lc = np.array([base, base - 0.5 + 0.1 * rng.standard_normal(4000),
                   base + 0.02 * rng.standard_normal(4000)])
    assert cond.compare(lc, 1, 0, 1)["outcome"] == "better"
    assert cond.compare(lc, 0, 1, 1)["outcome"] == "worse"
    assert cond.compare(lc, 2, 0, 1)["outcome"] is None


def test_b0_helps_and_b1_hurts_so_each_iteration_is_corrected():
    v = verdict(EACH)
    assert v.verdict == "corrected", v.reason
    assert v.tiers["numeric"].status == "fail"
    layers = v.counterexample
    assert layers["stated_improving_layers"] == 2
    rows = [row for row in layers.values() if isinstance(row, dict)]
    assert len(rows) == 2  # Sigma = I and Sec. 6.1's Sigma = U^T D^2 U
    assert all(row["B_0: X_1 vs X_0"].startswith("better") for row in rows)
    assert all(row["B_1: X_2 vs X_1"].startswith("worse") for row in rows)
    assert verdict(EACH, **find(EACH).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("text", ["0", "3", "1/2", "-1"])
def test_wrong_counts_are_refuted(text):
    assert verdict(EACH, improving_layers=text).verdict == "refuted"


def test_x2_is_worse_conditioned_than_x1_so_fig4_is_corrected():
    v = verdict(PAIR)
    assert v.verdict == "corrected", v.reason
    assert v.counterexample["X"] == [2, 1]
    assert verdict(PAIR, **find(PAIR).correction.formulas).verdict == "verified"
    assert verdict(PAIR, better_X="1", than_X="2").verdict == "verified"  # the other way round
    assert verdict(PAIR, better_X="0", than_X="2").verdict == "verified"  # X_2 is the worst


@pytest.mark.parametrize("better, than", [("2", "0"), ("0", "1"), ("1", "1"), ("3", "1"),
                                          ("2", "1/2")])
def test_wrong_pairs_are_refuted(better, than):
    assert verdict(PAIR, better_X=better, than_X=than).verdict == "refuted"


@pytest.mark.parametrize("eigs", [[1.0, float("nan"), 2.0], [float("nan"), 1.0, 2.0]])
def test_a_hessian_eigenvalue_that_is_nan_is_undecided(monkeypatch, eigs):
    """``min(eigs) > 0`` with Python's min dropped a NaN after the first entry (a pass) and
    kept it first (a failure); a NaN decides nothing, wherever it stands."""
    ctx = _quick_ctx(EACH)
    p = dict(cond.minimiser_for(ctx), hessian_eigenvalues=eigs)
    monkeypatch.setattr(cond, "minimiser_for", lambda ctx: p)
    ev = cond.minimiser_symbolic(ctx).evidence
    assert ev["strict_local_minimum"]["ok"] is None, ev["strict_local_minimum"]
    assert ev["stationary"]["ok"] is True and ev["lowest_restart"]["ok"] is True


def test_a_minimiser_value_or_gradient_that_is_nan_is_undecided(monkeypatch):
    ctx = _quick_ctx(EACH)
    p = dict(cond.minimiser_for(ctx), value=float("nan"), grad_norm=float("nan"))
    monkeypatch.setattr(cond, "minimiser_for", lambda ctx: p)
    ev = cond.minimiser_symbolic(ctx).evidence
    assert ev["stationary"]["ok"] is None and ev["lowest_restart"]["ok"] is None


def test_a_minimiser_newton_did_not_settle_is_undecided_not_refuted(monkeypatch):
    """The minimiser of f on S is the engine's reference point: Newton thrown out of its basin
    (a huge gradient, a value above the restarts', an indefinite Hessian; measured once at
    --budget quick after a rounding change in the L-BFGS) decides nothing about the claims,
    and the numeric tiers read at it decide nothing either."""
    ctx = _quick_ctx(EACH)
    p = dict(cond.minimiser_for(ctx), value=3.1e11, grad_norm=2.4e13,
             hessian_eigenvalues=[-1.1e12, -2.7e11, 1.2e12, 2.2e15])
    monkeypatch.setattr(cond, "minimiser_for", lambda ctx: p)
    ev = cond.minimiser_symbolic(ctx).evidence
    for name in ("stationary", "strict_local_minimum", "lowest_restart"):
        assert ev[name]["ok"] is None and "not settled" in ev[name]["reason"], ev[name]
    for check in (cond.each_iteration_numeric, cond.pair_numeric):
        tier = check(ctx)
        assert tier.status != "fail" and "not settled" in tier.evidence["minimiser_settled"][
            "reason"]


def _quick_ctx(cid):
    from verify.claim import BUDGETS, Context
    c = find(cid)
    return Context(cid, {f.name: f.parse() for f in c.formulas},
                   {f.name: f.text for f in c.formulas}, BUDGETS["quick"], device="cpu", seed=0)
