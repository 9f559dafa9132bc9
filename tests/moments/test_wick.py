"""The Wick engine against closed forms derived here, Monte Carlo, and finite differences."""
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from moments.montecarlo import estimate, z_critical
from moments.strategies import matrices, mean_vectors, spd_matrices
from moments.tensor import gaussian_matrix, gaussian_vector, identity, matrix, vector
from moments.wick import canonical, expectation

n = sympy.Symbol("n", positive=True, integer=True)
d = sympy.Symbol("d", positive=True, integer=True)


def _wishart(cov=True):
    S = matrix("Sigma", symmetric=True)
    X = gaussian_matrix("X", "d", "n", row_cov=S if cov else None)
    return S, X, X @ X.T


def test_second_moment_of_wishart_matches_textbook_formula():
    # E[W^2] = n(n+1) Sigma^2 + n tr(Sigma) Sigma, derived independently (Muirhead, Thm 3.2.?)
    S, X, W = _wishart()
    p = expectation(W @ W)
    rng = np.random.default_rng(1)
    B = rng.standard_normal((3, 3))
    Sig = B @ B.T + np.eye(3)
    got = p.evaluate({"Sigma": Sig}, {"n": 7})
    want = 7 * 8 * Sig @ Sig + 7 * np.trace(Sig) * Sig
    assert np.allclose(got, want)


def test_mixed_moment_keeps_transposes():
    # E[W A W] = n^2 S A S + n S A^T S + n tr(A S) S for a non-symmetric A
    S, X, W = _wishart()
    A = matrix("A")
    p = expectation(W @ A @ W)
    rng = np.random.default_rng(2)
    B = rng.standard_normal((4, 4))
    Sig = B @ B.T + np.eye(4)
    Am = rng.standard_normal((4, 4))
    got = p.evaluate({"Sigma": Sig, "A": Am}, {"n": 5})
    want = 25 * Sig @ Am @ Sig + 5 * Sig @ Am.T @ Sig + 5 * np.trace(Am @ Sig) * Sig
    assert np.allclose(got, want)
    assert "Sigma*A'*Sigma" in str(p)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_trace_moments_are_symmetric_in_n_and_d_at_identity(k):
    _, X, W = _wishart(cov=False)
    M = W
    for _ in range(k - 1):
        M = M @ W
    p = expectation(M.trace()).simplify()
    (key, coeff), = p.terms.items()
    assert key == ((), ())
    assert sympy.expand(coeff - coeff.subs({n: d, d: n}, simultaneous=True)) == 0


def test_trace_of_cubed_wishart_at_identity():
    # E tr W^3 = n d (n^2 + d^2 + 3 n d + 3 n + 3 d + 4)
    _, X, W = _wishart(cov=False)
    (_, coeff), = expectation((W @ W @ W).trace()).terms.items()
    assert sympy.expand(coeff - n * d * (n**2 + d**2 + 3 * n * d + 3 * n + 3 * d + 4)) == 0


def test_gaussian_fourth_moment_with_mean():
    # x ~ N(mu, I): E[(x^T A x)] = tr A + mu^T A mu; Var = tr(A A) + tr(A A^T) + mu^T(A+A^T)^2 mu
    A = matrix("A")
    x = gaussian_vector("x", "d", mean=vector("mu"))
    m1 = expectation(x.T @ A @ x)
    m2 = expectation((x.T @ A @ x) * (x.T @ A @ x))
    rng = np.random.default_rng(3)
    Am, mu = rng.standard_normal((3, 3)), rng.standard_normal((3, 1))
    e1 = m1.evaluate({"A": Am, "mu": mu}, {})
    e2 = m2.evaluate({"A": Am, "mu": mu}, {})
    As = Am + Am.T
    var = np.trace(Am @ Am) + np.trace(Am @ Am.T) + (mu.T @ As @ As @ mu).item()
    assert np.isclose(e1, np.trace(Am) + (mu.T @ Am @ mu).item())
    assert np.isclose(e2 - e1**2, var)


def test_odd_moments_vanish():
    x = gaussian_vector("x", "d")
    A = matrix("A")
    assert len(expectation(x.T @ A @ x * (vector("u").T @ x))) == 0


def test_canonical_form_identifies_trace_identities():
    A, B, C = matrix("A"), matrix("B"), matrix("C")
    assert canonical((A @ B @ C).trace()).terms == canonical((C @ A @ B).trace()).terms
    assert canonical((A @ B).trace()).terms == canonical((B.T @ A.T).trace()).terms
    u, v = vector("u"), vector("v")
    assert canonical(u.T @ A @ v).terms == canonical(v.T @ A.T @ u).terms
    assert canonical((A @ B).trace()).terms != canonical((A @ B.T).trace()).terms


def test_gradient_matches_finite_differences():
    S, X, W = _wishart()
    A, u, v = matrix("A"), vector("u"), vector("v")
    f = expectation((W @ A @ W @ A.T).trace()) + expectation(u.T @ A @ W @ v)
    g = f.diff("A")
    rng = np.random.default_rng(4)
    B = rng.standard_normal((3, 3))
    env = {"Sigma": B @ B.T + np.eye(3), "A": rng.standard_normal((3, 3)),
           "u": rng.standard_normal((3, 1)), "v": rng.standard_normal((3, 1))}
    eps = 1e-6
    num = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            E = np.zeros((3, 3))
            E[i, j] = eps
            num[i, j] = (f.evaluate({**env, "A": env["A"] + E}, {"n": 4})
                         - f.evaluate({**env, "A": env["A"] - E}, {"n": 4})) / (2 * eps)
    assert np.allclose(num, g.evaluate(env, {"n": 4}), atol=1e-5)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(Sig=spd_matrices(max_d=3), data=st.data())
def test_wishart_mixed_moment_against_monte_carlo(Sig, data):
    """E tr(W A W B) for random SPD Sigma, judged by a Bonferroni confidence interval."""
    dd = Sig.shape[0]
    Am = data.draw(matrices(dd))
    Bm = data.draw(matrices(dd))
    nn = data.draw(st.integers(1, 5))
    S, X, W = _wishart()
    A, B = matrix("A"), matrix("B")
    exact = expectation((W @ A @ W @ B).trace()).evaluate({"Sigma": Sig, "A": Am, "B": Bm},
                                                         {"n": nn})
    rng = np.random.default_rng(5)
    L = np.linalg.cholesky(Sig)
    Xs = L @ rng.standard_normal((40_000, dd, nn))
    Ws = Xs @ Xs.transpose(0, 2, 1)
    samples = np.einsum("bij,jk,bkl,li->b", Ws, Am, Ws, Bm)
    est = estimate(samples)
    assert abs(est.z_score(exact)) <= z_critical(0.999, 6)


@settings(max_examples=5, deadline=None, derandomize=True)
@given(data=st.data())
def test_quadratic_forms_with_mean_against_monte_carlo(data):
    dd = data.draw(st.integers(1, 3))
    Gam = data.draw(spd_matrices(d=dd))
    mu = data.draw(mean_vectors(dd))
    Am = data.draw(matrices(dd))
    G = matrix("Gamma", symmetric=True)
    w = gaussian_vector("w", "d", mean=vector("mu"), cov=G)
    A = matrix("A")
    exact = expectation((w.T @ A @ w) * (w.T @ w)).evaluate({"Gamma": Gam, "mu": mu, "A": Am}, {})
    rng = np.random.default_rng(6)
    ws = mu.ravel() + rng.standard_normal((100_000, dd)) @ np.linalg.cholesky(Gam).T
    samples = np.einsum("bi,ij,bj->b", ws, Am, ws) * np.einsum("bi,bi->b", ws, ws)
    assert estimate(samples).agrees(exact, 0.999, 5)


def test_identity_covariance_contracts_to_dimension():
    x = gaussian_vector("x", "d")
    (key, coeff), = expectation(x.T @ x).terms.items()
    assert coeff == d and key == ((), ())
    (key, coeff), = canonical(identity("d").trace()).terms.items()
    assert coeff == d


def test_zero_scalars_and_zero_products_leave_no_terms():
    from moments.tensor import scalar

    assert scalar(0).is_zero
    A = matrix("A")
    assert (A * 0).is_zero and (A @ A.scale(0)).is_zero
    assert len((scalar(sympy.Symbol("a")) * 0).terms) == 0
