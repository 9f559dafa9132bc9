"""yang2024 Sec. 3.1 (after Assumption 3) and App. D.1 (the proof of Prop. 1)."""
import pytest
import sympy

from proofs_checks.yang2024.initialisation import _exp_sum_zeros
from verify.registry import find
from verify.runner import check_claim


def run(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic", "numeric"), budget="quick", seed=0, device="cpu",
                       overrides=overrides)


def test_assumption3_separates_only_the_prompt_tokens():
    v = run("yang2024.prop1_assumption3")
    assert v.verdict == "corrected", v.as_dict()
    ce = v.tiers["symbolic"].counterexample
    assert ce["equal_tokens"] == [1, ce["N"] + 1]
    assert v.tiers["symbolic"].evidence["orthogonal_tokens"]["ok"] is True


@pytest.mark.parametrize("wrong", [{"distinct_upto": "N + 1"}, {"distinct_upto": "N", "K_max_orthogonal": "d - 1"},
                                   {"distinct_upto": "d"}])
def test_assumption3_wrong_counts_are_refuted(wrong):
    assert run("yang2024.prop1_assumption3", **wrong).verdict == "refuted"


def test_prop1_proof_integral_domain_is_N_by_N_minus_1():
    v = run("yang2024.prop1_proof")
    assert v.verdict == "corrected", v.as_dict()
    sym = v.tiers["symbolic"].evidence
    assert sym["law_of_q_71"]["ok"] and sym["zero_probability"]["ok"] and sym["Atilde_shape"]["ok"] is False
    assert v.correction["formulas"] == {"Atilde_cols": "N - 1"}


@pytest.mark.parametrize("wrong", [{"q_var": "beta**2"}, {"q_var": "beta*vk_sq"}, {"P_zero": "1/2"}])
def test_prop1_proof_wrong_steps_are_refuted(wrong):
    assert run("yang2024.prop1_proof", Atilde_cols="N - 1", **wrong).verdict == "refuted"


def test_exponential_sums_with_distinct_exponents_have_few_zeros():
    half = sympy.Rational(1, 2)
    assert _exp_sum_zeros([1, -3, 2], [0, half, 1], [1, 1, 1]) == 2        # 1 - 3w + 2w^2: w = 1/2, 1
    assert _exp_sum_zeros([1, -1], [half, half], [1, 1]) == -1              # equal exponents: g = 0
