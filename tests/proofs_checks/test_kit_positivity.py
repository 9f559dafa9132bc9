"""kit.positivity: a certificate of expr >= 0 on the positive orthant (integer symbols >= 1) is
never given to an expression that is negative somewhere there, and is given to the shapes a
proof chain builds (polynomials with Max of them)."""
from fractions import Fraction

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs_checks.kit.positivity import at_least_one, nonnegative

x, y = sympy.symbols("x y", positive=True)
k = sympy.Symbol("k", positive=True, integer=True)


def test_polynomials_with_nonnegative_coefficients_are_certified_and_others_are_not():
    assert nonnegative(x ** 2 + 3 * x * y + 1)
    assert not nonnegative(x ** 2 - x * y + y ** 2)  # true, but beyond the certificate
    assert not nonnegative(x - 1)  # false at x = 1/2
    assert nonnegative(4 * k - 1)  # k >= 1: 4 (1 + k') - 1 = 3 + 4 k'
    assert not nonnegative(4 * k - 5)  # false at k = 1
    assert not nonnegative(sympy.sqrt(x) - 1)  # not a polynomial: no certificate
    assert not nonnegative(x - sympy.Symbol("z"))  # a symbol of unknown sign: no certificate


def test_a_ratio_with_max_is_certified_branch_by_branch():
    # the shape of yang2024 Lemma 10's corrected L^2 against its proof's chain: every branch of
    # the chain's Max is met by some branch of the printed bound's Max
    printed = (y + 4 * k) * sympy.Max(1, 4 * x ** 2)
    chain = sympy.Max(y + k, 4 * x ** 2 * (y + 4 * k))
    assert at_least_one(printed / chain)
    assert not at_least_one(chain / printed)  # false at small x: (y + k) / (y + 4k) < 1
    assert at_least_one((y + sympy.Max(x, 2)) / (y + sympy.Max(x, 1)))
    assert not at_least_one((y + sympy.Max(x, 1)) / (y + sympy.Max(x, 2)))  # false at x = 1


def test_a_constant_is_decided_as_a_number():
    assert nonnegative(sympy.Integer(0)) and nonnegative(sympy.Rational(1, 3))
    assert not nonnegative(sympy.Integer(-1)) and not nonnegative(sympy.sqrt(2) - 2)


_coeff = st.integers(-3, 3)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_coeff, st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)),
                min_size=1, max_size=4),
       st.lists(st.tuples(st.fractions(Fraction(1, 8), Fraction(8)),
                          st.fractions(Fraction(1, 8), Fraction(8)), st.integers(1, 4)),
                min_size=1, max_size=6),
       st.sampled_from(["none", "plus", "minus", "over"]))
def test_a_certificate_is_never_given_where_the_expression_is_negative(terms, points, with_max):
    """Random polynomials in x, y and an integer k (with a Max added, subtracted, or in a
    denominator): wherever one is certified, it is >= 0 at every positive point tried (k >= 1),
    exactly."""
    e = sum(c * x ** a * y ** b * k ** j for c, a, b, j in terms)
    if with_max == "plus":
        e = e + sympy.Max(x - y, k * y - 2 * x)
    elif with_max == "minus":
        e = e - sympy.Max(x, y) / 2
    elif with_max == "over":
        e = e / sympy.Max(1, x * k)
    if nonnegative(e):
        for px, py, pk in points:
            at = {x: sympy.Rational(px), y: sympy.Rational(py), k: pk}
            assert e.subs(at) >= 0, (e, at)
