#!/usr/bin/env bash
# Reproduces docs/verification.md's adversarial-kernel table on one GPU: stream-escape cheats and
# KernelBench-style adversarial kernels must fail by name,
# honest candidates (torch ops, examples/candidates Triton, DLRM-Bench) must pass, and the new timing
# (device-wide synchronize) must match the old one for honest pairs. Under 4 minutes on one H200.
# Run from the repository root:  OUT=/some/folder bash gpu/verify_adversarial.sh
# Writes to $OUT: adversarial.md (the table of docs/verification.md), timing.csv, verify.json, verify_adversarial.log.
set -uo pipefail
OUT=${OUT:-outputs/verify_adversarial}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{ command -v ninja c++ || echo "no ninja or c++: the C++ extension cheat cannot build"; } 2>&1 | tee "$OUT/verify_adversarial.log"
timeout 235 python3 gpu/verify_adversarial.py --out "$OUT" --budget "${BUDGET:-190}" 2>&1 | tee -a "$OUT/verify_adversarial.log"
exit "${PIPESTATUS[0]}"
