"""yang2024 App. C: the Woodbury identity (65) and the bound (69) on ||y||_2."""
import numpy as np
import pytest

from proofs_checks.yang2024.inference_steps import worst_probability, y_quantile
from verify.registry import find
from verify.runner import check_claim


def run(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic", "numeric"), budget="quick", seed=0, device="cpu",
                       overrides=overrides)


@pytest.mark.parametrize("claim_id", ["yang2024.eq65", "yang2024.eq69"])
def test_true_statements_are_verified(claim_id):
    v = run(claim_id)
    assert v.verdict == "verified", v.as_dict()


@pytest.mark.parametrize("wrong", ["Identity(N)/(m*tau) - Z.T*Inverse(m*tau*Identity(m) + Z*Z.T)*Z",
                                   "Identity(N)/(m*tau) + Z.T*Inverse(m*tau*Identity(m) + Z*Z.T)*Z/(m*tau)",
                                   "Identity(N)/(N*tau) - Z.T*Inverse(N*tau*Identity(m) + Z*Z.T)*Z/(N*tau)"])
def test_wrong_woodbury_is_refuted(wrong):
    assert run("yang2024.eq65", G_inv=wrong).verdict == "refuted"


def test_69_without_its_noise_term_is_refuted_by_the_exact_law():
    v = run("yang2024.eq69", y_bound="B*Z_norm")
    assert v.verdict == "refuted"
    assert v.tiers["symbolic"].evidence["worst_lambda_exact_law"]["ok"] is False


def test_the_exact_quantile_is_below_69_and_attains_delta():
    point = {"N": 5, "delta": 0.1, "tau": 0.5, "B": 2.0, "Z_norm": 1.5}
    q = y_quantile(point)["y_bound"]
    assert abs(worst_probability(np.array([q]), 2.0, 1.5, 0.5, 5)[0] - 0.1) < 1e-9
    printed = 2.0 * (1.5 + np.sqrt(0.5) * np.sqrt(5 + 2 * np.sqrt(5 * np.log(10)) + 2 * np.log(10)))
    assert q < printed
