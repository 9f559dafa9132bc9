"""gatmiry2024, the proofs of Lemma A.10 and Thm. A.11: line 702 (|lambda_1 - 1| taken for
max_i |lambda_i - 1|), line 725 (the missing d^{1/(2L)}) and (28) (Lemma A.10's dropped d)."""
import pytest

from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}
IDS = ("gatmiry2024.thm_a11_epsilon_step", "gatmiry2024.eq28",
       "gatmiry2024.lemma_a10_lambda1_step")


def verdict(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic", "numeric"), overrides=overrides,
                       **QUICK)


@pytest.mark.parametrize("claim_id", IDS)
def test_corrected_and_the_correction_passes(claim_id):
    v = verdict(claim_id)
    assert v.verdict == "corrected", v.reason
    assert verdict(claim_id, **find(claim_id).correction.formulas).verdict == "verified"


def test_the_readers_epsilon_counterexample_is_in_the_grid():
    """L = 1, d = 4, delta = 0.01 (n = 1.024e11), eps = 4 delta (1 + 2^-j): eps^2 < 4 delta^2
    (eps + 2)^2 just above 4 delta."""
    v = verdict("gatmiry2024.thm_a11_epsilon_step",
                hypothesis="(epsilon > 4*delta) & (epsilon < 41/1000) & (d >= 4)")
    assert v.verdict == "refuted"
    assert v.counterexample["d"] == 4 and v.counterexample["n"] == "102400000000"


@pytest.mark.parametrize("claim_id,override", [
    ("gatmiry2024.thm_a11_epsilon_step", {"hypothesis": "(epsilon > 2*delta*d**(1/(2*L))) & "
                                                        "(delta*d**(1/(2*L)) <= 1/2)"}),
    ("gatmiry2024.eq28", {"rhs": "epsilon**(4*L - 2)/(4*d**((L - 1)/L))"}),  # the minimiser
    ("gatmiry2024.lemma_a10_lambda1_step", {"rhs": "(max_dev - epsilon)**(4*L - 2)/4"}),
], ids=["eps-factor-2", "eq28-without-size-condition", "line702-edge"])
def test_half_corrections_are_refuted(claim_id, override):
    assert verdict(claim_id, **override).verdict == "refuted"
