"""gatmiry2024, Sec. 4 and the proofs of Lemmas A.2, A.5: Isserlis and the Wishart moments
(lines 224, 396, 401, 440, 513)."""
import pytest

from verify.registry import find
from verify.runner import check_claim

WISHART = "gatmiry2024.lemma4_2_wishart"
EQ14 = "gatmiry2024.eq14"
EQ15 = "gatmiry2024.eq15"
EQ18 = "gatmiry2024.eq18"
A5 = "gatmiry2024.lemma_a5_genus_sum"


def verdict(cid, **overrides):
    return check_claim(find(cid), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


# ----- line 224 ---------------------------------------------------------------------------------
def test_sigma_a_is_not_wishart_and_the_symmetric_form_is():
    v = verdict(WISHART)
    assert v.verdict == "corrected", v.reason
    assert verdict(WISHART, **find(WISHART).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("text", [
    "A*Sigma",                    # not symmetric either
    "-A_half*Sigma*A_half",       # symmetric, negative semidefinite
    "A_half*Sigma_star*A_half",   # the mean, not a random Wishart matrix
    "Sigma*A*Sigma",              # symmetric, but not Wishart
])
def test_non_wishart_matrices_are_refuted(text):
    assert verdict(WISHART, wishart=text).verdict == "refuted"


# ----- eq. (14) ---------------------------------------------------------------------------------
def test_matrix_isserlis_is_verified():
    v = verdict(EQ14)
    assert v.verdict == "verified", v.reason


@pytest.mark.parametrize("text", ["2", "0", "-1", "1/2"])
def test_wrong_pairing_weights_are_refuted(text):
    assert verdict(EQ14, weight=text).verdict == "refuted"


# ----- eq. (15) ---------------------------------------------------------------------------------
def test_eq15_pairs_the_2k_factors():
    v = verdict(EQ15)
    assert v.verdict == "corrected", v.reason
    assert verdict(EQ15, **find(EQ15).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("text", ["2*k + 2", "2*k - 2", "k + 1", "4*k"])
def test_wrong_pairing_sets_are_refuted(text):
    assert verdict(EQ15, paired_positions=text).verdict == "refuted"


# ----- eq. (18) ---------------------------------------------------------------------------------
def test_eq18_indices_range_over_d():
    v = verdict(EQ18)
    assert v.verdict == "corrected", v.reason
    assert verdict(EQ18, **find(EQ18).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("text", ["d + 1", "n + d", "2*d", "n - 1"])
def test_wrong_index_ranges_are_refuted(text):
    assert verdict(EQ18, index_range=text).verdict == "refuted"


# ----- line 513 ---------------------------------------------------------------------------------
def test_lemma_a5_genus_expansion_is_verified():
    v = verdict(A5)
    assert v.verdict == "verified", v.reason


@pytest.mark.parametrize("name, text", [
    ("weight", "n**(C_G + 1)*p1**m1*p2**m2*p3**m3"),   # one n too many
    ("weight", "n**C_G"),                               # the traces dropped
    ("weight", "n**C_G*p1**m2*p2**m1*p3**m3"),          # cycle lengths swapped
    ("power", "c_star - 1"),                             # the v v^T of the first display
    ("power", "c_star + m1"),
])
def test_wrong_pairing_terms_are_refuted(name, text):
    assert verdict(A5, **{name: text}).verdict == "refuted"
