"""Batched training: independent problems per seed, each with its own status."""
import torch

from models.exact import ExactLoss
from models.trainers import optimise, optimise_batched
from moments.tensor import gaussian_matrix, matrix
from moments.wick import expectation


def _problems(B):
    g = torch.Generator().manual_seed(0)
    M = torch.randn(B, 4, 4, generator=g, dtype=torch.float64)
    M = M @ M.mT + torch.eye(4, dtype=torch.float64)
    target = torch.randn(B, 4, generator=g, dtype=torch.float64)
    return M, target


def _loss(x, M, target):
    r = x - target
    return torch.einsum("...i,...ij,...j->...", r, M, r) + 0.01 * (x ** 2).sum(-1) ** 2


def test_batched_lbfgs_matches_independent_runs():
    M, target = _problems(4)
    x = torch.zeros(4, 4, dtype=torch.float64, requires_grad=True)
    res = optimise_batched(lambda: _loss(x, M, target), [x], "lbfgs", steps=300)
    assert all(r.status == "converged" for r in res)
    for b in range(4):  # each problem alone, with torch's own L-BFGS
        xb = torch.zeros(4, dtype=torch.float64, requires_grad=True)
        single = optimise(lambda: _loss(xb, M[b], target[b]), [xb], "lbfgs", steps=100,
                          grad_tol=1e-12)
        assert abs(single.final_loss - res[b].final_loss) <= 1e-9 * max(1.0, single.final_loss)
        assert torch.allclose(xb.detach(), x[b].detach(), atol=1e-6)


def test_each_batched_lbfgs_problem_takes_the_steps_it_takes_alone():
    """Problems that stop at other steps (a step's record is read back with the next step's
    first trial, the stops applied on the device first): each one's curve, steps, status and
    weights are those of the problem alone, bit for bit."""
    M, target = _problems(4)
    x = torch.zeros(4, 4, dtype=torch.float64, requires_grad=True)
    res = optimise_batched(lambda: _loss(x, M, target), [x], "lbfgs", steps=300)
    assert len({r.steps for r in res}) > 1
    for b in range(4):
        xb = torch.zeros(1, 4, dtype=torch.float64, requires_grad=True)
        alone = optimise_batched(lambda: _loss(xb, M[b:b + 1], target[b:b + 1]), [xb], "lbfgs",
                                 steps=300)[0]
        assert (alone.losses, alone.steps, alone.status, alone.reason) == \
            (res[b].losses, res[b].steps, res[b].status, res[b].reason)
        assert torch.equal(xb[0], x[b])


def test_batched_divergence_is_per_problem():
    y = torch.ones(3, 2, dtype=torch.float64, requires_grad=True)
    scale = torch.tensor([1.0, 1e6, 1.0], dtype=torch.float64)
    res = optimise_batched(lambda: (y ** 4).sum(1) * scale, [y], "gd", steps=50, lr=0.1)
    assert [r.status for r in res] == ["max_steps", "diverged", "max_steps"]
    assert "at step" in res[1].reason


def test_exact_loss_compiled_and_batched_agrees_with_evaluate():
    S = matrix("Sigma", symmetric=True)
    A = matrix("A")
    X = gaussian_matrix("X", "d", "n", row_cov=S)
    W = X @ X.T
    poly = expectation((W @ A @ W @ A.T).trace() - 2 * (W @ A).trace())
    compiled = poly.compile()
    g = torch.Generator().manual_seed(1)
    Ab = torch.randn(5, 3, 3, generator=g, dtype=torch.float64, requires_grad=True)
    sigma = torch.eye(3, dtype=torch.float64) * 2
    loss = ExactLoss(compiled, lambda: ({"Sigma": sigma, "A": Ab}, {"n": 4}))
    batched = loss()
    single = [poly.evaluate({"Sigma": sigma, "A": Ab[i]}, {"n": 4}) for i in range(5)]
    assert torch.allclose(batched, torch.stack(single))
    res = optimise_batched(loss, [Ab], "lbfgs", steps=200)
    assert all(r.status == "converged" for r in res)
    # the minimiser of n^2 tr(S A S A^T)+... is unique: all restarts agree
    assert torch.allclose(Ab[0], Ab[1], atol=1e-6)
    one = torch.zeros(3, 3, dtype=torch.float64, requires_grad=True)
    optimise(lambda: poly.evaluate({"Sigma": sigma, "A": one}, {"n": 4}), [one], "lbfgs", steps=50)
    assert torch.allclose(one, Ab[0].detach(), atol=1e-6)


def _read_backs(run) -> dict[str, int]:
    """Read-backs to the host (each waits for a GPU) while ``run()`` runs, per source line of
    the project that asked for them (``bench/syncs.py``'s counter)."""
    import linecache
    import pathlib

    from tests.bench import bench_module

    root = pathlib.Path(__file__).resolve().parents[2]
    sites, copies, kernels = bench_module("syncs").counting_modes()
    with copies, kernels:
        run()
    out: dict[str, int] = {}
    for site, n in sites.items():
        path, line = site.split(" ")[0].rsplit(":", 1)
        text = linecache.getline(str(root / path), int(line)).strip()
        out[text] = out.get(text, 0) + n
    return out


def test_a_batched_step_reads_back_once_per_line_search_trial():
    """On a GPU each read-back stalls the device: a batched L-BFGS step reads back once per
    line-search trial, its record (losses, finiteness and stopping tests of every problem) in
    the same transfer as the next step's first trial; and an Adam step once."""
    M, target = _problems(4)
    x = torch.zeros(4, 4, dtype=torch.float64, requires_grad=True)
    out = {}
    sites = _read_backs(lambda: out.setdefault("r", optimise_batched(
        lambda: _loss(x, M, target), [x], "lbfgs", steps=300)))
    steps = max(r.steps for r in out["r"])
    first = sum(n for line, n in sites.items() if "flat.tolist()" in line)
    more = sum(n for line, n in sites.items() if "float(e) for e in extra" in line)
    # every step's first trial with the record before it, and the last record (read by the
    # step after the last, which finds every problem stopped)
    assert steps > 5 and first == steps + 1
    assert sum(sites.values()) == first + more and more <= 29 * steps
    y = torch.zeros(4, 4, dtype=torch.float64, requires_grad=True)
    sites = _read_backs(lambda: optimise_batched(lambda: _loss(y, M, target), [y], "adam",
                                                 steps=25, lr=0.01))
    assert sum(sites.values()) == 25


def test_batched_first_order_reads_back_once_per_window_with_the_same_steps():
    """Adam on B problems read back every 8 steps takes the steps it takes read back every step
    (a GPU reads back every 64): the same losses, bit for bit, and 40 / 8 read-backs."""
    M, target = _problems(4)
    out, counts = {}, {}
    for every in (1, 8):
        x = torch.zeros(4, 4, dtype=torch.float64, requires_grad=True)
        sites = _read_backs(lambda: out.setdefault(every, (x, optimise_batched(
            lambda: _loss(x, M, target), [x], "adam", steps=40, lr=0.01, sync_every=every))))
        counts[every] = sum(sites.values())
    assert counts == {1: 40, 8: 5}
    assert [r.losses for r in out[1][1]] == [r.losses for r in out[8][1]]
    assert torch.equal(out[1][0], out[8][0])


def test_a_problem_diverging_inside_a_window_stops_at_its_step_and_spares_the_others():
    """Divergence is read at the window's end: the problem stops as diverged at the step where it
    happened, with the weights of the window's start (finite); the others run on as they would
    have alone."""
    scale = torch.tensor([1.0, 1e6, 1.0], dtype=torch.float64)
    y = torch.ones(3, 2, dtype=torch.float64, requires_grad=True)
    res = optimise_batched(lambda: (y ** 4).sum(1) * scale, [y], "gd", steps=50, lr=0.1,
                           sync_every=8)
    step_1 = optimise_batched(lambda: (y1 ** 4).sum(1) * scale, [y1 := torch.ones(
        3, 2, dtype=torch.float64, requires_grad=True)], "gd", steps=50, lr=0.1, sync_every=1)
    assert [r.status for r in res] == ["max_steps", "diverged", "max_steps"]
    assert res[1].reason == step_1[1].reason and res[1].steps == step_1[1].steps
    assert res[1].losses == step_1[1].losses
    assert torch.isfinite(y).all()
    assert res[0].losses == step_1[0].losses and torch.equal(y[0], y1[0])
    alone = torch.ones(1, 2, dtype=torch.float64, requires_grad=True)
    solo = optimise_batched(lambda: (alone ** 4).sum(1), [alone], "gd", steps=50, lr=0.1, sync_every=8)
    assert solo[0].losses == res[2].losses


def test_the_two_loop_recursion_in_matrix_form_is_the_loops():
    """_two_loop's triangular solves give the recursion's H g (written out here as the two
    loops), with a pair of s.y < 0 in one problem dropping out (rho = 0)."""
    from models.trainers import _Pair, _two_loop

    g0 = torch.Generator().manual_seed(0)
    B, n, m = 3, 12, 8
    A = torch.randn(B, n, n, generator=g0, dtype=torch.float64)
    A = A @ A.mT + torch.eye(n, dtype=torch.float64)
    pairs = []
    for k in range(m):
        s = torch.randn(B, n, generator=g0, dtype=torch.float64)
        y = (A @ s[:, :, None]).squeeze(-1)
        if k == 3:
            y[1] = -y[1]
        pairs.append(_Pair(s, y))
    g = torch.randn(B, n, generator=g0, dtype=torch.float64)
    q, alphas = g.clone(), []
    for p in reversed(pairs):
        a = p.rho * (p.s * q).sum(1)
        q = q - a[:, None] * p.y
        alphas.append(a)
    q = q * (pairs[-1].sy / pairs[-1].yy)[:, None]
    for p, a in zip(pairs, reversed(alphas)):
        q = q + (a - p.rho * (p.y * q).sum(1))[:, None] * p.s
    assert pairs[3].rho[1] == 0
    assert torch.allclose(_two_loop(g, pairs), q, rtol=1e-12, atol=1e-14)
    assert torch.equal(_two_loop(g, []), g)


def test_first_order_runs_on_the_visible_device_as_on_the_cpu():
    """On a GPU machine (cpu elsewhere): batched Adam over SoftmaxICLRuns (read back once per
    64 steps there) and single-problem Adam (its squared gradient norm one multi-tensor kernel
    there) take the steps they take on the cpu, to rounding."""
    from models.softmax import SoftmaxConfig, SoftmaxICL, SoftmaxICLRuns

    device = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator().manual_seed(2)
    V = torch.randn(3, 6, generator=g, dtype=torch.float64)
    target = torch.randn(3, 6, generator=g, dtype=torch.float64)
    out = {}
    for dev in ("cpu", device):
        Vd, td = V.to(dev), target.to(dev)
        runs = SoftmaxICLRuns(SoftmaxConfig(3, 6, 3, 4), (2, 4),
                              [torch.Generator().manual_seed(s) for s in (1, 2)], device=dev)
        batched = optimise_batched(lambda: (runs.coefficients(Vd) - td).pow(2).sum((-2, -1)),
                                   runs.parameters(), "adam", steps=70, lr=0.01, grad_tol=0.0)
        one = SoftmaxICL(SoftmaxConfig(3, 6, 3, 2), generator=torch.Generator().manual_seed(1),
                         device=dev)
        single = optimise(lambda: (one.coefficients(Vd) - td).pow(2).sum(), one.parameters(),
                          "adam", steps=70, lr=0.01, grad_tol=0.0)
        out[dev] = [r.losses for r in batched] + [single.losses]
    for a, b in zip(out["cpu"], out[device]):
        assert len(a) == len(b) == 70
        assert torch.allclose(torch.tensor(a), torch.tensor(b), rtol=1e-9)
