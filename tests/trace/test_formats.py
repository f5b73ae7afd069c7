"""Kineto and Chrome traces beyond today's spelling: TensorBoard-plugin-era categories, other
accelerators' device events, bare arrays without `cat`, and the formats that are recognised and
refused (Perfetto protobuf, .nsys-rep), each refusal one line and exit 2."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pandas as pd
import pytest
from click.testing import CliRunner

from addressable.classify.breakdown import BASIS_CPU, BASIS_GPU, classify_trace
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.trace.detect import trace_kind
from addressable.trace.reader import load_trace, unread_categories


def write(path: Path, doc: object, gz: bool = False) -> Path:
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def tb_plugin_era_events(ext_key: str = "external id") -> list[dict]:
    """Events as Kineto wrote them for the TensorBoard plugin (torch 1.8-1.9, its samples' layout):
    capitalised categories, the GPU rows' External id spelled lower-case, tids as strings."""
    out: list[dict] = [{"ph": "X", "cat": "Operator", "name": "ProfilerStep#5", "pid": 25738, "tid": "25738",
                        "ts": 1000, "dur": 900, "args": {"External id": 1}}]
    for i, (op, kernel, cat) in enumerate([("aten::cudnn_convolution", "implicit_convolve_sgemm", "Kernel"),
                                           ("aten::add_", "elementwise_kernel", "Kernel"),
                                           ("aten::copy_", "Memcpy HtoD (Pageable -> Device)", "Memcpy"),
                                           ("aten::zero_", "Memset (Device)", "Memset")]):
        ext, corr, ts = 10 + i, 100 + i, 1100 + 200 * i
        out += [{"ph": "X", "cat": "Operator", "name": op, "pid": 25738, "tid": "25738", "ts": ts, "dur": 50,
                 "args": {"External id": ext, "Input Dims": [[2, 3]]}},
                {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 25738, "tid": "25738", "ts": ts + 5,
                 "dur": 10, "args": {"cbid": 211, "correlation": corr, "external id": ext}},
                {"ph": "X", "cat": cat, "name": kernel, "pid": 0, "tid": "stream 7", "ts": ts + 20, "dur": 30 + i,
                 "args": {"device": 0, "stream": 7, "correlation": corr, ext_key: ext, "grid": [4, 1, 1]}},
                {"ph": "s", "id": corr, "pid": 25738, "tid": 25738, "ts": ts + 5, "cat": "async", "name": "launch"}]
    out.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Traces", "tid": "PyTorch Profiler",
                "ts": 900, "dur": 1500, "args": {"Op count": 0}})
    return out


@pytest.fixture
def tb_trace(tmp_path: Path) -> Path:
    return write(tmp_path / "worker0.pt.trace.json", {"schemaVersion": 1, "traceEvents": tb_plugin_era_events()})


@pytest.mark.parametrize("native", [True, False])
def test_tensorboard_plugin_era_categories_read_as_todays(tb_trace: Path, native: bool) -> None:
    """They were "empty trace" before: no category matched today's spelling."""
    ev = load_trace(tb_trace, native=native).events
    assert set(ev["cat"].astype(str)) == {"cpu_op", "kernel", "gpu_memcpy", "gpu_memset"}
    assert ev["kind"].value_counts().to_dict() == {"cpu_op": 4, "gpu": 4, "step": 1, "annotation": 0,
                                                   "cpu_annotation": 0, "runtime": 0, "sync": 0}
    gpu = ev[ev["kind"] == "gpu"].sort_values("ts")
    # the lower-case "external id" of the old GPU rows joins them to their launching op
    assert list(gpu["op"].astype(str)) == ["aten::cudnn_convolution", "aten::add_", "aten::copy_", "aten::zero_"]
    assert list(gpu["step"]) == [5, 5, 5, 5]


def test_tensorboard_plugin_era_runtime_calls_are_kept_only_on_request(tb_trace: Path) -> None:
    ev = load_trace(tb_trace, runtime=True).events
    rt = ev[ev["kind"] == "runtime"]
    assert len(rt) == 4 and set(rt["cat"].astype(str)) == {"cuda_runtime"}
    assert sorted(rt["correlation"]) == [100, 101, 102, 103]


def test_tensorboard_plugin_era_trace_classifies_on_gpu_time(tb_trace: Path) -> None:
    b = classify_trace(tb_trace)
    assert b.basis == BASIS_GPU and b.n_steps == 1
    assert b.total_time_us == pytest.approx(30 + 31 + 32 + 33)


def test_both_spellings_of_external_id_the_first_wins_on_every_path(tmp_path: Path) -> None:
    """An event with both keys: the C scanner hands it to Python, which reads "External id"."""
    events = tb_plugin_era_events()
    for e in events:
        if e["cat"] == "Kernel":
            e["args"]["External id"] = 12  # aten::copy_'s id, against the lower-case key's own
    path = write(tmp_path / "both.json", {"traceEvents": events})
    tables = [load_trace(path, native=n, schema=s).events for n, s in ((True, True), (False, True), (False, False))]
    for ev in tables:
        kernels = ev[ev["cat"] == "kernel"]
        assert list(kernels["external_id"]) == [12, 12]
        pd.testing.assert_frame_equal(ev, tables[0])


@pytest.mark.parametrize("native", [True, False])
def test_the_old_python_category_keeps_only_module_calls_as_todays_does(tmp_path: Path, native: bool) -> None:
    events = tb_plugin_era_events()
    events += [{"ph": "X", "cat": "Python", "name": name, "pid": 25738, "tid": "25738", "ts": 1010, "dur": 5}
               for name in ("nn.Module: ResNet_0", "<built-in method conv2d of type object>", "train.py(54): step")]
    ev = load_trace(write(tmp_path / "py.json", {"traceEvents": events}), native=native).events
    scopes = ev[ev["kind"] == "cpu_annotation"]
    assert scopes[["name", "cat"]].astype(str).values.tolist() == [["nn.Module: ResNet_0", "python_function"]]


def test_mixed_spellings_of_one_category_make_one_category(tmp_path: Path) -> None:
    events = tb_plugin_era_events()
    events[3]["cat"] = "kernel"  # one kernel in today's spelling among the old ones
    ev = load_trace(write(tmp_path / "mixed.json", {"traceEvents": events})).events
    assert list(ev["cat"].cat.categories) == ["cpu_op", "gpu_memcpy", "gpu_memset", "kernel"]
    assert (ev["cat"] == "kernel").sum() == 2


def mtia_events(device_cat: str = "mtia_ccp_events") -> list[dict]:
    """An MTIA trace's layout (HolisticTraceAnalysis's MTIA test data): device events without an
    External id, host runtime calls as mtia_runtime."""
    return [{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 31, "tid": 32, "ts": 10, "dur": 40,
             "args": {"External id": 5}},
            {"ph": "X", "cat": "mtia_runtime", "name": "runFunction - job_prep_and_submit_for_execution", "pid": 31,
             "tid": 32, "ts": 20, "dur": 5, "args": {"correlation": 9}},
            {"ph": "X", "cat": device_cat, "name": "fc-dtype_Float", "pid": 9, "tid": 801, "ts": 30, "dur": 70,
             "args": {"stream": 108}},
            {"ph": "X", "cat": device_cat, "name": "dma_request", "pid": 9, "tid": 801, "ts": 110, "dur": 8,
             "args": {"direction": "DEVICE_TO_HOST", "size": 16}}]


def test_mtia_device_events_are_device_work(tmp_path: Path) -> None:
    """They were ignored, and CPU-op time reported in their place without a word."""
    path = write(tmp_path / "mtia.json", {"traceEvents": mtia_events()})
    b = classify_trace(path)
    assert b.basis == BASIS_GPU and b.total_time_us == pytest.approx(78)
    assert not b.warnings
    ev = load_trace(path, runtime=True).events
    assert ev.loc[ev["cat"] == "mtia_runtime", "kind"].tolist() == ["runtime"]


def test_device_events_of_an_unknown_category_are_named_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "npu.json", {"traceEvents": mtia_events("npu_device_events")})
    assert unread_categories(path) == {"npu_device_events": 2}
    r = CliRunner().invoke(main, ["classify", str(path)])
    assert r.exit_code == 0, r.output
    lines = [line for line in r.output.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1
    assert "npu_device_events ×2" in lines[0] and "CPU-op self time" in lines[0]
    assert "gpu_work_categories" in lines[0]


def test_a_cpu_only_trace_and_known_categories_give_no_such_warning(tmp_path: Path) -> None:
    events = [e for e in mtia_events() if e["cat"] != "mtia_ccp_events"]
    events.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": 1, "tid": 1, "ts": 0, "dur": 500})
    events.append({"ph": "i", "cat": "cpu_instant_event", "name": "x", "pid": 1, "tid": 1, "ts": 0, "s": "t"})
    path = write(tmp_path / "cpu.json", {"traceEvents": events})
    b = classify_trace(path)
    assert b.basis == BASIS_CPU and b.warnings == []
    assert classify_trace(write(tmp_path / "npu.json", {"traceEvents": mtia_events("npu_x")}), basis=BASIS_CPU).warnings == []


def autograd_profiler_array() -> list[dict]:
    """torch.autograd.profiler's export_chrome_trace before Kineto: a bare array, no `cat` on the
    complete events, the pid saying CPU or CUDA, flows (cpu_to_cuda) between them."""
    return [{"name": "aten::mm", "ph": "X", "ts": 10, "dur": 50, "tid": 1, "pid": "CPU functions", "args": {}},
            {"name": "aten::mm", "ph": "s", "ts": 10, "tid": 1, "pid": "CPU functions", "id": 0, "cat": "cpu_to_cuda",
             "args": {}},
            {"name": "volta_sgemm_128x64_nn", "ph": "f", "ts": 20, "tid": 0, "pid": "CUDA functions", "id": 0,
             "cat": "cpu_to_cuda", "args": {}},
            {"name": "volta_sgemm_128x64_nn", "ph": "X", "ts": 20, "dur": 30, "tid": 0, "pid": "CUDA functions",
             "args": {}}]


@pytest.mark.parametrize("gz", [False, True])
def test_a_bare_array_without_cat_is_read_by_its_pid_labels(tmp_path: Path, gz: bool) -> None:
    path = write(tmp_path / "old.json", autograd_profiler_array(), gz=gz)
    ev = load_trace(path).events
    assert ev[["name", "cat", "kind"]].astype(str).values.tolist() == [
        ["aten::mm", "cpu_op", "cpu_op"], ["volta_sgemm_128x64_nn", "kernel", "gpu"]]
    assert classify_trace(path).basis == BASIS_GPU


def test_a_bare_array_whose_events_say_nothing_of_what_they_are_is_one_error(tmp_path: Path) -> None:
    events = [{"name": "x", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1},
              {"name": "y", "ph": "X", "ts": 1, "dur": 2, "pid": "GPU 0", "tid": 1}]
    path = write(tmp_path / "nocat.json", events)
    with pytest.raises(AddressableError, match="2 complete events carry no 'cat' and no pid"):
        load_trace(path)
    r = CliRunner().invoke(main, ["classify", str(path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "error:" in r.output


def test_events_with_a_cat_or_outside_a_bare_array_are_not_relabelled_by_their_pid(tmp_path: Path) -> None:
    """Only uncategorised events of a bare array are read by pid: one of an unknown category stays unread."""
    events = [{"name": "x", "ph": "X", "ts": 1, "dur": 2, "pid": "CUDA functions", "tid": 1, "cat": "weird"}]
    with pytest.raises(AddressableError, match="no kernels, annotations or CPU ops among the 1 events"):
        load_trace(write(tmp_path / "cat.json", events))
    with pytest.raises(AddressableError, match="no kernels, annotations or CPU ops among the 4 events"):
        load_trace(write(tmp_path / "doc.json", {"traceEvents": autograd_profiler_array()}))


@pytest.mark.parametrize("name,data,expect", [
    ("run.pftrace", b"\x0a\x10\x00\x01", "Perfetto protobuf traces are not read"),
    ("run.perfetto-trace", b"{}", "Perfetto protobuf traces are not read"),
    ("run.bin", b"\x0a\x8c\x01\x12\x00\xff\xfe", "Perfetto protobuf traces are not read"),
    ("report1.nsys-rep", b"\x00\x01", "nsys export --type sqlite"),
    ("report1.qdrep", b"\x00\x01", "nsys export --type sqlite"),
])
def test_recognised_formats_that_are_not_read_are_one_line_errors(tmp_path: Path, name: str, data: bytes,
                                                                  expect: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(AddressableError, match=expect):
        trace_kind(path)
    r = CliRunner().invoke(main, ["classify", str(path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and expect in r.output, r.output


def test_a_text_file_starting_with_a_newline_is_still_json(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", {"traceEvents": mtia_events()})
    path.write_bytes(b"\n" + path.read_bytes())
    assert trace_kind(path) == "kineto" and not load_trace(path).events.empty


def test_an_execution_trace_is_named_not_called_empty(tmp_path: Path) -> None:
    """PyTorch's ExecutionTraceObserver output (Chakra's input): ops and tensors, no timings."""
    path = write(tmp_path / "et.json", {"schema": "1.0.1", "pid": 1, "time": "2023-07-14", "start_ts": 6,
                                        "nodes": [{"name": "[pytorch|profiler|execution_trace|thread]", "id": 2}]})
    r = CliRunner().invoke(main, ["classify", str(path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "execution trace" in r.output, r.output


@pytest.mark.parametrize("native", [True, False])
def test_sync_records_are_kept_with_the_runtime_calls(tmp_path: Path, native: bool) -> None:
    """torch.profiler's enable_cuda_sync_events records: the replay reads its waits from them."""
    events = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1, "ts": 10,
               "dur": 2, "args": {"correlation": 41}},
              {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 24, "ts": 11, "dur": 2,
               "args": {"cuda_sync_kind": "Stream Wait Event", "wait_on_stream": 20,
                        "wait_on_cuda_event_record_corr_id": 37, "stream": 24, "correlation": 41, "device": 0}},
              {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1, "ts": 30, "dur": 5,
               "args": {"cuda_sync_kind": "Context Sync", "stream": -1, "correlation": 50, "device": 0}},
              {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 24, "ts": 12, "dur": 3,
               "args": {"stream": 24, "device": 0, "correlation": 42}}]
    path = write(tmp_path / "sync.json", {"traceEvents": events})
    ev = load_trace(path, runtime=True, native=native).events
    sync = ev[ev["kind"] == "sync"]
    assert sync["name"].astype(str).tolist() == ["Stream Wait Event", "Context Sync"]
    assert sync["wait_on_stream"].tolist()[0] == 20 and sync["wait_record"].tolist()[0] == 37
    assert sync["stream"].tolist() == [24, -1] and sync["wait_record"].isna().tolist() == [False, True]
    assert "sync" not in set(load_trace(path, native=native).events["kind"].astype(str))
    assert not unread_categories(path)
