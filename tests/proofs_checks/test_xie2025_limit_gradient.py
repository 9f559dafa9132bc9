"""xie2025 eqs. (24), (25), (28), (29) and App. A.4's Hessian: refuted against the exact moments
of G; N is right (proofs_checks/xie2025/limit_gradient.py)."""
import pytest

from verify.registry import find
from verify.runner import check_claim

N = "BlockMatrix([[ZeroMatrix(d, d), e], [e.T, 2*w_i*Identity(1)]])"


def run(**overrides):
    return check_claim(find("xie2025.eq25"), tiers=("symbolic", "numeric"),
                       overrides=overrides, budget="quick", seed=0)


def test_refuted_with_each_display_decided():
    v = run()
    assert v.verdict == "refuted"
    ev = v.tiers["symbolic"].evidence
    assert ev["N_is_E_wG_minus_w_i_M"]["ok"] is True
    for name in ("eq24_limit_of_E_GMG", "eq25_limit_gradient", "eq28_finite_C",
                 "eq29_U_i_bounded", "A4_hessian"):
        assert ev[name]["ok"] is False, name
    # at M_i = e_i e_(d+1)^T the C -> oo gradient vanishes where (25) gives -2N
    row = ev["eq25_limit_gradient"]["rows"][0]
    assert row["derived_limit_gradient"] == "[[0, 0, 0], [0, 0, 0], [0, 0, 0]]"
    assert row["eq25"] == "[[0, 0, -2], [0, 0, 0], [-2, 0, -4]]"
    # the derived limit is E_w[<M(w), M_i> M(w)], not <M, M_i> M
    r24 = ev["eq24_limit_of_E_GMG"]["rows"][0]
    assert r24["derived_limit"] == r24["E_w[<M(w), M_i> M(w)]"] != r24["eq24"]
    assert ev["A4_hessian"]["derived_hessian_psd_at_C=10"] is True


@pytest.mark.parametrize("text", [N.replace("2*w_i", "w_i"), N.replace("e.T", "-e.T")])
def test_a_wrong_N_is_refuted_by_its_own_check(text):
    ev = run(N_i=text).tiers["symbolic"].evidence
    assert ev["N_is_E_wG_minus_w_i_M"]["ok"] is False


def test_no_matrix_is_the_hessian():
    for text in ("M", "ZeroMatrix(d+1, d+1)", "2*M*M"):
        assert run(hess=text).tiers["symbolic"].evidence["A4_hessian"]["ok"] is False
