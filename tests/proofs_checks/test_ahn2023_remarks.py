"""ahn2023 Secs. 1-6 (prose and remarks): each statement comes out as derived, and a
deliberately wrong formula is refuted."""
import pytest

from verify.registry import find
from verify.runner import check_claim


def run(claim_id, tiers=("symbolic",), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, budget="quick", seed=0)


@pytest.mark.parametrize("claim_id, verdict", [
    ("ahn2023.thm1_unique", "corrected"),
    ("ahn2023.eq4_scaling", "verified"),
    ("ahn2023.thm1_nonconvex", "verified"),
    ("ahn2023.eq5_layers", "verified"),
    ("ahn2023.eq6", "corrected"),
    ("ahn2023.thm1_large_n", "corrected"),
    ("ahn2023.lemma2_nsd", "verified"),
    ("ahn2023.thm4_distorted", "corrected"),
    ("ahn2023.thm4_hessian", "corrected"),
    ("ahn2023.thm4_newton", "corrected"),
    ("ahn2023.thm4_no_tradeoff", "verified"),
    ("ahn2023.fig1_dist", "verified"),
    ("ahn2023.fig3_b2", "verified"),
    ("ahn2023.fig4_update", "corrected"),
])
def test_verdict(claim_id, verdict):
    v = run(claim_id)
    assert v.verdict == verdict, v.as_dict()


@pytest.mark.parametrize("claim_id, overrides", [
    ("ahn2023.thm1_unique", {"dim_minimisers": "2"}),
    ("ahn2023.eq4_scaling", {"Q_factor": "n + 1"}),
    ("ahn2023.thm1_nonconvex",
     {"A_top": "U*Inverse((n+1)/n*Lambda + trace(Lambda)/n*Identity(d))*U.T"}),
    ("ahn2023.eq5_layers", {"k_single": "2"}),
    ("ahn2023.eq5_layers", {"k_single": "0"}),
    ("ahn2023.eq6", {"integrand": "e**3"}),
    ("ahn2023.eq6", {"integrand": "2*e**2"}),
    ("ahn2023.thm1_large_n", {"A_limit": "-Inverse(Sigma)", "gram_limit": "Inverse(Sigma)"}),
    ("ahn2023.lemma2_nsd", {"A_eig_max": "-1"}),
    ("ahn2023.thm4_distorted", {"w_star_def": "Inverse(W)*w_bar"}),
    ("ahn2023.thm4_hessian", {"hess_R": "X*X.T/(n+1)"}),
    ("ahn2023.thm4_newton", {"E_XXT": "(n+1)*Sigma"}),
    ("ahn2023.thm4_newton", {"E_XXT": "n*Sigma", "newton_A": "X*X.T"}),
    ("ahn2023.thm4_no_tradeoff", {"A_opt_inv_prior": "Sigma"}),
    ("ahn2023.thm4_no_tradeoff", {"A_opt_inv_prior": "Inverse(Sigma) + Identity(d)"}),
    ("ahn2023.fig1_dist", {"alpha_star": "trace(M)/(d+1)"}),
    ("ahn2023.fig3_b2", {"unused_B": "1"}),
    ("ahn2023.fig3_b2", {"unused_B": "3"}),
    ("ahn2023.fig4_update", {"X_next": "X + B.T*X*M*X.T*A*X/n"}),
])
def test_wrong_formula_is_refuted(claim_id, overrides):
    assert run(claim_id, **overrides).verdict == "refuted"


@pytest.mark.parametrize("claim_id, overrides", [
    ("ahn2023.thm1_unique", {"dim_minimisers": "1"}),
    ("ahn2023.eq6", {"integrand": "e**2"}),
    ("ahn2023.thm1_large_n", {"A_limit": "-Inverse(Sigma)", "gram_limit": "Sigma"}),
    ("ahn2023.thm4_distorted", {"w_star_def": "Inverse(W.T)*w_bar"}),
    ("ahn2023.thm4_hessian", {"hess_R": "X*X.T/n"}),
    ("ahn2023.thm4_newton", {"E_XXT": "n*Sigma"}),
    ("ahn2023.fig4_update", {"X_next": "X + B*X*M*X.T*A*X/n",
                             "X_next_S": "X*(Identity(n+1) - Abs(a_k*b_k)/n*M*X.T*X)"}),
])
def test_correction_holds_as_set(claim_id, overrides):
    assert run(claim_id, **overrides).verdict == "verified"


def test_distorted_view_holds_for_the_symmetric_root_only():
    ce = run("ahn2023.thm4_distorted").counterexample
    assert ce["W_kind"] != "root"


def test_scaling_and_layers_numeric_tiers():
    for claim_id in ("ahn2023.eq4_scaling", "ahn2023.eq5_layers"):
        assert run(claim_id, tiers=("numeric",)).verdict == "verified"


def test_nonconvexity_midpoint_is_worse():
    ev = run("ahn2023.thm1_nonconvex").tiers["symbolic"].evidence["convexity_violated"]
    from fractions import Fraction
    for row in ev["rows"]:
        assert Fraction(row["f(0, 0)"]) > Fraction(row["f*"])


def test_d1_swap_is_a_second_minimiser():
    rows = run("ahn2023.thm1_unique", dim_minimisers="1").tiers["symbolic"].evidence[
        "minimiser_set"]["rows"]
    assert rows[0]["d"] == 1 and rows[0]["swap (e_1, [0; c]) : f - f*"] == "0"
