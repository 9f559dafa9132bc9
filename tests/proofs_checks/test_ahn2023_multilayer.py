"""ahn2023 Theorems 3-5: as printed they come out verified; a wrong set S or covariance is refuted."""
import pytest

from proofs_checks.ahn2023 import sparse
from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}


def run(claim_id, tiers=("symbolic",), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, **QUICK)


def test_error_on_S_is_a_polynomial_in_W():
    # the forward pass of (9) and (13) at A_i = a_i I, B_i = b_i I is w*^T s(W) x_q exactly,
    # and E tr s(W)^2 by Wishart moments equals Isserlis on the forward pass
    assert sparse.error_identity(2, "eq13").is_zero()
    assert sparse.error_identity(3, "eq9").is_zero()
    import sympy
    assert sympy.expand(sparse.restricted_loss(2, "eq9")
                        - sparse.restricted_loss_kernel(2, "eq9")) == 0


def test_thm4_verified_with_a_vanishing_gradient_on_S():
    v = run("ahn2023.thm4", tiers=("symbolic", "numeric"))
    assert v.verdict == "verified", v.as_dict()
    ev = v.tiers["symbolic"].evidence["infimum_of_gradient_norms"]
    assert ev["restricted_loss_is_whitened"] is True
    # grad_{A_i} f = c_i Sigma with d c_i = dg/da_i (App. B.2's mechanism)
    for form in ev["gradient_form"].values():
        assert form["constant_in_Sigma"] is True
        assert any(v is True for k, v in form.items() if k.startswith("d*c"))
    assert float(ev["T_at_critical_point"]) < 1e-60
    seq = [float(r["T"]) for r in ev["sequence_a*+10^-m"]]
    assert all(b < a for a, b in zip(seq, seq[1:]))
    num = v.tiers["numeric"].evidence
    assert num["exact_full_gradient_float64"]["max_|grad|/(K_eps_grad~)"] <= 1


@pytest.mark.parametrize("direction", ["Identity(d)", "Sigma"])
def test_thm4_wrong_set_is_refuted_with_a_positive_bound(direction):
    v = run("ahn2023.thm4", S_A=direction)
    assert v.verdict == "refuted"
    ce = v.counterexample
    assert float(ce["T_at_point"]) > 1e-6 and ce["T_numerical_minimum_over_S"] != "not found"


def test_thm4_wrong_set_is_refuted_by_the_numeric_tier():
    v = run("ahn2023.thm4", tiers=("numeric",), S_A="Identity(d)")
    assert v.verdict == "refuted"
    assert v.tiers["numeric"].evidence["exact_full_gradient_float64"]["ok"] is False


def test_thm3_structure_and_global_minimum():
    v = run("ahn2023.thm3", tiers=("symbolic", "numeric"))
    assert v.verdict == "verified", v.as_dict()
    ev = v.tiers["numeric"].evidence["diagonal_is_global"]
    # at Sigma = I the diagonal minimiser is in fact a multiple of I in each layer
    assert ev["relative_distance_to_scalar"] < 1e-6


def test_thm3_non_isotropic_covariance_is_refuted():
    v = run("ahn2023.thm3", tiers=("symbolic", "numeric"), Sigma_x="Identity(d) + OneMatrix(d, d)")
    assert v.verdict == "refuted"
    assert v.tiers["numeric"].evidence["diagonal_is_global"]["ok"] is False


@pytest.mark.slow
def test_thm5_verified():
    v = run("ahn2023.thm5", tiers=("symbolic", "numeric"))
    assert v.verdict == "verified", v.as_dict()
    form = v.tiers["symbolic"].evidence["infimum_of_gradient_norms"]["gradient_form"]
    assert form["B_0"]["constant_in_Sigma"] is True  # grad_B f = c' I on S


@pytest.mark.slow
@pytest.mark.parametrize("override", [{"S_B": "Sigma"}, {"S_A": "Identity(d)"}])
def test_thm5_wrong_set_is_refuted(override):
    v = run("ahn2023.thm5", **override)
    assert v.verdict == "refuted"


@pytest.mark.parametrize("override", ["-Inverse(Sigma)", "2*Inverse(Sigma)"])
def test_thm4_a_scaled_set_is_the_same_set_in_both_tiers(override):
    """S = {a_i c Sigma^-1} is S for any c != 0 (a_i is free): the numeric tier, whose optimiser
    solves on the paper's set, must not refute the statement; it decides at the critical point
    of the loss restricted to the named set."""
    v = check_claim(find("ahn2023.thm4"), tiers=("symbolic", "numeric"), budget="quick",
                    overrides={"S_A": override})
    assert v.verdict == "verified", (v.tiers["numeric"].reason, v.tiers["symbolic"].reason)
    ev = v.tiers["numeric"].evidence["exact_full_gradient_float64"]
    assert "restricted to the named set" in ev.get("point_from", "")


def test_the_minimiser_of_9_on_S_is_reported_in_one_order():
    """g of (9) is symmetric in the a_i: whatever order Newton ends in, the reported point is
    sorted, with the same value; (13)'s (a, b) keep their places."""
    import mpmath

    from proofs_checks.kit.stationary import CriticalPoint

    n, d = 20, 5
    cp = sparse.newton_mp(3, "eq9", n, d, [-0.4, -1.7, -0.7], digits=20)
    swapped = sparse.newton_mp(3, "eq9", n, d, [-1.7, -0.7, -0.4], digits=20)
    ordered = sparse.symmetric_order(cp, "eq9")
    assert list(ordered.point) == sorted(cp.point)
    assert ordered.point == sparse.symmetric_order(swapped, "eq9").point
    with mpmath.workdps(60):  # g cancels terms ~1e11 against ~0.1: value it at 60 digits
        value = sparse.restricted_value(list(ordered.point), 3, "eq9", n, d,
                                        convert=lambda q: mpmath.mpf(q.numerator) / q.denominator)
        assert mpmath.almosteq(value, cp.value, 1e-30)
    other = CriticalPoint((3, 1, 2), 0, 0, (), 20)
    assert sparse.symmetric_order(other, "eq13") is other
