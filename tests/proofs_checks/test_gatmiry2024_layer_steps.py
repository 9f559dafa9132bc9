"""gatmiry2024, the proof of Thm. A.1 (line 360): the label update drops the u-term."""
import pytest

from verify.registry import find
from verify.runner import check_claim

CID = "gatmiry2024.thm_a1_label_update"


def verdict(**overrides):
    return check_claim(find(CID), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


def test_the_label_update_is_corrected_by_the_u_term():
    v = verdict()
    assert v.verdict == "corrected", v.reason
    assert verdict(**find(CID).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("text", [
    "y_t.T - (u.T*X*X.T - y_t.T*X.T)*A*X/n",   # the u-term with the wrong sign
    "y_t.T - (u.T*X*X.T + y_t.T*X.T)*A*X",     # without 1/n
    "y_t.T - (u.T + y_t.T*X.T)*A*X/n",          # u without X X^T
])
def test_wrong_updates_are_refuted(text):
    assert verdict(y_next=text).verdict == "refuted"


# ----- line 356: the update rule ----------------------------------------------------------------
RULE = "gatmiry2024.thm_a1_update_rule"
QUERY = "gatmiry2024.thm_a1_query_update"


def verdict_of(cid, **overrides):
    return check_claim(find(cid), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


def test_the_printed_update_rule_is_ill_typed_and_corrected():
    v = verdict_of(RULE)
    assert v.verdict == "corrected", v.reason
    assert verdict_of(RULE, **find(RULE).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("text", [
    "Z - P*Z*M*Z.T*Q*Z",            # without 1/n
    "Z + P*Z*M*Z.T*Q*Z/n",          # eq. (3)'s sign flipped
    "Z - P*Z*Z.T*Q*Z/n",            # no mask: the query attends to itself
])
def test_wrong_update_rules_are_refuted(text):
    assert verdict_of(RULE, Z_next=text).verdict == "refuted"


# ----- line 370: the query label ----------------------------------------------------------------
def test_the_query_update_is_corrected():
    v = verdict_of(QUERY)
    assert v.verdict == "corrected", v.reason
    assert verdict_of(QUERY, **find(QUERY).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("text", [
    "yq_t - y_t.T*X.T*A*x_q/n",                     # Q read as A: the sign is still wrong
    "yq_t + y_t.T*X.T*A*x_q/n",                     # the right sign without the u-term
    "yq_t - (u.T*X*X.T + y_t.T*X.T)*A*x_q/n",       # the u-term, printed sign
])
def test_wrong_query_updates_are_refuted(text):
    assert verdict_of(QUERY, yq_next=text).verdict == "refuted"
