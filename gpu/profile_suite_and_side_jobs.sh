#!/usr/bin/env bash
# Reproduces docs/results.md's runs and, beside them, the checks named in $SIDE, in one device call on a
# 2-GPU H200 machine. GPU 0 profiles the workloads and sweeps
# (gpu/profile_suite.py); GPU 1 runs the side jobs named in $SIDE, in order:
#   validate  gpu/validate_projection.py (real kernel swaps vs the Amdahl projection)
#   verify    gpu/verify_triton.sh (Triton candidates, cheat zoo, audit)
#   baselines gpu/dlrm_bench_baselines.sh (DLRM-Bench eager times)
#   candidates gpu/dlrm_bench_candidates.sh (DLRM-Bench Triton candidates through verify)
# Everything lands in /tmp/res and comes back as $OUT/results.tgz.
# Usage: SIDE="candidates validate" BUDGET=500 bash gpu/profile_suite_and_side_jobs.sh
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
R=/tmp/res; rm -rf $R; mkdir -p $R/side
BUDGET=${BUDGET:-500}
SIDE=${SIDE:-validate verify baselines candidates}
declare -A JOB=([validate]="python3 gpu/validate_projection.py" [verify]="bash gpu/verify_triton.sh"
                [baselines]="bash gpu/dlrm_bench_baselines.sh" [candidates]="bash gpu/dlrm_bench_candidates.sh")
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $R/gpus.txt 2>&1
(CUDA_VISIBLE_DEVICES=0 timeout $BUDGET python3 gpu/profile_suite.py $R/runs > $R/profile.log 2>&1) &
(
  export CUDA_VISIBLE_DEVICES=1
  end=$((SECONDS + BUDGET))
  for job in $SIDE; do
    left=$((end - SECONDS)); [ $left -gt 10 ] || break
    echo "== $job ($left s left)"
    OUT=$R/side/$job timeout $left ${JOB[$job]} > $R/side/$job.log 2>&1
    echo "   exit $?"
  done
) > $R/side.log 2>&1 &
wait
find $R/runs -name 'trace.json.gz' -size +3M -delete 2>/dev/null
tar czf $OUT/results.tgz -C /tmp res
cat $R/side.log; tail -n 25 $R/profile.log; for f in $R/side/*.log; do echo "== $f"; tail -n 12 "$f"; done
