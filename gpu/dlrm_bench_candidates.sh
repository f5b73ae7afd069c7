#!/usr/bin/env bash
# Reproduces docs/dlrm_bench.md's Triton table and wins files (results/h200/dlrm_bench/). DLRM-Bench reference Triton candidates on the GPU: `addressable verify PROBLEM CANDIDATE --json`
# for each pair below, then $OUT/bench_wins.csv (target, speedup, verified, source, notes; target =
# problem stem, for `addressable project`) and $OUT/bench_wins_regex.csv (the same rows with target
# re:(?i)<the problem's DLRM_KERNEL>, which projects onto exactly the kernels the problem stands for).
# Each verify's JSON goes to $OUT/verify/<problem>.json. Run from the repository root; needs no pip
# install. About 3-5 minutes (01 and 02 build 3.6 GB tables on the CPU twice each).
# CPU dry run at the problems' SMALL sizes: DEVICE=cpu SMALL=1 TRITON_INTERPRET=1 gpu/dlrm_bench_candidates.sh
set -uo pipefail
OUT=${OUT:-outputs/dlrm-bench-gpu}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT/verify"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
P=addressable/dlrm_bench/problems
C=addressable/dlrm_bench/candidates

# problem stem, candidate file stem (02 reuses the 01 kernel: same semantics, skewed ids)
PAIRS=(
  "01_embedding_bag_sum_uniform 01_embedding_bag_sum_uniform"
  "02_embedding_bag_sum_zipf 01_embedding_bag_sum_uniform"
  "05_jagged_to_padded_dense 05_jagged_to_padded_dense"
  "06_dot_interaction 06_dot_interaction"
  "09_concat_interaction_input 09_concat_interaction_input"
  "10_sigmoid_bce_loss 10_sigmoid_bce_loss"
  "11_hash_sparse_ids 11_hash_sparse_ids"
  "12_dense_adagrad_step 12_dense_adagrad_step"
)
for pair in "${PAIRS[@]}"; do
  read -r problem candidate <<< "$pair"
  sizes=()
  if [[ -n "${SMALL:-}" ]]; then  # --set NAME=VALUE for each of the problem's SMALL overrides
    mapfile -d '' sizes < <(python3 -c 'import sys; from addressable.dlrm_bench import load_problem
for k, v in load_problem(sys.argv[1]).SMALL.items(): print("--set", f"{k}={v!r}", sep="\0", end="\0")' "$problem")
  fi
  echo "== $problem <- $C/$candidate.py"
  python3 -m addressable verify "$P/$problem.py" "$C/$candidate.py" --device "$DEVICE" --json "${sizes[@]}" \
    > "$OUT/verify/$problem.json" 2> "$OUT/verify/$problem.err"
  rc=$?
  echo "   exit $rc $(tail -c 300 "$OUT/verify/$problem.err")"
done

python3 - "$OUT" "${PAIRS[@]}" <<'PY'
"""Collect the verify JSONs into bench_wins.csv and bench_wins_regex.csv."""
import json
import sys
from pathlib import Path

import pandas as pd

from addressable.dlrm_bench import load_problem

out, pairs = Path(sys.argv[1]), [p.split() for p in sys.argv[2:]]
rows = []
for problem, candidate in pairs:
    source = f"addressable/dlrm_bench/candidates/{candidate}.py"
    try:
        r = json.loads((out / "verify" / f"{problem}.json").read_text())
    except (OSError, ValueError):
        err = (out / "verify" / f"{problem}.err").read_text(errors="replace").strip().splitlines()
        rows.append({"target": problem, "speedup": None, "verified": False, "source": source,
                     "notes": "verify gave no result: " + (err[-1] if err else "?")})
        continue
    notes = [r.get("reason") or ""]
    if candidate != problem:
        notes.append(f"candidate of {candidate[:2]}")
    if r.get("speedup") is not None:
        notes.append(f"ref {r['ref_ms']:.4g} ms, candidate {r['candidate_ms']:.4g} ms")
    rows.append({"target": problem, "speedup": r.get("speedup"), "verified": r.get("verdict") == "pass",
                 "source": source, "notes": "; ".join(n for n in notes if n)})
wins = pd.DataFrame(rows, columns=["target", "speedup", "verified", "source", "notes"])
wins.to_csv(out / "bench_wins.csv", index=False)
regex = wins.assign(target=["re:(?i)" + load_problem(t).DLRM_KERNEL for t in wins["target"]])
regex.to_csv(out / "bench_wins_regex.csv", index=False)
print(wins.to_string(index=False))
PY
