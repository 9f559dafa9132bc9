"""compile_formula: a formula as a float64 numpy function at concrete sizes."""
import numpy as np

from verify.formulas import FormulaSymbol, NamedFormula, compile_formula


def _gradient_formula():
    n, d = FormulaSymbol("n"), FormulaSymbol("d")
    X = FormulaSymbol("X", "matrix", ("d", "n"))
    w = FormulaSymbol("w", "matrix", ("d", "1"))
    return NamedFormula("g", "1/n*X*X.T*w", (n, d, X, w), shape=("d", "1")).parse()


def test_a_size_of_one_leaves_no_unit_coefficient_for_numpy():
    """At n = 1, 1/n*X*X.T*w becomes MatMul(1, X, ...), once printed as (1).dot(X)."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 5):
        f = compile_formula(_gradient_formula(), {"n": n, "d": 3})
        X, w = rng.standard_normal((3, n)), rng.standard_normal((3, 1))
        np.testing.assert_allclose(f(X=X, w=w), X @ X.T @ w / n, rtol=1e-14)


def test_a_scalar_formula_compiles_at_sizes():
    n = FormulaSymbol("n")
    f = compile_formula(NamedFormula("c", "(n+1)/n", (n,)).parse(), {"n": 4})
    assert float(f()) == 1.25
