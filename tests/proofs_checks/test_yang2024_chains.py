"""yang2024 Lemmas 8, 10 and Thm 1: the symbolic tiers rebuild the bounds from the proofs' chains
of inequalities.  They speak of the proof: a bound tighter than (or incomparable with) the one the
proof gives is a proof *gap*, not a refutation (the numeric tiers test the statement itself)."""
import numpy as np
import pytest
import sympy

from proofs_checks.yang2024 import gradient_bounds
from proofs_checks.kit.ratio_probe import ratio_at_least_one
from proofs_checks.yang2024.common import _in_symbols_of
from proofs_checks.yang2024.convergence import L17_CORRECTED, thm1_L_sq_chain
from proofs_checks.yang2024.gradient_bounds import L61_CORRECTED, lemma8_chain
from proofs_checks.yang2024.softmax import LEMMA2_FORMULAS
from verify.registry import find
from verify.runner import check_claim


def symbolic(claim_id, **overrides):
    return check_claim(find(claim_id), tiers=("symbolic",), budget="quick", seed=0, device="cpu",
                       overrides=overrides)


def proof(claim_id, **overrides) -> str:
    """The proof's status as the symbolic tier rebuilds it (that tier checks the proof only)."""
    v = symbolic(claim_id, **overrides)
    assert v.tiers["symbolic"].status == "skipped" and "checks the proof only" in \
        v.tiers["symbolic"].reason
    return v.proof["status"]


def test_lemma8_printed_bounds_are_the_chains_bounds():
    v = symbolic("yang2024.lemma8")
    assert v.proof["status"] == "supported", v.as_dict()
    assert {f["step"] for f in v.proof["findings"]} == {"(46)", "(51)"}
    ev = v.tiers["symbolic"].evidence
    assert ev["b_lip"]["ok"] and ev["delta_lip"]["ok"]
    # the chain reads Lemma 2's C from its named formula rather than writing the number
    assert ev["chain_constants"]["lemma2_C"] == str(LEMMA2_FORMULAS[0].parse())
    assert ev["chain_constants"]["cauchy_schwarz_H"] == "sqrt(H)"


def test_lemma8_chain_follows_lemma2s_constant(monkeypatch):
    """With the sharp constant 1 of Lemma 2 the chain gives half of (50)'s first constant."""
    monkeypatch.setattr(gradient_bounds, "_lemma2_C", lambda: sympy.Integer(1))
    lemma8_chain.cache_clear()
    try:
        ch = lemma8_chain()
        Zb, dQh = sympy.symbols("Zbar_norm dQ_h", positive=True)
        assert sympy.simplify(ch["b_lip"] - Zb * dQh) == 0
    finally:
        lemma8_chain.cache_clear()


LEMMA8_MUTANTS = {
    "b_lip constant 2 -> 1": {"b_lip": "Zbar_norm*dQ_h"},
    "b_lip dQ_h -> Zbar_norm": {"b_lip": "2*Zbar_norm*Zbar_norm"},
    "delta_lip constant 2 -> 1": {"delta_lip": "gamma*sqrt(H)*alpha*dQ + gamma*sqrt(H)*dalpha_k"},
    "delta_lip dropped sqrt(H)": {"delta_lip": "2*gamma*sqrt(H)*alpha*dQ + gamma*dalpha_k"},
}


@pytest.mark.parametrize("name", sorted(LEMMA8_MUTANTS))
def test_lemma8_tighter_or_swapped_bound_is_a_proof_gap_not_a_refutation(name):
    v = symbolic("yang2024.lemma8", **LEMMA8_MUTANTS[name])
    assert v.proof["status"] == "gap" and v.verdict != "refuted", (name, v.as_dict())
    gap = [f for f in v.proof["findings"] if f["ok"] is False]
    ev = v.tiers["symbolic"].evidence[gap[0]["finding"]]
    assert ev["derived_bound"] and ev["paper_bound"] and ev["proof_step"] == gap[0]["step"]


def test_lemma8_looser_bound_passes_the_chain():
    assert proof("yang2024.lemma8", b_lip="3*Zbar_norm*dQ_h") == "supported"


def test_lemma10_printed_61_is_below_the_chain_and_the_correction_is_not():
    """(61) as printed: its proof has a gap at (59) (the chain's L^2 is larger), and the
    statement is false (the numeric tier finds the gradient changing faster than (61) allows);
    the correction is the chain's L^2, whose proof holds."""
    v = check_claim(find("yang2024.lemma10"), tiers=("symbolic", "numeric"), budget="quick",
                    seed=0, device="cpu")
    assert v.verdict == "corrected" and v.proof["status"] == "gap", v.as_dict()
    assert v.counterexample["tier"] == "numeric"
    gap = [f for f in v.proof["findings"] if f["ok"] is False]
    assert gap and gap[0]["step"] == "(54)-(59)"
    assert v.correction_tiers["symbolic"].proof[0]["ok"] is True


@pytest.mark.parametrize("text", [
    L61_CORRECTED.replace("16*", "15*"),                 # a tighter constant
    L61_CORRECTED.replace("4*N", "3*N"),                 # a tighter bracket
    L61_CORRECTED.replace("Max(1, ", "Max(0, "),         # max{1, .} dropped: tighter at small alpha
    L61_CORRECTED.replace("Zbar_norm**2/K", "Zbar_norm*fbar_max/K"),    # incomparable swap
], ids=["16->15", "4N->3N", "max1->max0", "Zbar->fbar"])
def test_lemma10_tighter_L_sq_is_a_proof_gap(text):
    assert proof("yang2024.lemma10", L_sq=text) == "gap"


def test_ratio_probe_handles_max_and_integer_sizes():
    K, N = sympy.Symbol("K", positive=True, integer=True), sympy.Symbol("N", positive=True, integer=True)
    a = sympy.Symbol("alpha", positive=True)
    ok, ce = ratio_at_least_one(sympy.Max(1, 4 * K * a ** 2) * N / (N + 4 * K * a ** 2),
                                   np.random.default_rng(0))
    assert not ok and float(sympy.Rational(ce["at"]["K"])).is_integer()
    ok, _ = ratio_at_least_one(sympy.Max(1, 4 * K * a ** 2) * 2 * N / (N + 4 * N * K * a ** 2),
                                  np.random.default_rng(0))
    assert ok


def test_thm1_looser_rate_is_not_a_gap():
    """(18) is an upper bound on the contraction factor: a larger rate (even 1) is a weaker
    statement the proof's (43c) gives; a faster one it does not give."""
    def status(rate):
        return proof("yang2024.thm1", **{**find("yang2024.thm1").correction.formulas,
                                         "rate": rate})

    assert status("1") == "supported"
    assert status("2 - eta_w*zeta_0/(2*K)") == "supported"
    assert status("1 - eta_w*zeta_0/K") == "gap"


def test_thm1_correction_is_the_chain_of_lemma_10_at_alpha_of_44():
    """The corrected (17) is Lemma 10's L^2 as its proof builds it, at alpha of (44) with the
    proof's bounds on ||A||_2 and fbar_max: the same expression in the paper's layout."""
    from verify.registry import find

    corrected = find("yang2024.thm1").formula("L_sq").parse(L17_CORRECTED)
    chain = _in_symbols_of(thm1_L_sq_chain(), corrected)
    assert sympy.simplify(corrected - chain) == 0


def test_thm1_printed_L_sq_is_below_the_proof_and_looser_corrections_pass():
    """(17) as printed is below the L^2 the proof of Lemma 10 gives at alpha of (44): a gap in
    the proof ((59) drops a square), not a false statement; the chain's L^2 and anything looser
    close the gap."""
    printed = symbolic("yang2024.thm1")
    assert printed.proof["status"] == "gap"
    ev = printed.tiers["symbolic"].evidence["L_sq"]
    assert ev["ok"] is False and ev["proof_step"].startswith("(54)-(59)")
    assert proof("yang2024.thm1", L_sq=L17_CORRECTED) == "supported"
    assert proof("yang2024.thm1", L_sq="2*(" + L17_CORRECTED + ")") == "supported"  # looser
    assert proof("yang2024.thm1", L_sq=L17_CORRECTED.replace("Max(", "Min(")) == "gap"


def test_a_chain_finding_reports_how_near_the_printed_bound_is_to_the_proofs():
    """The margin is the proof's bound over the printed one: 2/3 for a looser (50) with constant
    3, 1 for the printed (50), 2 (a violation) for the constant 1."""
    for text, used in (("3*Zbar_norm*dQ_h", 2 / 3), ("2*Zbar_norm*dQ_h", 1.0), ("Zbar_norm*dQ_h", 2.0)):
        margin = symbolic("yang2024.lemma8", b_lip=text).tiers["symbolic"].evidence["b_lip"]["margin"]
        assert margin["used"] == pytest.approx(used, rel=1e-12), (text, margin)
        assert margin["measure"] == "the proof's bound over the printed bound"


def test_a_non_constant_ratio_reports_the_smallest_ratio_found():
    """(51) with sqrt(H) dropped from its second term is below the chain only where H > 1: the
    margin is the largest proof / printed found, above 1, with the point."""
    v = symbolic("yang2024.lemma8", delta_lip="2*gamma*sqrt(H)*alpha*dQ + gamma*dalpha_k")
    margin = v.tiers["symbolic"].evidence["delta_lip"]["margin"]
    assert margin["used"] > 1 and set(margin["at"]) >= {"H", "dalpha_k"}, margin
