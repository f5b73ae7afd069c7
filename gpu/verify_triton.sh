#!/usr/bin/env bash
# Reproduces docs/verification.md's Triton-candidates table (results/h200/verify/): verify the example
# Triton candidates against their problems at realistic sizes on one GPU.
#
# Run from the repository root (no `pip install -e .` needed):
#     OUT=/some/folder bash gpu/verify_triton.sh
# Writes to $OUT (default outputs/verify_triton):
#     verify_<problem>.json      one `addressable verify --json` object per Triton candidate
#     wins.csv                   target,speedup,verified,source,notes,speedup_lo,speedup_hi (for `project`)
#     zoo/verify_*.json, zoo_wins.csv   the cheat zoo on the GPU (poisoned CUDA caching allocator)
#     audit.json                 `addressable audit` of examples/problems at their full sizes
#     verify_triton.log          everything printed
# Budget: well under 3 minutes on one H200 (each verification has a 75 s timeout).
set -euo pipefail

OUT=${OUT:-outputs/verify_triton}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
# EXTRA: more verify-batch options, e.g. for a CPU dry run with TRITON_INTERPRET=1 and DEVICE=cpu:
#   EXTRA="--set batch_size=1 --set tokens=4 --set dim=5000 --set hidden=1000 --set features=2 --calls 2"
# AUDIT_EXTRA: more audit options (e.g. the same --set ones).
read -r -a EXTRA_ARGS <<< "${EXTRA:-}"
read -r -a AUDIT_ARGS <<< "${AUDIT_EXTRA:-}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
start=$SECONDS
log="$OUT/verify_triton.log"
: > "$log"

run() { echo "+ $*" | tee -a "$log"; "$@" 2>&1 | tee -a "$log" || echo "  exit $? (verify-batch: 1 when a pair failed, 3 when one needs review)" | tee -a "$log"; }

"$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__,
      torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')" 2>&1 | tee -a "$log"

# 1. Triton candidates vs. their eager references, default (realistic) problem sizes.
run "$PY" -m addressable verify-batch examples/candidates/pairs.csv --device "$DEVICE" \
    --calls 100 --warmup 10 --timeout 75 --wins-out "$OUT/wins.csv" --json-dir "$OUT" ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}

# 2. The cheat zoo on the GPU: each must fail by its named check, the bf16 one must pass.
run "$PY" -m addressable verify-batch tests/verification/zoo/pairs_gpu.csv --device "$DEVICE" \
    --calls 20 --warmup 3 --timeout 60 --wins-out "$OUT/zoo_wins.csv" --json-dir "$OUT/zoo" ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}

# 3. Which example problems would an all-zeros output pass under allclose(atol=rtol=1e-2)?
"$PY" -m addressable audit examples/problems --device "$DEVICE" --json ${AUDIT_ARGS[@]+"${AUDIT_ARGS[@]}"} > "$OUT/audit.json"
"$PY" - "$OUT/audit.json" <<'PYEOF' | tee -a "$log"
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["problems"]:
    print(f"audit {r['problem']:<24} max|ref| {r['max_abs_ref']:<10.3g} zeros pass allclose: {r['zeros_pass']}")
PYEOF

echo "verify_triton.sh: done in $((SECONDS - start)) s; results in $OUT" | tee -a "$log"
