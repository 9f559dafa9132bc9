"""gatmiry2024, the proof of Lemma A.2: Isserlis over the pairings of the 2k factors, the
graphs G_p, G'_p, the pairing count and the Stirling step of (20)."""
import pytest

from proofs_checks.gatmiry2024.pairings import c_g, c_gp, pairings, paired_single
from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}
AS_COMPUTED = {"gatmiry2024.eq16": "verified", "gatmiry2024.eq19": "corrected",
               "gatmiry2024.lemma_a2_genus_sum": "verified",
               "gatmiry2024.lemma_a2_genus_bound": "verified",
               "gatmiry2024.lemma_a2_pairing_count": "corrected", "gatmiry2024.eq20": "corrected"}


def verdict(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic", "numeric"), overrides=overrides,
                       **QUICK)


@pytest.mark.parametrize("claim_id", sorted(AS_COMPUTED))
def test_verdicts_and_corrections(claim_id):
    v = verdict(claim_id)
    assert v.verdict == AS_COMPUTED[claim_id], v.reason
    if v.verdict == "corrected":
        assert verdict(claim_id, **find(claim_id).correction.formulas).verdict == "verified"


def test_pairings_and_graphs_at_k_2():
    """k = 2: three pairings of x x^T x x^T; E[x x^T x x^T] = (d + 2) I from d^{C(G'_p) - 1}:
    1 + 1 + d (the pairing (1,4)(2,3) closes the inner product on its own)."""
    ps = pairings(4)
    assert len(ps) == 3 and len(pairings(6)) == 15 and len(pairings(8)) == 105
    assert sorted(c_gp(2, p) for p in ps) == [1, 1, 2]
    assert sorted(c_g(2, p) for p in ps) == [1, 1, 2]
    total = sum((paired_single(2, 3, p) for p in ps[1:]), paired_single(2, 3, ps[0]))
    assert total == 5 * paired_single(1, 3, ((1, 2),))


@pytest.mark.parametrize("claim_id,override", [
    ("gatmiry2024.eq16", {"count": "n**(C_G + 1)"}),
    ("gatmiry2024.eq19", {"term": "d**C_Gp*Identity(d)"}),
    ("gatmiry2024.lemma_a2_genus_sum", {"term": "n**C_G*d**C_Gp"}),
    ("gatmiry2024.lemma_a2_genus_bound", {"total_bound": "k"}),
    ("gatmiry2024.lemma_a2_genus_bound", {"cp_bound": "k - r"}),
    ("gatmiry2024.eq20", {"term_bound": "k**s"}),
    ("gatmiry2024.eq20", {"stirling": "exp(1)*sqrt(s)*(2*s/exp(1))**s",
                          "term_bound": "(2*k)**s/2"}),
], ids=["count", "term19", "genus-sum", "total", "cp", "k-to-s", "half"])
def test_wrong_formulas_are_refuted(claim_id, override):
    assert verdict(claim_id, **override).verdict == "refuted"
