"""The memoised Isserlis engine against full pairing enumeration and Monte Carlo."""
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from moments.isserlis import states_visited
from moments.montecarlo import estimate, sample_gaussian, z_critical
from moments.strategies import matrices, mean_vectors, spd_matrices
from moments.tensor import gaussian_matrix, gaussian_vector, identity, matrix, scalar, vector
from moments.wick import count_pairings, expectation, expectation_enumerated

S = matrix("Sigma", symmetric=True)
G = matrix("Gamma", symmetric=True)
A, B, C = matrix("A"), matrix("B"), matrix("C")
u, v, mu = vector("u"), vector("v"), vector("mu")
X = gaussian_matrix("X", "d", "n", row_cov=S)
Xi = gaussian_matrix("Xi", "d", "n")  # identity covariance
W = X @ X.T
w = gaussian_vector("w", "d", mean=mu, cov=G)
z = gaussian_vector("z", "d", mean=mu)  # N(mu, I)
xq = gaussian_vector("x_q", "d", cov=S)
a = sympy.Symbol("a")


def same(p, q) -> bool:
    return set(p.terms) == set(q.terms) and all(
        sympy.expand(p.terms[k] - q.terms[k]) == 0 for k in p.terms)


CASES = {
    "W A W": W @ A @ W,
    "W A W B W": W @ A @ W @ B @ W,
    "tr(WA) tr(WB)": (W @ A).trace() * (W @ B).trace(),
    "B0 W B1 W^T B2": A @ W @ B @ W.T @ C,
    "X A^T X^T with trace factor": (X @ X.T @ A.T @ X @ X.T) * (W @ B).trace(),
    "X^T A X (n x n)": X.T @ A @ X,
    "identity covariance": (Xi @ Xi.T @ A @ Xi @ Xi.T @ B).trace(),
    "vector valued": X @ X.T @ A @ w,
    "row vector valued": w.T @ X @ X.T @ A,
    "(w^T X X^T Gamma x_q)^2": (w.T @ W @ G @ xq) * (w.T @ W @ G @ xq),
    "mean, identity cov": (z.T @ A @ z) * (z.T @ B @ z) * (u.T @ z),
    "odd, zero mean": (xq.T @ A @ xq) * (u.T @ xq),
    "three letters": (w.T @ X @ X.T @ xq) * (xq.T @ A @ w) + scalar(a) * (w.T @ w),
    "outer products": w @ w.T @ A @ X @ X.T,
    "trace of identity": (X @ X.T @ identity("d")).trace() * identity("d").trace(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_memoised_engine_equals_enumeration(name):
    m = CASES[name]
    assert same(expectation(m), expectation_enumerated(m))


def _deep_lsa_loss(L):
    from models.lsa import lsa_forward, readout
    from moments.blocks import BlockMat
    from moments.tensor import zeros
    from proofs_checks.kit.linear_icl import symbolic_prompt

    n = sympy.Symbol("n", positive=True, integer=True)
    sp = symbolic_prompt("identity")
    layers = []
    for l in range(L):
        P = BlockMat([[zeros("d", "d"), zeros("d", "1")], [zeros("1", "d"), scalar(1)]])
        Q = BlockMat([[matrix(f"A{l}", symmetric=True), zeros("d", "1")],
                      [zeros("1", "d"), zeros("1", "1")]])
        layers.append((P, Q))
    err = readout(lsa_forward(sp.Z, layers, sp.mask, n, step=-1)) + sp.target
    return err * err


def test_two_layer_lsa_loss_equals_enumeration():
    m = _deep_lsa_loss(2)
    assert same(expectation(m), expectation_enumerated(m))


def test_memo_visits_fewer_states_than_pairings():
    M = W @ A
    m = (M @ M @ M @ M @ M @ M).trace()  # tr (W A)^6: 11!! = 10395 pairings
    assert count_pairings(m) == 10395 and states_visited(m) * 40 < count_pairings(m)


_BLOCKS = {"W": W, "WT": X @ X.T, "A": A, "At": A.T, "B": B, "S": S, "ww": w @ w.T,
           "zz": z @ z.T, "G": G}


@st.composite
def random_expressions(draw):
    """Products of d x d blocks, closed by a trace, a bilinear form or left open; at most six
    random occurrences so that enumeration stays cheap."""
    names = draw(st.lists(st.sampled_from(sorted(_BLOCKS)), min_size=1, max_size=4))
    randoms = sum(2 for nm in names if nm in ("W", "WT", "ww", "zz"))
    if randoms > 6:
        names = [nm for nm in names if nm not in ("W", "WT")] or ["A"]
    m = _BLOCKS[names[0]]
    for nm in names[1:]:
        m = m @ _BLOCKS[nm]
    close = draw(st.sampled_from(["trace", "bilinear", "open", "vector"]))
    if close == "trace":
        return m.trace()
    if close == "bilinear":
        return u.T @ m @ v
    if close == "vector":
        return m @ w
    return m


@settings(max_examples=25, deadline=None, derandomize=True)
@given(random_expressions())
def test_random_words_equal_enumeration(m):
    assert same(expectation(m), expectation_enumerated(m))


@settings(max_examples=5, deadline=None, derandomize=True)
@given(data=st.data())
def test_mean_and_data_matrix_against_monte_carlo(data):
    """E[(w^T X X^T Gamma x_q)^2 + u^T X X^T w] with w ~ N(mu, Gamma), X ~ N(0, Sigma) columns."""
    dd = data.draw(st.integers(1, 3))
    nn = data.draw(st.integers(1, 4))
    Sig = data.draw(spd_matrices(d=dd, max_entry=1))
    Gam = data.draw(spd_matrices(d=dd, max_entry=1))
    m_vec = data.draw(mean_vectors(dd, max_entry=1))
    u_vec = data.draw(mean_vectors(dd, max_entry=1))
    expr = (w.T @ W @ G @ xq) * (w.T @ W @ G @ xq) + u.T @ W @ w
    exact = expectation(expr).evaluate({"Sigma": Sig, "Gamma": Gam, "mu": m_vec, "u": u_vec},
                                       {"n": nn})
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    N = 100_000
    ws = sample_gaussian(m_vec, Gam, dd, N, rng)
    qs = sample_gaussian(None, Sig, dd, N, rng)
    Xs = np.linalg.cholesky(Sig) @ rng.standard_normal((N, dd, nn))
    Ws = Xs @ Xs.transpose(0, 2, 1)
    f = np.einsum("bi,bij,jk,bk->b", ws, Ws, Gam, qs)
    samples = f**2 + np.einsum("i,bij,bj->b", u_vec.ravel(), Ws, ws)
    assert abs(estimate(samples).z_score(float(exact))) <= z_critical(0.999, 5)


@settings(max_examples=4, deadline=None, derandomize=True)
@given(data=st.data())
def test_nonsymmetric_words_against_monte_carlo(data):
    """E tr(W A W^T B) x (u^T W v) with non-symmetric A, B: transposes are kept."""
    dd = data.draw(st.integers(1, 3))
    nn = data.draw(st.integers(1, 3))
    Sig = data.draw(spd_matrices(d=dd, max_entry=1))
    Am, Bm = data.draw(matrices(dd)), data.draw(matrices(dd))
    uv, vv = data.draw(mean_vectors(dd)), data.draw(mean_vectors(dd))
    expr = (W @ A @ W.T @ B).trace() * (u.T @ W @ v)
    exact = expectation(expr).evaluate({"Sigma": Sig, "A": Am, "B": Bm, "u": uv, "v": vv},
                                       {"n": nn})
    rng = np.random.default_rng(11)
    Xs = np.linalg.cholesky(Sig) @ rng.standard_normal((100_000, dd, nn))
    Ws = Xs @ Xs.transpose(0, 2, 1)
    samples = (np.einsum("bij,jk,blk,li->b", Ws, Am, Ws, Bm)
               * np.einsum("i,bij,j->b", uv.ravel(), Ws, vv.ravel()))
    assert abs(estimate(samples).z_score(float(exact))) <= z_critical(0.999, 4)
