"""xie2025 App. B.3, Step 2: lines 807, 846, 929 are corrected; the moments of lines 817-905
hold (proofs_checks/xie2025/b3_moments.py)."""
import pytest

from proofs_checks.xie2025.b3_moments import B3_MOMENTS
from verify.registry import find
from verify.runner import check_claim

FIXED = dict(B3_MOMENTS.correction.formulas)


def run(**overrides):
    return check_claim(find("xie2025.thm4_moments"), tiers=("symbolic", "numeric"),
                       overrides=overrides, budget="quick", seed=0)


def test_corrected_at_three_lines():
    v = run()
    assert v.verdict == "corrected", v.as_dict()
    ev = v.tiers["symbolic"].evidence
    assert [k for k, e in ev.items() if isinstance(e, dict) and e.get("ok") is False] == [
        "bGa_first_807", "gradient_a_j_846", "gradient_v_j_929"]
    rows = ev["gradient_a_j_846"]["rows"]
    at_point = [r for r in rows if r["point_(alpha,beta,gamma)"] == ["0", "0", "1"]]
    assert [r["derived_grad_v_j"] for r in at_point] == ["0", "0"]
    assert [r["E[t_j b^T G a_j]"] for r in at_point] == ["3/2", "1"]  # (d+1)/C, not 0
    assert run(**FIXED).verdict == "verified"


@pytest.mark.parametrize("overrides", [
    {"grad_aj": "3*E_tGb"}, {"grad_vj": "2*(E_tbGalast + 2*E_t)"},
    {"sum_sq": "C*(C - 1) + C*(d + 1)"}, {"isserlis": "w_j*w + trace(w*w.T)*e"},
    {"sum_ik": "C*(C + 1)*w_j*w"}, {"piece_y": "1"}, {"bGa_j": "w.T*X.T*X*e/d"},
])
def test_wrong_formulas_refuted(overrides):
    assert run(**{**FIXED, **overrides}).verdict == "refuted"
