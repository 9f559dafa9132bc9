"""Host read-backs and kernels of every train tier: where a GPU run would wait.

    python bench/syncs.py [--budget quick] [--claims ID,...] [--top 3] [--json FILE]

On a GPU every ``.item()``, ``float(t)``, ``bool(t)`` (an ``if`` on a tensor), a tensor passed
where torch wants a number (``add_(x, alpha=t)``), ``.tolist()``, ``.cpu()`` and a boolean-mask
index (``x[mask]``, ``x[mask] = v``: torch calls ``nonzero``, whose size the host must read)
waits for the queued kernels; in an inner loop that stall, not the arithmetic, sets the pace
(the 2026-11-22 H200 run: 2-3% utilisation).  This counts them on any device, the cpu included
(scalar reads as the dispatcher's ``_local_scalar_dense``, boolean masks at the indexing
operations, copies under a ``TorchFunctionMode``), and charges each to the innermost frame of
the project's own code (``models/``, ``proofs_checks/``, ``verify/``) that asked for it: a site
that reads back once per step shows a count near the
step count.  It also counts the tensor operations that are not views (each one kernel launch
or more on a GPU, some 5-10 us of host time each however small the tensor): a tier with
millions of them is bound by launches, not by arithmetic.  Adam and GD are counted with their GPU read-back window (once per 64 steps, where
the cpu reads every step).  It does not time anything; run it on the cpu to find sites before a
GPU session.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# read-backs the dispatcher does not see on the cpu (a copy to the host); a scalar read (item,
# float, bool, a tensor passed where torch wants a number) is aten._local_scalar_dense below
COPIES = {"tolist", "cpu"}
OWN = tuple(os.path.join(ROOT, p) + os.sep for p in ("models", "proofs_checks", "verify"))


# torch's Adam and SGD keep their step counters on the host where they are not fused (on the
# cpu; on cuda Adam is fused and keeps it on the device), so reading one back does not wait
HOST_COUNTERS = tuple(os.path.join("torch", "optim", f) for f in ("adam.py", "sgd.py",
                                                                   "optimizer.py"))


# torch's own wrappers (and this script's modes) between an operation and the code that called it
WRAPPERS = tuple(os.path.join("torch", p) for p in ("_dynamo", "_compile.py", "_ops.py",
                                                     "overrides.py", os.path.join("utils", "_python_dispatch.py")))


def _site(frame) -> str | None:
    """file:line of the innermost frame from ``frame`` out in the project's code (not this
    script), with the torch module between where there is one; None for a read of a host-side
    step counter."""
    while frame is not None and (frame.f_code.co_filename == __file__ or any(
            w in frame.f_code.co_filename for w in WRAPPERS)):
        frame = frame.f_back
    if frame is None:
        return "(outside the project)"
    inner = frame.f_code.co_filename
    if inner.endswith(HOST_COUNTERS):
        return None
    via = "" if inner.startswith(OWN) or "torch" not in inner else \
        " via torch/" + inner.rsplit(os.sep + "torch" + os.sep, 1)[-1]
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(OWN):
            return f"{os.path.relpath(name, ROOT)}:{frame.f_lineno}{via}"
        frame = frame.f_back
    return "(outside the project)"


# operations whose result's size depends on the data: on cuda they read a count back (torch
# calls nonzero inside), so each one waits for the queued kernels like a scalar read
SIZED_BY_DATA = {"nonzero", "masked_select", "unique", "_unique", "_unique2", "unique_consecutive",
                 "unique_dim"}
INDEXING = {"index", "index_put", "index_put_", "_index_put_impl_"}


def _sized_by_data(name: str, args: tuple) -> bool:
    """``nonzero`` and its kin, or indexing with a boolean mask (``x[mask]``, ``x[mask] = v``:
    torch turns the mask into indices with nonzero, which on cuda reads the count back)."""
    if name in SIZED_BY_DATA:
        return True
    if name in INDEXING and len(args) > 1 and isinstance(args[1], (list, tuple)):
        return any(getattr(i, "dtype", None) in (torch.bool, torch.uint8) for i in args[1])
    return False


def counting_modes():
    """Two modes that count, in the ``sites`` Counter they share, read-backs per site: a
    TorchFunctionMode for copies to the host and a TorchDispatchMode for scalar reads, which
    also counts the operations that are not views in ``kernels.kernels``."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    sites: collections.Counter = collections.Counter()

    def charge(frame):
        site = _site(frame)
        if site is not None:
            sites[site] += 1

    class Copies(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in COPIES:
                charge(sys._getframe(1))
            return func(*args, **(kwargs or {}))

    class Kernels(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.kernels = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name == "_local_scalar_dense" or _sized_by_data(name, args):
                charge(sys._getframe(1))
            if name != "_local_scalar_dense" and not func.is_view:
                self.kernels += 1
            return func(*args, **(kwargs or {}))

    return sites, Copies(), Kernels()


def count_one(claim_id: str, budget: str, seed: int) -> dict:
    """One claim's train tier under the counter: total read-backs, steps' sites, verdict."""
    from verify.registry import find
    from verify.runner import check_claim

    import models.trainers as trainers

    as_on_cpu = trainers._sync_every
    # Adam and GD read back once per 64 steps on a GPU, every step on the cpu: count as on a GPU
    trainers._sync_every = lambda params, every: as_on_cpu(params, 64 if every is None else every)
    start = time.perf_counter()
    try:
        sites, copies, kernels = counting_modes()
        with copies, kernels:
            verdict = check_claim(find(claim_id), tiers=("train",), budget=budget,
                                  device="cpu", seed=seed)
    finally:
        trainers._sync_every = as_on_cpu
    return {"claim": claim_id, "read_backs": sum(sites.values()),
            "kernels": kernels.kernels,
            "sites": sites.most_common(), "seconds": round(time.perf_counter() - start, 1),
            "tier": verdict.tiers["train"].status}


def main(argv: list[str] | None = None) -> int:
    from bench.gpu import train_claims

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", default="quick")
    ap.add_argument("--claims", default="", help="comma-separated ids (default: every train tier)")
    ap.add_argument("--top", type=int, default=3, help="sites shown per claim")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="", help="also write every row, with all sites, here")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'claim':24} {'read-backs':>10} {'kernels':>10} {'s':>6}  top sites (count)")
    for claim_id in train_claims([c for c in args.claims.split(",") if c]):
        row = count_one(claim_id, args.budget, args.seed)
        rows.append(row)
        top = ", ".join(f"{s} ({n})" for s, n in row["sites"][:args.top])
        print(f"{claim_id:24} {row['read_backs']:>10} {row['kernels']:>10} {row['seconds']:>6}  "
              f"{top}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
