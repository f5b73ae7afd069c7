#!/usr/bin/env bash
# The committed span accounting runs (results/cpu/span_accounting/): the toy CNN with eager BatchNorm and
# GroupNorm, Python's garbage collector on and off, three runs each, and ResNet-18 at 16x16 (CPU, about 3 min).
# On a GPU, pass --device cuda through EXTRA (EXTRA="--device cuda --model resnet18 --size 32 --batch 8").
set -euo pipefail
out=${1:?usage: gpu/span_accounting.sh OUT}
cd "$(dirname "$0")/.."
mkdir -p "$out"
for norm in bn gn; do
  for gc in on off; do
    for r in 1 2 3; do
      python gpu/span_accounting.py --norm $norm --gc $gc --steps 200 ${EXTRA:-} --out "$out/toy-$norm-gc$gc-$r.json"
    done
  done
done
python gpu/span_accounting.py --model resnet18 --size 16 --batch 2 --steps 60 ${EXTRA:-} --out "$out/resnet18-bn-gcon-1.json"
