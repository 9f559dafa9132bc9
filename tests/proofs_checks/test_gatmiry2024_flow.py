"""gatmiry2024 Thms. 3.3 and A.12 (the gradient flow): the hitting time of xi against the named
time, from A(0) = 0, from the farthest starts and near the optimal loss; the closeness at the
named time; wrong times, radii, deltas and hypotheses refuted, and a named time or radius that is
not a real number refuted rather than an error."""
import pytest
import sympy

from proofs_checks.gatmiry2024 import flow
from proofs_checks.kit import looped_icl as li
from verify.registry import find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}


def verdict(claim_id, tiers=("symbolic",), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, **QUICK)


def corrected(claim_id, **extra):
    """The documented correction as overrides (plus ``extra`` replacements)."""
    return {**find(claim_id).correction.formulas, **extra}


@pytest.mark.parametrize("hypothesis", ["n >= 2*(4*delta)**(2*L)", "xi >= 2*(4*delta)**(2*n)"])
def test_thm_a12_a_hypothesis_admitting_xi_below_the_optimal_loss_is_refuted(hypothesis):
    """Thm. A.12 with a hypothesis that no longer keeps xi above the optimal loss f(a*): the
    flow from A(0) = 0 never reaches xi = f(a*)/2, so no time bound holds there. The large-d
    scan uses one xi (10^-6) and passed these; the probe near f(a*) refutes them, and at the
    printed hypothesis it compares the hitting time at the smallest xi admitted."""
    claim = find("gatmiry2024.thm_a12")
    fixed = dict(claim.correction.formulas)
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**fixed, "hypothesis": hypothesis})
    assert v.verdict == "refuted" and "below the optimal loss" in v.reason, v.reason
    ok = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0, overrides=fixed)
    rows = ok.tiers["symbolic"].evidence["hitting_time_near_the_optimal_loss"]["rows"]
    assert ok.verdict == "verified" and rows and all(r["ok"] for r in rows)
    # where n < d it admits only xi > d, so the smallest xi admitted is no edge of [2 f*, d]
    assert all(r["edge"] for r in rows if r["d"] <= int(float(r["n"].replace("10^", "1e"))))


def test_thm_a12_a_delta_that_is_large_at_small_n_admits_xi_below_the_optimal_loss():
    """delta := (8 L d / sqrt(n))^{-1/(2L)} (a dropped minus sign's opposite) is small where the
    printed delta is large, at n < d, where f(a*) ~ d - n is large too: at L = 2, n = 2,
    d = 100 the hypothesis admits xi = 0.45 < f(a*) = 98.  The probe sizes with n >= 10^6 never
    met it (the mutant survived); n = 2, d = 100 refutes it."""
    claim = find("gatmiry2024.thm_a12")
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**dict(claim.correction.formulas),
                               "delta": "(8*L*d/sqrt(n))**(-1/(2*L))"})
    assert v.verdict == "refuted" and "below the optimal loss" in v.reason, v.reason
    bad = v.as_dict()["counterexample"]
    assert (bad["n"], bad["d"]) == ("2", 100), bad


@pytest.mark.parametrize("claim_id", ["gatmiry2024.thm3_3", "gatmiry2024.thm_a12"])
def test_the_flow_with_a_delta_without_d_admits_xi_below_the_optimal_loss(claim_id):
    """delta = (8 L^2 / sqrt(n))^{1/(2L)} (d -> L, a mutant that survived) meets the size
    condition at L = 2, d = 10^12, n = 10^21, and its threshold admits xi = 1e-6 below f(a*) =
    2e-6 (f(a*) ~ 2 d^3 / n^2), which the flow from A(0) = 0 never reaches."""
    v = verdict(claim_id, **corrected(claim_id, delta="(8*L*L/sqrt(n))**(1/(2*L))"))
    assert v.verdict == "refuted" and "below the optimal loss" in v.reason, v.reason
    ce = v.counterexample
    assert (ce["L"], ce["n"], ce["d"]) == (2, "10^21", 10 ** 12), ce


def test_thm_a12_the_flow_needs_lemma_a10s_sample_size_condition():
    """With the corrected time alone, xi >= 2 (4 delta)^{2L} admits xi = 2.59e8 below f(a*) =
    3.75e8 at L = 2, n = d = 10^9: the flow from A(0) = 0 never gets there.  The correction's
    4 d delta^{4L-2} <= 1 excludes n ~ d."""
    cid = "gatmiry2024.thm_a12"
    v = verdict(cid, time=corrected(cid)["time"])
    assert v.verdict == "refuted" and "below the optimal loss" in v.reason, v.reason
    ce = v.counterexample
    assert (ce["L"], ce["n"], ce["d"]) == (2, "10^9", 10 ** 9), ce
    assert float(ce["xi"]) < float(ce["optimal_loss"])
    assert verdict(cid, **corrected(cid)).verdict == "verified"


@pytest.mark.parametrize("delta", [
    "(8*L*L/sqrt(n))**(1/(2*L))",  # d -> L
    "(8*L*d/sqrt(n))**(1/(2*n))",  # L -> n in the exponent
    "(8*L*d/sqrt(n))**(1/(2*d))",  # L -> d in the exponent
    "(8*L*n/sqrt(d))**(1/(2*L))",  # n <-> d
    "(8*n*d/sqrt(L))**(1/(2*n))",  # n <-> L
])
def test_thm3_3_a_delta_that_is_small_where_d_is_large_admits_xi_below_the_optimal_loss(delta):
    """Each of these is at most ~1 where n << d, so xi >= 2 (4 delta)^{2L} admits xi of a few
    hundred, below f(a*) ~ d - n once d is 10^4 with n = 100 (or 10^6 with n = 10^4).  They
    passed the probe sizes up to d = 100 (mutants that survived); the n << d sizes refute them.
    The hypothesis is the printed one: the correction's 4 d delta^{4L-2} <= 1 excludes n << d."""
    claim = find("gatmiry2024.thm3_3")
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**dict(claim.correction.formulas), "delta": delta,
                               "hypothesis": "xi >= 2*(4*delta)**(2*L)"})
    assert v.verdict == "refuted" and "below the optimal loss" in v.reason, v.reason
    bad = v.as_dict()["counterexample"]
    assert bad["d"] >= 10 ** 4 and bad["d"] > 10 * int(float(bad["n"].replace("10^", "1e"))), bad


def test_after_one_confirmed_violation_clear_float_violations_are_counted_not_recomputed():
    """A mutant that fails almost everywhere ((1 - n)^k in Lemma A.7's lower bound): the first
    violation is confirmed in mpmath, the clear ones after it are counted in float64, and the
    untouched upper bound is not sent to mpmath because the lower one is huge."""
    claim = find("gatmiry2024.lemma_a7")
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**dict(claim.correction.formulas),
                               "lower": "-delta**k*(lambda_1 + 1)**k + (1 - n)**k"})
    flat = v.tiers["symbolic"].evidence["flat_spectrum_search"]
    assert v.verdict == "refuted" and flat["ok"] is False
    assert 0 < flat["violations_counted_in_float64_after_the_first"] < flat["violations"]
    first = v.as_dict()["counterexample"]["instance"]
    assert first["side"] == "lower" and "slack_60_digits" in first


def test_the_flow_from_minus_infinity_matches_a_long_flow_from_a_finite_start():
    """scalar_flow_from_infinity against scipy's solve_ivp from a0 = -10^3: that flow is the
    one from -oo shifted by the time tau0 it takes to come in to a0."""
    from scipy.integrate import solve_ivp
    import numpy as np

    L, n, d, t = 2, 10 ** 12, 3, 0.5
    tau0 = 1 / (4 * L * (L - 1) * 1000.0 ** 2)  # |a0 - a*| = 10^3 is reached at ~ this time
    a0 = float(flow.scalar_flow_from_infinity(L, n, d, tau0))
    fp = np.polyder(np.array([float(c) for c in li.scalar_poly(L, n, d).all_coeffs()]))
    sol = solve_ivp(lambda s, y: -np.polyval(fp, y) / d, (0, t), [a0], method="LSODA",
                    rtol=1e-11, atol=1e-13)
    expected = float(flow.scalar_flow_from_infinity(L, n, d, tau0 + t))
    assert abs(a0 + 1000) < 5 and sol.y[0, -1] == pytest.approx(expected, rel=1e-7)
    assert flow.scalar_flow_from_infinity(L, 10 ** 6, d, 10 ** 7) is None  # below 10^-25


@pytest.mark.parametrize("radius", [  # ~9 s each: one in the default run
    "d**(1/(2*L))*(32*d**(1/(2*L)) + 8)",
    pytest.param("xi**(1/(2*L**2))*(32*d**(1/(2*L)) + 8)", marks=pytest.mark.slow),
    pytest.param("(32*d**(1/(2*L)) + 8)/xi**(1/(2*L))", marks=pytest.mark.slow)])
def test_thm3_3_a_radius_in_another_power_of_xi_is_refuted_from_the_farthest_start(radius):
    """Thm. 3.3 (2) with the radius constant in xi, in xi^{1/(2L^2)} or in xi^{-1/(2L)}: the
    closeness check at xi = 10^-12 from A(0) = 0 passed them. From A(0) = a0 I far below A^opt
    the flow is still ~0.2 xi^{1/4} (L = 2) below it at the named time, which exceeds them at
    large xi; the printed radius (>= 40 xi^{1/(2L)}) holds there."""
    claim = find("gatmiry2024.thm3_3")
    fixed = dict(claim.correction.formulas)
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**fixed, "c": radius})
    assert v.verdict == "refuted" and "below A^opt at the named time" in v.reason, v.reason
    bad = v.as_dict()["counterexample"]
    assert bad["check"] == "closeness_from_the_farthest_start" and float(bad["A0"][:-2]) < 0
    ok = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0, overrides=fixed)
    rows = ok.tiers["symbolic"].evidence["closeness_from_the_farthest_start"]["rows"]
    assert ok.verdict == "verified" and len(rows) >= 20 and all(r["ok"] for r in rows)


def test_thm3_3_a_time_undefined_at_l_2_is_refuted_not_an_error():
    claim = find("gatmiry2024.thm3_3")
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={"time": "(1/xi)**((L - 1)/L)*(16*L/(L - 2))**((L - 1)/(2*L - 1))"})
    assert v.verdict == "refuted", (v.verdict, v.reason)


@pytest.mark.parametrize("name,text,why", [
    ("time", "sqrt(1 - d)*xi", "the named time is not a real number"),
    ("c", "sqrt(1 - d)", "the named radius c is not a real number")])
def test_thm3_3_a_time_or_radius_that_is_not_real_is_refuted_in_every_tier_not_an_error(
        name, text, why):
    """A named time or radius that is complex (at d >= 2) bounds nothing: every tier that reads
    it fails there (it used to raise TypeError on the mpc, an inconclusive verdict).  One complex
    for every d (sqrt(-d)) is not read at all: formulas are real (exit 2)."""
    v = check_claim(find("gatmiry2024.thm3_3"), tiers=("symbolic", "numeric"), budget="quick",
                    seed=0, overrides={name: text})
    assert v.verdict == "refuted", (v.verdict, v.reason)
    assert all(v.tiers[t].status == "fail" for t in ("symbolic", "numeric")), v.reason
    assert why in v.tiers["numeric"].reason


def test_thm_a12_a_time_too_short_at_large_xi_is_refuted_from_the_farthest_start():
    """The corrected time with xi^2 for xi: longer at xi < 1, so the flows from A(0) = 0 (whose
    loss starts below d) and the scan at xi = 10^-6 passed it. The flow from a0 I with a0 -> oo
    needs ~ (d/xi)^{1/2}/8 (L = 2) to reach xi, more than it at xi = 10^12; the correction holds
    at every row."""
    claim = find("gatmiry2024.thm_a12")
    fixed = dict(claim.correction.formulas)
    v = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0,
                    overrides={**fixed, "time": "(d/xi**2)**((L - 1)/L)*16*L/(L - 1)"})
    assert v.verdict == "refuted" and "to reach xi" in v.reason, v.reason
    assert v.as_dict()["counterexample"]["check"] == "hitting_time_from_the_farthest_start"
    ok = check_claim(claim, tiers=("symbolic",), budget="quick", seed=0, overrides=fixed)
    ev = ok.tiers["symbolic"].evidence["hitting_time_from_the_farthest_start"]
    assert ok.verdict == "verified" and len(ev["rows"]) >= 20 and all(r["ok"] for r in ev["rows"])
    # at large n the flow from oo needs (d/xi)^{(L-1)/L} / (4 L (L - 1)): 1/(64 L^2) of the
    # corrected time, 1/256 at L = 2, the slack its surviving constant mutants live in
    assert ev["margin"]["at"]["L"] == 2 and abs(256 * ev["margin"]["used"] - 1) < 1e-6


def test_the_hitting_time_from_infinity_is_the_large_n_power_law():
    """From a = +-oo, dx/dt = -2L x^{2L-1} with f = d x^{2L} at large n: the time to reach
    f = xi is (d/xi)^{(L-1)/L} / (4 L (L - 1))."""
    for L, d, xi in ((2, 1, 1), (2, 16, 10 ** 6), (3, 4, sympy.Rational(1, 100))):
        expected = float((sympy.Integer(d) / xi) ** sympy.Rational(L - 1, L) / (4 * L * (L - 1)))
        for side in (-1, 1):
            t = float(flow.hitting_time_from_infinity(L, 10 ** 40, d, xi, side))
            assert t == pytest.approx(expected, rel=1e-6)


def test_a_named_time_of_10_to_the_27_does_not_stall_the_numeric_flows():
    """A time in (d/xi)^{(L-1)/delta} is ~10^27 at the numeric tier's sizes: the flows used to
    be integrated to it in t and never finished (the mutant timed out before the symbolic tier,
    which refutes it, ran). They stop at 10^6 now; the loss reached xi well before."""
    claim = find("gatmiry2024.thm_a12")
    over = {**claim.correction.formulas, "time": "16*L*(d/xi)**((L - 1)/delta)/(L - 1)"}
    v = check_claim(claim, tiers=("numeric", "symbolic"), budget="quick", seed=0, overrides=over)
    flows = v.tiers["numeric"].evidence["flows_at_small_d"]["flows"]
    assert v.tiers["numeric"].status == "pass" and flows
    assert all(r["integrated_to"] == flow.FLOW_T_CAP and r["t_hit"] < 10 for r in flows)
    assert v.verdict == "refuted" and v.tiers["symbolic"].status == "fail"
