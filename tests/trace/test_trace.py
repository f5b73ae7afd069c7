"""The trace loader: real traces, what counts as work, steps, the launching-op join, CPU-only
traces, and bad input (which must only ever raise AddressableError: one line, exit code 2)."""

from __future__ import annotations

import gzip
import itertools
import shutil
import zlib
from pathlib import Path

import orjson
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import addressable.trace.reader as trace_module
from addressable.classify.breakdown import BASIS_CPU, BASIS_GPU, classify_trace, cpu_self_time, work_rows
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.trace.reader import iter_event_chunks, load_trace

COLUMNS = ["name", "cat", "ts", "dur", "pid", "tid", "stream", "device", "correlation", "external_id",
           "input_dims", "input_type", "input_strides", "concrete_inputs", "sequence",
           "fwd_thread", "grid", "block", "wait_on_stream", "wait_record",
           "kind", "op", "step"]


# ------------------------------------------------------------------ helpers


def cpu_op(name: str, ts: float, dur: float, ext: int, cat: str = "cpu_op", tid: int = 1) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": {"External id": ext, "Record function id": 0}}


def kernel(name: str, ts: float, dur: float, ext: int, corr: int, cat: str = "kernel") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"External id": ext, "device": 0, "stream": 7, "correlation": corr, "grid": [1, 1, 1]}}


def launch(ts: float, ext: int, corr: int) -> list[dict]:
    """The cuda_runtime call and the ac2g flow pair that come with every kernel: never rows."""
    return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 3,
             "args": {"External id": ext, "correlation": corr}},
            {"ph": "s", "id": corr, "pid": 1, "tid": 1, "ts": ts, "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": ts + 5, "cat": "ac2g", "name": "ac2g", "bp": "e"}]


def write(path: Path, events: list, *, gz: bool = False, bare: bool = False, **meta) -> Path:
    doc = events if bare else {"schemaVersion": 1, **meta, "traceEvents": events, "traceName": str(path)}
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def gpu_trace() -> list[dict]:
    """Two profiler steps; each launches a GEMM (inside aten::linear -> aten::addmm) and a ReLU."""
    ev: list[dict] = []
    ext = itertools.count(1)
    corr = itertools.count(100)
    for step in (5, 6):
        t0 = step * 1000.0
        ev.append(cpu_op(f"ProfilerStep#{step}", t0, 900, next(ext), cat="user_annotation"))
        outer, inner = next(ext), next(ext)
        ev += [cpu_op("aten::linear", t0 + 10, 100, outer), cpu_op("aten::addmm", t0 + 20, 80, inner)]
        c = next(corr)
        ev += launch(t0 + 30, inner, c)
        ev.append(kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", t0 + 200, 300, inner, c))
        relu = next(ext)
        ev.append(cpu_op("aten::relu", t0 + 150, 50, relu))
        c = next(corr)
        ev += launch(t0 + 160, relu, c)
        # launched inside the step, runs after it ends: still this step's work
        ev.append(kernel("void at::native::vectorized_elementwise_kernel<4, at::native::relu_kernel>()",
                         t0 + 950, 100, relu, c))
    # a GPU annotation spanning everything: a label, never work of its own
    ev.append({"ph": "X", "cat": "gpu_user_annotation", "name": "Optimizer.step#SGD.step", "pid": 0, "tid": 7,
               "ts": 5000.0, "dur": 2000.0, "args": {"External id": 999}})
    ev.append({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "python3"}})
    return ev


@pytest.fixture
def gpu_path(tmp_path: Path) -> Path:
    return write(tmp_path / "gpu.json", gpu_trace())


# ------------------------------------------------------------------ real traces


@pytest.mark.parametrize("name, n_gpu", [("resnet50_train", 2898), ("llama8b4l_infer", 621)])
def test_real_traces_load(h200_traces, name: str, n_gpu: int) -> None:
    t = load_trace(h200_traces[name])
    ev = t.events
    assert list(ev.columns) == COLUMNS
    assert len(t.gpu) == n_gpu  # kernels + memsets + memcpys; no runtime calls, flows or metadata
    assert set(ev["cat"].astype(str)) <= {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation",
                                          "cpu_op", "user_annotation"}
    assert ev["ts"].is_monotonic_increasing
    assert str(ev["name"].dtype) == "category" and str(ev["kind"].dtype) == "category"
    assert t.metadata["deviceProperties"][0]["name"] == "NVIDIA H200"
    assert t.metadata["traceName"].endswith(f"{name}.json")
    assert (t.gpu["stream"] == 7).all() and (t.gpu["device"] == 0).all()
    assert t.gpu["correlation"].notna().all()


@pytest.fixture(params=["zlib-ng", "zlib"])
def gzip_codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Un-gzip with zlib-ng (where installed) and with the standard zlib, its fallback."""
    # zlib-ng: a dependency, optional at run time only (absent on the GPU image: that case skips)
    codec = pytest.importorskip("zlib_ng", reason="zlib-ng not installed").zlib_ng if request.param == "zlib-ng" else zlib
    monkeypatch.setattr(trace_module, "gzip_codec", codec)
    return request.param


def test_plain_json_equals_gzip(h200_traces, tmp_path: Path, gzip_codec: str) -> None:
    src = h200_traces["llama8b4l_infer"]
    plain = tmp_path / "llama.json"
    with gzip.open(src) as f, open(plain, "wb") as out:
        shutil.copyfileobj(f, out)
    a, b = load_trace(src), load_trace(plain)
    pd.testing.assert_frame_equal(a.events, b.events)
    assert a.metadata == b.metadata


def test_real_kernels_join_their_launching_cpu_op(h200_traces) -> None:
    ev = load_trace(h200_traces["resnet50_train"]).events
    gpu = ev[ev["kind"] == "gpu"]
    cpu = ev[ev["kind"] == "cpu_op"].drop_duplicates("external_id", keep="last")
    expected = gpu["external_id"].map(dict(zip(cpu["external_id"], cpu["name"].astype(str), strict=True)))
    assert gpu["op"].notna().mean() > 0.99
    assert (gpu["op"].astype(str) == expected.astype(str)).all()
    conv = gpu[gpu["name"].astype(str).str.contains("xmma_fprop")]
    assert set(conv["op"].astype(str)) == {"aten::cudnn_convolution"}


def test_real_gpu_annotations_are_not_work(h200_traces) -> None:
    t = load_trace(h200_traces["resnet50_train"])
    ann = t.events[t.events["kind"] == "annotation"]
    assert set(ann["name"].astype(str)) == {"Optimizer.step#SGD.step"}
    rows, basis = work_rows(t)
    assert basis == BASIS_GPU and not (rows["kind"] == "annotation").any()
    b = classify_trace(h200_traces["resnet50_train"])
    assert b.total_time_us == pytest.approx(t.gpu["dur"].sum())
    assert "Optimizer.step#SGD.step" not in set(b.kernels["name"])


# ------------------------------------------------------------------ synthetic GPU trace


def test_rows_kinds_and_columns(gpu_path: Path) -> None:
    t = load_trace(gpu_path)
    kinds = t.events["kind"].value_counts()
    assert kinds["gpu"] == 4 and kinds["annotation"] == 1 and kinds["step"] == 2 and kinds["cpu_op"] == 6
    assert "cudaLaunchKernel" not in set(t.events["name"].astype(str))  # runtime calls are not rows
    k = t.gpu.iloc[0]
    assert (k["stream"], k["device"], k["correlation"]) == (7, 0, 100)
    assert t.metadata == {"schemaVersion": 1, "traceName": str(gpu_path)}


def test_gpu_user_annotation_is_never_work(gpu_path: Path) -> None:
    b = classify_trace(gpu_path)
    assert b.total_time_us == 2 * 300 + 2 * 100  # the 2000 us annotation adds nothing
    assert "Optimizer.step#SGD.step" not in set(b.kernels["name"])
    assert b.share_of("gemm") == pytest.approx(600 / 800)


def test_profiler_steps_are_recognised(gpu_path: Path, tmp_path: Path) -> None:
    t = load_trace(gpu_path)
    assert t.n_steps == 2
    steps = t.events[t.events["kind"] == "step"]
    assert list(steps["name"].astype(str)) == ["ProfilerStep#5", "ProfilerStep#6"]
    # GPU rows take the step of their launch, even when they run after the step ends
    assert list(t.gpu["step"]) == [5, 5, 6, 6]
    assert classify_trace(gpu_path).n_steps == 2
    # older torch: ProfilerStep#N as a cpu_op; a GPU-side ProfilerStep row is an annotation, not a step
    ev = [e | {"cat": "cpu_op"} if e["name"].startswith("ProfilerStep#") else e for e in gpu_trace()]
    ev.append({"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#5", "pid": 0, "tid": 7,
               "ts": 5100.0, "dur": 900.0, "args": {"External id": 1}})
    t2 = load_trace(write(tmp_path / "old.json", ev))
    assert t2.n_steps == 2 and list(t2.gpu["step"]) == [5, 5, 6, 6]
    assert (t2.events["kind"] == "annotation").sum() == 2


def test_no_steps_leaves_step_empty(tmp_path: Path) -> None:
    ev = [e for e in gpu_trace() if not e["name"].startswith("ProfilerStep#")]
    t = load_trace(write(tmp_path / "nostep.json", ev))
    assert t.n_steps == 0 and t.events["step"].isna().all()
    assert classify_trace(tmp_path / "nostep.json").n_steps is None


def test_kernel_op_is_the_innermost_launching_cpu_op(gpu_path: Path) -> None:
    ev = load_trace(gpu_path).events
    gpu = ev[ev["kind"] == "gpu"]
    assert list(gpu["op"].astype(str)) == ["aten::addmm", "aten::relu"] * 2
    assert ev.loc[ev["kind"] != "gpu", "op"].isna().all()
    # same External id on an outer and an inner op: the one that starts last wins
    events = [*gpu_trace(), cpu_op("aten::outer_wrapper", 5015, 90, 3)]
    events = [e for e in events if e.get("name") != "aten::linear"]
    ev2 = load_trace(write(gpu_path.with_name("dup.json"), events)).events
    assert ev2.loc[ev2["kind"] == "gpu", "op"].astype(str).iloc[0] == "aten::addmm"


def test_bare_array_and_gzip(tmp_path: Path) -> None:
    a = load_trace(write(tmp_path / "a.json", gpu_trace()))
    b = load_trace(write(tmp_path / "b.json", gpu_trace(), bare=True))
    c = load_trace(write(tmp_path / "c.json.gz", gpu_trace(), gz=True))
    pd.testing.assert_frame_equal(a.events, b.events)
    pd.testing.assert_frame_equal(a.events, c.events)


def test_iter_event_chunks_yields_every_event_then_metadata(gpu_path: Path) -> None:
    chunks = list(iter_event_chunks(gpu_path, chunk_bytes=256))
    *lists, meta = chunks
    assert len(lists) > 1 and isinstance(meta, dict) and meta["schemaVersion"] == 1
    assert [e for c in lists for e in c] == gpu_trace()


# ------------------------------------------------------------------ CPU-only traces


def cpu_only_trace() -> list[dict]:
    ext = itertools.count(1)
    ev = [cpu_op("ProfilerStep#0", 0, 10_000, next(ext), cat="user_annotation"),
          cpu_op("phase:forward", 5, 9_000, next(ext), cat="user_annotation")]

    def nest(names: list[str], t0: float, leaf_dur: float) -> None:
        for depth, name in enumerate(names):
            ev.append(cpu_op(name, t0 + depth, leaf_dur + 2 * (len(names) - 1 - depth), next(ext)))

    nest(["aten::conv2d", "aten::convolution", "aten::_convolution", "aten::mkldnn_convolution"], 10, 1000)
    nest(["aten::linear", "aten::addmm"], 2000, 500)
    nest(["aten::matmul", "aten::bmm"], 3000, 300)
    nest(["aten::mm"], 4000, 200)
    nest(["aten::relu", "aten::clamp_min"], 5000, 150)
    nest(["aten::add"], 6000, 50)
    return ev


def test_cpu_only_trace_breaks_down_cpu_self_time(tmp_path: Path) -> None:
    path = write(tmp_path / "cpu.json", cpu_only_trace())
    t = load_trace(path)
    assert not t.has_gpu_work and t.n_steps == 1
    rows, basis = work_rows(t)
    assert basis == BASIS_CPU
    self_us = dict(zip(rows["name"].astype(str), rows["dur"], strict=True))
    # leaves keep their whole duration; each wrapper keeps the 2 us not covered by its child
    assert self_us["aten::mkldnn_convolution"] == 1000 and self_us["aten::addmm"] == 500
    assert self_us["aten::conv2d"] == 2 and self_us["aten::linear"] == 2 and self_us["aten::relu"] == 2
    assert set(cpu_self_time(t.events)["name"].astype(str)) == set(self_us)
    b = classify_trace(path)
    assert b.basis == BASIS_CPU and b.n_steps == 1
    assert b.total_time_us == 1006 + 502 + 302 + 200 + 152 + 50  # the top-level ops' durations
    cats = dict(zip(b.categories["category"], b.categories["class"], strict=True))
    assert cats["conv"] == "library" and cats["gemm"] == "library" and cats["elementwise"] == "replaceable"
    assert b.library_fraction == pytest.approx((1006 + 502 + 302 + 200) / 2212)
    assert b.phases is not None and set(b.phases["phase"]) == {"forward"}


def test_cpu_self_time_without_thread_ids(tmp_path: Path) -> None:
    """CPU ops with no pid/tid (found by Hypothesis) form a thread of their own instead of crashing."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0, "dur": 10},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 2, "dur": 3}]
    t = load_trace(write(tmp_path / "noids.json", events))
    self_us = cpu_self_time(t.events).set_index("name")["dur"]
    assert self_us["aten::add"] == 7 and self_us["aten::mul"] == 3


# ------------------------------------------------------------------ bad input


def one_line_error(path: Path, match: str) -> str:
    with pytest.raises(AddressableError, match=match) as err:
        classify_trace(path)
    msg = str(err.value)
    assert "\n" not in msg and msg
    return msg


def test_missing_file(tmp_path: Path) -> None:
    one_line_error(tmp_path / "nope.json", "no such trace file")
    one_line_error(tmp_path, "no such trace file")  # a directory


def test_truncated_gzip(h200_traces, tmp_path: Path, gzip_codec: str) -> None:
    data = h200_traces["llama8b4l_infer"].read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    one_line_error(cut, "truncated gzip")
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(data[:100] + bytes(b ^ 0x55 for b in data[100:200]) + data[200:])
    one_line_error(bad, "cannot read|corrupt")


def test_truncated_json(tmp_path: Path) -> None:
    data = orjson.dumps({"traceEvents": gpu_trace()}, option=orjson.OPT_INDENT_2)
    for n in (10, len(data) // 2, len(data) - 3):
        (tmp_path / "t.json").write_bytes(data[:n])
        one_line_error(tmp_path / "t.json", "truncated")


@pytest.mark.parametrize("content, match", [
    (b'{"traceEvents": [{"ph": "X", ]}', "not valid JSON"),
    (b"\x00\x01garbage", "not a JSON trace \\(binary file\\)"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a JSON trace \\(binary file\\)"),  # issue 26: a PNG
    (b"\xff\xd8\xff\xe0 JFIF", "not a JSON trace \\(binary file\\)"),  # not UTF-8, no NUL
    (b'{"traceEvents": [{"ph": "X"}] trailing', "not valid JSON"),
    (b'{"foo": 1, "bar": [1, 2]}', "not a trace"),
    (b'"just a string"', "not a trace"),
    (b'{"traceEvents": 5}', "not a trace"),
    (b'{"traceEvents": []}', "empty trace"),
    (b"[]", "empty trace"),
    (b"[1, 2, 3]", "empty trace"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "ts": 1, "dur": 2}]}',
     "empty trace"),
    (b"", "empty trace file"),
    (b"  \n ", "empty trace file"),
])
def test_bad_input_is_one_clear_line(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    one_line_error(path, match)
    r = CliRunner().invoke(main, ["classify", str(path)])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1


def test_a_gzipped_binary_file_is_not_a_json_trace_and_utf8_text_is(tmp_path: Path) -> None:
    (tmp_path / "img.json.gz").write_bytes(gzip.compress(b"\x89PNG\r\n\x1a\n\x00\x00"))
    one_line_error(tmp_path / "img.json.gz", r"not a JSON trace \(binary file\)")
    # a multi-byte character cut by the 4 KiB the check reads is text, not a binary file
    ev = gpu_trace()

    def doc(pad: int) -> bytes:
        return orjson.dumps({"traceEvents": [ev[0], ev[1] | {"name": "x" * pad + "é" * 3000}, *ev[2:]]})

    first = doc(0).index("é".encode())
    data = doc((4095 - first) % 2)  # "é" is 2 bytes: its lead byte lands on the head's last byte
    assert data[4095] == "é".encode()[0]
    (tmp_path / "utf8.json").write_bytes(data)
    assert len(load_trace(tmp_path / "utf8.json").events) > 0


def test_bad_json_mid_file_is_reported_near_its_byte(tmp_path: Path) -> None:
    data = orjson.dumps({"traceEvents": gpu_trace() * 300}, option=orjson.OPT_INDENT_2)
    at = data.index(b'"dur": ', len(data) // 2) + len(b'"dur": ')
    path = tmp_path / "bad.json"
    path.write_bytes(data[:at] + b"tru" + data[at + 3 :])
    for chunk_bytes in (1 << 10, 1 << 20):
        with pytest.raises(AddressableError, match="not valid JSON") as err:
            load_trace(path, chunk_bytes=chunk_bytes)
        near = int(str(err.value).split("near byte ")[1].split(")")[0])
        assert abs(near - at) < 16


def test_odd_but_valid_values_do_not_crash(tmp_path: Path) -> None:
    ev = gpu_trace()
    ev[1] = ev[1] | {"pid": "Spans", "tid": 1.5, "args": "not a dict"}
    ev[2] = ev[2] | {"name": ["a", "list"], "dur": "12"}
    ev.insert(0, 42)
    ev.insert(0, {"ph": "X", "cat": ["unhashable"], "name": "x", "ts": 1, "dur": 1})
    t = load_trace(write(tmp_path / "odd.json", ev))
    row = t.events[t.events["name"] == '["a","list"]'].iloc[0]
    assert row["dur"] == 12.0
    assert t.events["pid"].isna().sum() == 1 and t.events["tid"].isna().sum() == 1


# ------------------------------------------------------------------ property tests: only AddressableError


def small_trace_bytes() -> bytes:
    return orjson.dumps({"schemaVersion": 1, "traceEvents": gpu_trace()}, option=orjson.OPT_INDENT_2)


VALID = small_trace_bytes()
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def only_addressable_errors(path: Path, chunk_bytes: int | None = None) -> None:
    """classify_trace and the CLI either succeed or fail with one line and exit code 2."""
    try:
        if chunk_bytes:
            load_trace(path, chunk_bytes=chunk_bytes)
        else:
            classify_trace(path)
    except AddressableError as e:
        assert "\n" not in str(e)
    r = CliRunner().invoke(main, ["classify", str(path)])
    assert r.exit_code in (0, 2), r.output
    if r.exit_code == 2:
        assert isinstance(r.exception, SystemExit)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output


@PROPS
@given(data=st.one_of(st.binary(max_size=2000), st.binary(max_size=500).map(lambda b: b"\x1f\x8b" + b),
                      st.binary(max_size=500).map(lambda b: b'{"traceEvents": [' + b),
                      st.binary(max_size=500).map(lambda b: b"[{" + b)))
def test_arbitrary_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "any.json"
    path.write_bytes(data)
    only_addressable_errors(path)


@PROPS
@given(data=st.data())
def test_malformed_json(tmp_path: Path, data: st.DataObject) -> None:
    doc = bytearray(VALID)
    for _ in range(data.draw(st.integers(1, 5))):
        i = data.draw(st.integers(0, len(doc) - 1))
        action = data.draw(st.sampled_from(["replace", "delete", "insert"]))
        junk = data.draw(st.sampled_from([b"{", b"}", b"[", b"]", b",", b'"', b":", b"\\", b"\x00", b"\xff",
                                          b"null", b"1e999", b'"x"', b"-", b"}, {"]))
        if action == "replace":
            doc[i : i + 1] = junk
        elif action == "delete":
            del doc[i : i + data.draw(st.integers(1, 50))]
        else:
            doc[i:i] = junk
    path = tmp_path / "mal.json"
    path.write_bytes(bytes(doc))
    only_addressable_errors(path, data.draw(st.sampled_from([None, 64, 300, 4096])))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8) | st.sampled_from(["X", "kernel", "cpu_op", "user_annotation", "gpu_user_annotation",
                                             "ProfilerStep#3", "ProfilerStep#99999999999999999999", "5"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6)
FIELD_VALUES = {
    "ph": st.sampled_from(["X", "s", "f", "M"]) | JSON_VALUES,
    "cat": st.sampled_from(["kernel", "gpu_memset", "gpu_user_annotation", "cpu_op", "user_annotation",
                            "cuda_runtime"]) | JSON_VALUES,
    "name": st.sampled_from(["nvjet_sm90_x", "aten::mm", "ProfilerStep#1", "phase:forward"]) | JSON_VALUES,
    "ts": st.floats(0, 1e6) | JSON_VALUES, "dur": st.floats(0, 1e3) | JSON_VALUES,
    "pid": st.integers(0, 3) | JSON_VALUES, "tid": st.integers(0, 3) | JSON_VALUES,
    "args": st.fixed_dictionaries({}, optional={"External id": st.integers(0, 5) | JSON_VALUES,
                                                "stream": JSON_VALUES, "device": JSON_VALUES,
                                                "correlation": JSON_VALUES}) | JSON_VALUES,
}
EVENTS = st.lists(st.fixed_dictionaries({}, optional=FIELD_VALUES) | JSON_VALUES, max_size=12)


@PROPS
@given(events=EVENTS, bare=st.booleans())
def test_wrongly_typed_events(tmp_path: Path, events: list, bare: bool) -> None:
    """Valid JSON, nonsense values: lists as names, strings as ids, huge numbers, args that are not objects."""
    path = write(tmp_path / "typed.json", events, bare=bare)
    only_addressable_errors(path)
    only_addressable_errors(path, chunk_bytes=64)


@PROPS
@given(n=st.integers(0, len(VALID) - 1), gz=st.booleans(), chunk=st.sampled_from([None, 64, 1000]))
def test_truncations(tmp_path: Path, n: int, gz: bool, chunk: int | None) -> None:
    path = tmp_path / ("cut.json.gz" if gz else "cut.json")
    data = gzip.compress(VALID) if gz else VALID
    path.write_bytes(data[: n * len(data) // len(VALID)])
    with pytest.raises(AddressableError):
        classify_trace(path) if chunk is None else load_trace(path, chunk_bytes=chunk)
    only_addressable_errors(path)


def test_kernel_launch_configuration_is_loaded(h200_traces) -> None:
    """grid and block (what work a kernel does, with its name) are kept as compact JSON text."""
    gpu = load_trace(h200_traces["llama8b4l_infer"]).gpu
    kernels = gpu[gpu["cat"] == "kernel"]
    assert kernels["grid"].notna().all() and kernels["block"].notna().all()
    assert all(g.startswith("[") and g.count(",") == 2 for g in kernels["grid"].astype(str).unique())
    assert gpu.loc[gpu["cat"] != "kernel", "grid"].isna().all()  # memsets and memcpys have none
