"""rocprofv3 JSON (`--output-format json`): detection, the events table it gives (the Kineto reader's
columns and dtypes), classification on it, and bad input (one line, exit 2)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from addressable.classify.breakdown import BASIS_GPU, classify_trace
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.trace.detect import trace_kind
from addressable.trace.reader import load_trace

KINDS = ["NONE", "HSA_CORE_API", "HSA_AMD_EXT_API", "HSA_IMAGE_EXT_API", "HSA_FINALIZE_EXT_API", "HIP_RUNTIME_API",
         "HIP_COMPILER_API", "MARKER_CORE_API", "MARKER_CONTROL_API", "MARKER_NAME_API", "MEMORY_COPY",
         "KERNEL_DISPATCH"]
OPS = {"HIP_RUNTIME_API": ["hipApiName", "hipLaunchKernel", "hipMemcpyAsync"],
       "MEMORY_COPY": ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST", "MEMORY_COPY_HOST_TO_DEVICE",
                       "MEMORY_COPY_DEVICE_TO_HOST", "MEMORY_COPY_DEVICE_TO_DEVICE"],
       "KERNEL_DISPATCH": ["KERNEL_DISPATCH_NONE", "KERNEL_DISPATCH_ENQUEUE", "KERNEL_DISPATCH_COMPLETE"]}
GEMM = "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0_GRVW8.kd"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, FillFunctor<float>)"


def dispatch(kernel_id: int, start: int, end: int, corr: int, grid: int, wg: int) -> dict:
    return {"size": 184, "kind": 11, "operation": 2, "thread_id": 908, "correlation_id": {"internal": corr, "external": 0},
            "start_timestamp": start, "end_timestamp": end, "stream_id": {"handle": 5},
            "dispatch_info": {"size": 72, "agent_id": {"handle": 2}, "queue_id": {"handle": 16}, "kernel_id": kernel_id,
                              "dispatch_id": corr, "private_segment_size": 0, "group_segment_size": 0,
                              "workgroup_size": {"x": wg, "y": 1, "z": 1}, "grid_size": {"x": grid, "y": 1, "z": 1}}}


def api(op: int, start: int, end: int, corr: int) -> dict:
    return {"size": 56, "kind": 5, "operation": op, "thread_id": 909, "correlation_id": {"internal": corr, "external": 0},
            "start_timestamp": start, "end_timestamp": end}


def rocprof_doc() -> dict:
    """A rocprofv3 results.json in the layout of rocprofiler-sdk's tool output (one process)."""
    agents = [{"id": {"handle": 1}, "type": 1, "node_id": 0, "logical_node_type_id": 0, "name": "AMD EPYC"},
              {"id": {"handle": 2}, "type": 2, "node_id": 1, "logical_node_type_id": 0, "name": "gfx942"}]
    symbols = [{"kernel_id": 0, "kernel_name": "0", "formatted_kernel_name": "0"},
               {"kernel_id": 1, "kernel_name": "_Z4gemm", "formatted_kernel_name": GEMM.removesuffix(".kd"),
                "demangled_kernel_name": GEMM, "truncated_kernel_name": GEMM},
               {"kernel_id": 2, "kernel_name": "_ZN2at6native", "formatted_kernel_name": ELEMENTWISE,
                "demangled_kernel_name": ELEMENTWISE, "truncated_kernel_name": "vectorized_elementwise_kernel"}]
    copy = {"size": 88, "kind": 10, "operation": 2, "thread_id": 909, "correlation_id": {"internal": 4, "external": 0},
            "start_timestamp": 5_000, "end_timestamp": 9_000, "dst_agent_id": {"handle": 2},
            "src_agent_id": {"handle": 1}, "bytes": 4096}
    return {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 908, "init_time": 0, "fini_time": 1, "command": ["python", "train.py"]},
        "agents": agents, "kernel_symbols": symbols,
        "strings": {"buffer_records": [{"kind": k, "operations": OPS.get(k, [])} for k in KINDS]},
        "buffer_records": {"kernel_dispatch": [dispatch(1, 10_000, 60_000, 1, 8192, 256),
                                               dispatch(2, 61_000, 71_000, 2, 1000, 256),
                                               dispatch(1, 72_000, 122_000, 3, 8192, 256)],
                           "hip_api": [api(1, 9_000, 9_500, 1), api(1, 60_500, 60_700, 2), api(1, 61_000, 61_200, 3),
                                       api(2, 4_000, 9_100, 4)],
                           "memory_copy": [copy], "marker_api": [], "memory_allocation": []}}]}


@pytest.fixture
def rocprof_path(tmp_path: Path) -> Path:
    path = tmp_path / "908_results.json"
    path.write_text(json.dumps(rocprof_doc(), indent=1))
    return path


def test_detected_by_content_plain_and_gzipped(rocprof_path: Path, tmp_path: Path) -> None:
    gz = tmp_path / "908_results.json.gz"
    gz.write_bytes(gzip.compress(rocprof_path.read_bytes()))
    assert trace_kind(rocprof_path) == trace_kind(gz) == "rocprof"
    pd.testing.assert_frame_equal(load_trace(rocprof_path).events, load_trace(gz).events)


def test_kernels_and_copies_become_gpu_rows(rocprof_path: Path) -> None:
    ev = load_trace(rocprof_path).events
    assert ev[["name", "cat"]].astype(str).values.tolist() == [
        ["Memcpy HtoD", "gpu_memcpy"], [GEMM.removesuffix(".kd"), "kernel"], [ELEMENTWISE, "kernel"],
        [GEMM.removesuffix(".kd"), "kernel"]]
    k = ev[ev["cat"] == "kernel"]
    assert k["ts"].tolist() == [10.0, 61.0, 72.0] and k["dur"].tolist() == [50.0, 10.0, 50.0]  # ns -> µs
    assert k["grid"].astype(str).tolist() == ["[32,1,1]", "[4,1,1]", "[32,1,1]"]  # workgroups, as CUDA's blocks
    assert set(k["block"].astype(str)) == {"[256,1,1]"}
    assert set(ev["pid"]) == {908} and set(k["stream"]) == {5} and set(ev["device"]) == {0}
    assert k["correlation"].tolist() == [1, 2, 3] and ev["external_id"].isna().all()


def test_the_table_has_the_kineto_readers_columns_and_dtypes(rocprof_path: Path, assert_kineto_schema) -> None:
    assert_kineto_schema(load_trace(rocprof_path).events)


def test_hip_api_calls_are_runtime_rows_joined_by_correlation(rocprof_path: Path) -> None:
    ev = load_trace(rocprof_path, runtime=True).events
    rt = ev[ev["kind"] == "runtime"]
    assert rt["name"].astype(str).tolist() == ["hipMemcpyAsync", "hipLaunchKernel", "hipLaunchKernel",
                                               "hipLaunchKernel"]
    assert set(rt["cat"].astype(str)) == {"hip_runtime"} and set(rt["tid"]) == {909}
    assert set(rt["correlation"]) == set(ev.loc[ev["kind"] == "gpu", "correlation"])
    assert not (load_trace(rocprof_path).events["kind"] == "runtime").any()


def test_classified_on_gpu_time(rocprof_path: Path) -> None:
    b = classify_trace(rocprof_path)
    assert b.basis == BASIS_GPU and b.total_time_us == pytest.approx(50 + 10 + 50 + 4)
    cats = dict(zip(b.kernels["name"], b.kernels["category"], strict=True))
    assert cats[GEMM.removesuffix(".kd")] == "gemm" and cats[ELEMENTWISE] == "elementwise"


def broken(doc: dict, where: str) -> dict:
    p = doc["rocprofiler-sdk-tool"][0]
    if where == "no strings":
        del p["strings"]
    elif where == "dispatch without dispatch_info":
        del p["buffer_records"]["kernel_dispatch"][0]["dispatch_info"]
    elif where == "operation out of range":
        p["buffer_records"]["memory_copy"][0]["operation"] = 99
    elif where == "string timestamp":
        p["buffer_records"]["kernel_dispatch"][0]["end_timestamp"] = "late"
    return doc


@pytest.mark.parametrize("where", ["no strings", "dispatch without dispatch_info", "operation out of range",
                                   "string timestamp"])
def test_a_broken_record_is_one_line_error(tmp_path: Path, where: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(broken(rocprof_doc(), where)))
    with pytest.raises(AddressableError, match="rocprofv3 JSON lacks or misspells a field"):
        load_trace(path)
    r = CliRunner().invoke(main, ["classify", str(path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output


@pytest.mark.parametrize("doc,expect", [
    ('{"rocprofiler-sdk-tool": {"metadata": {}}}', "is not a list of process objects"),
    ('{"rocprofiler-sdk-tool": [1, 2]}', "is not a list of process objects"),
    ('{"rocprofiler-sdk-tool": [{"strings": {"buffer_records": []}, "buffer_records": {}}]}', "empty trace"),
    ('{"rocprofiler-sdk-tool": [{"strings"', "truncated trace"),
])
def test_bad_documents(tmp_path: Path, doc: str, expect: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(doc)
    with pytest.raises(AddressableError, match=expect):
        load_trace(path)


def test_the_replay_reads_it(rocprof_path: Path, replay_with_gemm_halved) -> None:
    """What `project --model replay` needs: launches joined to kernels, the profiled span replayed as it was."""
    _, base, faster, _ = replay_with_gemm_halved(rocprof_path, GEMM.removesuffix(".kd"))
    assert base.busy == pytest.approx(50 + 10 + 50 + 4)
    assert faster.busy == pytest.approx(25 + 10 + 25 + 4) and faster.span < base.span
