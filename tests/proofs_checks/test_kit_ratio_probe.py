"""The kit's ratio probe on a toy bound outside any paper, the AM-GM inequality: the printed
bound (x + y)/2 over the proof's sqrt(x y) is at least 1 for every x, y > 0.  A deliberately
wrong constant ((x + y)/3) is refuted at a rational point confirmed in 60 digits; a constant
ratio is decided exactly; the probe never leaves the claim's hypotheses."""
import numpy as np
import pytest
import sympy

from proofs_checks.kit.ratio_probe import (proof_margin, ratio_at_least_one, smallest_ratio,
                                           worst_margin)

x, y = sympy.symbols("x y", positive=True)
PROOF = sympy.sqrt(x * y)


def _rng():
    return np.random.default_rng(0)


def test_am_gm_holds_at_every_probe_and_its_margin_is_at_most_one():
    ok, ce = ratio_at_least_one((x + y) / 2 / PROOF, _rng())
    assert ok and ce is None
    margin = proof_margin((x + y) / 2 / PROOF, _rng())
    assert margin.measure == "the proof's bound over the printed bound"
    assert 0.5 < margin.used <= 1


def test_a_wrong_constant_is_refuted_at_a_confirmed_rational_point():
    ok, ce = ratio_at_least_one((x + y) / 3 / PROOF, _rng())
    assert not ok
    at = {k: sympy.Rational(v) for k, v in ce["at"].items()}
    assert ((at["x"] + at["y"]) / 3 / sympy.sqrt(at["x"] * at["y"])) < 1  # exact, independently
    assert ce["ratio_float"] < 1


def test_a_constant_ratio_is_decided_exactly():
    assert ratio_at_least_one(sympy.Integer(1), _rng()) == (True, None)
    ok, ce = ratio_at_least_one(sympy.Rational(2, 3), _rng())
    assert not ok and ce == {"ratio": "2/3"}
    assert proof_margin(sympy.Rational(2, 3), _rng()).used == pytest.approx(1.5)
    assert ratio_at_least_one(sympy.I + 2, _rng())[1]["not_a_real_number"] is True


def test_the_probe_stays_inside_the_hypotheses():
    """(x + y)/3 >= sqrt(x y) holds where t = y/x >= ((3 + sqrt 5)/2)^2 = 6.85: with the
    hypothesis y >= 7 x the wrong constant is true, and the smallest ratio is found inside it."""
    def admits(p):
        return p["y"] >= 7 * p["x"]
    assert ratio_at_least_one((x + y) / 3 / PROOF, _rng(), admits)[0]
    found = smallest_ratio((x + y) / 3 / PROOF, _rng(), admits=admits)
    assert sympy.Rational(found["at"]["y"]) >= 7 * sympy.Rational(found["at"]["x"]) * (1 - 1e-9)
    assert found["ratio_float"] >= 1


def test_a_probe_whose_hypotheses_admit_nothing_compares_nothing():
    assert smallest_ratio((x + y) / 3 / PROOF, _rng(), admits=lambda p: False) == {}
    # nothing compared is no evidence: undecided, never a pass
    ok, why = ratio_at_least_one((x + y) / 3 / PROOF, _rng(), admits=lambda p: False)
    assert ok is None and "no probe point was compared" in why["why"]


def test_a_ratio_that_overflows_at_every_probe_point_is_undecided_not_a_pass():
    ok, why = ratio_at_least_one(sympy.exp(sympy.exp(x + 10 ** 3)) / (y + 1), _rng())
    assert ok is None and why["why"].startswith("no probe point")
    assert worst_margin("m", float("nan"), {}) is None
