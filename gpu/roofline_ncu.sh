#!/usr/bin/env bash
# Reproduces docs/roofline.md's Nsight Compute check (results/h200/roofline/ncu/): the roofline's bytes
# against Nsight Compute. `addressable profile --ncu 20`
# on resnet50 train (b64), gpt2 train (b8 x 1024) and llama3-8b infer (b8 x 1024, 2 layers, 4 decode
# tokens), on one GPU; at most 7 minutes on an H200 (caps 135 + 150 + 115 s), usually about 4.
# Each profile runs 1 profiled step with shapes, then re-runs one step of the same workload under ncu
# (addressable/capture/ncu.py runs it, addressable/roofline/ncu_check.py checks it: DRAM bytes read and written,
# L2 bytes written by the kernels' stores, time; FLOPs for
# llama3-8b only, as SASS instrumentation costs replay time), restricted to the top 20 replaceable kernels'
# function names and to the first K launches of each launch configuration (function base name, grid, block),
# K the smallest that reaches every top-20 kernel within the launch budget (450 launches, 150 with FLOPs;
# the 23:27 run of 30 Nov used K=2 and missed most elementwise kernels). Writes to $OUT (8 files):
# summary.txt (per workload: every top-20 kernel with its status, launches measured, est/ncu bytes; every
# launch beating the memory roof by >5%), roofline_ncu_<workload>.csv (3: ncu.csv of each run),
# run_<workload>.tgz (3: the run folders: trace.json.gz, ncu_raw.csv, breakdown.json, manifest.json, ...;
# re-check one with `addressable roofline RUN`), run.log.
# Usage (repo root, on the device): OUT=/path bash gpu/roofline_ncu.sh
set -u
OUT=${OUT:-/tmp/roofline_ncu}; mkdir -p "$OUT"; W=/tmp/roofline_ncu_runs; rm -rf $W; mkdir -p $W
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
if ls .whl/*.whl >/dev/null 2>&1; then  # packages the GPU image lacks (orjson, ...), carried as wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
RUN="--warmup 3 --steps 3 --profile-steps 1 --repeats 1 --budget inf --force --out $W --ncu 20"
{
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown); ncu: $(command -v ncu || echo 'not found')"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 135 python3 -m addressable profile resnet50 --mode train --batch 64 --name resnet50-train $RUN --ncu-bytes-only
  timeout 150 python3 -m addressable profile gpt2 --mode train --batch 8 --seq-len 1024 --name gpt2-train $RUN --ncu-bytes-only
  timeout 115 python3 -m addressable profile llama3-8b --mode infer --batch 8 --seq-len 1024 --option layers=2 \
    --option decode_tokens=4 --name llama3-8b-infer $RUN
  python3 - "$W" "$OUT/summary.txt" <<'PY'
import sys
from pathlib import Path
from addressable.roofline.ncu_check import STATUS_LEGEND, TOLERANCE, check_of_run, format_check
w, text = Path(sys.argv[1]), []
text.append(f"Estimated bytes (addressable/roofline/op_models.py) against Nsight Compute's DRAM reads + bytes written, per "
            f"top-20 replaceable kernel, summed over its measured launches; tolerance ±{TOLERANCE:.0%}.\n"
            f"Statuses: {STATUS_LEGEND}.\nlaunches: measured/in the step; est/ncu: estimated over measured bytes; "
            "step us: the kernel's time in the profiled step. Re-check a run: tar xzf run_W.tgz; addressable roofline W")
for run in ("resnet50-train", "gpt2-train", "llama3-8b-infer"):
    try:
        c = check_of_run(w / run)
        text.append(format_check(c, run, all_kernels=True) if c else f"{run}: no ncu measurement (see run.log)")
    except Exception as e:  # one workload's failure must not hide the others'
        text.append(f"{run}: check failed: {e}")
Path(sys.argv[2]).write_text("\n\n".join(text) + "\n")
print("\n\n".join(text))
PY
  for r in resnet50-train gpt2-train llama3-8b-infer; do cp "$W/$r/ncu.csv" "$OUT/roofline_ncu_$r.csv" 2>/dev/null; done
} 2>&1 | tee "$OUT/run.log"
for r in resnet50-train gpt2-train llama3-8b-infer; do [ -d "$W/$r" ] && tar czf "$OUT/run_$r.tgz" -C $W "$r"; done
ls -la "$OUT"
