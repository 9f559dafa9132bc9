"""models.softmax: eqs. (5)-(8) on every backend, the task law (1), the trainable modules."""
import numpy as np
import pytest
import sympy
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from models.softmax import (DeepConfig, DeepICL, SoftmaxConfig, SoftmaxICL, TaskLaw, attention_weights,
                            coefficient_matrix, full_prediction, head_matrix, predict, random_dictionary,
                            sample_tasks, sampled_loss, softmax_columns)
from moments.strategies import sizes


def _instance(K=7, d=3, m=4, N=3, H=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    D = random_dictionary(K, d, m, N, g)
    model = SoftmaxICL(SoftmaxConfig(d, K, N, H), generator=g)
    with torch.no_grad():
        model.w.normal_(generator=g)
    return D, model, g


def test_architecture_5_7_equals_prediction_8_in_torch_and_numpy():
    D, model, g = _instance()
    y = torch.randn(3, generator=g, dtype=torch.float64)
    Q, w = model.Q.detach(), model.w.detach()
    long_way = full_prediction(D.V_all, y, 3, Q, w)
    assert torch.allclose(model(D.V_all, y), long_way, atol=1e-13)
    np_way = full_prediction(D.V_all.numpy(), y.numpy(), 3, Q.numpy(), w.numpy())
    assert np.allclose(np_way, long_way.numpy(), atol=1e-13)


def test_architecture_is_exact_on_sympy_matrices():
    d, N, K, H = 2, 2, 3, 2
    V = sympy.Matrix(d, K, lambda i, j: sympy.Rational(i - j, 2 + i + j))
    Q = [sympy.Matrix(d, d, lambda i, j, h=h: sympy.Rational(i + h - j, 3)) for h in range(H)]
    w = sympy.Matrix(H, K, lambda i, j: sympy.Rational(1 + i - j, 2))
    y = sympy.Matrix([1, -2])
    long_way = full_prediction(V, y, N, Q, w)
    short = predict(y, coefficient_matrix(attention_weights(V[:, :N], V, Q), w))
    assert all(sympy.simplify(a - b) == 0 for a, b in zip(long_way, short))


def test_head_matrix_columns_are_softmax_vectors():
    D, model, _ = _instance(H=4)
    S = attention_weights(D.V, D.V_all, model.Q.detach())
    C = head_matrix(S, 5)
    assert C.shape == (3, 4)
    assert torch.allclose(C.sum(0), torch.ones(4, dtype=torch.float64))


@settings(max_examples=15, derandomize=True, deadline=None)
@given(st.lists(st.floats(-30, 30), min_size=2, max_size=6), st.lists(st.floats(-1, 1), min_size=6, max_size=6))
def test_softmax_is_a_probability_vector_and_1_lipschitz(xs, ds):
    """Columns sum to one on every backend; ||softmax(a) - softmax(b)||_1 <= ||a - b||_inf (Lemma 2
    holds with the sharp constant 1)."""
    a = np.array(xs)[:, None]
    b = a + np.array(ds[:len(xs)])[:, None]
    sa, sb = softmax_columns(a), softmax_columns(b)
    assert abs(sa.sum() - 1) < 1e-12
    assert np.allclose(softmax_columns(torch.tensor(a)).numpy(), sa)
    assert np.abs(sa - sb).sum() <= np.abs(a - b).max() + 1e-12


def test_zero_values_predict_zero_and_shapes():
    g = torch.Generator().manual_seed(1)
    D = random_dictionary(9, 4, 3, 4, g)
    model = SoftmaxICL(SoftmaxConfig(4, 9, 4, 5), generator=g)
    y = torch.randn(6, 4, generator=g, dtype=torch.float64)
    out = model(D.V_all, y)
    assert out.shape == (6, 9) and torch.count_nonzero(out) == 0
    assert torch.allclose(D.V_all.norm(dim=0), torch.ones(9, dtype=torch.float64))


def test_task_law_of_eq_1():
    g = torch.Generator().manual_seed(2)
    D = random_dictionary(8, 3, 5, 4, g)
    law = TaskLaw(tau=0.3, dist="rademacher")
    t = sample_tasks(law, D, 2000, g)
    assert t.y.shape == (2000, 8) and t.prompt_labels.shape == (2000, 4)
    assert set(torch.unique(t.lam).tolist()) == {-1.0, 1.0}
    recon = torch.einsum("bm,bmk->bk", t.lam, D.Zhat + t.eps)
    assert torch.allclose(recon, t.y)
    assert abs(float(t.eps.var()) - 0.3) < 0.02
    ood = sample_tasks(TaskLaw(tau=0.1, mean=1.0, std=2.0), D, 4000, g)
    assert abs(float(ood.lam.mean()) - 1.0) < 0.1 and abs(float(ood.lam.std()) - 2.0) < 0.1


def test_sampled_loss_is_the_integrand_of_eq_9():
    D, model, g = _instance()
    t = sample_tasks(TaskLaw(0.2), D, 5, g)
    per = sampled_loss(model, D, t)
    yhat = model(D.V_all, t.prompt_labels)
    assert torch.allclose(per, 0.5 * ((yhat - t.y) ** 2).mean(-1))


def test_bad_configurations_raise():
    with pytest.raises(ValueError):
        SoftmaxConfig(d=3, K=2, N=4, H=1)
    with pytest.raises(ValueError):
        TaskLaw(tau=-1)
    with pytest.raises(ValueError):
        DeepConfig(d=3, K=5, N=2, H=3, d_model=16)


@settings(max_examples=5, derandomize=True, deadline=None)
@given(sizes(max_n=4, max_d=3))
def test_deep_model_reads_every_token(nd):
    N, d = nd
    K = N + 2
    g = torch.Generator().manual_seed(3)
    D = random_dictionary(K, d + 1, 2, N, g).to(dtype=torch.float32)
    model = DeepICL(DeepConfig(d + 1, K, N, 2, layers=1, d_model=8, d_ff=8), generator=g)
    y = torch.randn(3, N)
    assert model(D.V_all, y).shape == (3, K)


def test_deep_model_seeding_leaves_the_global_generator_alone():
    cfg = DeepConfig(d=3, K=6, N=4, H=2, layers=1, d_model=8, d_ff=8)
    torch.manual_seed(11)
    want = torch.rand(3)
    torch.manual_seed(11)
    a = DeepICL(cfg, generator=torch.Generator().manual_seed(5))
    assert torch.equal(torch.rand(3), want)
    b = DeepICL(cfg, generator=torch.Generator().manual_seed(5))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_runs_start_and_predict_as_the_separate_models():
    """SoftmaxICLRuns: run r is SoftmaxICL(H_r, generator r), the padded heads add nothing and get
    no gradient, and a few Adam steps of all runs at once follow each run alone."""
    from models.softmax import SoftmaxICLRuns
    from models.trainers import optimise, optimise_batched

    g = torch.Generator().manual_seed(3)
    V = torch.randn(4, 7, generator=g, dtype=torch.float64)
    V = V / V.norm(dim=0)
    heads, seeds = (2, 5, 3), (11, 12, 13)
    cfg = SoftmaxConfig(d=4, K=7, N=3, H=5)
    runs = SoftmaxICLRuns(cfg, heads, [torch.Generator().manual_seed(s) for s in seeds])
    with torch.no_grad():
        runs.w.normal_(generator=g).mul_(runs.mask)
    alone = []
    for r, (H, s) in enumerate(zip(heads, seeds)):
        one = SoftmaxICL(SoftmaxConfig(4, 7, 3, H), generator=torch.Generator().manual_seed(s))
        assert torch.equal(one.Q, runs.run(r).Q)
        with torch.no_grad():
            one.w.copy_(runs.w[r, :H])
        alone.append(one)
        assert torch.allclose(runs.coefficients(V)[r], one.coefficients(V), rtol=1e-13, atol=1e-15)
    target = torch.randn(3, 7, generator=g, dtype=torch.float64)
    (runs.coefficients(V) - target).pow(2).sum().backward()
    assert not runs.Q.grad[0, 2:].any() and not runs.w.grad[0, 2:].any()
    batched = optimise_batched(lambda: (runs.coefficients(V) - target).pow(2).sum((-2, -1)),
                               runs.parameters(), "adam", steps=30, lr=0.01, grad_tol=0.0)
    for r, one in enumerate(alone):
        single = optimise(lambda: (one.coefficients(V) - target).pow(2).sum(), one.parameters(),
                          "adam", steps=30, lr=0.01, grad_tol=0.0)
        assert np.allclose(batched[r].losses, single.losses, rtol=1e-10)
        assert torch.allclose(runs.run(r).Q, one.Q, atol=1e-10)
    assert not runs.Q[0, 2:].any() and not runs.w[0, 2:].any()  # the padding stays at zero


def test_a_model_from_given_weights_copies_them_and_draws_nothing():
    """SoftmaxICL(weights=...) (what SoftmaxICLRuns.run builds): the weights are copied, not
    shared, no generator is read, and weights of the wrong shape are refused."""
    cfg = SoftmaxConfig(d=3, K=5, N=2, H=2)
    Q = torch.randn(2, 3, 3, dtype=torch.float64)
    w = torch.randn(2, 5, dtype=torch.float64)
    state = torch.random.get_rng_state()
    one = SoftmaxICL(cfg, weights=(Q, w))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(one.Q, Q) and torch.equal(one.w, w)
    Q.zero_()
    assert one.Q.abs().sum() > 0
    with pytest.raises(ValueError, match="weights of shapes"):
        SoftmaxICL(cfg, weights=(torch.zeros(3, 3, 3), w))
