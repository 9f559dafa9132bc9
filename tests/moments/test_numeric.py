"""The three arithmetics of moments.numeric agree, and exact is exact."""
import mpmath
import numpy as np
import sympy

from moments import wishart, wishart_sympy
from moments.numeric import as_array, evaluate_expression, evaluate_poly, power_sums
from moments.tensor import gaussian_matrix, gaussian_vector, matrix, vector
from moments.wick import expectation


def test_power_sums_in_three_arithmetics():
    S = sympy.Matrix([[sympy.Rational(1, 2), 1], [1, 3]])
    exact = power_sums(S, 3, "exact")
    assert [sympy.Rational(x.numerator, x.denominator) for x in exact[1:]] == \
        [(S**j).trace() for j in range(1, 4)]
    floats = power_sums(np.array(S.tolist(), dtype=float), 3, "float")
    mp = power_sums(S, 3, "mpmath", dps=40)
    assert np.allclose([float(x) for x in exact], floats)
    assert abs(mp[3] - mpmath.mpf(exact[3].numerator) / exact[3].denominator) < mpmath.mpf(10)**-35


def test_poly_evaluation_modes_agree():
    S, A = matrix("Sigma", symmetric=True), matrix("A")
    X = gaussian_matrix("X", "d", "n", row_cov=S)
    w = gaussian_vector("w", "d", mean=vector("mu"))
    p = expectation((X @ X.T @ A @ X @ X.T).trace() * (w.T @ A @ w))
    env = {"Sigma": sympy.Matrix([[2, 1], [1, 2]]), "A": sympy.Matrix([[1, -1], [2, 0]]),
           "mu": sympy.Matrix([1, sympy.Rational(1, 3)])}
    exact = evaluate_poly(p, env, {"n": 3}, mode="exact")
    assert isinstance(exact, sympy.Rational)
    assert abs(float(evaluate_poly(p, env, {"n": 3}, mode="float")) - float(exact)) < 1e-9
    mp = evaluate_poly(p, env, {"n": 3}, mode="mpmath", dps=40)
    assert abs(mp - mpmath.mpf(exact.p) / exact.q) < mpmath.mpf(10)**-30


def test_expression_evaluation_needs_every_value():
    e = wishart_sympy.trace_moment(3)
    assert evaluate_expression(e, n=2, d=3) == wishart.moment(3, (), trace=True,
                                                              identity=True).evaluate(n=2, d=3)
    try:
        evaluate_expression(e + sympy.Symbol("q"), n=2, d=3)
    except ValueError as exc:
        assert "q" in str(exc)
    else:
        raise AssertionError("a missing symbol must be reported")
    assert as_array([1, 2], "exact").shape == (2, 1)


def test_float_evaluator_matches_exact_values():
    from moments.numeric import float_evaluator

    S = np.array([[2.0, 1.0], [1.0, 3.0]])
    poly = wishart.moment(6, (), trace=True)
    f = float_evaluator(poly)
    exact = float(poly.evaluate(S, n=5, mode="exact"))
    assert np.isclose(f(S, 5), exact, rtol=1e-12)
    batch = f(np.stack([S, np.eye(2)]), np.array([5, 3]))
    assert np.allclose(batch, [exact, float(poly.evaluate(np.eye(2), n=3))], rtol=1e-12)
    fi = float_evaluator(wishart.moment(6, (), trace=True, identity=True))
    assert np.isclose(fi(n=3, d=2), float(poly.evaluate(np.eye(2), n=3)), rtol=1e-12)
