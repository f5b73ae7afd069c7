#!/usr/bin/env bash
# Regenerate the figures of docs/results.md and docs/projection.md from the committed H200 run folders: bash results/h200/figures/make_figures.sh
# (run from the repository root; each figure is written as PDF and PNG).
set -euo pipefail
cd "$(dirname "$0")/../.."
O=results/h200
F=results/h200/figures

plot() {  # plot KIND NAME ARGS...: one figure, both formats
    local kind=$1 name=$2
    shift 2
    for ext in pdf png; do
        addressable plot "$kind" "$@" --figure "$F/$name.$ext"
    done
}

STUDY=(--runs $O/resnet50-train-b64-bf16-cuda --runs $O/resnet50-infer-b64-bf16-cuda
       --runs $O/gpt2-train-b8-s1024-bf16-cuda --runs $O/llama3-8b-infer-b8-s1024-bf16-cuda
       --runs $O/llama3-70b-infer-b8-s1024-bf16-cuda-extrap4-8
       --runs $O/dlrm-train-b8192-bf16-cuda --runs $O/dlrm-infer-b8192-bf16-cuda)

# the seven study workloads, DLRM inference in fp32, and the two multi-GPU runs
plot breakdown breakdown "${STUDY[@]}" --runs $O/dlrm-infer-b8192-fp32-cuda \
    --runs $O/gpt2-train-b8-s1024-ddp-np2 --runs $O/llama3-8b-l8-train-b8-s1024-fsdp2-np2

# the seven study workloads, with the projected speedups of the verified candidate kernels
if [[ -f examples/wins.csv ]]; then
    plot amdahl amdahl "${STUDY[@]}" --speedups examples/wins.csv
else
    plot amdahl amdahl "${STUDY[@]}"
fi

plot sweep sweep-resnet50-batch --x batch \
    --runs $O/resnet50-train-b16-bf16-cuda --runs $O/resnet50-train-b32-bf16-cuda \
    --runs $O/resnet50-train-b64-bf16-cuda --runs $O/resnet50-train-b128-bf16-cuda
plot sweep sweep-transformer-size --x workload \
    --runs $O/gpt2-infer-b8-s1024-bf16-cuda --runs $O/llama3-1b-infer-b8-s1024-bf16-cuda \
    --runs $O/llama3-8b-infer-b8-s1024-bf16-cuda --runs $O/llama3-70b-infer-b8-s1024-bf16-cuda-extrap4-8
plot sweep sweep-transformer-train --x workload \
    --runs $O/gpt2-train-b8-s1024-bf16-cuda --runs $O/llama3-1b-train-b8-s1024-bf16-cuda

plot top-kernels top-kernels-resnet50-train --runs $O/resnet50-train-b64-bf16-cuda
plot top-kernels top-kernels-llama3-8b-infer --runs $O/llama3-8b-infer-b8-s1024-bf16-cuda
plot top-kernels top-kernels-dlrm-train-bf16 --runs $O/dlrm-train-b8192-bf16-cuda
