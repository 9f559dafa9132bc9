"""ahn2023 App. A (the proof of Theorem 1): each displayed step comes out as derived, and a
deliberately wrong formula is refuted."""
import pytest

from verify.registry import find
from verify.runner import check_claim


def run(claim_id, tiers=("symbolic",), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, budget="quick", seed=0)


@pytest.mark.parametrize("claim_id, verdict", [
    ("ahn2023.eq15_components", "verified"),
    ("ahn2023.lemma6_convex", "verified"),
    ("ahn2023.eq15_c_blocks", "corrected"),
    ("ahn2023.eq17_inner", "corrected"),
    ("ahn2023.eq18", "verified"),
    ("ahn2023.lemma6_unique", "corrected"),
    ("ahn2023.lemma7_diag", "corrected"),
    ("ahn2023.thm1_rotation", "verified"),
])
def test_verdict(claim_id, verdict):
    v = run(claim_id)
    assert v.verdict == verdict, v.as_dict()


@pytest.mark.parametrize("claim_id, overrides", [
    ("ahn2023.eq15_components", {"x_weight": "2"}),
    ("ahn2023.eq15_components", {"f_j": "(trace(C_z*a*b.T) - w_j)**2"}),
    ("ahn2023.lemma6_convex", {"grad_fj": "2*trace(C_z*X.T)*C_z + w_j*C_z"}),
    ("ahn2023.eq15_c_blocks", {"C_yy": "y**2", "C_xy": "-y*x"}),
    ("ahn2023.eq17_inner", {"C_E": "u.T*X*X.T*w_star/(n+1)"}),
    ("ahn2023.eq18", {"iso_same": "d + 3"}),
    ("ahn2023.eq18", {"lam_same": "lambda_j*p_1 + lambda_j**2"}),
    ("ahn2023.eq18", {"iso_cross": "1"}),
    ("ahn2023.lemma6_unique", {"dim_minimisers": "d*(d - 1)/2"}),
    ("ahn2023.lemma7_diag",
     {"A_top_diag": "-Inverse((n+1)/n*Lambda + trace(Lambda)/(n+1)*Identity(d))"}),
    ("ahn2023.thm1_rotation",
     {"A_tilde": "BlockMatrix([[U.T, ZeroMatrix(d, 1)], [ZeroMatrix(1, d), Identity(1)]])*A*U.T"}),
    ("ahn2023.thm1_rotation", {"w_tilde": "U*w_star"}),
    ("ahn2023.thm1_rotation", {"x_weight_j": "lambda_j**2"}),
])
def test_wrong_formula_is_refuted(claim_id, overrides):
    assert run(claim_id, **overrides).verdict == "refuted"


def test_corrections_hold_as_set():
    """The documented corrections pass every tier when set by hand."""
    assert run("ahn2023.eq15_c_blocks", tiers=("symbolic", "numeric"),
               C_yy="y**2").verdict == "verified"
    assert run("ahn2023.eq17_inner", C_E="u.T*X*X.T*w_star/n").verdict == "verified"
    assert run("ahn2023.lemma6_unique", dim_minimisers="d*(d + 1)/2").verdict == "verified"
    assert run("ahn2023.lemma7_diag", A_top_diag="-Inverse((n+1)/n*Lambda + "
               "trace(Lambda)/n*Identity(d))").verdict == "verified"


def test_uniqueness_counterexample_is_the_antisymmetric_direction():
    ce = run("ahn2023.lemma6_unique").counterexample
    assert ce["derived_dimension"] == ce["d"] * (ce["d"] + 1) // 2
    assert ce["antisymmetric_direction_in_null_space"] is True


def test_numeric_tiers_agree():
    for claim_id in ("ahn2023.eq15_components", "ahn2023.lemma6_convex"):
        v = run(claim_id, tiers=("numeric",))
        assert v.verdict == "verified", v.as_dict()
    assert run("ahn2023.eq17_inner", tiers=("numeric",)).tiers["numeric"].status == "fail"
