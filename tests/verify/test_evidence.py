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
