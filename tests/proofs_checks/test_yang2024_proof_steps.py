"""yang2024 App. B: Lemma 3, (43a), (43b) with the row bound after (48), (49), (62), (63)-(64).  The
symbolic tiers rebuild each bound from the proof's chain (a tighter bound is a proof gap); the numeric
tiers test the statements along GD at Thm. 1's rates and, for (49), at near-tight points."""
import pytest
import sympy

from proofs_checks.yang2024.proof_steps import eq43a_chain, eq43b_chain, eq49_chain, eq62_chain, eq64_chains
from verify.registry import find
from verify.runner import check_claim


def run(claim_id, tiers=("symbolic", "numeric"), **overrides):
    return check_claim(find(claim_id), tiers=tiers, budget="quick", seed=0, device="cpu",
                       overrides=overrides)


def test_chains_give_the_printed_constants():
    g, z0, D0, Zb, ex, K, eta, sig, L = sympy.symbols(
        "gamma zeta_0 Delta_0 Zbar_norm excess K eta_Q sigma L_smooth", positive=True)
    Kint = sympy.Symbol("K", positive=True, integer=True)
    assert sympy.simplify(eq62_chain() - Zb * g * sympy.sqrt(2 * ex / Kint)) == 0
    assert sympy.simplify(eq43a_chain() - sympy.sqrt(2 * Kint) * 4 * Zb / (g * z0) * sympy.sqrt(D0)) == 0
    assert sympy.simplify(eq43b_chain("eig") - z0 / 2) == 0
    assert sympy.simplify(eq49_chain() - z0 * g ** 2 / Kint) == 0
    ch = eq64_chains()
    assert ch["quad_coeff"] == L / 2 and sympy.simplify(ch["decrease"] - eta / 2) == 0


@pytest.mark.parametrize("claim_id", ["yang2024.lemma3", "yang2024.eq62", "yang2024.eq43a", "yang2024.eq49",
                                      "yang2024.eq64"])
def test_true_steps_are_verified_with_their_proofs(claim_id):
    v = run(claim_id)
    assert v.verdict == "verified", v.as_dict()
    assert v.proof["status"] in ("supported", "not checked")


def test_pl_inequality_is_nearly_tight_at_the_built_points():
    v = run("yang2024.eq49", tiers=("numeric",))
    assert v.tiers["numeric"].evidence["pl_at_tight_points"]["worst_ratio"] > 0.99


def test_43b_row_bound_needs_the_norm_of_x():
    v = run("yang2024.eq43b")
    assert v.verdict == "corrected" and v.proof["status"] == "gap", v.as_dict()
    assert v.tiers["symbolic"].evidence["at_x_zero"]["ok"] is False
    assert v.tiers["symbolic"].evidence["eig_lower"]["ok"] is True
    assert v.correction["formulas"]["row_lower"] == "sqrt(zeta_0/2)*x_norm"


@pytest.mark.parametrize("claim_id,wrong", [
    ("yang2024.lemma3", {"C": "l - 1"}),
    ("yang2024.eq62", {"grad_bound": "Zbar_norm*gamma*sqrt(2*excess/K)/10"}),
    ("yang2024.eq43a", {"alpha_bound": "sqrt(2*K)*4*Zbar_norm/(gamma*zeta_0)*sqrt(Delta_0)/100000"}),
    ("yang2024.eq49", {"sigma": "2*zeta_0*gamma**2/K"}),
    ("yang2024.eq64", {"decrease": "2*eta_Q"}),
    ("yang2024.eq64", {"contraction": "1 - 10000*eta_Q*sigma"}),
    ("yang2024.eq43b", {"row_lower": "sqrt(zeta_0/2)*x_norm**2"}),
])
def test_wrong_bounds_are_refuted(claim_id, wrong):
    v = run(claim_id, **wrong)
    assert v.verdict == "refuted", (claim_id, wrong, v.as_dict())


@pytest.mark.parametrize("claim_id,tighter", [
    ("yang2024.eq43a", {"alpha_bound": "sqrt(2*K)*Zbar_norm/(gamma*zeta_0)*sqrt(Delta_0)"}),
    ("yang2024.eq43b", {"eig_lower": "zeta_0", "row_lower": "sqrt(zeta_0/2)*x_norm"}),
    ("yang2024.eq64", {"quad_coeff": "L_smooth/4"}),
])
def test_bounds_tighter_than_the_proof_are_proof_gaps(claim_id, tighter):
    v = run(claim_id, tiers=("symbolic",), **tighter)
    assert v.proof["status"] == "gap", (claim_id, v.as_dict())
