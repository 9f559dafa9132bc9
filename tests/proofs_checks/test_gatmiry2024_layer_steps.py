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
