"""xie2025 App. B.3, Step 1: line 755 counts v^T x_q twice (corrected); lines 759-800 hold
(proofs_checks/xie2025/b3_risk.py)."""
import pytest

from verify.registry import find
from verify.runner import check_claim


def run(**overrides):
    return check_claim(find("xie2025.thm4_risk"), tiers=("symbolic", "numeric"),
                       overrides=overrides, budget="quick", seed=0)


def test_corrected_by_dropping_the_added_guess():
    v = run()
    assert v.verdict == "corrected", v.as_dict()
    assert v.counterexample["check"] == "risk_integrand_755"
    assert v.counterexample["line_755_minus_forward_pass"] == "v0*xq0 + v1*xq1"
    assert v.correction_tiers["symbolic"].status == "pass"
    ev = v.tiers["symbolic"].evidence
    assert all(ev[k]["ok"] for k in ("error_759", "error_is_sum_t_j_x_q_j",
                                     "partial_derivatives_775"))
    # read with y_q = 0 in E instead, the a_{d+1} term is lost
    assert ev["risk_integrand_755"]["with_y_q=0_in_E_instead"] != "0"


@pytest.mark.parametrize("overrides", [
    {"err_759": "(Identity(1) + b.T*G*a_last)*y_q + (b.T*G*A_d + w_hat.T)*x_q"},
    {"t_j": "b.T*G*a_j + v_j*b.T*G*a_last + (v_j + w_hat_j)*Identity(1)"},
    {"dt_db": "G*a_j"},
    {"dt_dalast": "G.T*b"},
    {"dt_dvj": "b.T*G*a_last"},
])
def test_wrong_formulas_refuted(overrides):
    v = run(pred_755="y_q + b.T*G*A*z_q", **overrides)
    assert v.verdict == "refuted"
