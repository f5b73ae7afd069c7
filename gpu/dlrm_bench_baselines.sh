#!/usr/bin/env bash
# Reproduces docs/dlrm_bench.md's eager baselines (results/h200/dlrm_bench/bench_baselines.*). DLRM-Bench baselines on the GPU: eager PyTorch time of every problem's Model at full (MLPerf
# DLRM-DCNv2) sizes -> $OUT/bench_baselines.csv (problem, category, device, small, ref_ms,
# ref_ms_q1, ref_ms_q3, runs). Run from the repository root; needs no pip install. < 3 minutes.
#
# Timing is `addressable dlrm-bench time`, which calls addressable.verification.runner._time_models: the function
# `addressable verify` times with (CUDA events, 256 MB L2 flush before each run, median of up to
# 50 runs after 5 warm-ups), so these ref_ms match verify's ref_ms for the same problem.
set -euo pipefail
OUT=${OUT:-outputs/dlrm-bench-gpu}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

python3 -c 'import torch; print("torch", torch.__version__, "on", torch.cuda.get_device_name())' | tee "$OUT/bench_env.txt"
python3 -m addressable dlrm-bench list --json > "$OUT/bench_problems.json"
python3 -m addressable dlrm-bench time --device cuda --warmup 5 --calls 50 --budget 8 \
  --csv "$OUT/bench_baselines.csv" | tee "$OUT/bench_baselines.txt"
