#!/usr/bin/env bash
# One device call on a 2-GPU H200 machine: GPU 0 profiles the workloads and sweeps
# (gpu/profile_suite.py); GPU 1 runs the projection validation, the Triton verifications and
# DLRM-Bench. Everything lands in /tmp/res and comes back as $OUT/results.tgz.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
R=/tmp/res; mkdir -p $R/side
BUDGET=${BUDGET:-500}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $R/gpus.txt 2>&1
(CUDA_VISIBLE_DEVICES=0 timeout $BUDGET python3 gpu/profile_suite.py $R/runs > $R/profile.log 2>&1) &
(
  export CUDA_VISIBLE_DEVICES=1
  cd "$PWD"
  OUT=$R/side timeout 200 python3 gpu/validate_projection.py > $R/side/validate.log 2>&1
  OUT=$R/side/verify timeout 150 bash gpu/verify_triton.sh > $R/side/verify.log 2>&1
  OUT=$R/side/bench timeout 100 bash gpu/bench_baselines.sh > $R/side/bench_baselines.log 2>&1
  OUT=$R/side/bench timeout $((BUDGET - 200 - 150 - 100 - 10)) bash gpu/bench_candidates.sh > $R/side/bench_candidates.log 2>&1
) &
wait
find $R/runs -name 'trace.json.gz' -size +3M -delete 2>/dev/null
tar czf $OUT/results.tgz -C /tmp res
ls -la $OUT; tail -30 $R/profile.log; tail -5 $R/side/*.log
