"""Corrections the engine derives: the smallest change to a printed formula that the claim's
derivation (its symbolic tier) proves, checked on its own in every tier."""
import pytest

from verify.corrections import Derived, chosen, derived_file, derived_for, load, load_all, search
from verify.mutants import equivalence
from verify.registry import BUILT_IN, find
from verify.runner import check_claim

TABLE = load_all(BUILT_IN)


def test_each_paper_keeps_its_derived_corrections_beside_its_module():
    """A paper plugin ships its own file: every entry sits in its own paper's file."""
    for paper in BUILT_IN:
        path = derived_file(paper)
        assert path.parent.name == paper
        assert all(cid.startswith(paper + ".") for cid in load(path))
    assert load(derived_file("ahn2023"))  # ahn2023 ships the corrections its ledger claims derived


def test_the_search_finds_the_one_change_that_makes_eq8_true():
    """xie2025 eq. (8): W^P = -eta/C I is printed; the derivation proves -eta I (1/C dropped)."""
    d = search(find("xie2025.eq8"))
    assert d is not None and list(d.formulas) == ["W_P"]
    assert "1/C" in d.changes["W_P"]
    assert equivalence(find("xie2025.eq8").formula("W_P"), d.formulas["W_P"],
                       base="-eta*Identity(d+1)").kind != "none"


def test_no_correction_is_derived_where_the_derivation_refutes_nothing():
    # a true statement: every neighbour it would try is beside the point
    calls = []

    def passes(claim, overrides, budget, seed):
        calls.append(overrides)
        return True

    assert search(find("yang2024.eq36"), passes=passes) is None
    assert calls == [{}]


def test_a_neighbourhood_without_a_proved_candidate_leaves_the_documented_correction():
    assert search(find("yang2024.eq36"), passes=lambda *a: False) is None
    c = chosen(find("yang2024.eq36"), table={})
    assert c.source == "documented" and c.formulas == dict(find("yang2024.eq36").correction.formulas)


def test_an_entry_derived_from_other_printed_texts_is_not_used():
    entry = TABLE["yang2024.eq36"]
    stale = {"yang2024.eq36": {**entry, "printed": {"L_star": "N*m*tau/(2*K)"}}}
    assert derived_for(find("yang2024.eq36"), stale) is None
    assert derived_for(find("yang2024.eq36"), TABLE) is not None


@pytest.mark.parametrize("claim_id", sorted(TABLE))
def test_each_derived_correction_says_what_the_documented_one_says(claim_id):
    """Where both exist, the derived formula and the documented one are the same formula."""
    claim = find(claim_id)
    d = derived_for(claim, TABLE)
    assert isinstance(d, Derived), f"{claim_id}: the entry is stale; rerun scripts/derive_corrections.py"
    for name, text in d.formulas.items():
        documented = claim.correction.formulas[name]
        eq = equivalence(claim.formula(name), text, base=documented)
        assert eq.kind != "none", (name, text, documented, eq.detail)


@pytest.mark.parametrize("claim_id", sorted(TABLE))
def test_each_derived_correction_passed_back_with_set_is_verified(claim_id):
    claim = find(claim_id)
    v = check_claim(claim, budget="quick", device="cpu", overrides=derived_for(claim).formulas)
    assert v.verdict == "verified", (claim_id, v.reason)


def test_check_reports_the_derived_correction_with_its_source():
    v = check_claim(find("xie2025.eq8"), budget="quick", device="cpu")
    assert v.verdict == "corrected"
    c = v.correction
    assert c["source"] == "derived" and set(c["formulas"]) == {"W_P"}
    assert c["latex"]["W_P"] == r"- \eta I"
    assert c["checked"]["symbolic"] == c["checked"]["numeric"] == "pass"
    assert "1/C" in c["changes"]["W_P"]


def test_a_sharp_constant_the_derivation_computes_is_reported_beside_the_verdict():
    """yang2024 Lemma 2: the printed C = 2 holds; the least C that holds is 1 (a limit the
    claim derives), reported as a derived finding, and not with C set by --set."""
    v = check_claim(find("yang2024.lemma2"), tiers=("symbolic",), budget="quick", device="cpu")
    assert v.verdict == "verified" and v.sharp == {"C": {"value": "1", "printed": "2"}}
    w = check_claim(find("yang2024.lemma2"), tiers=("symbolic",), budget="quick", device="cpu",
                    overrides={"C": "3"})
    assert w.sharp == {}
