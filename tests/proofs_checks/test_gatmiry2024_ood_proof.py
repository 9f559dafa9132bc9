"""gatmiry2024, the proof of Thm. A.13: the norm step at line 799 (printed norms swapped), the
sandwich at line 785 and eq. (31) (true; (31) does not follow from the display before it)."""
import pytest

from verify.registry import find
from verify.runner import check_claim
from verify.sigma import parse_sigma

QUICK = {"budget": "quick", "seed": 0}
STEP = "gatmiry2024.thm_a13_norm_step"
W31 = "gatmiry2024.eq31"
C16 = "16*delta*d**(1/(2*L))"


def verdict(claim_id, tiers=("symbolic", "numeric"), sigma=None, **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides,
                       sigma=parse_sigma(sigma) if sigma else None, **QUICK)


def test_the_norm_step_is_corrected_by_swapping_the_norms():
    v = verdict(STEP)
    assert v.verdict == "corrected", v.reason
    ce = v.counterexample
    assert ce["Sigma_star"] == "diag(9, 1/9)" and float(ce["product"]) > float(ce["bound"])
    fixed = verdict(STEP, **find(STEP).correction.formulas)
    assert fixed.verdict == "verified"
    # the bound is tight up to (1 + 16 delta d^{1/(2L)})^2 -> 1: without it, still true (equal)
    assert fixed.tiers["symbolic"].evidence["exact_instances"]["margin"]["used"] > 0.99


@pytest.mark.parametrize("text", [
    "(1 + 16*delta*d**(1/(2*L)))**2*w_norm2_sig*xq_norm2_inv/2",  # half
    "(1 + 16*delta*d**(1/(2*L)))**2*w_norm2_sig*xq_norm2",        # one norm swapped back
    "(1 + 16*delta*d**(1/(2*L)))**2*w_norm2_sig*d",               # a size for a norm
    "-(1 + 16*delta*d**(1/(2*L)))**2*w_norm2_sig*xq_norm2_inv",   # negated
], ids=["half", "xq-printed", "size", "negated"])
def test_wrong_step_bounds_are_refuted(text):
    assert verdict(STEP, tiers=("symbolic",), norm_bound=text).verdict == "refuted"


def test_the_norm_step_honours_sigma():
    v = verdict(STEP, sigma="diag:10,1/10")
    assert v.verdict == "corrected", v.reason
    assert v.counterexample["Sigma_star"].startswith("diag(10, 1/10)")
    assert all(t.status != "skipped" for t in v.tiers.values())


def test_eq31_holds_but_not_from_the_display_before_it():
    v = verdict(W31)
    assert v.verdict == "verified", v.reason
    assert v.proof["status"] == "gap"
    gap = v.tiers["symbolic"].evidence["eq31_from_the_display"]
    assert gap["ok"] is False


@pytest.mark.parametrize("override", [
    {"radius": f"1 + {C16} - 2*zeta"},            # a radius zeta too small
    {"radius": "1 - zeta"},                        # without the 16 delta term: fails at small n
    {"upper_mult": f"(2 - zeta)*(1 - {C16})"},     # the sandwich's upper end below a* (2 - zeta)
    {"lower_mult": f"zeta*(1 + {C16})"},           # its lower end above a* zeta
    {"condition": "(s_min >= zeta/2) & (s_max <= 2 - zeta)"},  # a wider window
], ids=["radius-2zeta", "radius-no-delta", "upper", "lower", "wider"])
def test_eq31_wrong_formulas_are_refuted(override):
    assert verdict(W31, tiers=("symbolic",), **override).verdict == "refuted"


@pytest.mark.parametrize("claim_id", [STEP, W31])
def test_a_random_instance_left_undecided_leaves_the_numeric_tier_undecided(claim_id,
                                                                            monkeypatch):
    """One comparison no float settles (settle_le undecided) among passes: the tier is
    undecided, not a pass (it passed unless every instance was undecided)."""
    from proofs_checks.gatmiry2024 import ood_proof
    real, calls = ood_proof.settle_le, []

    def first_undecided(lhs, rhs, *a, **k):
        calls.append(1)
        return (None, "not settled") if len(calls) == 1 else real(lhs, rhs, *a, **k)

    monkeypatch.setattr(ood_proof, "settle_le", first_undecided)
    v = verdict(claim_id, tiers=("numeric",))
    assert len(calls) > 1 and v.tiers["numeric"].status != "pass", v.tiers["numeric"].reason
    assert v.verdict == "inconclusive"
