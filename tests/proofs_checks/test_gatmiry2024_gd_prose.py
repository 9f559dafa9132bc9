"""gatmiry2024 Secs. 3.2-3.6: the pseudo-inverse formula, the Hessian and GD step of line 65,
eqs. (6), (7) (with line 136) and the one-step solution of line 159; as computed, the
corrections pass, and deliberately wrong formulas are refuted."""
import pytest

from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}
AS_COMPUTED = {"gatmiry2024.eq_pseudo_inverse": "verified", "gatmiry2024.eq_hessian": "corrected",
               "gatmiry2024.eq6": "verified", "gatmiry2024.eq7": "corrected",
               "gatmiry2024.eq_one_step_solution": "corrected",
               "gatmiry2024.eq_inverse_concentration": "verified"}


def verdict(claim_id, tiers=("symbolic", "numeric"), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, **QUICK)


@pytest.mark.parametrize("claim_id", sorted(AS_COMPUTED))
def test_verdicts_and_corrections(claim_id):
    v = verdict(claim_id)
    assert v.verdict == AS_COMPUTED[claim_id], v.reason
    if v.verdict == "corrected":
        assert verdict(claim_id, **find(claim_id).correction.formulas).verdict == "verified"


@pytest.mark.parametrize("claim_id,override", [
    ("gatmiry2024.eq_pseudo_inverse", {"w_star": "Inverse(X*X.T)*X*y/2"}),
    ("gatmiry2024.eq_pseudo_inverse", {"w_star": "X*y"}),
    ("gatmiry2024.eq6", {"attn_row": "y.T*X.T*A*BlockMatrix([[X, x_q]])/n"}),
    ("gatmiry2024.eq6", {"attn_row": "-y.T*X.T*A*BlockMatrix([[X, x_q]])"}),
    ("gatmiry2024.eq7", {"rows": "-n*(ZeroMatrix(d, 1) + A*X*y/n).T*X",
                         "query": "-n*(ZeroMatrix(d, 1) - A*X*y/n).T*x_q"}),
    ("gatmiry2024.eq_one_step_solution", {"ell": "(X.T*w - y).T*(X.T*w - y)/2",
                                          "precond": "Sigma"}),
    ("gatmiry2024.eq_inverse_concentration", {"limit": "Sigma_star"}),
    ("gatmiry2024.eq_inverse_concentration", {"limit": "2*Inverse(Sigma_star)"}),
], ids=["pinv-half", "pinv-no-inverse", "eq6-over-n", "eq6-sign", "eq7-sign", "step-precond",
        "conc-sigma", "conc-twice"])
def test_wrong_formulas_are_refuted(claim_id, override):
    assert verdict(claim_id, **override).verdict == "refuted"


@pytest.mark.parametrize("step,ok", [("1/lambda_max", True), ("1/(4*lambda_max)", True),
                                     ("2/lambda_max", False), ("1/kappa", False)])
def test_the_step_must_scale_with_the_hessian(step, ok):
    """Step 1/kappa is scale-free: at X scaled by 10 GD diverges (kappa ~ 2, lambda_max ~ 3e3);
    a step 2/lambda_max oscillates on the top eigen-direction; c/lambda_max converges, c < 2."""
    v = verdict("gatmiry2024.eq_hessian", tiers=("numeric",), hessian="2*X*X.T", step=step)
    assert (v.verdict == "verified") == ok, v.reason
