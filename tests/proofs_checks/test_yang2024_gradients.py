"""yang2024 eqs. (45), (56), (82): the gradients of l(xi) against the derivative of the derived loss
(exact, rational Zbar) and autograd; wrong formulas are refuted."""
import pytest
import sympy

from proofs_checks.yang2024.gradients import TERM_82, _check_zbar, rational_zbar
from verify.registry import find
from verify.runner import check_claim


def run(claim_id, tiers=("symbolic", "numeric"), **overrides):
    return check_claim(find(claim_id), tiers=tiers, budget="quick", seed=0, device="cpu",
                       overrides=overrides)


def test_rational_instance_has_zbar_squared_equal_to_the_derived_hessian():
    rz = rational_zbar()
    assert _check_zbar(rz).ok is True
    assert rz.Zbar.T == rz.Zbar and all(x.is_Rational for x in rz.Zbar)


def test_eq45_is_verified_by_both_tiers():
    v = run("yang2024.eq45")
    assert v.verdict == "verified", v.as_dict()
    assert v.tiers["symbolic"].evidence["gradient_identity"]["ok"] is True


@pytest.mark.parametrize("wrong", ["gamma/K*B_k.T*delta_k", "gamma**2/K*B_k.T*Zbar*delta_k",
                                   "-gamma/K*B_k.T*Zbar*delta_k"])
def test_eq45_wrong_gradients_are_refuted(wrong):
    v = run("yang2024.eq45", grad_alpha_k=wrong)
    assert v.verdict == "refuted", (wrong, v.as_dict())
    assert v.tiers["symbolic"].status == "fail" and v.tiers["numeric"].status == "fail"


def test_eq82_gradient_holds_and_the_display_before_it_drops_L_star():
    v = run("yang2024.eq82")
    assert v.verdict == "corrected", v.as_dict()
    sym = v.tiers["symbolic"].evidence
    assert sym["gradient_identity"]["ok"] is True and sym["ell_is_the_loss"]["ok"] is False
    # the display minus the derived loss is minus the derived minimum, a constant
    ce = v.tiers["symbolic"].counterexample
    assert sympy.sympify(ce["paper_minus_derived_loss"]) == -sympy.sympify(ce["derived_min_loss"])
    assert v.correction["formulas"]["ell"].endswith("+ L_star")


def test_eq82_with_z_j_for_zbar_j_is_refuted():
    v = run("yang2024.eq82", grad_Q_term=TERM_82.replace("zbar_j", "Zbar*zbar_j"))
    assert v.verdict == "refuted"


def test_eq56_z_j_is_ill_typed_and_zbar_j_corrects_it():
    v = run("yang2024.eq56")
    assert v.verdict == "corrected", v.as_dict()
    assert v.tiers["symbolic"].evidence["dimensions"]["ok"] is False
    assert "zbar_j" in v.correction["formulas"]["grad_Q_term"]
    assert run("yang2024.eq56", grad_Q_term=TERM_82).verdict == "verified"


def test_eq56_with_a_flipped_sign_is_refuted():
    assert run("yang2024.eq56", grad_Q_term="-" + TERM_82).verdict == "refuted"
