"""The kit's trend findings on toy sequences outside any paper: gradient descent on q(x) = x^2/2
(its loss decreases in the number of steps for a step size in (0, 2), and grows for a step size
above 2), Monte Carlo estimates with standard errors, a flat tail, linear growth; non-finite or
underflowed values decide nothing."""
import math

import mpmath
import numpy as np
import pytest
import sympy

from proofs_checks.kit.trend import (Indexed, all_of, exact_linear, first_violation, fit_slope,
                                     flat, is_monotone, least_squares, linear_slope, monotone,
                                     positive_at, step_verdict)
from verify.claim import BUDGETS, Context
from verify.evidence import combine

R = sympy.Rational


# --------------------------------------------------------------------------- a toy claim
def gd_losses(eta, steps: int) -> list:
    """q(x_n) for x_{n+1} = x_n - eta q'(x_n), q(x) = x^2/2, x_0 = 1: iterated exactly."""
    x, out = sympy.Integer(1), []
    for _ in range(steps):
        x = x - eta * x
        out.append(x ** 2 / 2)
    return out


def toy_check(ctx: Context):
    """Toy figure claim: "more steps of GD with the named step size eta lower the loss"."""
    eta = ctx.formulas["eta"]
    n = range(1, 7)
    return combine([monotone("loss_decreases_with_steps", [Indexed(n, gd_losses(eta, 6), "n")],
                             "decreasing", reason="the loss grows from n = {previous} to "
                                                  "{index}")])


def _ctx(eta) -> Context:
    return Context(claim_id="kit0000.fig1", formulas={"eta": sympy.sympify(eta)},
                   formula_texts={"eta": str(eta)}, budget=BUDGETS["quick"], seed=0)


def test_the_toy_claim_holds_and_a_wrong_step_size_is_refuted():
    assert toy_check(_ctx(R(1, 2))).status == "pass"
    bad = toy_check(_ctx(3))  # |1 - eta| = 2: the loss grows 4-fold each step
    assert bad.status == "fail"
    ce = bad.counterexample
    assert (ce["previous_n"], ce["n"]) == (1, 2)
    assert (ce["previous_value"], ce["value"]) == (2, 8) and ce["difference"] == 6
    assert "grows from n = 1 to 2" in bad.reason


def test_a_step_size_of_2_gives_a_flat_loss_strict_fails_weak_holds():
    curve = Indexed(range(1, 5), gd_losses(2, 4), "n")  # x_n = (-1)^n: q = 1/2 throughout
    assert monotone("d", [curve], "decreasing").ok is False
    assert monotone("d", [curve], "decreasing", strict=False).ok is True


def test_eventually_monotone_from_an_index():
    curve = Indexed([1, 2, 3, 4, 5], [R(1), R(3), R(2), R(1), R(1, 2)], "L")
    assert monotone("d", [curve], "decreasing").ok is False
    f = monotone("d", [curve], "decreasing", start=2)
    assert f.ok is True and "at 3 steps" in f.summary
    assert first_violation(curve, "decreasing").after_index == 2
    assert first_violation(curve, "decreasing", start=2) is None
    # a trend over no step compared is no pass
    assert monotone("d", [curve], "decreasing", start=5).ok is None
    assert monotone("d", [Indexed([1], [R(1)], "L")], "decreasing").ok is None


def test_several_curves_fail_at_the_first_violation_with_its_coordinates():
    good = Indexed([1, 2], [R(2), R(1)], "L", at={"n": 20})
    bad = Indexed([1, 2], [R(1), R(2)], "L", at={"n": 40})
    f = monotone("d", [good, bad], "decreasing")
    assert f.ok is False and f.counterexample["n"] == 40


def test_exact_values_of_every_kind_are_compared_exactly():
    tiny = R(1, 10 ** 400)  # far below float64's range: exact arithmetic still decides
    assert step_verdict(2 * tiny, tiny, "decreasing")[0] is True
    assert step_verdict(mpmath.mpf(2), mpmath.mpf(3), "increasing")[0] is True
    with pytest.raises(ValueError):
        step_verdict(R(1), R(2), "increasing", rel_tol=1e-9)
    with pytest.raises(ValueError):
        step_verdict(1, 2, "upwards")


# ------------------------------------------------------------------- soundness edge cases
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), sympy.nan, sympy.oo,
                                 sympy.zoo, mpmath.mpf("nan")])
def test_non_finite_values_decide_nothing(bad):
    f = monotone("d", [Indexed([1, 2, 3], [3.0, bad, 1.0], "L")], "decreasing")
    assert f.ok is None and "not finite" in f.reason
    # a decided failure elsewhere is still a failure
    f = monotone("d", [Indexed([1, 2, 3, 4], [3.0, bad, 1.0, 2.0], "L")], "decreasing")
    assert f.ok is False and f.counterexample["L"] == 4


def test_underflowed_floats_decide_nothing():
    f = monotone("d", [Indexed([1, 2], [1e-310, 1e-320], "L")], "decreasing")
    assert f.ok is None and "underflowed" in f.reason
    assert is_monotone([1e-310, 1e-320], "decreasing") is None
    assert flat("f", Indexed([1], [1e-320], "H"), 1e-315, 0.5).ok is None


def test_float_tolerance_is_relative_to_the_earlier_value():
    assert step_verdict(1.0, 1.0 + 1e-12, "decreasing", strict=False, rel_tol=1e-9)[0] is True
    assert step_verdict(1.0, 1.0 + 1e-6, "decreasing", strict=False, rel_tol=1e-9)[0] is False
    assert step_verdict(1.0, 1.0 - 1e-12, "decreasing", strict=True, rel_tol=1e-9)[0] is False


# ------------------------------------------------------------------------------ estimates
def _mc(means, se=0.01):
    return Indexed(range(1, len(means) + 1), means, "L", se=[se] * len(means))


def test_estimates_decide_only_beyond_z_standard_errors():
    assert monotone("d", [_mc([1.0, 0.5, 0.2])], "decreasing").ok is True
    f = monotone("d", [_mc([1.0, 0.999, 0.5])], "decreasing")
    assert f.ok is None and "standard errors" in f.reason  # never a pass by default
    # a weak trend is not passed on a flat step either: the estimates cannot tell
    assert monotone("d", [_mc([1.0, 1.0])], "decreasing", strict=False).ok is None
    f = monotone("d", [_mc([0.5, 1.0])], "decreasing")
    assert f.ok is False and f.counterexample["z"] < -3


def test_a_real_monte_carlo_trend():
    rng = np.random.default_rng(1)
    samples = [rng.exponential(1 / n, 20_000) for n in (1, 2, 4, 8)]  # means 1, 1/2, 1/4, 1/8
    curve = Indexed([1, 2, 4, 8], [s.mean() for s in samples], "n",
                    se=[s.std(ddof=1) / math.sqrt(len(s)) for s in samples])
    assert monotone("d", [curve], "decreasing").ok is True
    assert monotone("i", [curve], "increasing").ok is False


def test_a_zero_or_missing_standard_error_decides_nothing():
    f = monotone("d", [Indexed([1, 2], [1.0, 0.5], "L", se=[0.0, 0.0])], "decreasing")
    assert f.ok is None
    f = monotone("d", [Indexed([1, 2], [1.0, 0.5], "L", se=[float("nan"), 0.1])], "decreasing")
    assert f.ok is None


# ----------------------------------------------------------------------------------- flat
def test_flat_from_an_index_exact_and_estimated():
    risks = Indexed([1, 2, 3, 4], [R(9), R(5), R(4), R(4)], "H")
    assert flat("f", risks, R(4), 0, start=3).ok is True
    f = flat("f", risks, R(4), 0, start=2)
    assert f.ok is False and f.counterexample["H"] == 2
    est = Indexed([3, 4], [4.001, 3.999], "H", se=[0.0001, 0.0001])
    assert flat("f", est, 4.0, 1e-3).ok is True    # 4e-4 + 3e-4 inside 4e-3
    assert flat("f", est, 4.0, 1e-5).ok is False   # 1e-3 - 3e-4 beyond 4e-5
    assert flat("f", est, 4.0, 2.5e-4).ok is None  # the interval straddles the band
    assert flat("f", Indexed([1], [float("nan")], "H"), 4.0, 0.1).ok is None
    assert flat("f", risks, R(4), 0, start=9).ok is None  # nothing compared is no pass


# ------------------------------------------------------------------------- linear growth
def test_least_squares_slope_with_its_interval():
    x = np.arange(10.0)
    slope, icpt, err = least_squares(x, 3 * x + 1)
    assert slope == pytest.approx(3) and icpt == pytest.approx(1) and err == pytest.approx(0)
    rng = np.random.default_rng(0)
    y = 2 * x + rng.normal(0, 0.1, x.size)
    curve = Indexed(x.tolist(), y.tolist(), "s", se=[0.1] * x.size)
    assert linear_slope("lin", curve, 2.0).ok is True
    f = linear_slope("lin", curve, 2.5)  # a wrong derived slope is refuted
    assert f.ok is False and f.counterexample["derived_slope"] == 2.5
    assert linear_slope("lin", Indexed([0, 1], [0.0, 2.0], "s"), 2.0).ok is None  # no residual dof
    assert linear_slope("lin", Indexed([0, 1, 2], [0.0, float("inf"), 4.0], "s"), 2.0).ok is None


def test_exact_linear_growth_of_a_derived_gap():
    C = sympy.Symbol("C", positive=True)
    s, k = sympy.symbols("s kappa")  # as the formula parser makes them
    derived = s / (C + 1)  # a toy gap, linear in s with a positive slope for C >= 1
    sizes = (1, 2, 10, 10 ** 6)
    ok, info = exact_linear(sympy.sympify("kappa*s"), derived, s, k, {s: 1}, C, sizes)
    assert ok is True and info["fitted_slope"] == "1/(C + 1)"
    for wrong in ("kappa*s**2", "kappa*s + 1", "-kappa*s"):
        assert exact_linear(sympy.sympify(wrong), derived, s, k, {s: 1}, C, sizes)[0] is False
    # a shrinking derived gap is no growth, whatever the formula
    assert exact_linear(sympy.sympify("kappa*s"), -derived, s, k, {s: 1}, C, sizes)[0] is False
    fits, _, slope = fit_slope(sympy.sympify("kappa*s"), derived, k, {s: 1})
    assert fits and sympy.simplify(slope - 1 / (C + 1)) == 0


def test_positive_at_and_all_of():
    C = sympy.Symbol("C")
    assert positive_at(C / (C + 1), C, (1, 2)) is True
    assert positive_at(C - 2, C, (1, 3)) is False
    assert positive_at(1 / (C - 1), C, (1, 2)) is None  # zoo at C = 1 decides nothing
    assert all_of([True, None]) is None and all_of([None, False]) is False
    assert all_of([True, True]) is True
