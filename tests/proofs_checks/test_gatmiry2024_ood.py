"""gatmiry2024 Thms. 4.5 / A.13 at a general Sigma*: the printed norms ||x_q||_{Sigma*}
||w||_{Sigma*^{-1}} fail at an anisotropic Sigma* (the whitening x -> Sigma*^{-1/2} x,
w -> Sigma*^{1/2} w carries ||x_q||_{Sigma*^{-1}} ||w||_{Sigma*}); --sigma is honoured."""
import mpmath
import pytest
import sympy

from proofs_checks.gatmiry2024.flow import _mp_a_star
from proofs_checks.gatmiry2024.ood import OOD_BOUND, OOD_BOUND_CORRECTED, ood_exact
from proofs_checks.gatmiry2024.ood_instances import error_matrix
from verify.registry import find
from verify.runner import check_claim
from verify.sigma import parse_sigma

QUICK = {"budget": "quick", "seed": 0}
IDS = ("gatmiry2024.thm4_5", "gatmiry2024.thm_a13")


def verdict(claim_id, tiers=("symbolic",), sigma=None, **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides,
                       sigma=parse_sigma(sigma) if sigma else None, **QUICK)


@pytest.mark.parametrize("claim_id", IDS)
def test_with_only_the_1_over_n_corrected_the_printed_norms_fail_at_an_anisotropic_sigma(claim_id):
    """The correction of Sigma^out alone (the claims' earlier correction) passes at Sigma* = I
    and fails at Sigma* = diag(9, 1/9): w = u_1, x_q = u_2 (the eigenvectors of Sigma*) with
    Sigma^out's relative eigenvectors at 46 degrees give error^2 = 18.6 against 0.0114
    (n = 10^40, L = 1)."""
    v = verdict(claim_id, sigma_out="XXt/n")
    assert v.verdict == "refuted", v.reason
    ce = v.counterexample
    assert ce["check"] == "anisotropic_instances" and ce["Sigma_star"] == "diag(9, 1/9)"
    assert float(ce["error_sq"]) > 10 * float(ce["bound"])
    assert v.tiers["symbolic"].evidence["exact_instances"]["ok"] is True


@pytest.mark.parametrize("claim_id", IDS)
def test_the_swapped_norms_pass_and_are_attained(claim_id):
    v = verdict(claim_id, tiers=("symbolic", "numeric"), **find(claim_id).correction.formulas)
    assert v.verdict == "verified", v.reason
    ev = v.tiers["symbolic"].evidence
    assert abs(ev["exact_instances"]["margin"]["used"] - 1) < 1e-9
    assert ev["anisotropic_instances"]["ok"] is True


@pytest.mark.parametrize("bound", [
    OOD_BOUND_CORRECTED.replace("xq_norm2_inv*", "xq_norm2*"),  # one norm swapped back
    OOD_BOUND_CORRECTED.replace("*w_norm2_sig", "*w_norm2"),
    OOD_BOUND.replace("*xq_norm2*w_norm2", "*xq_norm2_inv*w_norm2_sig/2"),  # half the bound
], ids=["xq-printed", "w-printed", "half"])
def test_half_corrected_norms_are_refuted(bound):
    v = verdict("gatmiry2024.thm4_5", sigma_out="XXt/n", bound=bound)
    assert v.verdict == "refuted", v.reason


def test_sigma_is_honoured_and_read_by_both_tiers():
    """--sigma diag:9,1 (the reader's Sigma*): the printed claim is corrected there, the old
    correction (Sigma^out only) is refuted with the Sigma* printed, both tiers read --sigma."""
    v = verdict("gatmiry2024.thm4_5", tiers=("symbolic", "numeric"), sigma="diag:9,1",
                sigma_out="XXt/n")
    assert v.verdict == "refuted", v.reason
    assert v.counterexample["Sigma_star"].startswith("diag(9, 1)")
    assert all(t.status != "skipped" for t in v.tiers.values()), v.tiers
    assert v.tiers["numeric"].evidence["random_instances"]["sigma_read"] == "diag:9,1"
    fixed = verdict("gatmiry2024.thm4_5", sigma="diag:9,1",
                    **find("gatmiry2024.thm4_5").correction.formulas)
    assert fixed.verdict == "verified", fixed.reason


def test_the_readers_counterexample_from_the_forward_pass():
    """Sigma* = diag(9, 1), L = 1, zeta = 1/2, w = e_1, x_q = e_2 and the model's X X^T / n =
    Sigma*^{1/2} R diag(1, 3/2) R^T Sigma*^{1/2} (R at 45 degrees, n = 10^8): the error of the
    forward pass is (a* / 4)^2 * 9 = 0.5625 (w~ = 3 e_1, x~ = e_2, (I - a* S~)_{12} = a*/4),
    the printed bound about 0.0294 (16 delta sqrt(d) = 0.905 at n = 10^8: tiny against it at
    n = 10^40, where the printed bound is 0.0278) and the corrected one 2.34."""
    n, L = 10 ** 40, 1
    a = sympy.Rational(mpmath.nstr(_mp_a_star(L, n, 2, 80), 80))
    r = sympy.sqrt(2) / 2
    R = sympy.Matrix([[r, -r], [r, r]])
    root = sympy.diag(3, 1)
    S = root * R * sympy.diag(1, sympy.Rational(3, 2)) * R.T * root  # the model's X X^T / n
    X = sympy.sqrt(n) * root * R * sympy.diag(1, sympy.sqrt(sympy.Rational(3, 2)))
    assert sympy.simplify(X * X.T / n - S) == sympy.zeros(2, 2)
    E = error_matrix(X, sympy.diag(sympy.Rational(1, 9), 1), n, L, a)
    err2 = sympy.nsimplify(E[0, 1]) ** 2
    assert abs(float(err2) - 9 * float(a) ** 2 / 16) < 1e-12
    c = float(16 * (8 * L * 2 / sympy.sqrt(n)) ** sympy.Rational(1, 2 * L) * sympy.sqrt(2))
    printed = (1 + c) ** 2 * (1 + c - 0.5) ** 2 * 1.0 * (1 / 9)  # ||e_2||_S*^2 ||e_1||_S*^-1^2
    corrected = (1 + c) ** 2 * (1 + c - 0.5) ** 2 * 1.0 * 9
    assert float(err2) > 20 * printed and float(err2) < corrected


def test_exact_values_where_the_norms_forbid_the_aligned_worst_case():
    """||w||^2_{Sigma*^{-1}} ||x_q||^2_{Sigma*} < ||w||^2_{Sigma*} ||x_q||^2_{Sigma*^{-1}}: no
    Sigma* puts w~ and x~_q on one eigenvector, so the exact value is a pair (attained at w~
    and x~_q orthogonal with S~'s eigenvectors at 45 degrees, the corrected bound's sup)."""
    point = {"n": 10 ** 8, "d": 2, "L": 1, "s_min": mpmath.mpf(1), "s_max": mpmath.mpf("1.5"),
             "xq_norm2": mpmath.mpf(1), "w_norm2": mpmath.mpf(1) / 9,
             "xq_norm2_inv": mpmath.mpf(1), "w_norm2_sig": mpmath.mpf(9)}
    attained, enclosure = ood_exact(point)["bound"]
    a = _mp_a_star(1, 10 ** 8, 2, 40)
    assert mpmath.almosteq(enclosure, 9 * (1 - a * mpmath.mpf("1.5")) ** 2)
    assert mpmath.almosteq(attained, 9 * ((a * mpmath.mpf("0.5")) / 2) ** 2)
    # at d = 1 the four norms are tied: one point that breaks the tie has no instance
    assert ood_exact({**point, "d": 1, "s_max": mpmath.mpf(1)}) is None
