import sympy

from moments.spectral import LAMBDA, power_sum, spectral_value
from moments.tensor import gaussian_matrix, matrix
from moments.wick import expectation


def test_spectral_value_of_second_wishart_moment():
    S = matrix("Sigma", symmetric=True)
    X = gaussian_matrix("X", "d", "n", row_cov=S)
    W = X @ X.T
    n = sympy.Symbol("n", positive=True, integer=True)
    f = spectral_value(expectation(W @ W), {"Sigma": LAMBDA})
    assert sympy.expand(f - (n * (n + 1) * LAMBDA**2 + n * power_sum(1) * LAMBDA)) == 0
