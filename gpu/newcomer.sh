#!/usr/bin/env bash
# Reproduces the README's time for its first command on one GPU (results/h200/newcomer/): a newcomer's
# first commands on one H200, from the repository root, in under 4 minutes:
#   1. the README's main command, timed: `addressable profile resnet50 --batch 64` (default --budget 60)
#   2. llama3-8b inference with the default counts cut to a 30 s budget: the plan line shows the cut
#   3. the same resnet50 configuration again: it goes to NAME-2 and says so
# Writes $OUT/times.txt (wall seconds per command), $OUT/<n>.stdout/.stderr, $OUT/noise.txt (lines of
# the profiler's expected noise that leaked: should be empty) and $OUT/modes.txt (file modes of the runs).
# Usage: OUT=/tmp/out bash gpu/newcomer.sh   (the wheels the GPU image lacks are carried in .whl/)
set -u
OUT=${OUT:-outputs/newcomer}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
RUNS=$(mktemp -d)
run() {  # run N ARGS...: one timed command
    local n=$1; shift
    local t0=$SECONDS
    python3 -m addressable "$@" --out "$RUNS" >"$OUT/$n.stdout" 2>"$OUT/$n.stderr"
    echo "$n rc=$? $((SECONDS - t0)) s: addressable $*" >>"$OUT/times.txt"
}
: >"$OUT/times.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$OUT/times.txt" 2>&1
run 1 profile resnet50 --batch 64
run 2 profile llama3-8b --mode infer --budget 30
run 3 profile resnet50 --batch 64
grep -hE "USDT:|gpuGetDeviceCount|Profiler clears events|won't be using warmup|Traceback" "$OUT"/*.stderr >"$OUT/noise.txt"
find "$RUNS" -printf '%m %P\n' | sort -k2 >"$OUT/modes.txt"
cat "$OUT/times.txt"; grep -h "plan:" "$OUT"/*.stderr; grep -h "exists: writing" "$OUT/3.stderr"
echo "noise lines: $(wc -l <"$OUT/noise.txt")"
