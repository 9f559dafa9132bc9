"""ahn2023 App. B: the displayed steps of the proofs of Theorems 3-5 and Lemma 8 come out as
derived (verified, or corrected where the print is wrong), and a wrong formula is refuted."""
import pytest

from verify.registry import find
from verify.runner import check_claim


def run(claim_id, tiers=("symbolic",), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, budget="quick", seed=0)


def corrected(claim_id):
    return run(claim_id, **find(claim_id).correction.formulas)


# ------------------------------------------------------------------------------------------------
# the verdicts, and what decided them
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("claim_id", [
    "ahn2023.eq22", "ahn2023.eq_b4_loss", "ahn2023.eq26", "ahn2023.eq28", "ahn2023.eq29",
    "ahn2023.eq30", "ahn2023.eq31", "ahn2023.eq36", "ahn2023.eq40", "ahn2023.eq41",
])
def test_true_steps_are_verified(claim_id):
    v = run(claim_id, tiers=("symbolic", "numeric"))
    assert v.verdict == "verified", v.as_dict()


@pytest.mark.parametrize("claim_id, finding", [
    ("ahn2023.eq_b1_loss", "f_w"),                 # the trace lacks I - M: all n + 1 labels
    ("ahn2023.eq_b2_step1", "evaluable"),          # G^T w*^T w* G is ill-typed
    ("ahn2023.eq_b3_step1", "evaluable"),
    ("ahn2023.eq25", "in_S"),                      # r_i I is not in S
    ("ahn2023.eq34", "R_tilde_in_S"),
    ("ahn2023.eq35", "flow_B_in_S"),               # -s_i Sigma^{-1} leaves S (B_i = b_i I)
    ("ahn2023.eq37", "in_S"),                      # s_j Sigma^{-1} is not in S either
    ("ahn2023.eq42", "base_case_A (Step 5)"),      # A_j where R_j belongs
    ("ahn2023.eq49", "matches_48"),                # U^{-1} S U where U^T R U belongs
])
def test_misprinted_steps_are_corrected(claim_id, finding):
    v = run(claim_id, tiers=("symbolic", "numeric"))
    assert v.verdict == "corrected", v.as_dict()
    assert v.tiers["symbolic"].evidence[finding]["ok"] is False
    assert corrected(claim_id).verdict == "verified"


def test_b1_loss_printed_sums_every_label():
    """Without (I - M) the integrand's expectation exceeds f by the context labels' squares."""
    ev = run("ahn2023.eq_b1_loss").tiers["symbolic"]
    assert "E[integrand] - f" in ev.counterexample


def test_flow_35_fails_where_trace_of_sigma_inverse_is_below_one():
    """d = 1, Sigma = 4: the B-flow along Sigma^{-1} descends at c^2 / 4 < c^2 = ||grad_B||^2."""
    v = run("ahn2023.eq35", flow_A="-trace(Sigma_half*grad_A*Sigma_half)*Inverse(Sigma)")
    assert v.tiers["symbolic"].evidence["descent"]["ok"] is False


def test_steps_3_4_5_average_the_direction_and_report_the_affine_remark():
    v27 = run("ahn2023.eq27")
    assert v27.verdict == "verified" and v27.proof["status"] == "supported"
    for claim_id in ("ahn2023.eq36", "ahn2023.eq_b3_step4"):
        v = run(claim_id)
        assert v.verdict == "verified", v.as_dict()
        assert v.tiers["symbolic"].evidence["E_U_direction"]["ok"] is True
        # G is not affine in the direction for (13): "Thus E_U G(.. tC_U) = G(.. t E_U C_U)"
        # holds only for d/dt at t = 0
        assert v.proof["status"] == "gap"


# ------------------------------------------------------------------------------------------------
# wrong formulas are refuted
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("claim_id, override", [
    ("ahn2023.eq22", {"A_absorbed": "A"}),
    ("ahn2023.eq22", {"factor": "Identity(n+1) + X_0.T*A*X_0*M"}),
    ("ahn2023.eq_b4_loss",
     {"loss": "trace((Identity(n+1) - M)*G.T*Sigma*G*(Identity(n+1) - M))"}),
    ("ahn2023.eq_b4_loss", {"factor": "Identity(n+1) - M*X_0.T*A*X_0"}),
    ("ahn2023.eq25", {"R_tilde": "trace(Sigma*R_j)/d*Inverse(Sigma)*2"}),
    ("ahn2023.eq26", {"flow_A": "-trace(Sigma_half*grad_A*Sigma_half)/(2*d)*Inverse(Sigma)"}),
    ("ahn2023.eq27", {"R_tilde": "trace(Sigma_half*R_j*Sigma_half)/d*Identity(d)"}),
    ("ahn2023.eq27", {"C_A": "U_Sigma*R_j*U_Sigma.T"}),
    ("ahn2023.eq28", {"U_Sigma": "Sigma_half*U*Sigma_half"}),
    ("ahn2023.eq28",
     {"df": "trace((Identity(n+1) - M)*G.T*Inverse(Sigma)*dG*(Identity(n+1) - M))"}),
    ("ahn2023.eq29", {"G_rot": "U_Sigma.T*G"}),
    ("ahn2023.eq29", {"S_A": "Sigma"}),
    ("ahn2023.eq29", {"S_B": "Inverse(Sigma)"}),
    ("ahn2023.eq30", {"C_A": "Inverse(U_Sigma)*R_j*U_Sigma"}),
    ("ahn2023.eq30", {"heart": "X_0*G_lt*M*X_i.T*R_j*X_i*G_gt"}),
    ("ahn2023.eq31", {"X_next": "X_i + B*X_i*X_i.T*A*X_i"}),
    ("ahn2023.eq36", {"R_tilde": "trace(Inverse(Sigma_half)*R_j*Sigma_half)/d*Inverse(Sigma)"}),
    ("ahn2023.eq_b3_step4", {"C_B": "U_Sigma.T*S_j*U_Sigma"}),
    ("ahn2023.eq40", {"C_B": "U_Sigma.T*S_j*U_Sigma"}),
    ("ahn2023.eq40", {"dX_step": "dX + B*dX*M*X_i.T*A*X_i + B*X_i*M*X_i.T*A*dX"}),
    ("ahn2023.eq41", {"dX_first_A": "B*X_i*X_i.T*C_j*X_i"}),
    ("ahn2023.eq41", {"dX_first_B": "C_j*X_i*X_i.T*A*X_i"}),
])
def test_wrong_formula_is_refuted(claim_id, override):
    v = run(claim_id, tiers=("symbolic", "numeric"), **override)
    assert v.verdict == "refuted", v.as_dict()
