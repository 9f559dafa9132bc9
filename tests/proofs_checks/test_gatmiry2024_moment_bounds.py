"""gatmiry2024 Lemmas 4.2, 4.3, A.7, Thm. A.8 and the moment and optimum engines: exact values
bracket every spectrum, sums over ranges in d, signs of tiny constants, and wrong hypotheses
and slacks refuted at the sizes where they fail."""
import pytest
import sympy

from proofs_checks.gatmiry2024 import centred_bounds, moment_bounds, optimum
from proofs_checks.kit import looped_icl as li
from proofs_checks.kit.looped_loss import L_SYM, divergence_at_d1
from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}


def verdict(claim_id, tiers=("symbolic",), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, **QUICK)


def corrected(claim_id, **extra):
    """The documented correction as overrides (plus ``extra`` replacements)."""
    return {**find(claim_id).correction.formulas, **extra}


def test_a_power_of_d_in_1_over_n_is_decided_without_exhausting_memory():
    """A mutant of Thm 3.4 with d^((L-1)/n) in rhs: at n = 10^100 its value is within 10^-50 of
    ||grad||^2 at some d, and the exact route raised MemoryError; 400 digits decide it."""
    from verify.registry import find
    from verify.runner import check_claim

    v = check_claim(find("gatmiry2024.thm3_4"), tiers=("symbolic",), budget="quick", seed=0,
                    overrides={"rhs": "loss**((2*L - 1)/L)/(16*d**((L - 1)/n))"})
    assert v.verdict == "refuted", v.as_dict()


def test_moment_exact_values_bracket_every_spectrum():
    """Lemma 4.2's exact values for mutate: sup and inf of alpha^(j) over spectra with the given
    lambda_j <= lambda_1; every spectrum's alpha^(j) (the full engine) lies between them."""
    import mpmath
    from fractions import Fraction

    rng = __import__("numpy").random.default_rng(1)
    for _ in range(20):
        d, k, n = int(rng.integers(2, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 40))
        eigs = sorted((Fraction(int(rng.integers(1, 20)), 7) for _ in range(d)), reverse=True)
        alpha = moment_bounds.moment_eigenvalues(k, tuple(eigs), n)
        for j in range(d):
            point = {"n": n, "d": d, "k": k, "L": 8, "lambda_j": mpmath.mpf(eigs[j].numerator)
                     / eigs[j].denominator, "lambda_1": mpmath.mpf(eigs[0].numerator)
                     / eigs[0].denominator}
            values = moment_bounds.moment_exact(point)
            a = float(alpha[j])
            assert float(values["lower"]) <= a * (1 + 1e-12) and a <= float(values["upper"]) * (1 + 1e-12)


def test_optimum_exact_values_are_the_certified_minimiser():
    import mpmath

    a = li.a_star_rational(10 ** 6, 3, 2, 100)
    with mpmath.workdps(60):  # the values come at the caller's precision
        values = optimum.THM3_2.exact.values({"n": mpmath.mpf(10 ** 6), "d": mpmath.mpf(3),
                                              "L": mpmath.mpf(2)})
        assert abs(values["c"] - abs(mpmath.mpf(a.p) / a.q - 1)) < mpmath.mpf(10) ** -50
    assert optimum.THM3_2.exact.values({"n": mpmath.mpf(10), "d": mpmath.mpf(3),
                                        "L": mpmath.mpf(7)}) is None


@pytest.mark.parametrize("override", [{"hypothesis": "L >= 4*d**2*k**2"},
                                      {"upper": "delta**k*lambda_1**d + lambda_j**k"}])
def test_lemma4_2_mutants_beyond_the_small_grid_are_refuted_not_errors(override):
    """L >= 4 d^2 k^2 first admits a case at L = 16 (d = 1, k = 2, n = 1: 3 > 1 + 128^(1/16));
    lambda_1^d at lambda_1 = 10, d = 10^8 overflowed a float and made the tier an error."""
    cid = "gatmiry2024.lemma4_2"
    v = verdict(cid, **corrected(cid, **override))
    assert v.verdict == "refuted", v.reason


def test_lemma4_3_hypothesis_in_the_loop_count_is_refuted_at_a_deep_loop():
    """Lemma 4.3 (corrected) with n >= 4k^2d^2 swapped to L >= 4d^2k^2 admits no case of the small
    grid and, up to L = 16, only cases where it holds; at L = 1024 delta is near 1 for every n and
    the flat search finds beta = 41 above 1 + 25 delta^2 at d = 1, k = 2, n = 1, Sigma~ = 4.
    It survived mutate (inconclusive) before the deep loop was in the flat grid."""
    cid = "gatmiry2024.lemma4_3"
    v = verdict(cid, **corrected(cid, hypothesis="L >= 4*d**2*k**2"))
    assert v.verdict == "refuted", v.reason
    assert v.counterexample["instance"]["L"] == 1024


def test_lemma4_3_a_lower_slack_in_lambda_j_is_refuted_at_a_tiny_eigenvalue():
    """lambda_j^k (lambda_1 + 1)^k for delta^k (lambda_1 + 1)^k in the lower bound is tighter only
    where lambda_j < delta; at lambda_1 = 1000 (once), lambda_j = 10^-6, d = 2, n = 144, k = 3 the
    other eigenvalue pulls beta_j to 0.99298, below the mutant's 0.999997.  It survived mutate
    while the smallest lambda_j of the two-level spectra was 1/10."""
    cid = "gatmiry2024.lemma4_3"
    v = verdict(cid, **corrected(cid, lower="-lambda_j**k*(lambda_1 + 1)**k + (1 - lambda_j)**k"))
    assert v.verdict == "refuted" and "two_level_search" in v.reason, v.reason


def test_lemma4_3_a_lower_slack_that_vanishes_for_large_eigenvalues_is_refuted_at_64():
    """delta^lambda_j (lambda_1 + 1)^k for delta^k (lambda_1 + 1)^k in the lower bound is all but
    (1 - lambda_j)^k once lambda_j > k (delta < 1), and beta_j lies below that at odd k, lambda_j
    > 1: E[(1 - S)^3] = (1 - lambda)^3 + 3 (1 - lambda) Var S - E[(S - lambda)^3].  With
    lambda_1 at most 4 the grid saw only k < lambda_j at k = 1 (beta exact) and k = 3, lambda_j =
    4 (delta^4 still large); it survived mutate (false at lambda_j = 220).  At Sigma~ = 64 it is
    refuted (d = 1, L = 2, k = 3, n = 512: beta = -253079 below -251119.75)."""
    cid = "gatmiry2024.lemma4_3"
    v = verdict(cid, **corrected(cid, lower="-delta**lambda_j*(lambda_1 + 1)**k + "
                                           "(1 - lambda_j)**k"))
    assert v.verdict == "refuted", v.reason
    assert v.reason.startswith("large_spectrum_search")
    assert v.counterexample["instance"]["eigenvalues"] == ["64"]


def test_exact_sign_of_tiny_constants():
    """A radical near 10^-602 is below what 500 digits settle, so it takes 2000; a transcendental
    number below even that is undecided (ArithmeticError, which the bound searches count as
    undecided), not sympy's NotAlgebraic, which made Lemma 4.3's symbolic tier an error for two
    mutants that a later case of the grid refutes."""
    assert li.exact_sign(sympy.sqrt(2) ** -4001) == 1
    assert li.exact_sign(-sympy.sqrt(3) ** -4001) == -1
    with pytest.raises(ArithmeticError):
        li.exact_sign(sympy.exp(-5000))


def test_a_star_is_certified_at_astronomical_n():
    """At n = 10^100 (L = 2) Newton's last residual in f' exceeds mpmath's absolute tolerance,
    and findroot raised ValueError (a Thm A.8 mutant whose hypothesis admits only n ~ 10^40 and
    above made the symbolic tier an error); the bracket test certifies the root instead."""
    n = 10 ** 100
    a = li.a_star_rational(n, 2, 2)
    fp = li.scalar_poly(2, n, 2).diff(li.a_sym)
    eps = sympy.Rational(1, 10 ** 120)
    assert fp.eval(a - eps) < 0 < fp.eval(a + eps)


@pytest.mark.slow  # 11 s
def test_an_undecided_sign_with_huge_integers_is_undecided_not_a_crash():
    """A difference that cancels below 2000 digits and holds 5000-digit integers (as delta^n at
    n ~ 10^6 does in a Lemma A.7 mutant) is undecided: its message used to print the integers,
    which Python refuses (ValueError), making the symbolic tier an error instead of a count."""
    tiny = sympy.sqrt(2) - sympy.sqrt(2 + sympy.Rational(1, 10**5000))
    with pytest.raises(ArithmeticError, match="too long to print"):
        li.exact_sign(tiny)


def test_thm_a8_a_hypothesis_that_admits_no_grid_case_is_inconclusive_not_verified():
    """A hypothesis no size meets (delta d^(1/(2L)) < 0) admits no (d, L <= 3) of the grid and
    no large L at d = 1: nothing was checked, which is not a verification.  (delta with n and
    L exchanged used to be the example; it is met at d = 1 for L > 1024 and is refuted there,
    test_thm_a8_a_hypothesis_met_only_at_large_L_is_checked_at_d_1.)"""
    v = verdict("gatmiry2024.thm_a8", hypothesis="delta*d**(1/(2*L)) < 0")
    assert v.verdict == "inconclusive" and "admits no (d, L)" in v.reason, v.reason


def test_a_sum_range_off_by_one_is_refuted_by_its_infinite_expectation():
    """Cor. A.4's second term summed over i = 0..L has (I - Sigma A)^{-1} in its last term: at
    d = 1 it is a rational function of sigma = chi^2_n/n with a pole at sigma = 1/a = 4, so its
    E_X is not finite, unlike the derived loss; the printed sum has no pole."""
    from verify.registry import find
    from verify.runner import check_claim

    claim = find("gatmiry2024.cor_a4")
    fixed = dict(claim.correction.formulas)   # both printed terms are corrected
    printed = claim.formula("second")
    assert divergence_at_d1(printed.parse(fixed["second"]).subs(L_SYM, 2)) is None
    wrong = fixed["second"].replace("(i, 0, L-1)", "(i, 0, L)")
    assert wrong != fixed["second"]
    div = divergence_at_d1(printed.parse(wrong).subs(L_SYM, 2))
    assert div["pole"] == "4" and div["order"] == 1, div
    assert check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                       overrides=fixed).verdict == "verified"
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**fixed, "second": wrong})
    assert v.verdict == "refuted", v.as_dict()
    ce = v.as_dict()["counterexample"]
    assert "not a finite number" in ce["reason"] and ce["pole"] == "4"


def test_an_empty_sum_is_zero_and_refuted():
    """Cor. A.4's u-term summed over i = 0..-1 (L dropped from the limit) is an empty sum: zero,
    so E_X[first + second] misses the u-part of the derived loss."""
    claim = find("gatmiry2024.cor_a4")
    fixed = dict(claim.correction.formulas)   # both printed terms are corrected
    wrong = fixed["second"].replace("(i, 0, L-1)", "(i, 0, -1)")
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**fixed, "second": wrong})
    assert v.verdict == "refuted" and "differs from the loss derived" in v.reason, v.as_dict()
    assert v.tiers["symbolic"].evidence["u_part"]["ok"] is False   # the u-term alone is 0


def test_centred_exact_values_enclose_every_spectrum():
    """Lemma 4.3's exact values for mutate: beta^(j) is not monotone in the other eigenvalues,
    so they are (attained, enclosure) pairs; every spectrum's beta^(j) (the full engine) lies in
    the enclosure, and the attained values are inside it."""
    import mpmath
    from fractions import Fraction

    rng = __import__("numpy").random.default_rng(3)
    with mpmath.workdps(50):  # the values come at the caller's precision
        for _ in range(25):
            d, k, n = int(rng.integers(2, 5)), int(rng.integers(1, 6)), int(rng.integers(1, 60))
            eigs = sorted((Fraction(int(rng.integers(1, 30)), 7) for _ in range(d)), reverse=True)
            beta = centred_bounds.centred_eigenvalues(k, tuple(eigs), n)
            for j in range(d):
                v = centred_bounds.centred_exact({"n": n, "d": d, "k": k,
                                     "lambda_j": mpmath.mpf(eigs[j].numerator) / eigs[j].denominator,
                                     "lambda_1": mpmath.mpf(eigs[0].numerator) / eigs[0].denominator})
                (att_hi, env_hi), (att_lo, env_lo) = v["upper"], v["lower"]
                b, eps = mpmath.mpf(beta[j].numerator) / beta[j].denominator, mpmath.mpf(10) ** -30
                assert env_lo - eps <= b <= env_hi + eps
                assert env_lo - eps <= att_lo <= att_hi <= env_hi + eps


def test_lemma_a7_a_slack_in_lambda_j_for_lambda_1_is_refuted_at_two_level_spectra():
    """(1 - lambda_j)^k + delta^k (lambda_j + 1)^k holds on the small grid (lambda_1 <= 4) and at
    flat spectra (lambda_j = lambda_1), but not at lambda_1 = 1000, lambda_j = 10: the traces in
    beta^(j) carry lambda_1^(k-1) / n, beyond a slack in lambda_j. The two-level spectra are
    checked exactly against the full engine."""
    from fractions import Fraction

    a, b = Fraction(7, 2), Fraction(1, 3)
    for k in (1, 2, 3):
        for top in (1, 2):
            eigs = tuple([a] * top + [b] * (3 - top))
            assert centred_bounds.level_beta(k, a, b, top, 3, 11) == centred_bounds.centred_eigenvalues(k, eigs, 11)[-1]
    claim = find("gatmiry2024.lemma_a7")
    fixed = dict(claim.correction.formulas)
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**fixed, "upper": "(1 - lambda_j)**k + delta**k*(lambda_j + 1)**k"})
    assert v.verdict == "refuted" and v.reason.startswith("two_level_search"), v.reason
    assert "fold" in str(v.as_dict()["counterexample"]["instance"]["eigenvalues"])


@pytest.mark.parametrize("index", ["i", "j"])
def test_a_sum_over_a_range_in_d_is_expanded_per_instance(index):
    """Cor. A.4's u-term summed over 0..d-1 instead of 0..L-1 (mutate's two survivors): the
    moment kernel expands it at each instance's d. Where d >= L it either equals the printed sum
    or reaches a negative power, so the u-part check has a d = 1 instance, where it stops short."""
    claim = find("gatmiry2024.cor_a4")
    fixed = dict(claim.correction.formulas)
    wrong = fixed["second"].replace(f"({index}, 0, L-1)", f"({index}, 0, d-1)")
    assert wrong != fixed["second"]
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**fixed, "second": wrong})
    assert v.verdict == "refuted" and v.reason.startswith("u_part"), v.reason
    assert v.as_dict()["counterexample"]["instance"]["d"] == 1


def test_a_bound_that_is_not_a_real_number_is_refuted_not_passed():
    """(1 - lambda_j)^delta is complex where lambda_j > 1: float64 gives nan, which the search
    used to read as infinite slack; it is decided in mpmath and refuted."""
    claim = find("gatmiry2024.lemma_a7")
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**dict(claim.correction.formulas),
                               "upper": "(1 - lambda_j)**delta + delta**k*(lambda_1 + 1)**k"})
    assert v.verdict == "refuted" and "not a real number" in v.reason, v.reason
    assert v.as_dict()["counterexample"]["instance"]["not_a_real_number"] is True
