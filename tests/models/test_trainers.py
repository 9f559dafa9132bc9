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
