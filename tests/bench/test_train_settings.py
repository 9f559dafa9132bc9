"""The benchmark's settings train the same objective two ways: the sampled-prompt loss must be an
unbiased estimate of the derived exact loss (else the side-by-side times compare different
problems), and the weight error must vanish at the derived optimum."""
import importlib.util
import pathlib
import sys

import pytest
import torch

from models.device import runtime
from moments.montecarlo import z_critical

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_train", ROOT / "bench" / "train.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_train"] = mod      # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("key", ["thm1", "thm4", "looped"])
def test_sampled_loss_estimates_the_exact_loss(key):
    bench = _bench()
    rt = runtime("cpu")
    setting = bench.SETTINGS[key](rt, False, find_init=False)
    gen = torch.Generator().manual_seed(7)
    params = [p + 0.1 * torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in setting.init(0)]
    with torch.no_grad():
        exact = float(setting.exact_loss(params))
        draws = torch.stack([setting.sampled_loss(params, 2000, gen) for _ in range(20)])
    mean, se = float(draws.mean()), float(draws.std() / 20 ** 0.5)
    assert abs(mean - exact) <= z_critical(0.999) * se, (mean, se, exact)
