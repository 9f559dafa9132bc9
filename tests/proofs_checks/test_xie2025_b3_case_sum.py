"""xie2025 App. B.3, line 897: the sum of the two cases is ill-typed as printed and corrected to
C(C-1) w_j w + C(2 w_j w + ||w||^2 e_j) (proofs_checks/xie2025/b3_case_sum.py)."""
import pytest

from proofs_checks.xie2025.b3_case_sum import B3_CASE_SUM, derived
from verify.registry import find
from verify.runner import check_claim

CID = "xie2025.eq_b3_case_sum"
FIXED = dict(B3_CASE_SUM.correction.formulas)


def run(**overrides):
    return check_claim(find(CID), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


def test_ill_typed_as_printed_and_corrected():
    v = run()
    assert v.verdict == "corrected", v.as_dict()
    sym, num = v.tiers["symbolic"], v.tiers["numeric"]
    assert sym.status == num.status == "fail"
    types = sym.evidence["types"]
    assert types["ok"] is False and "1x1" in types["errors"][0] and "dx1" in types["errors"][0]
    assert "derived_sum" not in sym.evidence  # an ill-typed text is not compared by value
    assert num.evidence["monte_carlo"]["ok"] is False
    assert "cannot add shapes" in num.evidence["monte_carlo"]["error"]
    # at d = 1, where the shapes agree, the printed sum is still wrong (cubic in w)
    d1 = sym.counterexample["even_at_d=1"]
    assert d1["at_C=2_w=2"] == {"printed": "40", "derived": "32"}


def test_correction_verified():
    v = run(**FIXED)
    assert v.verdict == "verified", v.as_dict()
    rows = v.tiers["symbolic"].evidence["derived_sum"]["instances"]
    assert len(rows) == 4 and all(r["agree"] for r in rows)
    coords = v.tiers["numeric"].evidence["monte_carlo"]["coordinates"]
    assert all(c["ci"][0] <= c["formula"] <= c["ci"][1] for c in coords)


def test_the_kernel_cases_add_up():
    der = derived()
    assert der["cases_add_up"]
    assert str(der["cross"]) == "(1)*w * (e'*w)"          # i != k: w_j w (line 875)
    assert str(der["diag"]) == "(1)*e * (w'*w) + (2)*w * (e'*w)"  # i = k (line 889)


@pytest.mark.parametrize("text", [
    "C*(2*w_j*w + e*w.T*w) + C*(C - 2)*w_j*w",   # a wrong count of pairs
    "C*(2*w_j*w + e*w.T*w)",                      # the i != k case dropped
    "C*(2*w_j*w + e*w.T*w) + C*(C - 1)*e",        # line 879's second member, C(C-1) e_j
    "C*(w_j*w + e*w.T*w) + C*(C - 1)*w_j*w",      # Isserlis' factor 2 dropped
    "C*(C + 1)*w_j*w + C*e",                      # ||w||^2 dropped
])
def test_wrong_formulas_refuted(text):
    assert run(case_sum=text).verdict == "refuted"
