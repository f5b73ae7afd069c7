#!/usr/bin/env bash
# Run every public command that needs no GPU on the shipped runs and traces, writing what each
# prints (stdout, stderr, exit code) and the files it writes under OUT. Run it on two commits and
# compare the folders: `diff -r OUT_BEFORE OUT_AFTER` shows every change in behaviour. Timings and
# version fields are the only differences a refactor may leave.
#   usage: bash scripts/command_outputs.sh OUT [ADDRESSABLE]   (ADDRESSABLE: the command, default addressable)
set -uo pipefail
out=$(realpath -m "${1:?usage: command_outputs.sh OUT [ADDRESSABLE]}")
cmd=${2:-addressable}
cd "$(dirname "$0")/.."
mkdir -p "$out/.mpl"
echo "svg.hashsalt: command_outputs" >"$out/.mpl/matplotlibrc"  # SVG ids from a fixed salt, not random
export MPLCONFIGDIR=$out/.mpl
n=0
run() {  # run NAME ARGS...: one command, its outputs in OUT/NAME.{out,err,rc}
    local name=$1; shift
    n=$((n + 1))
    MPLBACKEND=Agg SOURCE_DATE_EPOCH=0 $cmd "$@" >"$out/$name.out" 2>"$out/$name.err"
    echo $? >"$out/$name.rc"
    sed -i "s#$out#OUT#g" "$out/$name.out" "$out/$name.err"  # the folder's own path, so two folders compare
}
H=results/h200
T=tests/data
W=$out/written
mkdir -p "$W"

# DLRM-Bench's command was `bench` before it was `dlrm-bench`: use whichever this commit has, so two commits compare
b=dlrm-bench
$cmd dlrm-bench --help >/dev/null 2>&1 || b=bench
run help --help
for c in audit $b calibrate classify modules plot profile project roofline sweep taxonomy verify verify-batch workloads; do
    run "help_$c" "$c" --help
done
run workloads workloads
run taxonomy taxonomy
for t in resnet50_train llama8b4l_infer resnet50_train_b64_shapes llama8b_prefill_b4_shapes; do
    run "classify_$t" classify "$T/$t.json.gz"
    run "classify_json_$t" classify "$T/$t.json.gz" --json
    run "classify_cpu_$t" classify "$T/$t.json.gz" --basis cpu
    run "classify_exposed_$t" classify "$T/$t.json.gz" --basis exposed
done
for t in "$T"/workloads/*.json.gz; do
    run "classify_w_$(basename "$t" .json.gz)" classify "$t" --json
done
run classify_explain classify "$T/resnet50_train.json.gz" --explain 'multi_tensor|dgrad2d'
run classify_library classify "$T/resnet50_train.json.gz" --class triton=library
run classify_out classify "$T/resnet50_train.json.gz" --out "$W/classify_out"
run classify_ranks classify "$T/pairs/two-stream-gelu.A.json.gz" "$T/pairs/two-stream-gelu.B.json.gz"
run classify_ranks_out classify "$T/pairs/two-stream-gelu.A.json.gz" "$T/pairs/two-stream-gelu.B.json.gz" --out "$W/ranks_out"
for r in "$H"/modules/*/; do
    r=$(basename "$r")
    run "modules_$r" modules "$H/modules/$r"
    run "modules_class_$r" modules "$H/modules/$r" --by class --top 5
    run "modules_json_$r" modules "$H/modules/$r" --json
done
for r in "$H"/roofline/*/; do
    r=$(basename "$r")
    [ -f "$H/roofline/$r/breakdown.json" ] && run "roofline_$r" roofline "$H/roofline/$r"
done
run roofline_bare_run roofline "$H/resnet50-train-b64-bf16-cuda"
run modules_fixture modules tests/fixtures/module_runs/gpt2-tiny-train-cpu --json
run roofline_trace roofline "$T/resnet50_train_b64_shapes.json.gz"
run roofline_trace_llama roofline "$T/llama8b_prefill_b4_shapes.json.gz"
run roofline_trace_json roofline "$T/resnet50_train_b64_shapes.json.gz" --json
run project project --speedups examples/wins.csv --runs "$H"
run project_json project --speedups examples/wins.csv --runs "$H" --json
run project_median project --speedups examples/wins.csv --runs "$H" --combine median
run project_amdahl project --speedups examples/wins.csv --runs "$H" --model amdahl
run project_trace project --speedups examples/wins.csv --runs "$T/pairs/two-stream-gelu.A.json.gz"
run project_fixture project --speedups examples/wins.csv --runs tests/fixtures/runs
for k in breakdown amdahl sweep; do
    run "plot_$k" plot "$k" --runs tests/fixtures/plot_runs --figure "$W/plot_$k.svg"
done
run plot_top plot top-kernels --runs tests/fixtures/plot_runs/resnet50-train-b64 --figure "$W/plot_top.svg"
run plot_modules plot modules --runs tests/fixtures/module_runs/gpt2-tiny-train-cpu --figure "$W/plot_modules.svg"
run plot_roofline plot roofline --runs "$H/roofline/resnet50-train-b64-bf16-cuda" --figure "$W/plot_roofline.svg"
run bench_list $b list
run bench_shares $b shares "$H/dlrm-train-b8192-fp32-cuda"
find "$W" -type f \( -name '*.json' -o -name '*.csv' \) -exec sed -i "s#$out#OUT#g" {} +
echo "$n commands; outputs in $out" >&2
