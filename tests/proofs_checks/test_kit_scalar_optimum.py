"""A researcher's own claim of the looped-model optimum family, written with the kit in the lines
below ``--- the claim ---``: for n >= 4d the optimal loss of the looped linear transformer,
f(a*) = min_a E tr (I - a W/n)^{2L}, is at most d(d+1)/n, and 0 < a* < 1.

Derived by hand, not by the engine: at L = 1, f(a) = d - 2ad + a^2 d(n+d+1)/n (E tr W^2 =
nd(n+d+1)), so a* = n/(n+d+1) and f(a*) = d(d+1)/(n+d+1) < d(d+1)/n; more loops only lower it
at these sizes.  d^2/n in its place fails at L = 1 once n > d^2 + d."""
import math

import mpmath
import pytest
import sympy

from proofs_checks.kit import looped_icl as li
from proofs_checks.kit.linear_icl import LinearICLSetting
from proofs_checks.kit.scalar_optimum import (ScalarOptimum, finite_real, le_with_margin,
                                              looped_loss, optimum_exact, optimum_values,
                                              scalar_optimum, smallest_n)
from verify.claim import Claim
from verify.formulas import FormulaSymbol, NamedFormula
from verify.runner import check_claim

# --- the claim ---
n, d, L = FormulaSymbol("n"), FormulaSymbol("d"), FormulaSymbol("L")
FORMULAS = (
    NamedFormula("hypothesis", "n >= 4*d", (n, d, L), equation="(H)", weaker="narrower"),
    NamedFormula("loss_bound", "d*(d + 1)/n", (n, d, L), equation="(1)", weaker="larger"),
)
SETTING = LinearICLSetting("sigma_inverse", {b: {"n": 20, "d": 3, "L": 2}
                                             for b in ("quick", "default", "paper")})
SPEC = ScalarOptimum((("loss_bound", lambda v: (v.f, v("loss_bound"))),
                      ("a_star_below_1", lambda v: (v.a, 1)),
                      ("a_star_positive", lambda v: (0, v.a))),
                     SETTING, structure=False, d1_optimum=None, exact={"loss_bound": "f"})
TOY = Claim(id="mydraft2026.thm2", title="The looped model's optimal loss is below "
            "d(d+1)/n", paper="mydraft2026",
            statement=r"If $n\ge4d$ then $\min_a\mathbb E\operatorname{tr}(I-aW/n)^{2L}\le "
                      r"d(d+1)/n$ and $0<a^*<1$.",
            assumptions=("x ~ N(0, I), the looped model of gatmiry2024 Sec. 3.5",),
            formulas=FORMULAS, setting=SETTING,
            checks={"symbolic": scalar_optimum(SPEC)["symbolic"]}, exact=optimum_values(SPEC))
# --- end of the claim ---


def _verdict(**overrides):
    return check_claim(TOY, tiers=("symbolic",), overrides=overrides, budget="quick", seed=0)


def test_the_toy_claim_is_verified_with_the_hessian_positive():
    v = _verdict()
    assert v.verdict == "verified", v.reason
    ev = v.tiers["symbolic"].evidence
    assert ev["bounds_at_threshold_sizes"]["ok"] is True
    assert ev["hessian_at_a_star_I"]["ok"] is True
    rows = ev["bounds_at_threshold_sizes"]["rows"]
    assert {(r["d"], r["L"], r["n"]) for r in rows} >= {(1, 1, 4), (3, 2, 12), (1000, 3, 4000)}
    one = next(r for r in rows if (r["d"], r["L"], r["n"]) == (2, 1, 8))
    assert math.isclose(one["optimal_loss"], 6 / 11, rel_tol=1e-12)  # d(d+1)/(n+d+1)


def test_a_wrong_loss_bound_is_refuted_with_the_sizes_where_it_fails():
    v = _verdict(loss_bound="d**2/n")
    assert v.verdict == "refuted", v.reason
    ce = v.as_dict()["counterexample"]
    assert ce["bound"] == "loss_bound" and ce["n"] > ce["d"] ** 2 + ce["d"], ce


def test_a_hypothesis_that_admits_nothing_is_not_a_pass():
    v = _verdict(hypothesis="n <= 0")
    assert v.verdict != "verified"
    assert v.tiers["symbolic"].evidence["bounds_at_threshold_sizes"]["ok"] is None


@pytest.mark.parametrize("bound", ["sqrt(1 - n)", "d*(d + 1)/n + 1/(n - 4*d)"])
def test_a_bound_that_is_not_a_finite_real_number_decides_nothing(bound):
    """sqrt(1 - n) is complex at every size checked (sqrt(-n), complex for every n, is not read:
    formulas are real); the second is infinite at the threshold n = 4d (and above
    the true bound everywhere else): neither a pass nor a counterexample."""
    v = _verdict(loss_bound=bound)
    ev = v.tiers["symbolic"].evidence["bounds_at_threshold_sizes"]
    assert ev["ok"] is None and v.verdict not in ("verified", "refuted"), v.reason


def test_comparisons_of_non_finite_constants_are_undecided():
    assert le_with_margin(sympy.nan, 1) is None and le_with_margin(0, sympy.zoo) is None
    assert le_with_margin(sympy.oo, sympy.oo) is None and le_with_margin(sympy.I, 2) is None
    assert not finite_real(sympy.sqrt(-2)) and finite_real(sympy.Rational(1, 3))
    assert le_with_margin(1, sympy.Rational(3, 2)) is True
    assert le_with_margin(sympy.Rational(3, 2), 1) is False


def test_the_threshold_and_the_value_at_the_optimum():
    F = {f.name: f.parse() for f in FORMULAS}
    assert smallest_n(F, 3, 2) == 12
    gap, loss = optimum_exact(looped_loss, 10, 2, 1)  # a* = 10/13, f(a*) = 6/13
    with mpmath.workdps(200):
        assert abs(gap - mpmath.mpf(3) / 13) < 1e-150 and abs(loss - mpmath.mpf(6) / 13) < 1e-150
    assert TOY.exact.values({"n": 10, "d": 2, "L": 7}) is None  # past OPT_EXACT_MAX_L
    assert li.certified_minimiser(looped_loss(10, 2, 1)) - sympy.Rational(10, 13) < 1e-120


def test_beating_the_optimum_is_decided_exactly_not_by_a_float_tolerance():
    """A near-singular Sigma* made the float64 loss of a converged run 8e-9 (relative) below
    f(a* Sigma*^{-1}): rounding, and once a refutation.  The exact loss decides: the optimum
    itself does not beat f(a*), a point that does is found against a family raised by 1."""
    import dataclasses

    import numpy as np

    from proofs_checks.kit.linear_icl import make_instance
    from proofs_checks.kit.scalar_optimum import _beats_optimum, minimiser
    from verify.sigma import parse_sigma

    inst = make_instance(20, 2, parse_sigma("[[1,0.999999],[0.999999,1]]"),
                         np.random.default_rng(0))
    spec, L = SPEC, 2
    poly = li.derived_loss(L, with_u=True)
    a = float(minimiser(spec.loss, inst.n, inst.d, L))
    A = a * np.linalg.inv(inst.sigma)
    u = np.zeros(2)
    assert not _beats_optimum(spec, poly, A, u, inst, L)
    raised = dataclasses.replace(spec, loss=lambda n, d, L: looped_loss(n, d, L) + 1)
    assert _beats_optimum(raised, poly, A, u, inst, L)
