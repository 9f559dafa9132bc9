"""Determinism: the same command with the same seed prints the same JSON, timings aside.

Each run is a fresh interpreter with a different PYTHONHASHSEED, so set and dict orders that
depend on string hashing would show up as differences.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# every wall-clock quantity in the output is under one of these keys (gpu_use: utilisation
# samples of the GPU while a tier ran)
TIME_KEYS = {"seconds", "gpu_use"}


def strip_times(value):
    if isinstance(value, dict):
        return {k: strip_times(v) for k, v in value.items() if k not in TIME_KEYS}
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


def first_difference(a, b, path="$"):
    if type(a) is not type(b):
        return f"{path}: {a!r:.80} vs {b!r:.80}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in one run"
            found = first_difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
    elif isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: lengths {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
    elif a != b:
        return f"{path}: {a!r:.80} vs {b!r:.80}"
    return ""


# runs several CLI commands in one interpreter (one import of torch and sympy per run)
_RUNNER = """
import contextlib, io, json, sys
from verify.cli import main
outs = []
for argv in json.loads(sys.argv[1]):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(argv)
    assert code in (0, 1), (argv, code)
    outs.append(json.loads(buf.getvalue()))
print(json.dumps(outs))
"""


def run_json(commands, hash_seeds):
    """The commands' JSON outputs, once per hash seed: the runs are side by side (CI has 2 cores)."""
    procs = []
    for h in hash_seeds:
        env = {**os.environ, "PYTHONHASHSEED": str(h),
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        procs.append(subprocess.Popen([sys.executable, "-c", _RUNNER, json.dumps(commands)],
                                      cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=1800)
            assert proc.returncode == 0, err[-3000:]
            outs.append(json.loads(out))
    finally:
        for proc in procs:
            proc.kill()
    return outs


def assert_deterministic(commands):
    first, second = (strip_times(out) for out in run_json(commands, (1, 2)))
    assert first == second, first_difference(first, second)
    return first


@pytest.mark.long_pole
def test_check_and_mutate_json_are_deterministic():
    check, mutate = assert_deterministic([
        # the exact tiers of one paper (bounded cost); the slow test runs every claim and tier
        ["check", "--paper", "ahn2023", "--tier", "symbolic,numeric", "--budget", "quick",
         "--seed", "3", "--device", "cpu", "--json"],
        ["mutate", "ahn2023.lemma2", "--formula", "prediction", "--tier", "numeric",
         "--seed", "3", "--json"],
    ])
    assert check and all(v["seed"] == 3 for v in check)
    assert mutate["totals"]["mutants"] > 0


@pytest.mark.slow
def test_check_json_with_training_is_deterministic():
    (out,) = assert_deterministic([["check", "--all", "--budget", "quick", "--seed", "3",
                                    "--device", "cpu", "--json"]])
    assert all("train" in v["tiers"] for v in out)


def test_a_different_seed_changes_the_instance():
    # the seed is not decorative: it picks the instance (and the Monte Carlo draws)
    from verify.registry import find
    from verify.runner import check_claim

    a, b = (check_claim(find("ahn2023.lemma2"), tiers=("numeric",), budget="quick", seed=s)
            for s in (0, 1))
    ia = a.tiers["numeric"].evidence["identity_float64"]["first_draw"]
    ib = b.tiers["numeric"].evidence["identity_float64"]["first_draw"]
    assert ia != ib


# train tiers whose prompts are drawn on the device (``Runtime.data_generator``)
DEVICE_DRAWN = ["ahn2023.thm1", "gatmiry2024.thm3_2", "xie2025.thm4", "yang2024.fig2"]


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_runs_repeat_and_agree_with_cpu():
    """On cuda a seed draws other prompts than on cpu (a cuda generator): the same seed on the
    same device prints the same JSON, and cpu and cuda reach the same verdicts."""
    base = ["check", *DEVICE_DRAWN, "--tier", "train", "--budget", "quick", "--seed", "0", "--json"]
    cuda = assert_deterministic([base + ["--device", "cuda"]])[0]
    cpu = run_json([base + ["--device", "cpu"]], (1,))[0][0]
    summary = [(v["claim"], v["verdict"], v["tiers"]["train"]["status"]) for v in cuda]
    assert summary == [(v["claim"], v["verdict"], v["tiers"]["train"]["status"]) for v in cpu]
