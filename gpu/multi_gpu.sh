#!/usr/bin/env bash
# Reproduces docs/multi_gpu.md's `profile --nproc 2` table on a 2-GPU H200 machine: `addressable profile --nproc 2`
# re-launches itself under torchrun (NCCL, one GPU per rank) and writes <run>/rank0/, <run>/rank1/
# and rank 0's aggregate (per-rank communication exposed/overlapped, per-category share across
# ranks on the summed and exposed bases, straggler signal) into <run>/breakdown.json.
#   1. GPT-2 124M training, DDP, batch 8 x seq 1024 per rank
#   2. Llama 3 8B shape cut to 8 decoder layers (~2.8B params with the 128k vocab), training, FSDP2
#      (each decoder layer, then the root); bf16 weights and AdamW states, sharded over the 2 GPUs
# Reduced step counts so the whole script takes < 4 minutes. Run from the repository root; needs no
# pip install. Output: $OUT_RUNS (default outputs/), reports in $OUT_RUNS/multi_gpu_*.txt.
set -euo pipefail
# NVLink multicast off, always: required by the GPU provider (multicast can take the host's GPUs out
# of service). addressable also sets these for every process it launches.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
OUT_RUNS=${OUT_RUNS:-outputs}
mkdir -p "$OUT_RUNS"
STEPS=(--warmup 3 --steps 5 --profile-steps 2 --repeats 2)

python3 -c 'import torch; print("torch", torch.__version__, "GPUs:", torch.cuda.device_count(), torch.cuda.get_device_name())'

echo "== gpt2 train, DDP, --nproc 2"
timeout 110 python3 -m addressable profile gpt2 --mode train --batch 8 --seq-len 1024 --device cuda \
  --nproc 2 "${STEPS[@]}" --out "$OUT_RUNS" --name gpt2-train-b8-s1024-ddp-np2 \
  | tee "$OUT_RUNS/multi_gpu_gpt2_ddp.txt"

echo "== llama3-8b (8 layers) train, FSDP2, --nproc 2"
timeout 120 python3 -m addressable profile llama3-8b --mode train --batch 8 --seq-len 1024 --device cuda \
  --option layers=8 --nproc 2 "${STEPS[@]}" --out "$OUT_RUNS" --name llama3-8b-l8-train-b8-s1024-fsdp2-np2 \
  | tee "$OUT_RUNS/multi_gpu_llama_fsdp2.txt"

ls "$OUT_RUNS/gpt2-train-b8-s1024-ddp-np2" "$OUT_RUNS/llama3-8b-l8-train-b8-s1024-fsdp2-np2"
