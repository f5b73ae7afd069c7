"""Measure the taxonomy's coverage on public traces and on the H200 stack traces; write docs/classification.md's corpus table.

The public traces are not committed: fetch their repositories first (the session's fetch tool puts
git snapshots under MIRROR/<owner>+<name>/repo), then

    python scripts/coverage_corpus.py --mirror /work/.mirror --stacks /work/data/h200_stacks \
        [--write docs/classification.md] [--names names.csv] [--half write|measure]

Each trace is taken from its repository at the commit named (or the snapshot's HEAD) with `git show`
(a .tar.gz source is unpacked and each trace in it measured), cached under --cache, and measured by
`addressable.classify.coverage`. Every trace is put in one of two halves by a hash of its source
(`half`): rules were written looking only at the `write` half's unclassified names, and the
`measure` half is the held-out check. --names writes the unclassified names of one half (what the
rules were written from). The table goes between `<!-- corpus-table -->` and `<!-- /corpus-table -->`.
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pandas as pd

from addressable.classify.coverage import coverage
from addressable.core.atomic import write_text

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- corpus-table -->\n).*?(<!-- /corpus-table -->)", re.S)
KINETO_TB = "949796072a88d92a9b257be5d3d26798a07baa02^"  # the last commit with tb_plugin's samples

# (stack, repository, [commit:]path); a .tar.gz path is unpacked
SOURCES: list[tuple[str, str, str]] = [
    ("ResNet-50 train, MI250 (ROCm 6.2)", "facebookresearch/HolisticTraceAnalysis", "tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
    ("AlexNet (critical path)", "facebookresearch/HolisticTraceAnalysis", "tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"),
    ("CUDA event sync", "facebookresearch/HolisticTraceAnalysis", "tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz"),
    ("CUDA event sync, streams", "facebookresearch/HolisticTraceAnalysis", "tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz"),
    ("simple add", "facebookresearch/HolisticTraceAnalysis", "tests/data/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"),
    ("CUPTI profiler counters", "facebookresearch/HolisticTraceAnalysis", "tests/data/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"),
    ("training (index resolver)", "facebookresearch/HolisticTraceAnalysis", "tests/data/df_index_resolver/df_index_resolver.json.gz"),
    ("training, no distributed info", "facebookresearch/HolisticTraceAnalysis", "tests/data/distributed_info_unavailable/distributed_info_not_found.json.gz"),
    ("simple add (with ET)", "facebookresearch/HolisticTraceAnalysis", "tests/data/execution_trace/benchmark_simple_add_trace.json.gz"),
    ("MTIA inference", "facebookresearch/HolisticTraceAnalysis", "tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz"),
    ("MTIA training", "facebookresearch/HolisticTraceAnalysis", "tests/data/mtia_trace_single_rank/mtia_rank_0.json.gz"),
    ("NCCL collectives", "facebookresearch/HolisticTraceAnalysis", "tests/data/nccl_parser_config/nccl_data.json.gz"),
    ("training (queue length)", "facebookresearch/HolisticTraceAnalysis", "tests/data/negative_queue_length_values_check/rank0.json.gz"),
    ("training (ns resolution)", "facebookresearch/HolisticTraceAnalysis", "tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
    ("non-GPU rank", "facebookresearch/HolisticTraceAnalysis", "tests/data/rank_non_gpu/rank_non_gpu.json.gz"),
    ("sampled training, rank 0", "facebookresearch/HolisticTraceAnalysis", "tests/data/timeline_analysis/sampled_rank-0.json.gz"),
    ("sampled training, rank 1", "facebookresearch/HolisticTraceAnalysis", "tests/data/trace_filter/sampled_rank-1.json.gz"),
    ("trace diff control", "facebookresearch/HolisticTraceAnalysis", "tests/data/trace_diff/control/control.json.gz"),
    ("trace diff test", "facebookresearch/HolisticTraceAnalysis", "tests/data/trace_diff/test/test.json.gz"),
    ("Triton example", "facebookresearch/HolisticTraceAnalysis", "tests/data/triton_example/triton_example.json.gz"),
    ("CPU-only rank", "facebookresearch/HolisticTraceAnalysis", "tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
    ("B200 eager", "AMD-AGI/TraceLens", "tests/traces/b200/eager_trace.json.gz"),
    ("H100 image classifier", "AMD-AGI/TraceLens", "tests/traces/h100/Falconsai_nsfw_image_detection__1016002.json.gz"),
    ("H100 Qwen1.5-0.5B chat", "AMD-AGI/TraceLens", "tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    ("H100 TimeSformer", "AMD-AGI/TraceLens", "tests/traces/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz"),
    ("H100 BERT-small", "AMD-AGI/TraceLens", "tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"),
    ("H100 OWLv2", "AMD-AGI/TraceLens", "tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz"),
    ("SGLang decode, graph capture", "AMD-AGI/TraceLens", "tests/traces/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz"),
    ("SGLang Qwen3-8B decode", "AMD-AGI/TraceLens", "tests/traces/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"),
    ("SGLang Qwen3-8B prefill+decode", "AMD-AGI/TraceLens", "tests/traces/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz"),
    ("vLLM decode, graph capture", "AMD-AGI/TraceLens", "tests/traces/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz"),
    ("vLLM decode, full graph", "AMD-AGI/TraceLens", "tests/traces/inference/vllm_decode_full/graph_execution.json.gz"),
    ("vLLM prefill+decode, graph capture", "AMD-AGI/TraceLens", "tests/traces/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz"),
    ("vLLM prefill+decode, piecewise", "AMD-AGI/TraceLens", "tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz"),
    ("xDiT FLUX.1, graph capture", "AMD-AGI/TraceLens", "tests/traces/inference/xdit_flux.1/capture_traces/capture_trace_rank_0.json.gz"),
    ("xDiT FLUX.1 aiter/Sage, capture", "AMD-AGI/TraceLens", "tests/traces/inference/xdit_flux.1_aiter_sage/capture_traces/capture_trace_rank_0.json.gz"),
    ("xDiT FLUX.1 aiter/SageAttention", "AMD-AGI/TraceLens", "tests/traces/inference/xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz"),
    ("xDiT SD 3.5", "AMD-AGI/TraceLens", "tests/traces/inference/xdit_sd_3.5/profile_trace_rank_0.json.gz"),
    ("MI210 GPU-only trace", "AMD-AGI/TraceLens", "tests/traces/mi210/gpu_only_trace/gpu_only_trace.json.gz"),
    ("MI300 image classifier", "AMD-AGI/TraceLens", "tests/traces/mi300/Falconsai_nsfw_image_detection__1016002.json.gz"),
    ("MI300 Qwen1.5-0.5B chat", "AMD-AGI/TraceLens", "tests/traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    ("MI300 TimeSformer", "AMD-AGI/TraceLens", "tests/traces/mi300/facebook_timesformer-base-finetuned-k400__1016002.json.gz"),
    ("MI300 BERT-small", "AMD-AGI/TraceLens", "tests/traces/mi300/gaunernst_bert-small-uncased__1016001.json.gz"),
    ("MI300 OWLv2", "AMD-AGI/TraceLens", "tests/traces/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz"),
    ("MI300 ResNet, activation checkpointing", "AMD-AGI/TraceLens", "tests/traces/mi300/resnet_act_checkpoint.json.gz"),
    ("normalization layers", "AMD-AGI/TraceLens", "tests/traces/perf_model/normalization/normalization_layer_test.json.gz"),
    ("torch.compile Triton", "AMD-AGI/TraceLens", "tests/traces/torch_compile_triton/trace.json.gz"),
    ("rocprofv3 (JSON)", "AMD-AGI/TraceLens", "tests/rocprof/908_results.json.gz"),
    ("DeepSeek-V3 training (DeepEP)", "deepseek-ai/profile-data", "train.json"),
    ("linear (ET replay)", "facebookresearch/param", "et_replay/tests/inputs/linear_kineto.json.gz"),
    ("ResNet (ET replay)", "facebookresearch/param", "et_replay/tests/inputs/resnet_kineto.json.gz"),
    ("DLRM (ET replay)", "facebookresearch/param", "et_replay/tests/inputs/dlrm_kineto.tar.gz"),
    ("Chakra JSON trace", "mlcommons/chakra", "tests/data/json_trace.tar.gz"),
    ("Chakra feeder trace", "mlcommons/chakra", "tests/data/feeder_tests_trace.tar.gz"),
    ("ResNet-50, TensorBoard plugin sample", "pytorch/kineto", f"{KINETO_TB}:tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"),
    ("ResNet-50, TensorBoard plugin sample", "pytorch/kineto", f"{KINETO_TB}:tb_plugin/samples/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz"),
    ("ResNet-50, TensorBoard plugin sample", "pytorch/kineto", f"{KINETO_TB}:tb_plugin/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"),
    ("ResNet-50, TensorBoard plugin sample", "pytorch/kineto", f"{KINETO_TB}:tb_plugin/samples/resnet50_num_workers_4/worker0.1623213129365.pt.trace.json.gz"),
    ("GPU metrics test trace", "pytorch/kineto", f"{KINETO_TB}:tb_plugin/test/gpu_metrics_input.json"),
]

MTIA = ("MTIA device events, read as device work, but MTIA's kernel names (`fc-dtype_Float`, "
        "`vector_norm_float_order-dtype_Float`, `event_wait`, `pe_exe`, `dma_request`: an op's name with a `-dtype_` "
        "suffix, and the device's own queue work) have no rules yet: two test traces are too few to write and check "
        "them on")
# Why a trace stays above 1% unclassified, is measured on the CPU-op basis, or cannot be measured:
# (regex on the source column, reason); the first match gives the reason.
REASONS: list[tuple[str, str]] = [
    (r"cuda_event_sync/", "`at::cuda::spin_kernel`, torch.cuda._sleep's busy-wait in a synchronisation test: no work "
                          "to classify, left unclassified on purpose"),
    (r"cupti_profiler/", "CUPTI counter mode: kernel launches recorded, kernel activity not (`classify --basis cpu` "
                         "gives the CPU ops)"),
    (r"mtia_", MTIA),
    (r"rank_non_gpu|cpu_only/|distributed_info_not_found", "a CPU-only trace: the CPU-op basis (every op classified)"),
    (r"chakra", "a Chakra execution trace (ops and tensors, no kernel times), not a profiler trace"),
]


def half_of(source: str) -> str:
    """The half a trace belongs to: 'write' (rules written from it) or 'measure' (held out)."""
    return "write" if zlib.crc32(source.encode()) % 2 == 0 else "measure"


def fetch_source(mirror: Path, cache: Path, repo: str, spec: str) -> tuple[str, list[tuple[str, Path]], str]:
    """(commit, [(source id, local file)], problem): the source's traces from its snapshot, cached."""
    git = mirror / repo.replace("/", "+") / "repo"
    if not git.exists():
        return "", [], f"{repo} not fetched"
    rev, _, path = spec.rpartition(":") if ":" in spec else ("HEAD", "", spec)
    commit = subprocess.run(["git", "-C", str(git), "rev-parse", rev], capture_output=True, text=True).stdout.strip()
    blob = subprocess.run(["git", "-C", str(git), "show", f"{commit}:{path}"], capture_output=True)
    if blob.returncode or not blob.stdout:
        return commit, [], "not in the snapshot (files of 4 MiB and more are left out)"
    source = f"{repo}@{commit[:7]}:{path}"
    if not path.endswith(".tar.gz"):
        local = cache / repo.replace("/", "+") / commit[:7] / path
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(blob.stdout)
        return commit, [(source, local)], ""
    out = []
    with tarfile.open(fileobj=io.BytesIO(blob.stdout)) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.endswith((".json", ".json.gz")):
                local = cache / repo.replace("/", "+") / commit[:7] / (path + ".d") / m.name
                local.parent.mkdir(parents=True, exist_ok=True)
                local.write_bytes(tar.extractfile(m).read())
                out.append((f"{source}!{m.name}", local))
    return commit, out, "" if out else "no Kineto trace in the archive"


def gather(mirror: Path, cache: Path, stacks: Path | None) -> pd.DataFrame:
    """One row per trace: stack, source, file (empty where it could not be had), problem."""
    rows = []
    for stack, repo, spec in SOURCES:
        _, files, problem = fetch_source(mirror, cache, repo, spec)
        rows += [{"stack": stack, "source": s, "file": str(f), "problem": ""} for s, f in files]
        if problem:
            rows.append({"stack": stack, "source": f"{repo}:{spec.rpartition(':')[2]}", "file": "", "problem": problem})
    for f in sorted(stacks.glob("*.json.gz")) if stacks else []:
        name = f.name.removesuffix(".json.gz")
        rows.append({"stack": f"H200: {name}", "source": f"gpu/capture_stacks.py:{name}", "file": str(f), "problem": ""})
    df = pd.DataFrame(rows)
    df["half"] = df["source"].map(half_of)
    return df


def measure(corpus: pd.DataFrame, taxonomy: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The corpus with each trace's coverage columns, and the unclassified names (with their half)."""
    have = corpus[corpus["file"] != ""]
    cov = coverage(list(have["file"]), taxonomy)
    by_file = cov.traces.set_index("trace")
    table = corpus.copy()
    for col in ("basis", "kernels", "unclassified_share", "error"):
        table[col] = table["file"].map(lambda f, c=col: by_file[c].get(str(Path(f).resolve())) if f else None)
    table["error"] = table["error"].fillna("").where(table["problem"] == "", table["problem"])
    table["error"] = [e.replace(str(Path(f).resolve()), Path(f).name).replace(f, Path(f).name) if f else e
                      for e, f in zip(table["error"], table["file"], strict=True)]  # no local paths in the table
    half = dict(zip(have["file"].map(lambda f: str(Path(f).resolve())), have["half"], strict=True))
    names = cov.missed.assign(half=cov.missed["trace"].map(half), trace=cov.missed["trace"].map(lambda t: Path(t).name))
    return table, names


def markdown(table: pd.DataFrame) -> str:
    """The corpus table and a line per half."""
    lines = ["| stack | trace | half | kernels | unclassified | reason |", "| --- | --- | --- | ---: | ---: | --- |"]
    for r in table.itertuples():
        share = "" if pd.isna(r.unclassified_share) or r.error else f"{r.unclassified_share:.2%}"
        reason = next((why for pattern, why in REASONS if re.search(pattern, r.source)), "") or r.error
        if not reason and share and r.unclassified_share > 0.01:
            reason = "(no reason recorded)"
        kernels = "" if r.error else f"{int(r.kernels):,}" if r.basis == "gpu_kernel_time" else "CPU ops"
        lines.append(f"| {r.stack} | `{r.source}` | {r.half} | {kernels} | {share} | {reason.replace('|', '/')} |")
    lines.append("")
    for half in ("write", "measure"):
        ok = table[(table["half"] == half) & (table["error"] == "")]
        lines.append(f"- {half} half: {len(ok)} traces measured, {int((ok['unclassified_share'] <= 0.01).sum())} at or "
                     f"below 1% unclassified, median {ok['unclassified_share'].median():.2%}; "
                     f"{int((table['half'] == half).sum() - len(ok))} not measured")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--cache", type=Path, default=Path("/work/data/corpus"))
    ap.add_argument("--stacks", type=Path, help="folder of the H200 stack traces (gpu/capture_stacks.py)")
    ap.add_argument("--write", type=Path, help="the page whose corpus table to rewrite")
    ap.add_argument("--names", type=Path, help="write the unclassified names of --half here (CSV)")
    ap.add_argument("--half", choices=["write", "measure"], default="write")
    ap.add_argument("--taxonomy", type=Path, help="measure with this rule file (default: the packaged one)")
    args = ap.parse_args()
    table, names = measure(gather(args.mirror, args.cache, args.stacks), args.taxonomy)
    text = markdown(table)
    print(text)
    if args.names is not None and not names.empty:
        pick = names[names["half"] == args.half]
        write_text(args.names, pick.sort_values("time_us", ascending=False).to_csv(index=False))
    if args.write is not None:
        page = args.write.read_text()
        if not BLOCK.search(page):
            sys.exit(f"{args.write} has no <!-- corpus-table --> block")
        write_text(args.write, BLOCK.sub(lambda m: m.group(1) + text + m.group(2), page))


if __name__ == "__main__":
    main()
