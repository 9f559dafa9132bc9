"""gatmiry2024: eq. (17) (second moments of x ~ N(0, I)) and the expectation over w* in the
proof of Lemma A.3 (line 482: x_q^T M^2 x_q for x_q^T M^T Sigma*^{-1} M x_q)."""
import pytest

from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}


def verdict(claim_id, tiers=("symbolic", "numeric"), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, **QUICK)


def test_eq17_is_verified():
    assert verdict("gatmiry2024.eq17").verdict == "verified"


def test_the_w_expectation_is_corrected():
    cid = "gatmiry2024.lemma_a3_w_expectation"
    v = verdict(cid)
    assert v.verdict == "corrected", v.reason
    assert {t.status for t in v.tiers.values()} == {"fail"}  # exact and Monte Carlo
    assert verdict(cid, **find(cid).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("claim_id,override", [
    ("gatmiry2024.eq17", {"quad": "trace(A.T*A)"}),
    ("gatmiry2024.eq17", {"xvx": "2*v"}),
    ("gatmiry2024.eq17", {"xtvxt": "-v.T"}),
    ("gatmiry2024.eq17", {"xax": "alpha*Identity(d)/d"}),
    ("gatmiry2024.lemma_a3_w_expectation", {"w_moment": "x_q.T*M_prod.T*M_prod*x_q"}),
    ("gatmiry2024.lemma_a3_w_expectation",
     {"w_moment": "x_q.T*M_prod*Inverse(Sigma_star)*M_prod.T*x_q"}),
], ids=["quad", "xvx", "xtvxt", "xax", "no-sigma", "transposed"])
def test_wrong_formulas_are_refuted(claim_id, override):
    v = verdict(claim_id, **override)
    assert v.verdict == "refuted" and v.tiers["symbolic"].status == "fail", v.reason
