"""gatmiry2024 around the optimum: the tightness remark (lines 169, 179), the proof of Thm. A.8
(lines 593, 599) and the gradient moment of the proof of Lemma A.9 (line 668)."""
import pytest

from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}
AS_COMPUTED = {"gatmiry2024.thm3_2_tight": "refuted",
               "gatmiry2024.thm_a8_loss_at_inverse": "verified",
               "gatmiry2024.thm_a8_far_eigenvalue": "refuted",
               "gatmiry2024.lemma_a9_gradient_moment": "corrected",
               "gatmiry2024.lemma4_1_remark": "verified",
               "gatmiry2024.lemma_a9_eigenvalue_step": "verified"}


def verdict(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic", "numeric"), overrides=overrides,
                       **QUICK)


@pytest.mark.parametrize("claim_id", sorted(AS_COMPUTED))
def test_verdicts(claim_id):
    assert verdict(claim_id).verdict == AS_COMPUTED[claim_id]


def test_a_radius_of_order_d_over_n_would_be_tight():
    """At L = 1 the distance of A^opt from Sigma*^{-1} is (d + 1) / (n + d + 1): a radius
    ~ d / n passes the symbolic limit, the printed 8 delta sqrt(d) ~ d n^{-1/4} does not."""
    v = check_claim(find("gatmiry2024.thm3_2_tight"), tiers=("symbolic",),
                    overrides={"radius": "(d + 1)/n"}, **QUICK)
    assert v.verdict == "verified", v.reason


def test_the_far_eigenvalue_chain_fails_even_corrected():
    """lambda_1 + 1 = 2 + 4 delta d^{1/(2L)} at the edge: the corrected middle term carries the
    first step, but not the second near delta d^{1/(2L)} = 1/2 (L = 1, d = 1, n = 1025)."""
    v = verdict("gatmiry2024.thm_a8_far_eigenvalue")
    assert v.counterexample["check"] == "lemma_bound_to_middle"
    fixed = verdict("gatmiry2024.thm_a8_far_eigenvalue",
                    **find("gatmiry2024.thm_a8_far_eigenvalue").correction.formulas)
    assert fixed.verdict == "refuted" and fixed.counterexample["check"] == "middle_above_bound"
    # away from the edge the corrected chain holds
    far = verdict("gatmiry2024.thm_a8_far_eigenvalue", hypothesis="delta*d**(1/(2*L)) < 1/4",
                  **find("gatmiry2024.thm_a8_far_eigenvalue").correction.formulas)
    assert far.verdict == "verified", far.reason


@pytest.mark.parametrize("claim_id,override", [
    ("gatmiry2024.thm_a8_loss_at_inverse", {"bound": "d*(2*delta)**(2*L)/10**6"}),
    ("gatmiry2024.lemma_a9_gradient_moment",
     {"lower": "(1 - lambda_j)**(2*L - 1) - delta**(2*L)*(lambda_1 + 1)**(2*L - 1)",
      "upper": "(1 - lambda_j)**(2*L - 1)"}),
    ("gatmiry2024.lemma4_1_remark", {"minimiser": "Sigma_star"}),
    ("gatmiry2024.lemma4_1_remark", {"minimiser": "2*Inverse(Sigma_star)"}),
    ("gatmiry2024.lemma_a9_eigenvalue_step", {"radius": "epsilon/2"}),
    ("gatmiry2024.lemma_a9_eigenvalue_step",
     {"hypothesis": "(epsilon > 2*delta) & (loss <= 2*epsilon**(2*L))"}),
], ids=["inverse-tiny-bound", "moment-no-error-term", "min-sigma", "min-twice", "a9-half",
        "a9-wider"])
def test_wrong_formulas_are_refuted(claim_id, override):
    assert verdict(claim_id, **override).verdict == "refuted"
