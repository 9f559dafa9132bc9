"""--jobs 2 against --jobs 1, side by side in one run, on this machine.

    python bench/parallel.py [--jobs 2] [--mutate] [--budget quick]

Times ``icl-verify check --all --budget quick`` with one process and with ``--jobs N``, then
(with ``--mutate``) ``icl-verify mutate --paper xie2025`` the same two ways, each as a fresh
command (interpreter start and imports included), and prints the ratios; it also checks that
the verdicts (and the mutation outcomes) are the same.  Results go into bench/RESULTS.md with
the machine named.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time


def timed(args: list[str]) -> tuple[float, object]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True,
                          text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"icl-verify {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return seconds, json.loads(done.stdout)


def verdicts(out) -> list[tuple[str, str]]:
    return [(v["claim"], v["verdict"]) for v in out]


def outcomes(out) -> list[tuple[str, str, str]]:
    return [(c["claim"], o["text"], o["status"]) for c in out["claims"]
            for f in c["formulas"] for o in f["mutant_results"]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--budget", default="quick")
    p.add_argument("--mutate", action="store_true", help="also time mutate --paper xie2025")
    a = p.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}")
    rows = []
    check = ["check", "--all", "--budget", a.budget, "--json"]
    t1, o1 = timed(check)
    tn, on = timed([*check, "--jobs", str(a.jobs)])
    rows.append((f"check --all --budget {a.budget}", t1, tn, verdicts(o1) == verdicts(on)))
    if a.mutate:
        mutate = ["mutate", "--paper", "xie2025", "--json"]
        m1, q1 = timed(mutate)
        mn, qn = timed([*mutate, "--jobs", str(a.jobs)])
        rows.append(("mutate --paper xie2025", m1, mn, outcomes(q1) == outcomes(qn)))
    print(f"{'command':34} {'--jobs 1':>9} {f'--jobs {a.jobs}':>9} {'ratio':>6}  same results")
    for name, one, many, same in rows:
        print(f"{name:34} {one:8.1f}s {many:8.1f}s {one / many:6.2f}  {same}")


if __name__ == "__main__":
    main()
