#!/usr/bin/env bash
# What one `addressable verify` costs, candidate by candidate: wall seconds and peak memory of the
# whole command (one process per pair), with its verdict, speedup and IQR. Run on two commits to
# compare the verifier's cost before and after a change (any checkout of this layout, from 1 Dec 2026 on).
#   usage: OUT=/some/folder bash gpu/verify_wall_times.sh [REPO_ROOT]   (default: this checkout)
# Pairs: the example Triton candidates, the DLRM-Bench candidates (DLRM=0 skips them: 01 and 02 build
# 3.6 GB tables on the CPU) and every pair of the zoo's pairs_*.csv that the checkout has.
# ONLY=FILE.csv keeps the pairs named in its first column (e.g. an earlier run's wall_times.csv, to
# time the same list after a change). Peak memory is the largest single process's (ru_maxrss of the
# children): the verifier's processes run side by side, so their sum is not measured here.
# Writes $OUT/wall_times.csv and $OUT/verify/<pair>.json; prints the table last.
set -uo pipefail
root=$(realpath "${1:-$(dirname "$0")/..}")
OUT=$(realpath -m "${OUT:-outputs/verify_wall_times}")
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT/verify"
cd "$root" || exit 2
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
zoo=tests/verification/zoo
bench=addressable/dlrm_bench
pairs=()
while IFS=, read -r p c _; do pairs+=("examples/candidates/$p examples/candidates/$c"); done \
    < <(tail -n +2 examples/candidates/pairs.csv)
if [ "${DLRM:-1}" = 1 ]; then
    for pc in 01_embedding_bag_sum_uniform:01_embedding_bag_sum_uniform 02_embedding_bag_sum_zipf:01_embedding_bag_sum_uniform \
              05_jagged_to_padded_dense:05_jagged_to_padded_dense 06_dot_interaction:06_dot_interaction \
              09_concat_interaction_input:09_concat_interaction_input 10_sigmoid_bce_loss:10_sigmoid_bce_loss \
              11_hash_sparse_ids:11_hash_sparse_ids 12_dense_adagrad_step:12_dense_adagrad_step; do
        pairs+=("$bench/problems/${pc%%:*}.py $bench/candidates/${pc##*:}.py")
    done
fi
for csv in "$zoo"/pairs_*.csv; do
    while IFS=, read -r p c _; do pairs+=("$zoo/$p $zoo/$c"); done < <(tail -n +2 "$csv")
done
echo "pair,verdict,speedup,iqr_lo,iqr_hi,wall_s,max_rss_mb,reason" > "$OUT/wall_times.csv"
for pair in "${pairs[@]}"; do
    read -r ref cand <<< "$pair"
    name="$(basename "$ref" .py)__$(basename "$cand" .py)"
    if [ -n "${ONLY:-}" ] && ! cut -d, -f1 "$ONLY" | grep -qx "$name"; then continue; fi
    python3 - "$name" "$ref" "$cand" "$DEVICE" "$OUT/verify" >> "$OUT/wall_times.csv" <<'PY'
"""Run one verify in a child process; one CSV row: verdict, speedup, IQR, wall seconds, peak RSS."""
import csv, json, resource, subprocess, sys, time
name, ref, cand, device, folder = sys.argv[1:]
t0 = time.perf_counter()
p = subprocess.run([sys.executable, "-m", "addressable", "verify", ref, cand, "--device", device, "--json"],
                   capture_output=True, text=True, timeout=300)
wall = time.perf_counter() - t0
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
open(f"{folder}/{name}.json", "w").write(p.stdout)
open(f"{folder}/{name}.err", "w").write(p.stderr)
try:
    r = json.loads(p.stdout)
except ValueError:
    r = {"verdict": f"exit {p.returncode}", "reason": p.stderr.strip()[-200:]}
csv.writer(sys.stdout).writerow([name, r.get("verdict"), r.get("speedup"), r.get("speedup_lo"), r.get("speedup_hi"),
                                 f"{wall:.1f}", rss_mb, str(r.get("reason") or "")[:160]])
PY
done
python3 -c "import pandas as pd; pd.set_option('display.width', 250); pd.set_option('display.max_colwidth', 60)
print(pd.read_csv('$OUT/wall_times.csv').to_string(index=False))"
