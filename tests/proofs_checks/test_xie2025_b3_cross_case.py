"""xie2025 App. B.3, line 879: the i != k terms contribute C(C-1) w[j] w (right, derived by the
moment kernel), not C(C-1) e_j (proofs_checks/xie2025/b3_cross_case.py)."""
import pytest

from proofs_checks.xie2025.b3_cross_case import B3_CROSS_CASE
from verify.registry import find
from verify.runner import check_claim

CID = "xie2025.eq_b3_cross_case"
FIXED = dict(B3_CROSS_CASE.correction.formulas)


def run(**overrides):
    return check_claim(find(CID), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


def test_the_second_member_is_refuted_and_the_correction_verified():
    v = run()
    assert v.verdict == "corrected", v.as_dict()
    for tier in ("symbolic", "numeric"):
        ev = v.tiers[tier].evidence
        assert ev["cross_term"]["ok"] is True and ev["cross_value"]["ok"] is False
    ce = v.tiers["symbolic"].counterexample
    assert ce["check"] == "cross_value" and ce["lhs"] == "0" and "C - 1" in ce["rhs"]
    assert {t: r.status for t, r in v.correction_tiers.items()} == {"symbolic": "pass",
                                                                     "numeric": "pass"}


@pytest.mark.parametrize("name, wrong", [
    ("cross_term", "C*C*w_j*w"),          # C^2 pairs, not C(C-1)
    ("cross_term", "C*(C - 1)*w_j*e"),    # e_j for w
    ("cross_value", "C*(C - 1)*e*w.T*w"),  # ||w||^2 e_j: the i = k case's other term
])
def test_wrong_members_are_refuted(name, wrong):
    v = run(**{**FIXED, name: wrong})
    assert v.verdict == "refuted", v.as_dict()
    assert v.tiers["symbolic"].evidence[name]["ok"] is False


def test_an_ill_typed_member_is_refused_as_bad_input():
    from verify.errors import UsageError

    with pytest.raises(UsageError, match="must be dx1"):  # a 1x1 scalar, not a d-vector
        run(**{**FIXED, "cross_value": "C*(C - 1)*w_j*w.T*w"})
