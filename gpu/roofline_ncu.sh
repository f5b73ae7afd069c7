#!/usr/bin/env bash
# Estimated vs Nsight Compute DRAM bytes for the top 20 replaceable kernels of resnet50 train,
# gpt2 train and llama3-8b infer (2 layers, 4 decode tokens), on one GPU; about 4 minutes on an H200.
# Per workload: one profiled step with record_shapes (addressable.measure.profiled), one step under
#   ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
#       --nvtx --nvtx-include roofline_step/
# then gpu/roofline_ncu.py matches the kernels by order and name. Writes to $OUT (7 files):
#   peaks.json (addressable calibrate), roofline_ncu_<workload>.csv (3), summary.txt (every miss,
#   and every kernel whose measured bandwidth beats the calibrated peak by >5%), ncu_logs.tgz, run.log
# Usage (repo root, on the device): OUT=/path bash gpu/roofline_ncu.sh
set -u
OUT=${OUT:-/tmp/roofline_ncu}; mkdir -p "$OUT"; W=/tmp/roofline_work; rm -rf $W; mkdir -p $W
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then  # packages the GPU image lacks (orjson, ...), carried as wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
{
  echo "ncu: ${NCU:-not found}"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 60 python3 -m addressable calibrate --peaks "$OUT/peaks.json" || echo "calibrate failed"
  for w in resnet50-train gpt2-train llama3-8b-infer; do
    echo "== $w"
    timeout 60 python3 gpu/roofline_ncu.py trace $w $W || { echo "trace failed: $w"; continue; }
    [ -n "$NCU" ] || continue
    timeout 100 "$NCU" --clock-control none --print-units base --csv --target-processes all \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
      --nvtx --nvtx-include roofline_step/ --log-file $W/$w.ncu.csv \
      python3 gpu/roofline_ncu.py step $w || echo "ncu exited $?: $w"
    cp "$OUT/peaks.json" $W/ 2>/dev/null
    python3 gpu/roofline_ncu.py compare $w $W && cp $W/roofline_ncu_$w.csv "$OUT/"
  done
  cp $W/summary.txt "$OUT/" 2>/dev/null
} 2>&1 | tee "$OUT/run.log"
tar czf "$OUT/ncu_logs.tgz" -C $W $(cd $W && ls *.ncu.csv 2>/dev/null) 2>/dev/null
