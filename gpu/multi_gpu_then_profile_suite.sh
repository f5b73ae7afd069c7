#!/usr/bin/env bash
# Reproduces docs/multi_gpu.md's and docs/results.md's runs in one device call on a 2-GPU H200:
# the multi-GPU runs (both GPUs, gpu/multi_gpu.sh), then the single-GPU profile suite (gpu/profile_suite.py)
# on GPU 0 with nothing else running. Results come back as $OUT/results.tgz.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
R=/tmp/res; rm -rf $R; mkdir -p $R/runs
OUT_RUNS=$R/runs timeout ${MULTI_BUDGET:-150} bash gpu/multi_gpu.sh > $R/multi_gpu.log 2>&1
CUDA_VISIBLE_DEVICES=0 timeout ${SUITE_BUDGET:-380} python3 gpu/profile_suite.py $R/runs > $R/profile.log 2>&1
find $R/runs -name 'trace.json.gz' -size +3M -delete 2>/dev/null
tar czf $OUT/results.tgz -C /tmp res
tail -n 30 $R/multi_gpu.log; tail -n 25 $R/profile.log
