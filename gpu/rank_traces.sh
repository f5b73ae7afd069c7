#!/usr/bin/env bash
# Reproduces docs/multi_gpu.md's rank-traces table (results/h200/rank_traces/): rank traces of two
# 2-GPU jobs, classified as one job. `addressable profile --nproc 2` keeps
# each rank's Kineto trace in <run>/rank<k>/trace.json.gz (distributedInfo.rank set by torch.profiler);
# `addressable classify <run>/rank*/trace.json.gz` then reports the per-rank table on the summed,
# exposed and compute bases, communication exposed / hidden / waiting, and the straggler.
#   1. GPT-2 124M training, DDP, batch 8 x seq 1024 per rank
#   2. ResNet-50 training, DDP, batch 64 per rank, bf16 channels_last
# Needs 2 GPUs (nvidia-h200-x2); < 4 minutes. Run from the repository root:
#   OUT=/path bash gpu/rank_traces.sh
# Writes to $OUT (8 files): {gpt2,resnet50}_ddp.rank{0,1}.json.gz, {gpt2,resnet50}_ddp.classify.{json,txt}.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # multicast always off
export PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:?set OUT}
RUNS=$(mktemp -d)
STEPS=(--warmup 3 --steps 5 --profile-steps 2 --repeats 1)

python3 -c 'import torch; print("torch", torch.__version__, "GPUs:", torch.cuda.device_count(), torch.cuda.get_device_name())'
for job in "gpt2 --batch 8 --seq-len 1024" "resnet50 --batch 64"; do
  set -- $job
  name=$1_ddp
  timeout 110 python3 -m addressable profile "$@" --mode train --device cuda --nproc 2 "${STEPS[@]}" \
    --out "$RUNS" --name "$name" > "$RUNS/$name.profile.txt"
  for r in 0 1; do cp "$RUNS/$name/rank$r/trace.json.gz" "$OUT/$name.rank$r.json.gz"; done
  python3 -m addressable classify "$OUT/$name.rank0.json.gz" "$OUT/$name.rank1.json.gz" -j 2 --json \
    > "$OUT/$name.classify.json"
  python3 -m addressable classify "$OUT/$name.rank0.json.gz" "$OUT/$name.rank1.json.gz" -j 2 \
    | tee "$OUT/$name.classify.txt"
done
ls -la "$OUT"
