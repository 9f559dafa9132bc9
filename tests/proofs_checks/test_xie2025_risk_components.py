"""xie2025 App. A.2, Step 1: the Frobenius rewriting, the split (18), the gradients (19), (20)
(proofs_checks/xie2025/risk_components.py)."""
import pytest
import sympy

from proofs_checks.xie2025.gaussian_poly import expect, gaussian_prompt
from verify.registry import find
from verify.runner import check_claim


def run(**overrides):
    return check_claim(find("xie2025.eq18"), tiers=("symbolic", "numeric"),
                       overrides=overrides, budget="quick", seed=0)


def test_gaussian_moments_are_exact():
    x, w = sympy.symbols("x w")
    assert expect(x ** 4, {x: 0}) == 3
    assert expect(w ** 3, {w: 2}) == 8 + 3 * 2  # mu^3 + 3 mu
    gp = gaussian_prompt(2, 3, (1, 2))
    G = gp.gram()
    assert expect(G[2, 2], gp.means) == 1 + 4 + 2  # ||w*||^2 + d (eq. (22))


def test_verified_and_the_linear_guess_breaks_the_split():
    v = run()
    assert v.verdict == "verified", v.as_dict()
    lin = v.tiers["symbolic"].evidence["eq18_split"]["linear_guess"]
    assert lin["difference"] != "0"


@pytest.mark.parametrize("overrides", [
    {"frob_form": "trace((b*a.T).T)"},
    {"L_i": "(trace(G*M_i.T) - w_hat_i)**2/2"},
    {"L_i": "(trace(G*M_i.T) - w_hat_i)**3"},
    {"L_last": "(1 + trace(G*M_last.T))**2"},
    {"grad_L": "2*EGMG - EwG"},
    {"grad_L_last": "2*y_q**2*EGMG"},
])
def test_wrong_formulas_refuted(overrides):
    assert run(**overrides).verdict == "refuted"
