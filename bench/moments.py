"""Benchmark: exact E tr W^k by the moment kernel against pairing enumeration, in one run.

    python bench/moments.py [--ks 8,10,12,16,20,24] [--baseline-budget 60] [--prefix 20]

For each k it prints the kernel's time for the exact polynomial E tr W^k in (n, p_1..p_k) (plan,
passes and exact integers; caches cleared first), the time to build the sympy expression from it,
the pairing-enumeration baseline (``moments.enumerate``: every one of the (2k-1)!! Wick pairings)
where it finishes within ``--baseline-budget`` seconds, and otherwise, at k = 10, its measured time
per pairing on a ``--prefix``-second prefix times (2k-1)!! (marked ``~``), the ratio, and the
number of output monomials, sum over partitions rho of k of (k + 1 - len(rho)) (the least work an
exact method must do), next to the number the kernel produced.

Targets (issue 3): E tr W^20 under 1 s and E tr W^24 under 5 s on a 2-core machine; at k = 10 at
least 10,000 times faster than the baseline.  Timings depend on the machine's load (printed).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from moments import enumerate as enum  # noqa: E402
from moments import partitions, wishart  # noqa: E402

TARGETS = {20: 1.0, 24: 5.0}
RATIO_K, RATIO_TARGET = 10, 10_000


def _clear_caches() -> None:
    for fn in (wishart.moment, wishart.plan, wishart._blocks):
        fn.cache_clear()


def kernel_time(k: int) -> tuple[float, float, float, wishart.WishartPolynomial]:
    """(wall seconds, cpu seconds, sympy seconds, result) for exact E tr W^k."""
    _clear_caches()
    w0, c0 = time.perf_counter(), time.process_time()
    poly = wishart.moment(k, (), trace=True)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    s0 = time.perf_counter()
    poly.as_expr()
    return wall, cpu, time.perf_counter() - s0, poly


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", default="8,10,12,16,20,24")
    ap.add_argument("--baseline-budget", type=float, default=60.0,
                    help="run the enumeration to completion when it fits in this many seconds")
    ap.add_argument("--prefix", type=float, default=20.0,
                    help="seconds of enumeration used to extrapolate at k = 10")
    ap.add_argument("--no-sympy", action="store_true", help="skip building sympy expressions")
    args = ap.parse_args(argv)
    ks = [int(x) for x in args.ks.split(",") if x.strip()]
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores (shared machine: timings vary with load)")
    header = (f"{'k':>3} {'kernel s':>9} {'cpu s':>7} {'sympy s':>8} {'baseline s':>12} "
              f"{'ratio':>10} {'monomials':>10} {'produced':>9} {'pairings':>22}")
    print(header)
    print("-" * len(header))
    failures = []
    for k in ks:
        wall, cpu, sym, poly = kernel_time(k)
        if args.no_sympy:
            sym = float("nan")
        pairings = enum.pairings(k)
        base, base_txt = None, "-"
        # the enumeration costs about 8 microseconds per pairing here: only try where it can finish
        if pairings * 8e-6 <= args.baseline_budget * 2:
            seconds, complete, _ = enum.timed_trace_moment(k, args.baseline_budget)
            if complete:
                base, base_txt = seconds, f"{seconds:.2f}"
        if base is None and k == RATIO_K:
            seconds, complete, done = enum.timed_trace_moment(k, args.prefix)
            base = seconds
            base_txt = f"{seconds:.2f}" if complete else f"~{seconds:.0f}"
        ratio = f"{base / wall:,.0f}" if base else "-"
        expected = partitions.output_monomials(k)
        print(f"{k:>3} {wall:>9.3f} {cpu:>7.3f} {sym:>8.2f} {base_txt:>12} {ratio:>10} "
              f"{expected:>10} {len(poly):>9} {pairings:>22,}", flush=True)
        if len(poly) != expected:
            failures.append(f"k={k}: {len(poly)} monomials, expected {expected}")
        if k in TARGETS and wall >= TARGETS[k]:
            failures.append(f"k={k}: {wall:.2f} s >= target {TARGETS[k]} s")
        if k == RATIO_K and base is not None and base / wall < RATIO_TARGET:
            failures.append(f"k={k}: only {base / wall:,.0f} times faster than enumeration")
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("~ : extrapolated from a measured prefix of the enumeration "
          "(time per pairing x (2k-1)!!)")
    if failures:
        print("targets missed: " + "; ".join(failures))
        return 1
    print("targets met: E tr W^20 < 1 s, E tr W^24 < 5 s, >= 10,000x at k = 10 "
          "(for the ks run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
