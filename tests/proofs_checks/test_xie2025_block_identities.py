"""xie2025 Sec. 3's concatenated heads and App. B.1's product: verified as printed, wrong formulas
refuted (proofs_checks/xie2025/block_identities.py)."""
import pytest

from verify.registry import find
from verify.runner import check_claim

B1 = ("BlockMatrix([[ZeroMatrix(d, C), ZeroMatrix(d, 1)], "
      "[(w_star.T*X.T - y.T)*X*X.T, (w_star.T*X.T - y.T)*X*x_q]])")


def run(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


@pytest.mark.parametrize("claim_id", ["xie2025.eq6_concat", "xie2025.eq8_b1"])
def test_verified_as_printed(claim_id):
    v = run(claim_id)
    assert v.verdict == "verified", v.as_dict()
    assert v.tiers["symbolic"].status == v.tiers["numeric"].status == "pass"


@pytest.mark.parametrize("overrides", [{"WP_1": "O_2"}, {"WP_2": "O_2.T"}, {"WP_1": "-O_1"}])
def test_concat_wrong_projection_refuted(overrides):
    v = run("xie2025.eq6_concat", **overrides)
    assert v.verdict == "refuted"
    assert v.tiers["symbolic"].status == v.tiers["numeric"].status == "fail"


@pytest.mark.parametrize("text", [
    B1.replace("w_star.T*X.T - y.T)*X*X.T", "w_star.T*X.T + y.T)*X*X.T"),
    B1.replace("*X*x_q]", "*X*x_q*2]"),
    B1.replace("ZeroMatrix(d, C), ZeroMatrix(d, 1)", "OneMatrix(d, C), ZeroMatrix(d, 1)"),
])
def test_b1_wrong_display_refuted(text):
    v = run("xie2025.eq8_b1", VMKQ=text)
    assert v.verdict == "refuted"
    assert v.counterexample["check"] in ("B1_product", "B1_product_float64")
