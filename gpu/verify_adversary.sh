#!/usr/bin/env bash
# Issue 25 on one H200, in one call of at most ~8 minutes: every candidate of the adversarial zoo
# (tests/verification/zoo/pairs_zoo.csv, with the verdict each must get) and every honest candidate
# (examples/candidates with their problems, the DLRM-Bench candidates with theirs, the honest side-stream,
# CUDA-graph and Triton matmuls) through `verify` on the GPU. Prints one table (candidate, verdict,
# reason, speedup, IQR, wall seconds, as expected) and writes $OUT/verify_adversary.tar (results.json
# with every VerifyResult, table.md, the log).
#
#   OUT=/some/folder bash gpu/verify_adversary.sh [REPO_ROOT]
#
# REPO_ROOT (default: this checkout) is the code that verifies: point it at an old checkout to run the
# same list through the old harness (its zoo lacks the new candidates: only the honest ones and the old
# zoo run, the rest are listed as missing). BUDGET (seconds, default 430) stops starting new pairs;
# the order is: new zoo, honest examples, DLRM-Bench, old zoo (ONLY=stem,stem,...: those candidates alone, in that order). Nothing is installed: REPO_ROOT goes first
# on PYTHONPATH. A CPU dry run of the script: DEVICE=cpu SMALL=1 TRITON_INTERPRET=1 bash gpu/verify_adversary.sh
set -uo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="$(cd "${1:-$HERE}" && pwd)"
OUT=${OUT:-outputs/verify_adversary}
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/verify_adversary.XXXXXX")"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
cd "$ROOT" || exit 2
{ echo "verifying with $ROOT (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')), list from $HERE"
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"
  command -v ninja c++ || echo "no ninja or c++: the C++ extension cheat cannot build"
} 2>&1 | tee "$WORK/log.txt"
timeout $(( ${BUDGET:-430} + 60 )) python3 "$HERE/gpu/verify_adversary.py" --root "$ROOT" --list-root "$HERE" \
  --work "$WORK" --budget "${BUDGET:-430}" ${ONLY:+--only "$ONLY"} ${DEVICE:+--device "$DEVICE"} ${SMALL:+--small} 2>&1 | tee -a "$WORK/log.txt"
rc=${PIPESTATUS[0]}
tar -C "$WORK" -cf "$OUT/verify_adversary.tar" .
echo "wrote $OUT/verify_adversary.tar (exit $rc)"
rm -rf "$WORK"
exit "$rc"
