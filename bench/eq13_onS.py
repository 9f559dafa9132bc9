"""One Adam step of ahn2023 Figs. 3-4's population polish (``eq13_population.train_population``)
at the paper's batch, part by part, and its on-S control variate computed two ways:

    python bench/eq13_onS.py [--device cuda] [--batch 32000] [--repeats 5]

``eigen``: ``on_S_losses`` on ``gram_eigenvalues`` (the code's path: a batched eigensolver in
chunks of 2^14, on cuda one host read-back per chunk); ``gram``: ``on_S_losses_gram``
(||s(W)||_F^2 by Horner's rule in matrix products, no eigensolver).  Each part is timed
forward and backward (the gradient in the scales p), side by side in one run, after one
warm-up; the ratio eigen / gram is printed, and the largest relative difference of the two.
The 2026-11-27 H200 run measured the whole polish at 180 s for 4,000 steps (45 ms a step).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from models.device import randn  # noqa: E402
from proofs_checks.ahn2023 import eq13_population as eqp  # noqa: E402


def _timed(fn, device: str, repeats: int) -> float:
    fn()  # warm-up (kernels, caches)
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=32_000, help="draws per seed (paper: 32000)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    dev, K, M, n, d, L = a.device, a.seeds, a.batch, 10, 5, 3
    gen = torch.Generator(device=dev).manual_seed(0)
    X, w = eqp.draw_covariates(K, M, d, n, gen, torch.float64, dev)
    At = eqp.sym(0.3 * randn(K, L, d, d, generator=gen, device=dev,
                             dtype=torch.float64)).requires_grad_()
    Bt = (0.3 * randn(K, L, d, d, generator=gen, device=dev,
                      dtype=torch.float64)).requires_grad_()
    p = eqp.scales(At, Bt).detach().requires_grad_()

    def backward(v):
        v.sum().backward()

    parts = {
        "draw_covariates": lambda: eqp.draw_covariates(K, M, d, n, gen, torch.float64, dev),
        "conditional_losses fwd+bwd": lambda: backward(eqp.eq13_conditional_losses(At, Bt, X, n)),
        "on-S eigen fwd+bwd": lambda: backward(eqp.on_S_losses(p, eqp.gram_eigenvalues(X), L)),
        "on-S gram fwd+bwd": lambda: backward(eqp.on_S_losses_gram(p, X, L)),
    }
    print(f"# bench/eq13_onS.py  device {dev}"
          f" {torch.cuda.get_device_name(0) if dev == 'cuda' else ''}  torch {torch.__version__}"
          f"  threads {torch.get_num_threads()}  K = {K}, batch {M}, n = {n}, d = {d}, L = {L}")
    times = {}
    for name, fn in parts.items():
        times[name] = _timed(fn, dev, a.repeats)
        print(f"{name:<28} {times[name] * 1e3:10.2f} ms")
    with torch.no_grad():
        e = eqp.on_S_losses(p, eqp.gram_eigenvalues(X), L)
        g = eqp.on_S_losses_gram(p, X, L)
        rel = float(((e - g).abs() / e.abs().clamp_min(1e-300)).max())
    ratio = times["on-S eigen fwd+bwd"] / times["on-S gram fwd+bwd"]
    print(f"ratio eigen / gram {ratio:.2f}; largest relative difference {rel:.2g}")


if __name__ == "__main__":
    main()
