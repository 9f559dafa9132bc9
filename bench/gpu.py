"""Every train tier at the papers' sizes on one GPU: seconds, GPU utilisation, verdict.

    python bench/gpu.py [--budget paper] [--device cuda] [--limit 60] [--claims ID,...]
                        [--lanes 1] [--deadline SECONDS] [--json FILE]

Claims run one after another in one process (the CUDA context and the compiled losses are
made once), each under ``--limit`` seconds (the issue's target is 60 s per train tier at
``--budget paper``; a tier that reaches the limit is stopped and shown as "> limit").
``--lanes K`` splits the claims round-robin over K such processes running at once (when the
device time is short): their tiers then share the GPU, which the table says.  The
utilisation is the GPU's, sampled every 0.2 s while the tier ran (``gpu_use`` in the tier's
evidence: NVML through torch, or nvidia-smi), so with lanes > 1 it counts the other lanes' work.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def train_claims(ids: list[str] | None) -> list[str]:
    """The claims with a train tier, in registry order (or those named, in that order)."""
    from verify.registry import all_claims

    have = [c.id for c in all_claims() if "train" in c.checks]
    if not ids:
        return have
    unknown = [i for i in ids if i not in have]
    if unknown:
        raise SystemExit(f"no train tier: {', '.join(unknown)}")
    return ids


def interleave(ids: list[str]) -> list[str]:
    """The first claim of each paper, then the second of each, ... (registry order within)."""
    place: dict[str, int] = {}
    keyed = []
    for i in ids:
        paper = i.split(".")[0]
        keyed.append((place.get(paper, 0), len(place) if paper not in place else
                      list(place).index(paper), i))
        place[paper] = place.get(paper, 0) + 1
    return [i for *_, i in sorted(keyed)]


def run_one(claim_id: str, budget: str, device: str, limit: float, seed: int) -> dict:
    """One claim's train tier under a time limit: the row of the table."""
    from verify.registry import find
    from verify.runner import check_claim

    start = time.perf_counter()
    verdict = check_claim(find(claim_id), tiers=("train",), budget=budget, device=device,
                          seed=seed, timeout=limit)
    tier = verdict.tiers["train"]
    use = tier.evidence.get("gpu_use", {}) if isinstance(tier.evidence, dict) else {}
    return {"claim": claim_id, "seconds": round(tier.seconds, 2),
            "wall": round(time.perf_counter() - start, 2),
            "timed_out": "timed out" in (tier.reason or ""),
            "tier": tier.status, "verdict": verdict.verdict,
            "utilisation_mean": use.get("utilisation_mean_percent"),
            "utilisation_max": use.get("utilisation_max_percent"),
            "peak_memory_mib": use.get("peak_memory_mib"),
            "reason": (tier.reason or "")[:200]}


def run_lane(ids: list[str], args) -> list[dict]:
    rows = []
    for claim_id in ids:
        if args.stop_at and time.time() >= args.stop_at:  # past the deadline: start no more
            continue
        row = run_one(claim_id, args.budget, args.device, args.limit, args.seed)
        if not args.quiet:
            print(_line(row), flush=True)
        rows.append(row)
        if args.json:  # as rows arrive: a lane stopped from outside keeps what it finished
            _write(args, rows)
    return rows


def run_lanes(ids: list[str], args) -> list[dict]:
    """K processes, each a lane of claims; rows returned in registry order."""
    lanes = [ids[k::args.lanes] for k in range(args.lanes)]
    procs, outs = [], []
    for lane in lanes:
        if not lane:
            continue
        out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
        cmd = [sys.executable, os.path.abspath(__file__), "--budget", args.budget, "--device",
               args.device, "--limit", str(args.limit), "--seed", str(args.seed),
               "--claims", ",".join(lane), "--json", out, "--quiet",
               "--stop-at", str(args.stop_at)]
        procs.append(subprocess.Popen(cmd))
        outs.append(out)
    for p in procs:
        p.wait()
    by_id = {}
    for out in outs:
        try:
            with open(out) as fh:
                by_id.update({r["claim"]: r for r in json.load(fh)["rows"]})
        except (OSError, ValueError):
            pass
    return [by_id.get(i, {"claim": i, "tier": "not run", "verdict": "-", "seconds": None})
            for i in ids]


def _not_run(ids: list[str], rows: list[dict]) -> list[dict]:
    done = {r["claim"] for r in rows}
    return rows + [{"claim": i, "tier": "not run", "verdict": "-", "seconds": None}
                   for i in ids if i not in done]


def _line(row: dict) -> str:
    secs = row.get("seconds")
    shown = "-" if secs is None else (f"> {secs:.0f}" if row.get("timed_out") else f"{secs:.1f}")
    util = row.get("utilisation_mean")
    return (f"{row['claim']:<24} {shown:>8} {('-' if util is None else f'{util:.0f}%'):>6} "
            f"{str(row.get('utilisation_max') or '-'):>5} {str(row.get('peak_memory_mib') or '-'):>9}"
            f"  {row.get('tier', '-'):<13} {row.get('verdict', '-')}")


def header(args) -> str:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"# bench/gpu.py  {dt.datetime.now().isoformat(timespec='seconds')}  {platform.node()}  "
            f"python {platform.python_version()}  torch {torch.__version__}  {gpu}  "
            f"cpus {os.cpu_count()}  budget {args.budget}  device {args.device}  limit {args.limit:g} s"
            f"  lanes {args.lanes}\n"
            f"{'claim':<24} {'seconds':>8} {'util':>6} {'max':>5} {'peak MiB':>9}  "
            f"{'train tier':<13} verdict")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--budget", default="paper")
    p.add_argument("--device", default="cuda")
    p.add_argument("--limit", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--claims", default="")
    p.add_argument("--skip", default="", help="claims left out (run elsewhere)")
    p.add_argument("--lanes", type=int, default=1)
    p.add_argument("--json", default="")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--deadline", type=float, default=0.0,
                   help="start no claim after this many seconds (0: none); a claim started "
                        "before it still gets its --limit")
    p.add_argument("--stop-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.deadline and not args.stop_at:
        args.stop_at = time.time() + args.deadline
    ids = [i for i in train_claims([c for c in args.claims.split(",") if c])
           if i not in args.skip.split(",")]
    if not args.claims:  # papers in turn: a deadline then cuts every paper, not the last ones
        ids = interleave(ids)
    if not args.quiet:
        print(header(args), flush=True)
    start = time.perf_counter()
    rows = run_lane(ids, args) if args.lanes <= 1 else run_lanes(ids, args)
    if args.lanes <= 1:
        rows = _not_run(ids, rows)
    if args.lanes > 1 and not args.quiet:
        for row in rows:
            print(_line(row))
    if not args.quiet:
        done = [r for r in rows if r.get("seconds") is not None]
        under = sum(1 for r in done if not r.get("timed_out") and r["seconds"] <= 60)
        print(f"# {len(done)} of {len(rows)} tiers ran; {under} finished within 60 s; "
              f"wall {time.perf_counter() - start:.0f} s")
    if args.json:
        _write(args, rows)
    return 0


def _write(args, rows: list[dict]) -> None:
    with open(args.json, "w") as fh:
        json.dump({"budget": args.budget, "device": args.device, "limit": args.limit,
                   "lanes": args.lanes, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    raise SystemExit(main())
