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


def test_a_compiled_poly_sums_torch_batches_as_numpy_does_with_number_and_tensor_coefficients():
    """The torch path stacks the word values and sums the monomials in a few operations; it
    must give the numpy loop's value and gradient, with the coefficients numbers (n) or tensors
    of a batch (a scalar symbol c bound per problem)."""
    S, A = matrix("Sigma", symmetric=True), matrix("A")
    X = gaussian_matrix("X", "d", "n", row_cov=S)
    W = X @ X.T
    c = sympy.Symbol("c")
    poly = expectation((W @ A @ W @ A.T).trace() * c - 2 * (W @ A).trace() + (A @ A.T).trace() * (A @ A).trace())
    compiled = poly.compile()
    g = torch.Generator().manual_seed(3)
    As = torch.randn(4, 3, 3, generator=g, dtype=torch.float64, requires_grad=True)
    sigma = torch.eye(3, dtype=torch.float64) + 0.1
    cs = torch.rand(4, generator=g, dtype=torch.float64)
    for cval in (1.5, cs):
        value = compiled({"Sigma": sigma, "A": As}, {"n": 5, "c": cval})
        (grad,) = torch.autograd.grad(value.sum(), As)
        loop = [compiled({"Sigma": sigma.numpy(), "A": As[b].detach().numpy()},
                         {"n": 5, "c": float(cval) if isinstance(cval, float) else float(cval[b])})
                for b in range(4)]
        assert torch.allclose(value, torch.tensor(loop, dtype=torch.float64), rtol=1e-12)
        one = [torch.autograd.grad(compiled({"Sigma": sigma, "A": As[b]},
                                            {"n": 5, "c": cval if isinstance(cval, float)
                                             else cval[b]}), As)[0][b] for b in range(4)]
        assert torch.allclose(grad, torch.stack(one), rtol=1e-12)


@pytest.mark.parametrize("coefficient", ["poly", "rational"])
def test_tensor_scalars_are_expanded_into_the_monomials_with_their_gradient(coefficient):
    """A scalar symbol bound to a tensor that requires a gradient (xie2025's per-head b_y): its
    coefficients, polynomials in it, are expanded into the monomials; a coefficient that is not
    a polynomial in it (1/c) keeps the coefficients' own arithmetic.  Value and gradients agree
    with the numbers bound one problem at a time."""
    from moments.poly import CompiledPoly, size_symbol

    S, A = matrix("Sigma", symmetric=True), matrix("A")
    X = gaussian_matrix("X", "d", "n", row_cov=S)
    W = X @ X.T
    c, n = sympy.Symbol("c"), size_symbol("n")
    coeff = c ** 3 / (n + 1) - 2 * c if coefficient == "poly" else 1 / c + c
    poly = expectation((W @ A).trace() * coeff + (A @ A.T).trace() * c ** 2)
    compiled = CompiledPoly(poly)
    g = torch.Generator().manual_seed(5)
    As = torch.randn(3, 2, 2, generator=g, dtype=torch.float64, requires_grad=True)
    cs = (torch.rand(3, generator=g, dtype=torch.float64) + 0.5).requires_grad_()
    sigma = torch.eye(2, dtype=torch.float64) + 0.2
    value = compiled({"Sigma": sigma, "A": As}, {"n": 4, "c": cs})
    gA, gc = torch.autograd.grad(value.sum(), (As, cs))
    assert (len(compiled._plans) == 1) and \
        ((next(iter(compiled._plans.values())) is None) == (coefficient == "rational"))
    for b in range(3):
        cb = cs[b].detach().clone().requires_grad_()
        one = poly.evaluate({"Sigma": sigma, "A": As[b]}, {"n": 4, "c": cb})
        gAb, gcb = torch.autograd.grad(one, (As, cb))
        assert torch.allclose(value[b], one, rtol=1e-13)
        assert torch.allclose(gA[b], gAb[b], rtol=1e-12) and torch.allclose(gc[b], gcb, rtol=1e-12)
