"""xie2025 App. A.1 (Thm. 1's proof): the counts and the inequality at line 385, whose reason
is reversed (proofs_checks/xie2025/head_counting.py)."""
import pytest

from proofs_checks.xie2025.head_counting import influencing_entries, tuple_map_rank
from verify.registry import find
from verify.runner import check_claim


def run(**overrides):
    return check_claim(find("xie2025.thm1_counts"), tiers=("symbolic", "numeric"),
                       overrides=overrides, budget="quick", seed=0)


def test_counts_are_derived():
    for d in (1, 2, 3):
        assert influencing_entries(d) == (d + 1) * (d + 2)
        assert tuple_map_rank(d, d + 1) == (d + 1) ** 3
        assert tuple_map_rank(d, 1) == (d + 1) * (d + 2) - 1  # b -> t b, A -> A / t


def test_verified_with_a_proof_gap_at_line_385():
    v = run()
    assert v.verdict == "verified", v.as_dict()
    assert v.proof["status"] == "gap"
    [gap] = [f for f in v.proof["findings"] if f["ok"] is False]
    assert gap["step"] == "App. A.1, line 385"
    ev = v.tiers["symbolic"].evidence
    assert ev["parameters_cover_the_tuples"]["least_H_derived"] == {"1": 2, "2": 3, "3": 4}


@pytest.mark.parametrize("overrides", [
    {"dim_tuples": "(d + 1)**2"}, {"dof_head": "(d + 1)**2"}, {"H_cond": "H >= d"},
    {"inf_upper": "R_d1/2"},
])
def test_wrong_formulas_refuted(overrides):
    assert run(**overrides).verdict == "refuted"


def test_narrower_hypothesis_still_holds():
    assert run(H_cond="H >= d + 2").verdict == "verified"
