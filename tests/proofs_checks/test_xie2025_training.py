"""xie2025's exact-risk training: problems of other C, w*, query guess and head count trained in
one batched run each follow the problem trained alone."""
import numpy as np
import pytest
import torch

from models.padding import head_layout, head_mask
from proofs_checks.xie2025.common import HeadsLoss, StackedHeadsLoss, heads_risk
from proofs_checks.xie2025.setting import Instance
from proofs_checks.xie2025.training import ExactProblem, train_exact, train_exact_problems


def _loss(guess, C, w, v=(0.0, 0.0), beta=0.0):
    fixed = {"w_star": torch.tensor(w, dtype=torch.float64).reshape(2, 1)}
    if guess != "zero":
        fixed["v"] = torch.tensor(v, dtype=torch.float64).reshape(2, 1)
    return HeadsLoss(guess, 2, C, fixed, beta)


def test_a_stacked_row_is_its_own_problem_s_risk():
    """Rows of parts of other w*, v and beta (row-wise tensors of one evaluation) give each
    part's risk, which is the derived risk summed head by head (``heads_risk``)."""
    parts = [_loss("affine", 4, (1.0, 0.0), (1.0, 1.0), 0.0),
             _loss("affine", 4, (0.0, 2.0), (0.0, 0.0), 1.0),
             _loss("affine", 4, (1.0, 1.0), (0.5, 0.0), -2.0)]
    g = torch.Generator().manual_seed(1)
    P, Q = (torch.randn(6, 2, 3, 3, dtype=torch.float64, generator=g) for _ in range(2))
    stacked = StackedHeadsLoss(parts, rows=2)
    assert stacked.fixed["w_star"].shape == (6, 2, 1) and stacked.sc["beta"].shape == (6,)
    got = stacked({"P": P, "Q": Q}, {})
    for r in range(6):
        part = parts[r // 2]
        alone = part({"P": P[r:r + 1], "Q": Q[r:r + 1]}, {})
        assert got[r].item() == pytest.approx(alone.item(), rel=1e-12)
        fixed = {k: v.numpy() for k, v in part.fixed.items()}
        want = heads_risk(list(P[r].numpy()), list(Q[r].numpy()), "affine", fixed,
                          {"C": part.C, "d": 2, "beta": part.beta})
        assert got[r].item() == pytest.approx(float(want), rel=1e-10)


def test_the_linear_guess_is_the_affine_guess_at_beta_zero():
    """Fig. 4 trains y_q = g^T x_q under the affine risk at beta = 0: the same risk."""
    g = torch.Generator().manual_seed(2)
    P, Q = (torch.randn(3, 3, 3, 3, dtype=torch.float64, generator=g) for _ in range(2))
    lin = _loss("linear", 5, (1.0, -1.0), (1.0, 1.0))({"P": P, "Q": Q}, {})
    aff = _loss("affine", 5, (1.0, -1.0), (1.0, 1.0), 0.0)({"P": P, "Q": Q}, {})
    assert torch.allclose(lin, aff, rtol=1e-12)


def test_padded_rows_read_only_their_real_heads():
    """Rows padded to 4 heads (counts 1, 4, 2 and 3, two restarts each) with zero padding: the
    ragged sum over real heads and pairs gives the padded risk, bit for bit, and each row's
    risk is its real heads' risk alone; a padded head's gradient is 0."""
    parts = [_loss("affine", 4, w, v, beta) for w, v, beta in (
        ((1.0, 0.0), (1.0, 1.0), 0.0), ((0.0, 2.0), (0.0, 0.0), 1.0),
        ((1.0, 1.0), (0.5, 0.0), -2.0), ((2.0, 1.0), (0.0, 1.0), 0.5))]
    counts, R = (1, 4, 2, 3), 2
    g = torch.Generator().manual_seed(3)
    mask = head_mask(counts, 4, R)[..., None, None]
    P, Q = (mask * torch.randn(8, 4, 3, 3, dtype=torch.float64, generator=g) for _ in range(2))
    P.requires_grad_()
    padded = StackedHeadsLoss(parts, R)({"P": P, "Q": Q}, {})
    ragged = StackedHeadsLoss(parts, R, head_layout(counts, 4, R))({"P": P, "Q": Q}, {})
    assert torch.equal(ragged, padded)
    for r in range(8):
        H = counts[r // R]
        alone = parts[r // R]({"P": P[r:r + 1, :H], "Q": Q[r:r + 1, :H]}, {})
        assert ragged[r].item() == pytest.approx(alone.item(), rel=1e-12)
    (grad,) = torch.autograd.grad(ragged.sum(), P)
    assert torch.all(grad[mask.expand_as(grad) == 0] == 0)
    with pytest.raises(ValueError, match="do not match the layout"):
        StackedHeadsLoss(parts, R, head_layout(counts, 5, R))({"P": P, "Q": Q}, {})


@pytest.mark.parametrize("other", [_loss("linear", 4, (1.0, 1.0)), _loss("zero", 8, (1.0, 1.0))])
def test_stacked_problems_share_the_guess_and_c(other):
    with pytest.raises(ValueError, match="one query guess, one d and one C"):
        StackedHeadsLoss([_loss("zero", 4, (1.0, 1.0)), other], 2)


def test_problems_trained_at_once_follow_each_problem_trained_alone():
    """Three w* and two head counts in one L-BFGS run: each problem starts where it starts alone
    and ends where it ends alone (up to rounding)."""
    inst = Instance(2, 4, 1)
    problems = [ExactProblem.of(inst, 3, 21), ExactProblem.of(inst, 3, 22, w_star=np.zeros(2)),
                ExactProblem.of(inst, 2, 23, w_star=np.zeros(2) + 2.0)]
    together = train_exact_problems(problems, 2, 40, "cpu")
    for p, both in zip(problems, together):
        alone = train_exact(Instance(2, p.C, 1), p.heads, 2, 40, p.seed, "cpu",
                            w_star=np.array(p.w_star))
        assert both.best_P.shape == alone.best_P.shape == (p.heads, 3, 3)
        assert [r["curve"][0] for r in both.runs] == pytest.approx(
            [r["curve"][0] for r in alone.runs], rel=1e-12)
        assert both.best == pytest.approx(alone.best, rel=1e-7)
        assert [r["steps"] for r in both.runs] == pytest.approx([r["steps"] for r in alone.runs],
                                                                 abs=3)
