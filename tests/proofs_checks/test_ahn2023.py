"""ahn2023: each claim as printed comes out as computed; deliberately wrong formulas are refuted."""
import pytest

from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}


def verdict(claim_id, tiers=("symbolic",), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, **QUICK)


def test_thm1_verified_on_every_tier():
    v = check_claim(find("ahn2023.thm1"), **QUICK)
    assert v.verdict == "verified", v.as_dict()
    ev = v.tiers["symbolic"].evidence
    assert "-n/(" in ev["derived_optimum"]["derived_g(lambda)"]
    assert v.tiers["train"].evidence["exact_loss_training"]["ok"] is True


GOOD_TOP = "-U*Inverse((n+1)/n*Lambda + trace(Lambda)/n*Identity(d))*U.T"
THM1_MUTANTS = {
    "changed constant": {"A_top": GOOD_TOP.replace("(n+1)/n", "(n+2)/n")},
    "dropped transpose": {"A_top": GOOD_TOP.replace("*U.T", "*U")},
    "flipped sign": {"A_top": GOOD_TOP[1:]},
    "dropped regulariser": {"A_top": "-U*Inverse((n+1)/n*Lambda)*U.T"},
    "isotropic constant": {"A_iso": "-1/((n-1)/n + (d+1)/n)"},
    "wrong rescaling": {"A_scale": "gamma"},
    "b not e_{d+1}": {"b_y": "2"},
}


@pytest.mark.parametrize("name", sorted(THM1_MUTANTS))
def test_thm1_mutants_are_refuted(name):
    v = verdict("ahn2023.thm1", **THM1_MUTANTS[name])
    assert v.verdict == "refuted", name
    assert v.counterexample and v.counterexample["tier"] == "symbolic"


def test_thm1_mutant_is_refuted_by_the_numeric_tier_too():
    v = verdict("ahn2023.thm1", tiers=("numeric",), **THM1_MUTANTS["changed constant"])
    assert v.verdict == "refuted"
    assert v.tiers["numeric"].evidence["lifted_gradient_float64"]["ok"] is False


def test_thm1_rescaled_optimum_is_still_optimal():
    v = verdict("ahn2023.thm1", b_y="3", A_top="-U*Inverse((n+1)/n*Lambda + trace(Lambda)/n*Identity(d))*U.T/3")
    assert v.verdict == "verified"


def test_lemma2_verified():
    v = check_claim(find("ahn2023.lemma2"), **QUICK)
    assert v.verdict == "verified", v.as_dict()


LEMMA2_MUTANTS = {
    "flipped sign of the prediction": {"prediction": "x_q.T*w"},
    "changed step": {"update": "w + 2*A*grad"},
    "wrong sign of the step": {"update": "w - A*grad"},
    "changed constant in R": {"R": "(w - w_star).T*X*X.T*(w - w_star)/n"},
    "dropped transpose in R": {"R": "(w - w_star).T*X*X.T*(w + w_star)/(2*n)"},
    "nonzero start": {"w0": "OneMatrix(d, 1)"},
}


@pytest.mark.parametrize("name", sorted(LEMMA2_MUTANTS))
def test_lemma2_mutants_are_refuted(name):
    v = verdict("ahn2023.lemma2", tiers=("symbolic", "numeric"), **LEMMA2_MUTANTS[name])
    assert v.verdict == "refuted", name
    assert v.tiers["numeric"].status == "fail"


def test_lemma2_symmetric_transpose_is_equivalent():
    # A_i is symmetric under (9), so w + A^T grad is the same statement: not refuted
    v = verdict("ahn2023.lemma2", update="w + A.T*grad")
    assert v.verdict == "verified"


def test_thm4_invariance_that_is_nan_at_a_gaussian_point_is_undecided(monkeypatch):
    """gap > allow is False on a NaN: a U_Sigma whose float64 value is NaN passed as
    U_Sigma^T Sigma^{-1} U_Sigma = Sigma^{-1}; it is undecided."""
    import math

    import numpy as np

    from proofs_checks.ahn2023 import thm4_proof
    from verify.claim import BUDGETS, Context

    monkeypatch.setattr(thm4_proof, "value",
                        lambda F, name, vals, exact: np.full((vals["d"], vals["d"]), math.nan))
    f = thm4_proof.invariance_finding(Context("t", {}, {}, BUDGETS["quick"]), {}, exact=False)
    assert f.ok is None and "not a finite" in f.reason
