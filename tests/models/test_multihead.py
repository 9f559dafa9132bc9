"""Multi-head LSA and y_q-LSA: one forward pass for torch, numpy, sympy and symbolic prompts."""
import numpy as np
import pytest
import sympy
import torch

from models.lsa import mask_matrix
from models.multihead import (MultiHeadLSA, YqLSA, embed, fast_prediction, head_products,
                              multihead_forward, multihead_prediction, one_step_gd, sample_tasks)


def _prompts(d=3, C=5, B=7, seed=1):
    t = sample_tasks(torch.linspace(-1, 1, d, dtype=torch.float64), C, B,
                     torch.Generator().manual_seed(seed))
    return t, t.E(torch.randn(B, generator=torch.Generator().manual_seed(seed + 1),
                              dtype=torch.float64))


def test_fast_prediction_is_the_forward_pass_of_eq6():
    t, E = _prompts()
    model = MultiHeadLSA(3, 4, init_scale=0.5, generator=torch.Generator().manual_seed(0))
    full = model.full_forward(E)[..., -1, -1]
    assert torch.allclose(model(E), full, atol=1e-12)


def test_backends_agree():
    d, C = 2, 3
    rng = np.random.default_rng(0)
    E = rng.standard_normal((d + 1, C + 1))
    heads = [(rng.standard_normal((d + 1, d + 1)), rng.standard_normal((d + 1, d + 1)))
             for _ in range(2)]
    M = mask_matrix(C, torch.zeros(1, dtype=torch.float64)).numpy()
    out_np = multihead_prediction(E, heads, M, C)
    out_t = multihead_prediction(torch.tensor(E), [(torch.tensor(P), torch.tensor(Q))
                                                   for P, Q in heads], torch.tensor(M), C)
    out_s = multihead_prediction(sympy.Matrix(E.tolist()),
                                 [(sympy.Matrix(P.tolist()), sympy.Matrix(Q.tolist()))
                                  for P, Q in heads], sympy.Matrix(M.tolist()), C)
    P = torch.tensor(np.stack([h[0] for h in heads]))
    Q = torch.tensor(np.stack([h[1] for h in heads]))
    out_f = fast_prediction(torch.tensor(E), P, Q)
    assert np.isclose(out_np, float(out_t)) and np.isclose(out_np, float(out_s))
    assert np.isclose(out_np, float(out_f))


def test_heads_add_up():
    """Eq. (6): the output of two heads is the residual plus both heads' updates."""
    t, E = _prompts()
    M = mask_matrix(5, E)
    rng = torch.Generator().manual_seed(3)
    h = [(torch.randn(4, 4, generator=rng, dtype=torch.float64),
          torch.randn(4, 4, generator=rng, dtype=torch.float64)) for _ in range(2)]
    both = multihead_forward(E, h, M, 5)
    one = [multihead_forward(E, [x], M, 5) - E for x in h]
    assert torch.allclose(both, E + one[0] + one[1])


def test_head_products_and_embed():
    W = [torch.randn(3, 3, dtype=torch.float64) for _ in range(4)]
    P, Q = head_products(*W)
    assert torch.allclose(P, W[0] @ W[1]) and torch.allclose(Q, W[2].T @ W[3])
    t, _ = _prompts(d=2, C=4, B=3)
    E = embed(t.X, t.y, t.xq, torch.zeros(3, dtype=torch.float64))
    assert E.shape == (3, 3, 5) and torch.all(E[:, -1, -1] == 0)
    assert torch.allclose(E[:, :2, :4], t.X) and torch.allclose(E[:, 2, :4], t.y)


def test_sampled_labels_and_prior_mean():
    w_star = torch.tensor([2.0, -1.0], dtype=torch.float64)
    t = sample_tasks(w_star, 3, 20_000, torch.Generator().manual_seed(0))
    assert torch.allclose(t.y, torch.einsum("bdc,bd->bc", t.X, t.w))
    assert torch.allclose(t.w.mean(0), w_star, atol=0.05)
    assert torch.allclose(t.target, (t.w * t.xq).sum(1))


def test_yq_lsa_is_lsa_on_E_w():
    t, _ = _prompts()
    model = YqLSA(3, init_scale=0.5, generator=torch.Generator().manual_seed(4))
    E_w = t.E(t.xq @ model.w)
    assert torch.allclose(model(t.X, t.y, t.xq), model.lsa(E_w))


def test_gd_weights_give_one_gd_step():
    """Eqs. (7)-(10) with W^P = -eta I: the LSA output with y_q = w*^T x_q is one GD step."""
    d, C, eta = 3, 5, 0.7
    w_star = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    t = sample_tasks(w_star, C, 11, torch.Generator().manual_seed(2))
    W_V = torch.zeros(d + 1, d + 1, dtype=torch.float64)
    W_V[d, :d], W_V[d, d] = w_star, -1.0
    W_KQ = torch.zeros(d + 1, d + 1, dtype=torch.float64)
    W_KQ[:d, :d] = torch.eye(d)
    P, Q = head_products(-eta * torch.eye(d + 1, dtype=torch.float64), W_V, W_KQ, W_KQ)
    lsa = fast_prediction(t.E(t.xq @ w_star), P[None], Q[None])
    assert torch.allclose(lsa, one_step_gd(t.X, t.y, t.xq, w_star, eta))


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError):
        MultiHeadLSA(0, 2)
    with pytest.raises(ValueError):
        sample_tasks(torch.zeros(2), 0, 4, torch.Generator())
