import math

import torch

from models.device import DeviceUnavailable, resolve_device
from models.trainers import optimise


def test_lbfgs_and_adam_minimise_a_quadratic():
    for method, lr, steps in (("lbfgs", 1.0, 20), ("adam", 0.1, 2000), ("gd", 0.1, 500)):
        x = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        target = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
        res = optimise(lambda: ((x - target) ** 2).sum(), [x], method=method, lr=lr, steps=steps,
                       grad_tol=1e-8)
        assert res.status == "converged", (method, res)
        assert torch.allclose(x.detach(), target, atol=1e-4)


def test_divergence_is_reported_not_raised():
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    res = optimise(lambda: (x ** 4).sum(), [x], method="gd", lr=10.0, steps=100)
    assert res.status == "diverged"
    assert "at step" in res.reason
    assert all(math.isfinite(v) for v in res.losses)


def test_cuda_request_without_gpu_is_an_error():
    if torch.cuda.is_available():
        assert resolve_device("cuda").type == "cuda"
    else:
        try:
            resolve_device("cuda")
        except DeviceUnavailable as exc:
            assert "no CUDA GPU" in str(exc)
        else:
            raise AssertionError("expected DeviceUnavailable")


def _adam_run(sync_every, steps=40, lr=0.05, loss=None):
    torch.manual_seed(0)
    x = torch.randn(4, dtype=torch.float64).requires_grad_()
    target = torch.arange(4, dtype=torch.float64)
    fn = loss or (lambda: ((x - target) ** 2).sum() + 0.1 * (x ** 4).sum())
    res = optimise(fn if loss is None else (lambda: loss(x)), [x], method="adam", lr=lr,
                   steps=steps, sync_every=sync_every)
    return res, x.detach().clone()


def test_reading_back_once_per_window_changes_nothing_but_the_read_backs():
    """Adam with the losses kept on the device and read every 7 steps: the same curve, steps
    and weights as reading every step (40 steps: five full windows and a partial one)."""
    one, x1 = _adam_run(1)
    seven, x7 = _adam_run(7)
    assert one.losses == seven.losses and one.steps == seven.steps == 40
    assert torch.equal(x1, x7)


def test_a_window_reports_the_step_that_diverged_and_keeps_finite_weights():
    def blows_up(x):
        return (x ** 4).sum() * 10.0 ** 300 * 10.0 ** 300 if float(x.detach().abs().max()) > 50 else \
            ((x - 100.0) ** 2).sum()

    one, _ = _adam_run(1, steps=200, lr=5.0, loss=blows_up)
    seven, x7 = _adam_run(7, steps=200, lr=5.0, loss=blows_up)
    assert one.status == seven.status == "diverged"
    assert one.reason == seven.reason and one.losses == seven.losses
    assert torch.isfinite(x7).all()


def test_the_squared_gradient_norm_by_one_multi_tensor_kernel_is_the_sum_of_squares():
    """cuda's path (torch._foreach_norm, one kernel for every gradient) and the cpu's give the
    same squared norm; no gradient is 0."""
    from models.trainers import _squared_norm

    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(*s, generator=g, dtype=torch.float64) for s in ((3, 4), (5,), (2, 2, 2))]
    plain = _squared_norm(grads)
    assert torch.allclose(_squared_norm(grads, multi_tensor=True), plain, rtol=1e-14)
    assert torch.isclose(plain, sum((x ** 2).sum() for x in grads))
    assert _squared_norm([]) == 0


def test_the_fused_adam_kernel_takes_the_default_path_s_steps():
    """first_order_optimiser takes torch's fused Adam on cuda; the cpu has the kernel too, and
    there 60 steps of it follow the default multi-tensor path to rounding, and the default
    (fused=None) on cpu tensors is not fused."""
    from models.trainers import first_order_optimiser

    def run(fused):
        g = torch.Generator().manual_seed(4)
        x = torch.randn(5, dtype=torch.float64, generator=g).requires_grad_()
        y = torch.randn(3, 2, dtype=torch.float64, generator=g).requires_grad_()
        opt = first_order_optimiser([x, y], "adam", 0.05, fused=fused)
        for _ in range(60):
            opt.zero_grad()
            (((x - 1) ** 2).sum() + (y ** 4).sum() + (x[:2] * y[0]).sum()).backward()
            opt.step()
        return opt, torch.cat([x.detach(), y.detach().reshape(-1)])

    default, a = run(None)
    fused, b = run(True)
    assert not default.defaults["fused"] and fused.defaults["fused"]
    assert torch.allclose(a, b, rtol=1e-12, atol=1e-14) and not torch.equal(a, torch.zeros_like(a))
    assert isinstance(first_order_optimiser([torch.zeros(1, requires_grad=True)], "gd", 0.1),
                      torch.optim.SGD)
