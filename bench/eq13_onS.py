"""One Adam step of ahn2023 Figs. 3-4's population polish (``eq13_population.train_population``)
at the paper's batch, part by part; its conditional losses and its on-S control variate each
computed two ways:

    python bench/eq13_onS.py [--device cuda] [--batch 32000] [--repeats 5]

``token`` / ``gram``: E[e^2 | X] by the recursion on the tokens (``eq13_conditional_losses``,
d x (n + d) products; the code's path until 2026-11-28) and on the Gram W = X X^T / n alone
(``eq13_gram_losses``, d x d products, the code's path now).
``eigen``: ``on_S_losses`` on ``gram_eigenvalues`` (the code's path on the cpu: a batched
eigensolver in chunks of 2^14, on cuda one host read-back per chunk); ``gram``:
``on_S_losses_gram`` (||s(W)||_F^2 by Horner's rule in matrix products, no eigensolver: the
code's path on cuda, ``eq13_population.on_S_part``).  Each part is timed
forward and backward (the gradient in the scales p), side by side in one run, after one
warm-up; the ratios token / gram and eigen / gram are printed, with the largest relative
difference of each pair.
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
    X = randn(K, M, d, n, generator=gen, device=dev, dtype=torch.float64)
    W = eqp.gram(X)
    At = eqp.sym(0.3 * randn(K, L, d, d, generator=gen, device=dev,
                             dtype=torch.float64)).requires_grad_()
    Bt = (0.3 * randn(K, L, d, d, generator=gen, device=dev,
                      dtype=torch.float64)).requires_grad_()
    p = eqp.scales(At, Bt).detach().requires_grad_()

    def backward(v):
        v.sum().backward()

    parts = {
        "draw_grams": lambda: eqp.draw_grams(K, M, d, n, gen, torch.float64, dev),
        "conditional token fwd+bwd": lambda: backward(eqp.eq13_conditional_losses(At, Bt, X, n)),
        "conditional gram fwd+bwd": lambda: backward(eqp.eq13_gram_losses(At, Bt, W)),
        "on-S eigen fwd+bwd": lambda: backward(eqp.on_S_losses(p, eqp.gram_eigenvalues(W), L)),
        "on-S gram fwd+bwd": lambda: backward(eqp.on_S_losses_gram(p, W, L)),
    }
    print(f"# bench/eq13_onS.py  device {dev}"
          f" {torch.cuda.get_device_name(0) if dev == 'cuda' else ''}  torch {torch.__version__}"
          f"  threads {torch.get_num_threads()}  K = {K}, batch {M}, n = {n}, d = {d}, L = {L}")
    times = {}
    for name, fn in parts.items():
        times[name] = _timed(fn, dev, a.repeats)
        print(f"{name:<28} {times[name] * 1e3:10.2f} ms")
    def rel(a, b):
        return float(((a - b).abs() / a.abs().clamp_min(1e-300)).max())

    with torch.no_grad():
        tok = rel(eqp.eq13_conditional_losses(At, Bt, X, n), eqp.eq13_gram_losses(At, Bt, W))
        ons = rel(eqp.on_S_losses(p, eqp.gram_eigenvalues(W), L), eqp.on_S_losses_gram(p, W, L))
    for a, b, r in (("conditional token", "conditional gram", tok),
                    ("on-S eigen", "on-S gram", ons)):
        ratio = times[f"{a} fwd+bwd"] / times[f"{b} fwd+bwd"]
        print(f"ratio {a} / {b.split()[-1]} {ratio:.2f}; largest relative difference {r:.2g}")


if __name__ == "__main__":
    main()
