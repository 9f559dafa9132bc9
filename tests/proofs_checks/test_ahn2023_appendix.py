"""ahn2023 Lemmas 8-10: the exact identities hold as printed; a wrong block or label is refuted."""
import pytest

from verify.registry import find
from verify.runner import check_claim


def run(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic",), overrides=overrides,
                       budget="quick", seed=0)


def test_lemma8_symmetry_and_multiple_critical_points():
    v = run("ahn2023.lemma8")
    assert v.verdict == "verified", v.as_dict()
    ev = v.tiers["symbolic"].evidence["multiple_critical_points"]
    assert ev["distinct_permutations_of_a*"] == 6
    assert float(ev["hessian_at_symmetric_point"][0]) < 0  # the symmetric point is a saddle


@pytest.mark.slow
def test_lemma8_fails_with_a_nonzero_B_block():
    assert run("ahn2023.lemma8", P_top="Identity(d)").verdict == "refuted"


def test_lemma9_identities():
    assert run("ahn2023.lemma9").verdict == "verified"


@pytest.mark.parametrize("label", ["2*w_star.T*x_q", "-w_star.T*x_q"])
def test_lemma9_wrong_query_label_is_refuted(label):
    v = run("ahn2023.lemma9", y_bar=label)
    assert v.verdict == "refuted"
    assert v.tiers["symbolic"].evidence["X_rows_unchanged"]["ok"] is True  # Lemma 10.1 holds


def test_lemma7_moments_as_derived():
    v = run("ahn2023.lemma7")
    assert v.verdict == "verified", v.as_dict()


@pytest.mark.parametrize("override", [
    {"E_CC": "(n+2)/n*lambda_j**2 + lambda_j*p_1/n"},
    {"E_wC": "lambda_j**2"},
    {"X_j": "1/((n+1)/n*lambda_j + p_1/n)"},
    {"iso": "(n-1)/n + (d+1)/n"},
])
def test_lemma7_mutants_refuted(override):
    assert run("ahn2023.lemma7", **override).verdict == "refuted"


def test_lemma8_block_outside_c_sigma_k_is_decided_at_an_exact_instance():
    """11^T is not c Sigma^k: the full-matrix loss of (13) at one rational instance refutes the
    symmetry (it used to be undecided, so a mutant P_top = OneMatrix survived)."""
    v = run("ahn2023.lemma8", P_top="OneMatrix(d, d)")
    assert v.verdict == "refuted", v.as_dict()
    ev = v.tiers["symbolic"].evidence["symmetric_in_a"]
    assert ev["f(a_0, a_1)"] != ev["f(a_1, a_0)"]


@pytest.mark.parametrize("label", ["w_star.T*w_star", "x_q.T*x_q"])
def test_lemma9_label_outside_c_wx_is_refuted_by_the_forward_pass(label):
    """w*^T w* agreed with w*^T x_q at the old fixed probes ((2, 1) . (1, 3) = 5 = |(2, 1)|^2)."""
    v = run("ahn2023.lemma9", y_bar=label)
    assert v.verdict == "refuted", v.as_dict()
    ce = v.counterexample
    assert ce["Zbar_minus_Z_query_label"] != ce["w_star^T x_q"]


def test_lemma9_equivalent_label_is_verified():
    assert run("ahn2023.lemma9", y_bar="x_q.T*w_star").verdict == "verified"
