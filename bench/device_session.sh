#!/usr/bin/env bash
# The GPU runs recorded in bench/RESULTS.md, in one call of the device machine (H200, no network):
#   bash bench/device_session.sh STAGE OUTDIR
# STAGE: quick  - every claim's train tier at --budget quick on cuda, one process per paper
#        paper  - the train tier at --budget paper on cuda (the papers' experiment sizes);
#                 PER_CLAIM=1 runs one process per claim, all at once
#        bench  - bench/train.py --device cuda, default and paper sizes
#        gpu    - bench/gpu.py: every train tier at --budget paper on cuda, one at a time per lane
#                 (LANES processes at once, CLAIM_LIMIT s each; WITH=ID,ID beside them, with
#                 WITH_TIMEOUT s), then the cuda determinism test
#                 (same seed: identical JSON; cpu vs cuda: the same verdicts), tests/models
#                 and bench/eq13_onS.py (Figs. 3-4's polish step; its conditional losses
#                 and its on-S term two ways each)
#        tests  - the default test suite under this machine's python/torch (auto device = cuda),
#                 SHARDS processes side by side (not run on a device yet)
# Each stage writes its logs into OUTDIR; the caller tars OUTDIR into one file (the device tool
# returns at most 8).
set -u
stage=$1; out=$2; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1
python3 - <<'EOF' 2>&1
import platform, sys, torch
print(platform.node(), sys.version.split()[0], "torch", torch.__version__,
      "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
EOF
nvidia-smi -L 2>&1; nproc
papers="ahn2023 gatmiry2024 xie2025 yang2024"
train_ids() { python3 -m verify list --paper "$1" --json | python3 -c "
import json, sys; print(' '.join(c['id'] for c in json.load(sys.stdin) if 'train' in c['tiers']))"; }
case $stage in
  quick|paper)
    # LABEL IDS...: the train tiers of IDS into $out/$stage-LABEL.json, then rc and wall time
    timed() {
      local label=$1 start; shift; start=$(date +%s.%N)
      timeout "${LIMIT:-240}" python3 -m verify check "$@" --tier train --budget "$stage" \
        --device "${DEVICE:-cuda}" --seed 0 --json >"$out/$stage-$label.json" 2>"$out/$stage-$label.err"
      echo "$label rc $? wall $(python3 -c "import time; print(round(time.time() - $start, 1))") s" \
        >>"$out/walls.txt"
    }
    for p in $papers; do
      if [ -n "${PER_CLAIM:-}" ]; then  # one process per claim, all at once
        for id in $(train_ids "$p"); do timed "$id" "$id" & done
      else
        timed "$p" $(train_ids "$p") &
      fi
    done
    wait ;;
  bench)
    timeout "${LIMIT:-500}" python3 bench/train.py --device cuda --seconds "${SECONDS_PER_METHOD:-20}" \
      ${PAPER_SIZES:+--paper-sizes} ${DTYPE:+--dtype $DTYPE} >"$out/bench${TAG:-}.txt" 2>&1
    echo "rc $?" >>"$out/bench${TAG:-}.txt" ;;
  gpu)
    if [ -n "${WITH:-}" ]; then  # WITH: claims (comma-separated) run beside the lanes, longer
      timeout "${WITH_LIMIT:-330}" python3 -m verify check ${WITH//,/ } --tier train \
        --budget "${BUDGET:-paper}" --device "${DEVICE:-cuda}" --seed 0 --json \
        --timeout "${WITH_TIMEOUT:-300}" >"$out/with.json" 2>"$out/with.err" &
    fi
    timeout "${LIMIT:-420}" python3 bench/gpu.py --budget "${BUDGET:-paper}" --device "${DEVICE:-cuda}" \
      --limit "${CLAIM_LIMIT:-60}" --lanes "${LANES:-1}" --deadline "${DEADLINE:-0}" \
      --skip "${WITH:-}" --json "$out/gpu.json" >"$out/gpu.txt" 2>"$out/gpu.err"
    echo "rc $?" >>"$out/gpu.txt"
    wait
    # same seed, same device: identical JSON; cpu vs cuda: the same verdicts (and the
    # device-agnostic unit tests of the samplers and trainers, here on cuda)
    timeout 200 python3 -m pytest -p verify.pytest_plugin -q -p no:cacheprovider \
      tests/verify/test_determinism.py::test_cuda_runs_repeat_and_agree_with_cpu \
      tests/models >"$out/same.txt" 2>&1
    echo "rc $?" >>"$out/same.txt"
    # ahn2023 Figs. 3-4's polish step part by part, its on-S term with and without eigvalsh
    timeout 120 python3 bench/eq13_onS.py --device "${DEVICE:-cuda}" >"$out/eq13_onS.txt" 2>&1
    echo "rc $?" >>"$out/eq13_onS.txt" ;;
  tests)
    # pytest-xdist may be missing there: the collected node ids go round-robin into SHARDS processes. The
    # image is said to hold torch, sympy, scipy, mpmath, hypothesis, matplotlib (no pytest, jsonschema,
    # jinja2, tqdm named); pip-downloaded wheels (cp312, x86-64) may be
    # carried in .devwheels: pip download -d .devwheels --only-binary=:all: --python-version 3.12
    #   --platform manylinux2014_x86_64 pytest jsonschema jinja2 tqdm   (ignored in .git/info/exclude)
    if [ -d .devwheels ]; then
      python3 -m pip install -q --no-index --no-deps --target /tmp/pyx .devwheels/*.whl >"$out/pip.txt" 2>&1
      export PYTHONPATH=.:/tmp/pyx
    fi
    export OMP_NUM_THREADS=1
    python3 -m pytest -p verify.pytest_plugin --collect-only >"$out/collected.txt" 2>&1
    grep '::' "$out/collected.txt" >"$out/ids.txt"
    n=${SHARDS:-14}
    for i in $(seq 0 $((n - 1))); do
      awk -v n="$n" -v i="$i" 'NR % n == i' "$out/ids.txt" >"$out/ids-$i.txt"
      (mapfile -t ids <"$out/ids-$i.txt"  # node ids may hold spaces
       timeout "${LIMIT:-500}" python3 -m pytest -p verify.pytest_plugin --no-header "${ids[@]}" \
         >"$out/tests-$i.txt" 2>&1) &
    done
    wait
    tail -n 2 "$out"/tests-*.txt >"$out/tests.txt" ;;
  *) echo "unknown stage $stage" >&2; exit 2 ;;
esac
