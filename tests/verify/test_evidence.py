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
