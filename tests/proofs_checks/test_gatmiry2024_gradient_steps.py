"""gatmiry2024, proof steps of Lemmas A.5, A.7, A.9, A.10 and Thm. A.11 (lines 522-730):
``gradient_steps`` and ``gradient_chain``."""
import pytest

from verify.registry import find
from verify.runner import check_claim


def verdict(cid, **overrides):
    return check_claim(find(cid), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


@pytest.mark.parametrize("cid, printed", [
    ("gatmiry2024.lemma_a5_genus_step", "corrected"),
    ("gatmiry2024.eq21", "corrected"),
    ("gatmiry2024.eq25", "corrected"),
    ("gatmiry2024.lemma_a9_gamma_step", "corrected"),
    ("gatmiry2024.eq27", "verified"),
    ("gatmiry2024.lemma_a10_max_step", "corrected"),
    ("gatmiry2024.thm_a11_final_step", "verified"),
])
def test_printed_verdict(cid, printed):
    v = verdict(cid)
    assert v.verdict == printed, v.reason


@pytest.mark.parametrize("cid", [
    "gatmiry2024.lemma_a5_genus_step", "gatmiry2024.eq21", "gatmiry2024.eq25",
    "gatmiry2024.lemma_a9_gamma_step", "gatmiry2024.lemma_a10_max_step",
])
def test_correction_is_verified(cid):
    v = verdict(cid, **find(cid).correction.formulas)
    assert v.verdict == "verified", v.reason


def test_lemma_a5_middle_term_fails_first_at_lambda_j_below_lambda_1():
    v = verdict("gatmiry2024.lemma_a5_genus_step")
    ce = v.tiers["symbolic"].counterexample
    assert ce["check"] == "alpha_to_middle" and ce["spectrum"] == ["1", "1/100"]


@pytest.mark.parametrize("cid, overrides", [
    # line 522: a middle term too small, an upper end without the lambda_1 error, a lower end
    # above alpha
    ("gatmiry2024.lemma_a5_genus_step",
     {"middle_term": "n**C_G*d**(C_Gp - 1)*lambda_1**(k - c_star)*lambda_j**c_star/2"}),
    ("gatmiry2024.lemma_a5_genus_step",
     {"middle_term": "n**C_G*d**(C_Gp - 1)*lambda_1**(k - c_star)*lambda_j**c_star",
      "upper": "n**k*lambda_j**k + n**k*lambda_j**k*4*k*d/sqrt(n)"}),
    ("gatmiry2024.lemma_a5_genus_step",
     {"middle_term": "n**C_G*d**(C_Gp - 1)*lambda_1**(k - c_star)*lambda_j**c_star",
      "lower": "n**k*lambda_j**k*(1 + 4*k*d/sqrt(n))"}),
    # (21): the right sign without the i = 0 term; the first index 0 with the printed sign
    ("gatmiry2024.eq21", {"sign": "(-1)**(k - i)"}),
    ("gatmiry2024.eq21", {"first": "0"}),
    # (25): one binomial corrected only; the power of the first B without the + 1
    ("gatmiry2024.eq25", {"top1": "i"}),
    ("gatmiry2024.eq25", {"top1": "i", "top2": "2*L - 1 - i", "power": "l1"}),
    # line 644: the printed centre with the corrected radius; the corrected centre with a radius
    # 1000 times too small
    ("gatmiry2024.lemma_a9_gamma_step", {"radius": "delta**k*lambda_1**(k - 2)"}),
    ("gatmiry2024.lemma_a9_gamma_step", {"center": "lambda_j**(k - 2)",
                                         "radius": "delta**k*lambda_1**(k - 2)/1000"}),
    # (27): a first term without the square, a bound without the factor 1/2
    ("gatmiry2024.eq27", {"second": "(lambda_i - 1)**(4*L - 2) - delta**(4*L)*(lambda_1 + 1)"
                                    "**(4*L - 2)"}),
    ("gatmiry2024.eq27", {"bound": "dev_sum - d*delta**(4*L)*(lambda_1 + 1)**(4*L - 2)"}),
    # (27) without Lemma A.10's loss condition: at the minimiser the gradient vanishes
    ("gatmiry2024.eq27", {"hypothesis": "loss >= 0"}),
    # line 694: a radius without d^{1/(2L)}
    ("gatmiry2024.lemma_a10_max_step", {"last": "d", "radius": "epsilon"}),
    # line 730: a final bound without 1/16, an epsilon too large
    ("gatmiry2024.thm_a11_final_step", {"final": "loss**((2*L - 1)/L)/4"}),
    ("gatmiry2024.thm_a11_final_step", {"epsilon_choice": "loss**(1/(2*L))"}),
])
def test_wrong_formulas_are_refuted(cid, overrides):
    assert verdict(cid, **overrides).verdict == "refuted"


def test_index_mutants_judged_by_polynomial_identity():
    import sympy

    from proofs_checks.gatmiry2024.gradient_steps import _eq21_truth, _eq25_truth
    assert _eq21_truth("sign", sympy.sympify("(-1)**(i - k)"))[0] == "true"
    assert _eq21_truth("sign", sympy.sympify("(-1)**i")) is None
    assert _eq25_truth("l2_max", sympy.sympify("2*L - i"))[0] == "true"  # C(m, m + 1) = 0
    assert _eq25_truth("top1", sympy.sympify("2*L - 1 - i")) is None  # the printed top
