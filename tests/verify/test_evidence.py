"""Findings, their margins and their combination into a tier result."""
import math

from verify.evidence import Closest, Finding, Margin, closest_margin, combine


def test_closest_keeps_the_comparison_nearest_to_failing():
    near = Closest("q / bound")
    near.see_le(1, 4, {"x": 1})
    near.see_le(3, 4, {"x": 2})
    near.see_le(2, 4, {"x": 3})
    assert near.margin == Margin(0.75, "q / bound", {"x": 2})


def test_closest_reads_negative_bounds_and_ignores_what_says_nothing():
    near = Closest("q / bound")
    near.see_le(-4, -2, {"x": "both negative"})  # -4 <= -2: used 2/4
    near.see_le(1, -1, {"x": "wrong sign"})  # fails, but no ratio says how near
    near.see_le(1, float("inf"), {"x": "no finite bound"})
    near.see(float("nan"), {"x": "nan"})
    near.see(complex(1, 1), {"x": "complex"})
    assert near.margin == Margin(0.5, "q / bound", {"x": "both negative"})
    assert Closest("nothing").margin is None


def test_a_findings_margin_is_in_the_tier_evidence_and_the_largest_is_found():
    result = combine([Finding("a", True, {"rows": []}, margin=Margin(0.25, "t / T", {"L": 2})),
                      Finding("b", True, margin=Margin(0.5, "dev / c", {"L": 3})),
                      Finding("c", True)])
    assert result.status == "pass"
    assert result.evidence["a"]["margin"] == {"used": 0.25, "measure": "t / T", "at": {"L": 2}}
    assert "margin" not in result.evidence["c"]
    assert closest_margin(result.evidence) == {"used": 0.5, "measure": "dev / c",
                                               "at": {"L": 3}, "check": "b"}
    assert closest_margin({"x": {"ok": True}}) is None


def test_an_infinite_margin_is_json_safe_and_not_taken_for_a_number():
    result = combine([Finding("a", False, margin=Margin(math.inf, "dev / c", {}))])
    assert result.evidence["a"]["margin"]["used"] == "inf"
    assert closest_margin(result.evidence) is None


def test_closest_counts_comparisons_not_values():
    near = Closest("x")
    assert not near.tested
    near.see(None, {})  # a point the hypothesis did not admit: no comparison
    assert not near.tested and near.margin is None
    near.see_le(1.0, math.inf, {})  # compared, but an infinite bound says nothing of nearness
    assert near.tested and near.compared == 1 and near.margin is None
    near.see(float("nan"), {})
    assert near.compared == 2 and near.margin is None


def test_a_tier_whose_searches_admitted_no_instance_is_skipped_not_passed():
    """A bound searched only where its hypothesis holds passes vacuously when the hypothesis
    holds nowhere searched: the tier says it compared nothing (verdict inconclusive where no
    other tier did), instead of passing."""
    cross_check = Finding("machinery", True)  # tested=None: not a search over a hypothesis
    empty = [cross_check, Finding("search_a", True, tested=False),
             Finding("search_b", True, tested=False)]
    r = combine(empty)
    assert r.status == "skipped"
    assert "no instance these checks drew meets the hypothesis (search_a, search_b)" in r.reason
    assert r.evidence["search_a"]["tested"] is False
    # one search that compared something is evidence: the tier passes
    assert combine([*empty, Finding("search_c", True, tested=True)]).status == "pass"
    # a failure is a failure, whatever else compared nothing
    assert combine([*empty, Finding("search_c", False, reason="x")]).status == "fail"
    assert combine([cross_check]).status == "pass"


# ---------------------------------------------------------------- floats that decide nothing
def test_settle_le_decides_only_finite_resolved_comparisons():
    import numpy as np

    from verify.evidence import settle_le

    assert settle_le([1.0, 2.0], [1.0, 3.0]) == (True, "")
    assert settle_le([1.0, 4.0], [1.0, 3.0])[0] is False
    ok, why = settle_le([0.0, 1.0], [float("nan"), 2.0])
    assert ok is None and "not finite" in why
    # an allowance in float64's subnormal range: the terms underflowed, 0 <= 1e-320 says nothing
    ok, why = settle_le([0.0, 0.5], [1e-320, 1.0])
    assert ok is None and "resolution" in why
    # ... unless the structure makes the allowance exactly 0 (a component with no term)
    assert settle_le([0.0, 0.5], [0.0, 1.0], exact=np.array([True, False])) == (True, "")
    # a decided failure is a failure even beside undecided entries
    assert settle_le([2.0, 0.0], [1.0, 1e-320])[0] is False


def test_a_nan_in_a_counterexample_or_margin_makes_the_finding_undecided():
    f = Finding("cmp", False, counterexample={"lhs": float("nan"), "rhs": 1.0})
    assert f.ok is None and f.counterexample is None and "lhs is NaN" in f.reason
    g = Finding("cmp", True, margin=Margin(float("nan"), "q / b"))
    assert g.ok is None and "NaN" in g.reason
    assert Finding("cmp", False, counterexample={"lhs": 2.0, "rhs": 1.0}).ok is False


def test_a_tier_whose_comparisons_are_all_undecided_is_skipped_and_a_mix_is_an_error():
    undecided = Finding("a", None, reason="float64 overflowed")
    skipped = combine([undecided])
    assert skipped.status == "skipped" and "no comparison decided" in skipped.reason
    assert combine([undecided, Finding("b", True)]).status == "error"


def test_a_pass_of_searches_only_is_marked_as_such():
    assert combine([Finding("adam", True, search=True)]).support == "search"
    assert combine([Finding("adam", True, search=True), Finding("exact", True)]).support == \
        "checked"


def test_proof_findings_never_decide_the_statement_and_form_the_proof_part():
    from verify.verdict import proof_of

    result = combine([Finding("bound_holds", True),
                      Finding("chain_59", False, {"ratio": 0.5}, reason="(59) drops a square",
                              proof_step="(59)")])
    assert result.status == "pass"
    assert result.proof == [{"step": "(59)", "finding": "chain_59", "ok": False,
                             "what": "(59) drops a square"}]
    assert result.evidence["chain_59"]["proof_step"] == "(59)"
    proof = proof_of({"symbolic": result})
    assert proof["status"] == "gap" and proof["findings"][0]["tier"] == "symbolic"
    only = combine([Finding("chain", True, proof_step="(5)-(9)")])
    assert only.status == "skipped" and "checks the proof only" in only.reason
    assert proof_of({"symbolic": only})["status"] == "supported"
    assert proof_of({"numeric": combine([Finding("x", True)])})["status"] == "not checked"


def test_a_closest_approach_of_exactly_one_reads_as_tight_and_near_one_shows_its_digits():
    from verify.evidence import describe_approach

    base = {"measure": "lhs / rhs", "tier": "symbolic", "check": "bound"}
    assert describe_approach({**base, "used": 1.0}).startswith(
        "closest approach: tight: the bound is attained, 1 of the bound")
    assert "0.99999 of the bound" in describe_approach({**base, "used": 0.99999})
    assert "1.0000004 of the bound" in describe_approach({**base, "used": 1.0000004})
    assert "0.042 of the bound" in describe_approach({**base, "used": 0.042})


def test_the_search_keeps_a_nan_unless_a_number_fails():
    import math

    from verify.evidence import worse
    worst = 0.0
    for x in (0.5, math.nan, 0.9):
        worst = x if worse(x, worst, 1.0) else worst
    assert math.isnan(worst)
    for x in (2.0, math.nan):
        worst = x if worse(x, worst, 1.0) else worst
    assert worst == 2.0  # a decided failure stays a failure
