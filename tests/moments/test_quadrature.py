"""Gauss rules of a Wishart matrix's spectral measure from its exact moments."""
from fractions import Fraction

import mpmath
import pytest
import sympy
from hypothesis import given, settings, strategies as st

from moments.quadrature import gauss_rule, recurrence, trace_moments, wishart_rule


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 12), d=st.integers(1, 4), K=st.integers(1, 5))
def test_a_k_point_rule_integrates_every_power_up_to_2k_minus_1(n, d, K):
    rule = wishart_rule(n, d, K)
    m = trace_moments(n, d, 2 * K)
    assert all(w > 0 for w in rule.weights) and all(x > 0 for x in rule.nodes)
    with mpmath.workdps(50):
        for k in range(2 * K):
            got = mpmath.fsum(w * x ** k for w, x in zip(rule.weights, rule.nodes))
            assert abs(got / (mpmath.mpf(m[k].numerator) / m[k].denominator) - 1) < \
                mpmath.mpf(10) ** -35
        # and not the next power: the rule is a rule of K points, not the measure
        top = mpmath.fsum(w * x ** (2 * K) for w, x in zip(rule.weights, rule.nodes))
        assert top < mpmath.mpf(m[2 * K].numerator) / m[2 * K].denominator


def test_at_d_1_the_nodes_are_twice_the_generalised_laguerre_roots():
    """d = 1: W = chi^2_n, density w^(n/2 - 1) e^(-w/2), so the Gauss nodes are 2 x the roots of
    the Laguerre polynomial L_K^(n/2 - 1)."""
    n, K = 7, 4
    x = sympy.Symbol("x")
    laguerre = sympy.Poly(sympy.assoc_laguerre(K, sympy.Rational(n, 2) - 1, x), x)
    roots = sorted(float(2 * r) for r in laguerre.nroots(n=30))
    assert [float(v) for v in wishart_rule(n, 1, K).nodes] == pytest.approx(roots, rel=1e-14)


def test_the_moments_are_e_tr_w_k():
    """E tr W = n d, E tr W^2 = n d (n + d + 1) (W = X X^T, X d x n)."""
    m = trace_moments(5, 3, 2)
    assert m == (Fraction(3), Fraction(15), Fraction(135))


def test_moments_of_too_few_points_are_refused():
    with pytest.raises(ValueError, match="needs the moments"):
        recurrence([Fraction(1), Fraction(1)], 2)
    with pytest.raises(ValueError, match="not those of a measure"):
        gauss_rule([Fraction(1), Fraction(1), Fraction(1), Fraction(1)], 2)  # a point mass at 1
