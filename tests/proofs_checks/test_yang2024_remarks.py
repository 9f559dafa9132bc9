"""yang2024 remarks: footnote 1, the trend of (18) in K and H, the regimes N < m and N > m, one head."""
import pytest

from verify.registry import find
from verify.runner import check_claim


def run(claim_id, tiers=("symbolic", "numeric"), **overrides):
    return check_claim(find(claim_id), tiers=tiers, budget="quick", seed=0, device="cpu",
                       overrides=overrides)


def test_footnote_61_exceeds_17_when_zbar_is_small():
    v = run("yang2024.eq17_footnote")
    assert v.verdict == "refuted", v.as_dict()
    assert v.tiers["numeric"].counterexample["Zbar_norm"] < 1
    assert run("yang2024.eq17_footnote", L_sq_61="0").verdict == "verified"


def test_rate_trend_grows_with_H_because_zeta0_does():
    v = run("yang2024.thm1_rate_trend", tiers=("numeric",))
    assert v.verdict == "refuted"
    ev = v.tiers["numeric"].evidence
    assert ev["slower_with_K"]["ok"] is True and ev["slower_with_H"]["ok"] is False
    assert run("yang2024.thm1_rate_trend", tiers=("numeric",), rate="1 - 1/(2*K)").verdict == "verified"


def test_regimes_hold_and_wider_ones_are_refuted():
    assert run("yang2024.eq25_regimes").verdict == "verified"
    assert run("yang2024.eq25_regimes", underfit="N <= m").verdict == "refuted"
    assert run("yang2024.eq25_regimes", overfit="N > m - 1").verdict == "refuted"


@pytest.mark.parametrize("heads,verdict", [("1", "verified"), ("0", "verified"), ("2", "refuted"),
                                           ("N", "refuted")])
def test_one_head_has_a_gap_and_two_heads_do_not(heads, verdict):
    assert run("yang2024.eq8_one_head", heads=heads).verdict == verdict
