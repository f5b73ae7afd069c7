"""Kernel-name parsing and the launching op as the second classification signal (issue 12)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from addressable import classify_trace, load_taxonomy
from addressable.classify.taxonomy import UNCLASSIFIED, parse_taxonomy
from addressable.core.errors import AddressableError
from addressable.trace.kernel_names import parse_kernel_name, template_args

TAX = load_taxonomy()


@pytest.mark.parametrize("name, qualified, template, params", [
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >(at::native::ReduceOp<float>)",
     "at::native::reduce_kernel", "512, 1, at::native::ReduceOp<float>", "at::native::ReduceOp<float>"),
    ("std::enable_if<(bool)1, void>::type layer_norm_kernel<float>(int)", "layer_norm_kernel", "float", "int"),
    ("void (anonymous namespace)::softmax_warp_forward<float, 10>(float*)",
     "(anonymous namespace)::softmax_warp_forward", "float, 10", "float*"),
    ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>::Params)",
     "fmha_cutlassF_bf16_aligned_64x128_rf_sm80", "", "PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>::Params"),
    ("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT", "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT", "", ""),
    ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0.kd", "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0", "", ""),
    ("void foo::bar<int>(int) [clone .kd]", "foo::bar", "int", "int"),
    ("Memset (Device)", "Memset", "", "Device"),
    # mangled: libstdc++'s demangler, and a fallback for names cut short
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
     "at::native::vectorized_elementwise_kernel", "4, at::native::FillFunctor<float>, std::array<char*, 1ul>",
     "int, at::native::FillFunctor<float>, std::array<char*, 1ul>"),
    ("_ZN4vllm30reshape_and_cache_flash_kernelI", "vllm::reshape_and_cache_flash_kernel", "", ""),
])
def test_parse_kernel_name(name: str, qualified: str, template: str, params: str) -> None:
    p = parse_kernel_name(name)
    assert (p.qualified, p.template, p.params) == (qualified, template, params)


def test_template_args_split_at_top_level_commas() -> None:
    assert template_args("4, at::native::FillFunctor<float, int>, std::array<char*, 1ul>") == [
        "4", "at::native::FillFunctor<float, int>", "std::array<char*, 1ul>"]


def test_template_rule_needs_both_name_and_template() -> None:
    """The optimizer rule reads the name; the copy rule needs the functor inside the template arguments."""
    adam = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
            "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>>(int)")
    copy = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::Copy<float, float>>(int)"
    assert list(TAX.classify([adam, copy])) == ["optimizer", "data_movement"]


def _kernel_trace(path: Path, kernels: list[tuple[str, str, float]], launches_only: bool = False) -> Path:
    """A small Kineto trace: each (kernel, launching op, dur) gets a cpu_op, a runtime launch and a kernel."""
    events = []
    for i, (kernel, op, dur) in enumerate(kernels):
        ts = 100.0 * i
        events.append({"ph": "X", "cat": "cpu_op", "name": op, "ts": ts, "dur": 50, "pid": 1, "tid": 1,
                       "args": {"External id": i + 1}})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts + 1, "dur": 5,
                       "pid": 1, "tid": 1, "args": {"External id": i + 1, "correlation": 1000 + i}})
        if not launches_only:
            events.append({"ph": "X", "cat": "kernel", "name": kernel, "ts": ts + 10, "dur": dur, "pid": 0,
                           "tid": 7, "args": {"External id": i + 1, "correlation": 1000 + i, "stream": 7,
                                              "device": 0}})
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return path


def test_launching_op_classifies_what_no_name_rule_claims(tmp_path) -> None:
    trace = _kernel_trace(tmp_path / "t.json.gz", [
        ("my_vendor_kernel_v7", "aten::mm", 40.0),            # unknown name, GEMM op: gemm by the op
        ("nvjet_sm90_tst_128x128", "aten::mm", 30.0),         # named: gemm by its name
        ("void at::native::reduce_kernel<512>(int)", "aten::convolution_backward", 20.0),  # bias grad: disagreement
        ("mystery_kernel", "aten::foo", 10.0),                 # neither signal
    ])
    b = classify_trace(trace)
    k = b.kernels.set_index("name")["category"]
    assert k["my_vendor_kernel_v7"] == "gemm" and k["nvjet_sm90_tst_128x128"] == "gemm"
    assert k["mystery_kernel"] == UNCLASSIFIED
    signals = b.signals.set_index("signal")["time_us"]
    assert signals["name"] == 50.0 and signals["launch_op"] == 40.0 and signals["none"] == 10.0
    d = b.disagreements
    assert list(d["name"]) == ["void at::native::reduce_kernel<512>(int)"]
    assert (d.iloc[0]["class"], d.iloc[0]["op_class"], d.iloc[0]["op_category"]) == ("replaceable", "library", "conv")
    out = b.to_dict()
    assert out["signals"]["launch_op"]["time_us"] == 40.0 and out["n_disagreements"] == 1
    assert out["top_unclassified"] == [{"name": "mystery_kernel", "op": "aten::foo", "time_us": 10.0, "count": 1}]


def test_launch_op_wins_for_multi_tensor_apply(tmp_path) -> None:
    """A foreach kernel launched by _foreach_copy_ is data movement; by an optimizer's _foreach_add_, optimizer."""
    name = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
            "TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>>(int)")
    trace = _kernel_trace(tmp_path / "t.json.gz", [(name, "aten::_foreach_copy_", 5.0)])
    assert classify_trace(trace).categories["category"].tolist() == ["data_movement"]
    trace = _kernel_trace(tmp_path / "u.json.gz", [(name, "aten::_foreach_add_", 5.0)])
    assert classify_trace(trace).categories["category"].tolist() == ["optimizer"]
    assert TAX.classify([name]).iloc[0] == "optimizer"  # no launching op: the name rule's own category


WORKLOADS = sorted((Path(__file__).resolve().parents[1] / "data" / "workloads").glob("*.json.gz"))


@pytest.mark.parametrize("path", WORKLOADS, ids=[p.name for p in WORKLOADS])
def test_committed_h200_workload_traces_are_classified(path: Path) -> None:
    """CUDA-graph and compiled inference, cuDNN attention, FP8/int8 GEMMs, a GCN: under 0.5% unclassified."""
    b = classify_trace(path)
    assert b.unclassified_fraction < 0.005, b.top_unclassified()
    assert b.signals is not None and b.signals["time_us"].sum() == pytest.approx(b.total_time_us)


def test_cuda_graph_input_copies_are_data_movement() -> None:
    """reduce-overhead inference copies its inputs with _foreach_copy_: data movement, not optimizer."""
    b = classify_trace(Path(__file__).resolve().parents[1] / "data" / "workloads" / "compiled_reduce_overhead_infer.json.gz")
    mta = b.kernels[b.kernels["name"].str.contains("multi_tensor_apply")]
    assert not mta.empty and (mta["category"] == "data_movement").all()
    assert "optimizer" not in set(b.categories["category"])


# --- classify --explain, the unclassified list, and traces without kernel events ----------------

def _run(*args: str):
    from click.testing import CliRunner

    from addressable.cli import main

    return CliRunner().invoke(main, ["classify", *args])


def test_explain_names_the_parsed_name_launching_op_and_rule(tmp_path) -> None:
    trace = _kernel_trace(tmp_path / "t.json.gz", [
        ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>"
         "(__nv_bfloat16 const*, long const*)", "_C_cache_ops::reshape_and_cache_flash", 7.0),
        ("my_vendor_kernel_v7", "aten::mm", 40.0),
    ])
    r = _run(str(trace), "--explain", "cache_flash|vendor")
    assert r.exit_code == 0, r.output
    blocks = r.output.split("\n\n")
    assert len(blocks) == 2
    vendor = next(b for b in blocks if b.startswith("my_vendor"))
    assert "launched by: aten::mm" in vendor and "name rule:   no rule" in vendor
    assert "launch_op_rules #" in vendor and "(gemm)" in vendor
    assert "result:      gemm (library), by launch_op" in vendor
    cache = next(b for b in blocks if "reshape_and_cache" in b)
    assert "parsed:      vllm::reshape_and_cache_flash_kernel  <__nv_bfloat16, __nv_bfloat16" in cache
    assert "kernel_rules #" in cache and "(data_movement): 'reshape_and_cache" in cache
    assert "result:      data_movement (replaceable), by name" in cache
    j = _run(str(trace), "--explain", "vendor", "--json")
    row = json.loads(j.output)[0]
    assert (row["op"], row["category"], row["signal"]) == ("aten::mm", "gemm", "launch_op")


@pytest.mark.parametrize("args, message", [
    (["--explain", "nothing_like_this"], "matches 'nothing_like_this'"),
    (["--explain", "(unclosed"], "invalid regex"),
])
def test_explain_bad_input_is_one_line(tmp_path, args, message) -> None:
    trace = _kernel_trace(tmp_path / "t.json.gz", [("nvjet_sm90_x", "aten::mm", 1.0)])
    r = _run(str(trace), *args)
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output


def test_unclassified_list_shows_the_launching_op_and_a_rule_that_claims_them(tmp_path) -> None:
    trace = _kernel_trace(tmp_path / "t.json.gz", [
        ("void acme::fused_thing_kernel<float>(float*)", "acme::fused_thing", 30.0),
        ("nvjet_sm90_x", "aten::mm", 70.0),
    ])
    r = _run(str(trace))
    assert r.exit_code == 0, r.output
    assert "[launched by acme::fused_thing]" in r.output
    assert "Classified by kernel name 70.0%, by launching op 0.0%; 0 kernel(s)" in r.output
    line = r.output.strip().splitlines()
    rule = next(x for x in line if "kernel_rules line" in x).split(": ", 1)[1]
    assert rule == "- {category: CATEGORY, patterns: ['fused_thing_kernel']}"
    doc = {"categories": {"mine": {"class": "replaceable"}},
           "kernel_rules": [yaml.safe_load(rule.replace("CATEGORY", "mine"))[0]]}
    assert parse_taxonomy(doc).classify(["void acme::fused_thing_kernel<float>(float*)"]).iloc[0] == "mine"


def test_gpu_trace_without_kernel_events_is_not_a_cpu_trace(tmp_path) -> None:
    """Launches recorded, kernels not (CUDA activity off): say so; the CPU-op breakdown only on request."""
    trace = _kernel_trace(tmp_path / "t.json.gz", [("k", "aten::mm", 1.0), ("k", "aten::add", 1.0)],
                          launches_only=True)
    r = _run(str(trace))
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"error: {trace} holds 2 CUDA/HIP kernel launches but no kernel events: the profiler's CUDA activity "
        "was not recorded (add ProfilerActivity.CUDA); --basis cpu gives the CPU-op breakdown"]
    r = _run(str(trace), "--basis", "cpu", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["basis"] == "cpu_op_time"
    b = classify_trace(trace, basis="cpu_op_time")
    assert set(b.categories["category"]) == {"gemm", "elementwise"}


@pytest.mark.parametrize("op, expected", [
    ("aten::mm", "gemm"), ("aten::_scaled_mm", "gemm"), ("aten::_int_mm", "gemm"),
    ("aten::convolution_backward", "conv"), ("aten::_cudnn_rnn", "rnn"),
    ("aten::_scaled_dot_product_cudnn_attention", "attention"), ("vllm::unified_attention", "attention"),
    ("c10d::allreduce_", "communication"), ("symm_mem::one_shot_all_reduce", "communication"),
    ("aten::_foreach_copy_", "data_movement"), ("aten::_foreach_add_", "optimizer"),
    ("fbgemm::jagged_to_padded_dense", UNCLASSIFIED), ("aten::broadcast_tensors", UNCLASSIFIED),
    ("aten::add", UNCLASSIFIED),
])
def test_launch_op_rules(op: str, expected: str) -> None:
    assert TAX.classify([op], "launch_op").iloc[0] == expected


def test_launch_count_is_exact_across_read_blocks(tmp_path) -> None:
    """The byte scan reads 1 MB blocks; names straddling a block boundary are counted once."""
    from addressable.classify.breakdown import gpu_launches

    n = 30_000  # ~3 MB of JSON: several block boundaries
    events = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel" if i % 3 else "hipLaunchKernel",
               "ts": i, "dur": 1, "pid": 1, "tid": 1, "args": {"pad": "x" * (i % 50)}} for i in range(n)]
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1, "pid": 1, "tid": 1})
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert gpu_launches(path) == n


# --- issue 28: where the name and the launching op disagree, decide by what the work is ----------

@pytest.mark.parametrize("kernel, op, expected", [
    # cuDNN/MIOpen run GEMMs and tensor ops inside a convolution: convolution work
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "aten::cudnn_convolution", "conv"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_64x128_64x4_nt_align8>(int)",
     "aten::convolution_backward", "conv"),
    ("batched_gemm_xdlops_bwd_weight_kernel", "aten::miopen_convolution_backward_weight", "conv"),
    ("SubTensorOpWithScalar1d", "aten::miopen_convolution", "conv"),
    # the same GEMM under a GEMM op stays gemm; a reduction under a convolution (the bias gradient) stays one
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "aten::mm", "gemm"),
    ("void at::native::reduce_kernel<512>(int)", "aten::convolution_backward", "reduction"),
    ("Memset (Device)", "aten::cudnn_convolution", "memory"),
    # FlexAttention's template is attention, whatever its triton_tem_ prefix; a plain Inductor GEMM template is gemm
    ("triton_tem_fused_flex_attention_0", "flex_attention", "attention"),
    ("triton_tem_fused_0", "torch_flex_attention_op", "attention"),
    ("triton_tem_fused_addmm_0", "aten::addmm", "gemm"),
    # the GEMMs and helpers a solver, FFT or sparse product launches are that library's work
    ("nvjet_sm90_tst_64x64_64x13_1x2_h_bz_splitK_NTT", "aten::linalg_cholesky_ex", "linalg"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
     "aten::_fft_r2c", "fft"),
    ("some_unknown_kernel_v2", "aten::_sparse_addmm", "sparse"),
    ("void at::native::(anonymous namespace)::fill_index_and_segment_kernel<int>(int)", "aten::sort", "sort_scan"),
    # aten's norm helpers belong to the norm; a copy around a collective stays the caller's copy
    ("void at::native::(anonymous namespace)::ComputeBackwardFusedParamsCUDAKernel<float>(long)",
     "aten::native_group_norm_backward", "normalization"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)",
     "c10d::allreduce_", "elementwise"),
    # DeepEP's kernels: communication by namespace, whatever launched them
    ("void deep_ep::internode::combine<8, 4>(int)", "", "communication"),
    ("void dpsk::ep::internode_ll::dispatch<true>(int)", "aten::empty", "communication"),
])
def test_name_and_launching_op_decide_by_what_the_work_is(tmp_path, kernel: str, op: str, expected: str) -> None:
    trace = _kernel_trace(tmp_path / "t.json.gz", [(kernel, op or "aten::empty", 5.0)])
    if not op:  # no launching op at all: the kernel's External id matches no CPU op
        doc = json.loads(gzip.decompress(trace.read_bytes()))
        doc["traceEvents"] = [e for e in doc["traceEvents"] if e["cat"] == "kernel"]
        trace.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert classify_trace(trace).categories["category"].tolist() == [expected]


def test_a_decision_by_the_op_is_credited_to_the_op_and_explained() -> None:
    names = pd.Series(["nvjet_sm90_x", "nvjet_sm90_x"])
    ops = pd.Series(["aten::cudnn_convolution", "aten::mm"])
    k = TAX.classify_kernels(names, ops)
    assert list(k["category"].astype(str)) == ["conv", "gemm"] and list(k["signal"].astype(str)) == ["launch_op", "name"]
    entry = TAX.disagreement("gemm", "conv")
    assert entry is not None and entry.decide == "op" and "convolution" in entry.why
    assert TAX.disagreement("reduction", "conv") is None and TAX.disagreement("gemm", "gemm") is None


@pytest.mark.parametrize("entry, message", [
    ({"name": ["gemm"], "op": ["conv"], "decide": "maybe", "why": "x"}, "decide must be 'op' or 'name'"),
    ({"name": ["gemm"], "op": ["nope"], "decide": "op", "why": "x"}, "unknown: nope"),
    ({"name": [], "op": ["conv"], "decide": "op", "why": "x"}, "'name' must list declared categories"),
    ({"name": ["gemm"], "op": ["conv"], "decide": "op"}, "needs exactly 'name', 'op', 'decide' and 'why'"),
])
def test_bad_disagreements_entry_is_one_error(entry: dict, message: str) -> None:
    doc = {"categories": {"gemm": "library", "conv": "library"},
           "kernel_rules": [{"category": "gemm", "patterns": ["gemm"]}], "disagreements": [entry]}
    with pytest.raises(AddressableError, match=re.escape(message)):
        parse_taxonomy(doc)


def test_params_rule_reads_the_parameter_types() -> None:
    """cuBLAS's scal_kernel says whose it is only in its parameters (cublasTransposeParams)."""
    doc = {"categories": {"blas": "library"},
           "kernel_rules": [{"category": "blas", "patterns": ["."], "params": ["cublas"]}]}
    t = parse_taxonomy(doc)
    assert list(t.classify(["void scal_kernel<float>(cublasTransposeParams<float>, float*)",
                            "void scal_kernel<float>(float*)"])) == ["blas", UNCLASSIFIED]
    assert "and params '(?:cublas)'" in t.describe(t.kernel_rules[0], "scal_kernel")


@pytest.mark.parametrize("comm", [
    "void deep_ep::internode::combine<8, 4>(int)", "void dpsk::ep::intranode::notify_dispatch<8>(int)",
    "void mscclpp::allreduce_kernel<float>(int)", "void vllm::cross_device_reduce_1stage<float, 8>(int)",
    "nvshmemi_transfer_rma_kernel", "void pplx::a2a_dispatch_kernel(int)",
])
def test_expert_parallel_and_custom_collectives_count_as_exposed_or_overlapped_communication(tmp_path, comm) -> None:
    """A communication kernel on its own stream, half hidden behind a GEMM: 30 us overlapped, 30 us exposed."""
    events = [
        {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_x", "ts": 0, "dur": 30, "pid": 0, "tid": 7,
         "args": {"stream": 7, "device": 0}},
        {"ph": "X", "cat": "kernel", "name": comm, "ts": 0, "dur": 60, "pid": 0, "tid": 9,
         "args": {"stream": 9, "device": 0}},
    ]
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    b = classify_trace(path)
    assert b.communication_time_us == 60.0
    assert (b.timeline.communication_overlapped_us, b.timeline.communication_exposed_us) == (30.0, 30.0)


def test_explain_says_which_disagreements_entry_decided(tmp_path) -> None:
    trace = _kernel_trace(tmp_path / "t.json.gz", [
        ("nvjet_sm90_tst_x", "aten::cudnn_convolution", 5.0),
        ("void at::native::reduce_kernel<512>(int)", "aten::convolution_backward", 5.0),
        ("nvjet_sm90_tst_y", "aten::mm", 5.0),
    ])
    blocks = {b.split("\n")[0]: b for b in _run(str(trace), "--explain", "nvjet|reduce").output.split("\n\n")}
    assert "decided by:  disagreements #1: the op decides (cuDNN and MIOpen run GEMMs" in blocks["nvjet_sm90_tst_x"]
    assert "result:      conv (library), by launch_op" in blocks["nvjet_sm90_tst_x"]
    reduce = blocks["void at::native::reduce_kernel<512>(int)"]
    assert "decided by:  no disagreements entry: the name decides" in reduce and "result:      reduction" in reduce
    assert "decided by" not in blocks["nvjet_sm90_tst_y"]  # name and op agree
