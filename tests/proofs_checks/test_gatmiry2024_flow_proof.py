"""gatmiry2024: dL/dt along the flow (remark after Thm. 3.4) and the comparison ODE of the proof
of Thm. A.12 (eq. (29), line 765)."""
import pytest

from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}
REMARK, ODE = "gatmiry2024.thm3_4_remark", "gatmiry2024.eq29"


def verdict(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic", "numeric"), overrides=overrides,
                       **QUICK)


@pytest.mark.parametrize("claim_id", [REMARK, ODE])
def test_corrected_and_the_correction_passes(claim_id):
    v = verdict(claim_id)
    assert v.verdict == "corrected", v.reason
    assert verdict(claim_id, **find(claim_id).correction.formulas).verdict == "verified"


def test_the_printed_ode_solution_fails_the_printed_ode_already_at_t_0():
    v = verdict(ODE)
    ev = v.tiers["symbolic"].evidence
    assert ev["line_765_solves_29"]["ok"] is False
    assert v.counterexample["check"] == "line_765_solves_29"


@pytest.mark.parametrize("claim_id,override", [
    (REMARK, {"rate": "-2*grad_sq"}),
    (REMARK, {"rate": "-grad_sq**2"}),
    (ODE, {"ode_rhs": "-g**((2*L - 1)/L)/16",
           "g_solution": "(16*L/(L - 1))**(L/(L - 1))/(t + c)**(L/(L - 1))",
           "c_const": "(16*L/(L - 1))**((L - 1)/(2*L - 1))/f0**((L - 1)/L)"}),  # the printed c
    (ODE, {"ode_rhs": "-g**((2*L - 1)/L)/16",
           "g_solution": "(16*L/(L - 1))**(L/(2*L - 1))/(t + c)**(L/(L - 1))",
           "c_const": "16*L/((L - 1)*f0**((L - 1)/L))"}),  # the printed power
    (ODE, {"ode_rhs": "-g**((2*L - 1)/L)/16", "c_const": "t"}),  # c may not depend on t
], ids=["rate-2", "rate-squared", "printed-c", "printed-power", "c-of-t"])
def test_wrong_formulas_are_refuted(claim_id, override):
    assert verdict(claim_id, **override).verdict == "refuted"
