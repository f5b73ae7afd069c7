#!/usr/bin/env bash
# The roofline's bytes check against Nsight Compute (issue #19's must-show): `addressable profile --ncu 20`
# on resnet50 train (b64), gpt2 train (b8 x 1024) and llama3-8b infer (b8 x 1024, 2 layers, 4 decode
# tokens), on one GPU; at most 7.5 minutes on an H200 (140 s per workload), usually less.
# Each profile runs 1 profiled step with shapes, then re-runs one step of the same workload under ncu
# (addressable/ncu.py: DRAM bytes read and written, L2 bytes written by the kernels' stores, time; FLOPs for
# llama3-8b only, as SASS instrumentation costs replay time), restricted to the top 20 replaceable kernels'
# function names. Writes to $OUT (8 files): summary.txt (per workload: how many of the top 20 are within
# ±20%, every miss, every launch beating the memory roof by >5%), roofline_ncu_<workload>.csv (3: ncu.csv of
# each run), run_<workload>.tgz (3: the run folders: trace.json.gz, ncu_raw.csv, breakdown.json, manifest.json,
# ...; re-check one with `addressable roofline RUN`), run.log.
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
  echo "ncu: $(command -v ncu || echo 'not found')"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 140 python3 -m addressable profile resnet50 --mode train --batch 64 --name resnet50-train $RUN --ncu-bytes-only
  timeout 140 python3 -m addressable profile gpt2 --mode train --batch 8 --seq-len 1024 --name gpt2-train $RUN --ncu-bytes-only
  timeout 140 python3 -m addressable profile llama3-8b --mode infer --batch 8 --seq-len 1024 --option layers=2 \
    --option decode_tokens=4 --name llama3-8b-infer $RUN
  python3 - "$W" "$OUT/summary.txt" <<'PY'
import sys
from pathlib import Path
from addressable.ncu import check_of_run, format_check
w, text = Path(sys.argv[1]), []
for run in ("resnet50-train", "gpt2-train", "llama3-8b-infer"):
    try:
        c = check_of_run(w / run)
        text.append(format_check(c, run) if c else f"{run}: no ncu measurement")
    except Exception as e:  # one workload's failure must not hide the others'
        text.append(f"{run}: check failed: {e}")
Path(sys.argv[2]).write_text("\n\n".join(text) + "\n")
print("\n\n".join(text))
PY
  for r in resnet50-train gpt2-train llama3-8b-infer; do cp "$W/$r/ncu.csv" "$OUT/roofline_ncu_$r.csv" 2>/dev/null; done
} 2>&1 | tee "$OUT/run.log"
for r in resnet50-train gpt2-train llama3-8b-infer; do [ -d "$W/$r" ] && tar czf "$OUT/run_$r.tgz" -C $W "$r"; done
ls -la "$OUT"
