"""xie2025 Sec. 3 after Lemma 1 and App. A.3: a stationary point that is not a minimum
(proofs_checks/xie2025/saddle_points.py)."""
import pytest
import sympy

from proofs_checks.xie2025.saddle_points import zero_point_gradient
from verify.registry import find
from verify.runner import check_claim


def run(**overrides):
    return check_claim(find("xie2025.lemma1_saddle"), tiers=("symbolic", "numeric"),
                       overrides=overrides, budget="quick", seed=0)


def test_zero_heads_are_a_stationary_saddle():
    gb, gA = zero_point_gradient(3, sympy.Matrix([1, -2, 3]))
    assert gb == sympy.zeros(4, 1) and gA == sympy.zeros(4, 4)
    v = run()
    assert v.verdict == "verified", v.as_dict()
    ev = v.tiers["symbolic"].evidence
    assert ev["not_a_global_minimum"]["risk_at_point"] == "d + s"
    assert ev["saddle_not_minimum"]["second_derivative_at_0"] == "-4*(d + s)"


@pytest.mark.parametrize("overrides", [{"grad_b": "OneMatrix(d + 1, 1)"},
                                       {"grad_A": "Identity(d + 1)"}])
def test_a_nonzero_gradient_is_refuted(overrides):
    assert run(**overrides).verdict == "refuted"
