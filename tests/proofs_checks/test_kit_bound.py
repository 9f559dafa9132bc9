"""The kit's bound under a hypothesis on a toy claim outside any paper: for n >= 2 the harmonic
number H_n = 1 + 1/2 + ... + 1/n satisfies H_n >= log(n) + 1/2 (H_n - log n decreases to Euler's
gamma = 0.5772...).

H_n is derived exactly (a rational), the bound is the claim's named formula; the search walks a
few sizes and bisects n = 1 .. 2^12 for the smallest failing n.  A deliberately wrong constant
(3/5) is refuted at the smallest n where H_n - log n < 3/5, found independently here; a
hypothesis that admits no point passes vacuously and says so; a bound that is not a real number
fails; a sign no precision settles is undecided."""
from fractions import Fraction
from functools import lru_cache
import math

import pytest
import sympy

from proofs_checks.kit.bound import (BoundSearch, Family, Line, NotReal, Point, bound_findings,
                                      judge)
from proofs_checks.kit.exact_compare import Undecidable, holds, real_le
from verify.claim import BUDGETS, Claim, Context
from verify.evidence import combine
from verify.formulas import FormulaSymbol, NamedFormula
from verify.runner import check_claim


@lru_cache(maxsize=None)
def harmonic(n: int) -> sympy.Rational:
    """H_n exactly (sympy's harmonic is exact but slow past 10^5; the bisection needs ~40)."""
    return sympy.harmonic(n) if n < 5000 else sympy.Rational(
        *Fraction(sum(Fraction(1, k) for k in range(1, n + 1))).as_integer_ratio())


def _point(n: int) -> Point:
    return Point({"n": sympy.Integer(n)}, harmonic(n), {"n": n})


def _lines(F, ctx):
    yield Line("bisect", range(1, 2 ** 12 + 1), _point, smallest=True)
    yield Line("walk", (1, 2, 3, 10, 100), _point)


N = FormulaSymbol("n")
# --- the claim ---
SEARCH = BoundSearch("H_n", "bound", ">=", hypothesis="hypothesis", families=(
    Family("harmonic_lower_bound", "H_n bisected over n <= 2^12, and at n in 1, 2, 3, 10, 100",
           _lines),))
HARMONIC = Claim(id="mydraft2026.lemma3", title="A lower bound on the harmonic numbers",
                 paper="mydraft2026", statement=r"For $n\ge2$, $H_n\ge\log n+\frac12$.",
                 assumptions=("n a positive integer",),
                 formulas=(NamedFormula("bound", "log(n) + 1/2", (N,), weaker="smaller"),
                           NamedFormula("hypothesis", "n >= 2", (N,), weaker="narrower")),
                 checks={"symbolic": lambda ctx: combine(bound_findings(SEARCH, ctx))})
# --- end of the claim ---


def _verdict(**overrides):
    return check_claim(HARMONIC, tiers=("symbolic",), overrides=overrides, budget="quick", seed=0)


def test_the_true_bound_is_verified_with_its_closest_approach():
    v = _verdict()
    assert v.verdict == "verified", v.reason
    ev = v.tiers["symbolic"].evidence["harmonic_lower_bound"]
    assert ev["by_line"]["bisect"]["smallest_failing"] is None
    assert ev["by_line"]["walk"] == {"points": 5, "admitted": 4, "fails_at": None}  # not n = 1
    # the closest approach is the largest n compared: (log n + 1/2) / H_n -> 1 from below
    margin = ev["margin"]
    assert 0.99 < margin["used"] < 1 and margin["at"] == {"n": 2 ** 12}


def test_a_wrong_constant_is_refuted_at_the_smallest_failing_n():
    smallest = next(n for n in range(1, 10 ** 4)
                    if sum(1 / k for k in range(1, n + 1)) - math.log(n) < 0.6)
    v = _verdict(bound="log(n) + 3/5")
    assert v.verdict == "refuted", v.reason
    ce = v.tiers["symbolic"].counterexample
    assert ce["n"] == smallest == 22
    assert float(ce["H_n"]) < float(ce["bound"])
    assert ce["hypothesis"] == ["22.0 >= 2.0"]
    assert "fails at n = 22" in v.tiers["symbolic"].reason


def test_the_hypothesis_decides_which_points_are_compared():
    """log(n) + 1 is a bound only at n = 1 (equality): wherever the hypothesis admits just n = 1
    the statement holds, and refuted where it admits more."""
    assert _verdict(bound="log(n) + 1", hypothesis="n <= 1").verdict == "verified"
    assert _verdict(bound="log(n) + 1").verdict == "refuted"


def test_a_hypothesis_that_admits_nothing_passes_vacuously_and_says_so():
    v = _verdict(hypothesis="n >= 2**30")
    assert v.verdict != "verified", v.reason
    assert v.tiers["symbolic"].evidence["harmonic_lower_bound"]["tested"] is False


@pytest.mark.parametrize("bound", ["sqrt(1 - n)", "log(3 - n)"])  # complex at n >= 2, 4
def test_a_bound_that_is_not_a_real_number_bounds_nothing_and_fails(bound):
    v = _verdict(bound=bound)
    assert v.verdict == "refuted", v.reason
    assert v.tiers["symbolic"].counterexample["bound"] == "not a real number"


def test_a_sign_no_precision_settles_is_undecided_not_a_verdict():
    """log(2n)/log(2) - log(n)/log(2) is 1 exactly, which neither 2000 digits nor the minimal
    polynomial (log is not algebraic) can show: a quantity of exactly 1 compared with it is
    undecided, not a violation and not a pass."""
    spec = BoundSearch("one", "bound", ">=", families=(Family("one", "n = 3", lambda F, ctx: [
        Line("n=3", (3,), lambda n: Point({"n": sympy.Integer(n)}, 1, {"n": n}))]),))
    F = {"bound": sympy.sympify("log(2*n)/log(2) - log(n)/log(2)",
                                locals={"n": sympy.Symbol("n", positive=True, integer=True)})}
    assert judge(spec, F, Point({"n": sympy.Integer(3)}, 1)).ok is None
    ctx = Context("mydraft2026.lemma3", F, {}, BUDGETS["quick"])
    finding, = bound_findings(spec, ctx)
    assert finding.ok is None and "undecided" in finding.reason
    assert finding.evidence["undecided_points"] == [{"n": 3, "why": "no precision settles the sign"}]


def test_an_upper_bound_reads_the_other_way():
    spec = BoundSearch("H_n", "bound", "<=", families=(Family("upper", "n <= 100", lambda F, c: [
        Line("walk", (1, 2, 3, 10, 100), _point)]),))
    n = sympy.Symbol("n", positive=True, integer=True)
    assert judge(spec, {"bound": sympy.log(n) + 1}, _point(100)).ok is True
    assert judge(spec, {"bound": sympy.log(n) + sympy.Rational(1, 2)}, _point(100)).ok is False
    used = judge(spec, {"bound": sympy.log(n) + 1}, _point(100)).used
    assert used == pytest.approx(float(harmonic(100)) / (math.log(100) + 1))


def test_an_unsettled_sign_stops_a_conclusion_and_admits_nothing_in_a_hypothesis():
    """The same unsettled sign: ``real_le`` (a conclusion) raises, so the tier stops undecided
    rather than reading it as a violation; ``holds`` (a hypothesis) admits nothing there."""
    n = sympy.Symbol("n", positive=True, integer=True)
    one = sympy.log(2 * n) / sympy.log(2) - sympy.log(n) / sympy.log(2)
    with pytest.raises(Undecidable, match="no precision settles it"):
        real_le(sympy.Integer(1), one, {"n": sympy.Integer(3)})
    assert holds(sympy.Le(1, one), {"n": sympy.Integer(3)}) is False
    assert real_le(sympy.Integer(1), one + sympy.Rational(1, 10 ** 30), {"n": sympy.Integer(3)})


def test_the_margin_reads_negative_sides_the_way_the_relation_does():
    """Q <= B with B <= 0 < Q uses infinitely more than allowed; with both negative the ratio is
    B / Q (Q = -2 <= B = -1 uses half); a lower bound mirrors it."""
    up = BoundSearch("Q", "bound", "<=", ())
    n = sympy.Symbol("n", positive=True, integer=True)
    at = Point({"n": sympy.Integer(1)}, 1)
    assert judge(up, {"bound": -n}, at).used == float("inf")
    assert judge(up, {"bound": -n}, at).ok is False
    assert judge(up, {"bound": -n}, Point({"n": sympy.Integer(1)}, -2)).used == 0.5
    low = BoundSearch("Q", "bound", ">=", ())
    assert judge(low, {"bound": n}, Point({"n": sympy.Integer(1)}, -1)).used == float("inf")
    assert judge(low, {"bound": -2 * n}, Point({"n": sympy.Integer(1)}, -1)).used == 0.5


def test_a_derived_quantity_that_is_no_number_decides_nothing_unless_the_statement_made_it_so():
    """A NaN from the derivation (a failed quadrature) is undecided; ``NotReal`` (the quantity
    is taken at a named formula that is complex there) fails the point, with its reason."""
    spec = BoundSearch("Q", "bound", "<=", (Family("f", "n = 1", lambda F, ctx: [Line(
        "n=1", (1,), lambda n: Point({"n": sympy.Integer(n)}, q, {"n": n}))]),))
    F = {"bound": sympy.Integer(1)}
    ctx = Context("mydraft2026.lemma3", F, {}, BUDGETS["quick"])
    for q in (sympy.nan, sympy.I, float("nan")):
        finding, = bound_findings(spec, ctx)
        assert finding.ok is None and "not a number" in finding.reason, q
    q = NotReal("the named time is not a real number")
    finding, = bound_findings(spec, ctx)
    assert finding.ok is False and finding.counterexample["Q"] == q.why
    q = float("inf")
    finding, = bound_findings(spec, ctx)
    assert finding.ok is False  # an infinite quantity is compared as an extended real
