"""Poly.evaluate on matrix-valued polynomials: sympy, numpy and torch letters, with the
identity-valued term of E[W M W] (Isserlis: n Sigma M^T Sigma + n^2 Sigma M Sigma + n tr(M Sigma)
Sigma at Sigma = I)."""
import numpy as np
import pytest
import sympy
import torch

from moments.tensor import gaussian_matrix, matrix
from moments.wick import expectation


def _ewmw():
    X, M = gaussian_matrix("X", "d", "n"), matrix("M", "d", "d")
    return expectation(X @ X.T @ M @ X @ X.T)


def test_matrix_valued_poly_evaluates_on_sympy_numpy_and_torch():
    p, Mv = _ewmw(), sympy.Matrix([[1, 2], [3, 4]])
    exact = p.evaluate({"M": Mv}, {"n": 3, "d": 2}, exact=True)
    assert exact == 3 * Mv.T + 9 * Mv + 3 * Mv.trace() * sympy.eye(2)
    floats = p.evaluate({"M": np.array(Mv.tolist(), dtype=float)}, {"n": 3, "d": 2})
    assert np.allclose(floats, np.array(exact.tolist(), dtype=float))
    tensor = p.evaluate({"M": torch.tensor(np.array(Mv.tolist(), dtype=float))}, {"n": 3, "d": 2})
    assert isinstance(tensor, torch.Tensor) and torch.allclose(tensor, torch.tensor(floats))


def test_an_identity_term_without_its_size_is_one_clear_error():
    with pytest.raises(ValueError, match="give the size d"):
        _ewmw().evaluate({"M": sympy.Matrix([[1, 2], [3, 4]])}, {"n": 3}, exact=True)
