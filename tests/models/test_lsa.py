"""One forward pass for every array type: torch, numpy and sympy agree on the same weights."""
import numpy as np
import pytest
import sympy
import torch

from models.lsa import LSAConfig, LinearTransformer, lsa_forward, mask_matrix, readout
from models.metrics import dist_to_identity
from models.sampler import PromptLaw, sample_prompts


def _weights(d, layers, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((d + 1, d + 1)), rng.standard_normal((d + 1, d + 1)))
            for _ in range(layers)]


def test_forward_pass_agrees_across_backends():
    d, n = 2, 3
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((d + 1, n + 1))
    Z[-1, -1] = 0
    M = np.zeros((n + 1, n + 1))
    M[:n, :n] = np.eye(n)
    W = _weights(d, 2)
    out_np = readout(lsa_forward(Z, W, M, n))
    out_t = readout(lsa_forward(torch.tensor(Z), [(torch.tensor(P), torch.tensor(Q)) for P, Q in W],
                                torch.tensor(M), n))
    Zs = sympy.Matrix(Z.tolist())
    out_s = readout(lsa_forward(Zs, [(sympy.Matrix(P.tolist()), sympy.Matrix(Q.tolist()))
                                     for P, Q in W], sympy.Matrix(M.tolist()), n))
    assert np.isclose(out_np, float(out_t)) and np.isclose(out_np, float(out_s))


def test_gatmiry_sign_convention_subtracts_the_attention():
    d, n = 2, 4
    rng = np.random.default_rng(2)
    Z = rng.standard_normal((d + 1, n + 1))
    M = np.zeros((n + 1, n + 1))
    M[:n, :n] = np.eye(n)
    (P, Q), = _weights(d, 1)
    plus = lsa_forward(Z, [(P, Q)], M, n, step=1)
    minus = lsa_forward(Z, [(P, Q)], M, n, step=-1)
    assert np.allclose(plus + minus, 2 * Z)


@pytest.mark.parametrize("param", ["full", "eq7", "eq9", "eq13"])
def test_parametrisations_have_the_paper_structure(param):
    d = 3
    model = LinearTransformer(LSAConfig(d=d, layers=2, parametrisation=param),
                              generator=torch.Generator().manual_seed(0))
    for P, Q in model.weights():
        assert P.shape == Q.shape == (d + 1, d + 1)
        if param in ("eq9", "eq13"):
            assert torch.all(Q[d] == 0) and torch.all(Q[:, d] == 0)
            assert P[d, d] == 1 and torch.all(P[d, :d] == 0) and torch.all(P[:d, d] == 0)
            assert torch.allclose(Q[:d, :d], Q[:d, :d].T)
        if param == "eq9":
            assert torch.all(P[:d, :d] == 0)
        if param == "eq7":
            assert torch.all(P[:d] == 0) and torch.all(Q[:, d] == 0)


def test_looped_model_shares_weights():
    model = LinearTransformer(LSAConfig(d=2, layers=4, looped=True, step=-1),
                              generator=torch.Generator().manual_seed(0))
    ws = model.weights()
    assert len(ws) == 4 and all(w[0] is ws[0][0] for w in ws)


def test_sampler_moments_and_labels():
    S = torch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
    law = PromptLaw(sigma=S, n=5)
    pr = sample_prompts(law, 20_000, torch.Generator().manual_seed(0))
    emp = torch.einsum("bdn,ben->de", pr.X, pr.X) / (20_000 * 5)
    assert torch.allclose(emp, S, atol=0.05)
    assert torch.allclose(pr.y, torch.einsum("bdn,bd->bn", pr.X, pr.w))
    Z = pr.Z()
    assert Z.shape == (20_000, 3, 6) and torch.all(Z[:, -1, -1] == 0)


def test_sampler_rejects_impossible_laws():
    with pytest.raises(ValueError):
        PromptLaw(sigma=torch.eye(2, dtype=torch.float64), n=0)
    with pytest.raises(Exception):
        PromptLaw(sigma=torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=torch.float64), n=3)


def test_mask_and_dist():
    m = mask_matrix(3, torch.zeros(1))
    assert m.shape == (4, 4) and m[3, 3] == 0 and m[0, 0] == 1
    assert dist_to_identity(3 * torch.eye(4)) < 1e-12
    assert dist_to_identity(torch.diag(torch.tensor([1.0, 2.0]))) > 0.1


@pytest.mark.parametrize("param", ["eq9", "eq13"])
def test_a_stack_of_models_predicts_as_each_model_alone(param):
    """``stacked_prediction`` runs S models of (9) or (13), each on its own prompts, through
    ``LinearTransformer``'s weights and pass: model s's predictions are its own."""
    from models.lsa import stacked_prediction

    d, n, S, N = 3, 4, 2, 5
    g = torch.Generator().manual_seed(3)
    models = [LinearTransformer(LSAConfig(d=d, layers=3, parametrisation=param), 0.5, g)
              for _ in range(S)]
    Z = torch.randn(S, N, d + 1, n + 1, generator=g, dtype=torch.float64)
    A = torch.stack([m.A.detach() for m in models])
    B = torch.stack([m.B.detach() for m in models]) if param == "eq13" else None
    got = stacked_prediction(Z, A, B)
    for s, m in enumerate(models):
        torch.testing.assert_close(got[s], m.predict(Z[s]).detach(), rtol=1e-12, atol=1e-14)
