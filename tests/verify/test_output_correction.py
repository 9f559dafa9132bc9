"""The terminal says why a derived correction did not make a refuted claim 'corrected'."""
from verify.claim import TierResult
from verify.output import check_table
from verify.verdict import Verdict


def _refuted(correction_tiers: dict) -> Verdict:
    return Verdict("kit0000.fig1", "t", "kit0000", "refuted",
                   {"symbolic": TierResult("fail", reason="saturation_point: differs")}, 0,
                   "quick", "cpu", counterexample={"tier": "symbolic", "check": "x"},
                   correction={"source": "derived", "description": "H_risk: 1 -> 0",
                               "formulas": {"H_risk": "d"}},
                   correction_tiers=correction_tiers, reason="saturation_point: differs")


def test_an_unconfirmed_correction_says_which_tier_did_not_confirm_it():
    text = check_table([_refuted({
        "symbolic": TierResult("pass"),
        "train": TierResult("error", reason="L-BFGS did not reach R*; more restarts would decide"),
        "numeric": TierResult("fail", reason="the sides differ by 2")})])
    assert ("not confirmed: the correction's train tier is undecided: L-BFGS did not reach R*; "
            "more restarts would decide") in text
    assert "not confirmed: the correction's numeric tier fails: the sides differ by 2" in text
    assert "not confirmed" not in check_table([_refuted({"symbolic": TierResult("pass")})])


def test_the_report_labels_an_unconfirmed_correction_proposed():
    from verify.registry import find
    from verify.report import correction_view

    claim = find("ahn2023.thm1")
    for verdict, label in (("refuted", "Proposed, not confirmed"), ("corrected", "Correct")):
        v = _refuted({"train": TierResult("error", reason="undecided")})
        v.verdict, v.correction = verdict, {**v.correction, "reason": "r", "formulas": {}}
        assert correction_view(claim, v)["label"] == label
