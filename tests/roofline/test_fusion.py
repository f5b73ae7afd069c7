"""Fusion headroom per module: each module's external bytes recorded by addressable.capture.scopes.module_io
(checked by hand on small CPU modules), stored as module_io.json, and joined with the roofline's
fusion candidates on a synthetic GPU trace with module scopes (headroom computed by hand)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from addressable.capture.scopes import module_io, module_scopes
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.roofline.model import NO_IO_NOTE, roofline_of_path, roofline_of_trace
from addressable.runs.folder import load_module_io, write_module_io

F32 = 4
PEAKS = {"gpu": "test GPU", "memory_gbps": 1000, "tflops": {"bf16": 100}}  # 1e6 bytes/µs, 1e8 FLOP/µs


class RMSNorm(torch.nn.Module):
    """An eager RMSNorm: five elementwise/reduction ops, one weight."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Flatten(torch.nn.Module):
    """Returns a view of its input: nothing is written."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(-1)


class MLP(torch.nn.Module):
    """Linear(8 -> 16) -> tanh-GELU -> RMSNorm -> in-place ReLU -> a view, on a (4, 8) fp32 input."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 16)
        self.act = torch.nn.GELU(approximate="tanh")
        self.norm = RMSNorm(16)
        self.relu = torch.nn.ReLU(inplace=True)
        self.flat = Flatten()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.flat(self.relu(self.norm(self.act(self.fc(x)))))


def _io(train: bool) -> pd.DataFrame:
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(4, 8)
    with module_io(model) as rec, torch.set_grad_enabled(train):
        y = model(x)
        if train:
            torch.nn.MSELoss()(y, torch.zeros_like(y)).backward()
    return rec.table().set_index("module")


def test_module_io_by_hand_inference() -> None:
    t = _io(train=False)
    x, h = 4 * 8 * F32, 4 * 16 * F32  # 128 B in, 256 B per hidden activation
    w_fc, w_norm = (16 * 8 + 16) * F32, 16 * F32
    assert t.loc["fc", ["input_bytes", "output_bytes", "param_bytes"]].tolist() == [x, h, w_fc]
    assert t.loc["act", "forward_bytes"] == 2 * h  # read x, write y: the tanh-GELU's 8 ops' intermediates stay on chip
    assert t.loc["norm", "forward_bytes"] == 2 * h + w_norm
    assert t.loc["relu", ["input_bytes", "output_bytes"]].tolist() == [h, h]  # in place: read and written
    assert t.loc["flat", ["input_bytes", "output_bytes"]].tolist() == [h, 0]  # a view writes nothing
    assert t.loc["", "forward_bytes"] == x + h + w_fc + w_norm  # the model: its own boundary and every parameter
    assert (t["backward_bytes"] == 0).all() and t["complete"].all() and (t["calls"] == 1).all()
    assert t.loc["act", "class"] == "GELU"


def test_module_io_under_inference_mode_has_no_version_counters() -> None:
    model, h = MLP(), 4 * 16 * F32
    with module_io(model) as rec, torch.inference_mode():
        model(torch.randn(4, 8))
    t = rec.table().set_index("module")
    assert t.loc["relu", "output_bytes"] == h  # returned as itself: updated in place
    assert t.loc["flat", "output_bytes"] == 0  # another view of its input: nothing written
    assert t.loc["act", "forward_bytes"] == 2 * h and (t["backward_bytes"] == 0).all()


def test_module_io_by_hand_training() -> None:
    t = _io(train=True)
    h, x = 4 * 16 * F32, 4 * 8 * F32
    w_fc, w_norm = (16 * 8 + 16) * F32, 16 * F32
    # backward: grad_output + saved inputs + parameters read; grad_input (inputs that need grad) + parameter grads
    assert t.loc["fc", "backward_bytes"] == h + x + w_fc + 0 + w_fc  # the model input needs no grad
    assert t.loc["act", "backward_bytes"] == h + h + h
    assert t.loc["norm", "backward_bytes"] == h + h + w_norm + h + w_norm
    # the loss module outside the model is named by its class, as the scopes name it
    assert t.loc["MSELoss", "forward_bytes"] == 4 * 16 * F32 * 2 + F32  # prediction and target read, a scalar out
    assert t.loc["MSELoss", "backward_bytes"] == F32 + 2 * h + h


def test_module_io_embedding_reads_the_rows_it_gathers_and_kwargs_count() -> None:
    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(1000, 4)  # 16 KB table; 5 rows of 16 B read
            self.bag = torch.nn.EmbeddingBag(1000, 4, mode="sum", sparse=True)

        def forward(self, idx: torch.Tensor, *, offsets: torch.Tensor) -> torch.Tensor:
            return self.emb(idx).sum(0) + self.bag(idx, offsets=offsets)[0]

    net = Net()
    idx, offsets = torch.tensor([1, 2, 3, 4, 5]), torch.tensor([0, 2])
    with module_io(net) as rec:
        net(idx, offsets=offsets).sum().backward()
    t = rec.table().set_index("module")
    assert t.loc["emb", "param_bytes"] == 5 * 4 * F32
    assert t.loc["emb", "backward_bytes"] == 5 * 4 * F32 + 5 * 8 + 1000 * 4 * F32  # dense grad: the whole table
    assert t.loc["bag", "input_bytes"] == 5 * 8 + 2 * 8  # indices and the keyword offsets
    assert t.loc["bag", "backward_bytes"] == 2 * 4 * F32 + 56 + 5 * 4 * F32  # sparse grad: the rows
    assert t.loc["", "input_bytes"] == 56 and t.loc["", "param_bytes"] == 2 * 5 * 4 * F32


def test_module_io_of_a_layout_without_byte_count_is_incomplete_not_a_crash() -> None:
    class Double(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    m = Double()
    jagged = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], layout=torch.jagged)
    with module_io(m) as rec:
        m(jagged)
        m(torch.randn(3))
    t = rec.table().set_index("module")
    assert t.loc["", "calls"] == 2 and not t.loc["", "complete"]


def test_module_io_names_match_the_scopes() -> None:
    model = MLP()
    with module_io(model) as rec, torch.no_grad():
        model(torch.randn(4, 8))
    prof_names = set()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof, module_scopes(model), \
            torch.no_grad():
        model(torch.randn(4, 8))
    prof_names = {e.name for e in prof.events() if e.name.startswith("nn.Module: ")}
    assert prof_names == {f"nn.Module: {m} ({c})" for m, c in zip(rec.table()["module"], rec.table()["class"],
                                                                   strict=True)}


def test_module_io_file_round_trip_and_errors(tmp_path: Path) -> None:
    t = _io(train=True).reset_index()
    write_module_io(tmp_path / "module_io.json", t)
    back = load_module_io(tmp_path)
    assert back is not None and list(back["module"]) == list(t["module"])
    assert json.loads((tmp_path / "module_io.json").read_text())["schema_version"] == 1
    assert load_module_io(tmp_path / "nowhere") is None
    (tmp_path / "module_io.json").write_text(json.dumps({"schema_version": 9, "modules": []}))
    with pytest.raises(AddressableError, match="schema_version 9"):
        load_module_io(tmp_path)
    (tmp_path / "module_io.json").write_text(json.dumps({"modules": [{"module": "a"}]}))
    with pytest.raises(AddressableError, match="not a module I/O record"):
        load_module_io(tmp_path)


# ---------------------------------------------------------------- the fusion table on a synthetic GPU trace

ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>(int, T1, T2)"
MUL = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, MulFunctor>>(int)"
GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
BF16 = "c10::BFloat16"
X = ([1024, 1024], BF16, [1024, 1])  # 2 MiB


def _scope(name: str, ts: float, dur: float, tid: int = 1) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": f"nn.Module: {name}", "pid": 1, "tid": tid, "ts": ts,
            "dur": dur}


def _op(name: str, ts: float, ext: int, inputs: list[tuple], tid: int = 1, **args: int) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": 3,
            "args": {"External id": ext, "Input Dims": [i[0] for i in inputs], "Input type": [i[1] for i in inputs],
                     "Input Strides": [i[2] for i in inputs], "Concrete Inputs": ["" for _ in inputs], **args}}


def _kernel(name: str, ts: float, dur: float, ext: int) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"External id": ext, "correlation": ext, "stream": 7, "device": 0}}


def scoped_trace(path: Path) -> Path:
    """One step of a model `` (Net) with three GELU modules (an add kernel in two of them: 10 and 5 µs), a
    Linear (a 30 µs GEMM), and the backward of `act` (a 4 µs kernel on autograd's thread)."""
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 300},
        _scope(" (Net)", 1, 90),
        _scope("act (GELU)", 5, 10), _op("aten::add", 6, 1, [X, X], **{"Sequence number": 7, "Fwd thread id": 0}),
        _scope("fc (Linear)", 20, 10), _op("aten::mm", 21, 2, [X, X]),
        _scope("act2 (GELU)", 40, 10), _op("aten::add", 41, 3, [X, X]),
        _scope("act3 (GELU)", 60, 5),  # launches nothing: needs no fused kernel, nor a record
        {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: AddBackward0", "pid": 1,
         "tid": 2, "ts": 100, "dur": 10, "args": {"Sequence number": 7, "Fwd thread id": 1}},
        _op("aten::mul", 101, 4, [X, X], tid=2),
        _kernel(ADD, 150, 10, 1), _kernel(GEMM, 161, 30, 2), _kernel(ADD, 192, 5, 3), _kernel(MUL, 200, 4, 4),
    ]
    path.write_text(json.dumps({"deviceProperties": [{"name": "NVIDIA H200"}], "traceEvents": ev}))
    return path


IO = pd.DataFrame({"module": ["", "act", "fc", "act2"], "class": ["Net", "GELU", "Linear", "GELU"],
                   "calls": [1, 1, 1, 1], "forward_bytes": [0, 3_000_000, 0, 1_000_000],
                   "backward_bytes": [0, 2_000_000, 0, 7_000_000], "complete": [True] * 4})


def test_fusion_headroom_by_hand(tmp_path: Path) -> None:
    r = roofline_of_trace(scoped_trace(tmp_path / "t.json"), peaks=PEAKS, module_io=IO)
    f = r.fusion.set_index(["scope", "module"])
    gelu = f.loc[("class", "GELU")]
    # GELU: act (10 µs forward + 4 µs backward) and act2 (5 µs, forward only: its backward bytes do not count)
    assert gelu["time_per_step_us"] == pytest.approx(19)
    assert gelu["fused_bytes_per_step"] == 3_000_000 + 2_000_000 + 1_000_000
    assert gelu["backward_bytes_per_step"] == 2_000_000
    assert gelu["fused_roof_us"] == pytest.approx(6.0)  # 6 MB at 1e6 B/µs
    assert gelu["fusion_headroom"] == pytest.approx(6 / 19) and gelu["fusion_speedup"] == pytest.approx(19 / 6)
    assert gelu["bound"] == "memory" and gelu["note"] == ""
    # the kernels as they are: three ops of 6 MiB each (two inputs read, one output written)
    assert gelu["kernel_bytes_per_step"] == 3 * 3 * 2 * 1024 * 1024
    act = f.loc[("module", "act")]
    assert act["time_per_step_us"] == pytest.approx(14) and act["fused_roof_us"] == pytest.approx(5.0)
    assert "fc" not in set(r.fusion["module"])  # a GEMM module is library work: no fusion candidate
    d = r.to_dict()
    assert d["fusion_candidates"][0]["module"] == "GELU" and "fusion_note" not in d


def test_fusion_without_a_record_or_scopes_says_why(tmp_path: Path) -> None:
    path = scoped_trace(tmp_path / "t.json")
    r = roofline_of_trace(path, peaks=PEAKS)
    assert r.fusion_note == NO_IO_NOTE
    assert r.fusion["fusion_headroom"].isna().all() and set(r.fusion["note"]) == {"no module I/O record"}
    assert r.fusion.set_index("module").loc["GELU", "time_per_step_us"] == pytest.approx(19)
    partial = roofline_of_trace(path, peaks=PEAKS, module_io=IO[IO["module"] != "act2"])
    g = partial.fusion.set_index("module").loc["GELU"]
    assert math.isnan(g["fusion_headroom"]) and g["note"] == "1 of 2 module(s) with kernels not in the module I/O record"
    incomplete = roofline_of_trace(path, peaks=PEAKS, module_io=IO.assign(complete=[True, False, True, True]))
    assert "layout" in incomplete.fusion.set_index("module").loc["act", "note"]
    doc = json.loads(path.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not e["name"].startswith("nn.Module")]
    path.write_text(json.dumps(doc))
    bare = roofline_of_trace(path, peaks=PEAKS)
    assert bare.fusion is None and "no module scopes" in bare.fusion_note


def test_cli_roofline_of_a_run_with_its_module_io(tmp_path: Path) -> None:
    import gzip
    import shutil

    from addressable.classify.breakdown import classify_trace
    from addressable.runs.folder import write_breakdown

    run = tmp_path / "run"
    run.mkdir()
    trace = scoped_trace(tmp_path / "t.json")
    with open(trace, "rb") as src, gzip.open(run / "trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    write_breakdown(classify_trace(trace), run)
    write_module_io(run / "module_io.json", IO)
    r = roofline_of_path(run, peaks=PEAKS)
    assert r.fusion.set_index("module").loc["GELU", "fusion_headroom"] == pytest.approx(6 / 19)
    peaks = tmp_path / "peaks.json"
    peaks.write_text(json.dumps(PEAKS))
    res = CliRunner().invoke(main, ["roofline", str(run), "--peaks", str(peaks)])
    assert res.exit_code == 0, res.output
    assert "Fusion headroom" in res.output and "GELU" in res.output and "32%" in res.output
    res = CliRunner().invoke(main, ["roofline", str(run), "--peaks", str(peaks), "--json"])
    assert json.loads(res.output)["fusion_candidates"][0]["fused_bytes_per_step"] == 6_000_000
    # a trace from elsewhere with a record written by the Python API
    write_module_io(tmp_path / "io.json", IO.assign(forward_bytes=IO["forward_bytes"] * 2))
    res = CliRunner().invoke(main, ["roofline", str(trace), "--peaks", str(peaks), "--module-io",
                                    str(tmp_path / "io.json"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["fusion_candidates"][0]["fused_bytes_per_step"] == 10_000_000
    res = CliRunner().invoke(main, ["roofline", str(trace), "--peaks", str(peaks), "--module-io", str(tmp_path / "no")])
    assert res.exit_code == 2 and "no module I/O record" in res.output
    (run / "module_io.json").write_text("{")
    res = CliRunner().invoke(main, ["roofline", str(run), "--peaks", str(peaks)])
    assert res.exit_code == 2 and "module_io.json is not valid JSON" in res.output


def test_modules_command_prints_the_stored_fusion_headroom(tmp_path: Path) -> None:
    from addressable.classify.breakdown import classify_trace
    from addressable.runs.folder import write_breakdown

    trace = scoped_trace(tmp_path / "t.json")
    run = tmp_path / "run"
    roof = roofline_of_trace(trace, peaks=PEAKS, module_io=IO).to_dict()
    write_breakdown(classify_trace(trace), run, extra={"roofline": roof})
    res = CliRunner().invoke(main, ["modules", str(run)])
    assert res.exit_code == 0, res.output
    tail = res.output.split("Fusion headroom per candidate")[1]
    assert "GELU" in tail and "32%" in tail and "3.2x" in tail
    bare = tmp_path / "bare"
    write_breakdown(classify_trace(trace), bare, extra={"roofline": roofline_of_trace(trace, peaks=PEAKS).to_dict()})
    res = CliRunner().invoke(main, ["modules", str(bare)])
    assert res.exit_code == 0 and "no module I/O record (module_io.json" in res.output


def test_measure_records_module_io_in_one_extra_step(tmp_path: Path) -> None:
    from addressable.capture.measure import Measurement, measure
    from addressable.capture.workload import WorkloadConfig, WorkloadSpec
    from addressable.classify.taxonomy import load_taxonomy

    calls = []

    def build(cfg: WorkloadConfig):
        model, x = MLP(), torch.randn(4, 8)

        def step() -> None:
            calls.append(1)
            with torch.no_grad():
                model(x)

        step.model = model
        return step

    spec = WorkloadSpec("mlp-io", "test", "MLP", build, default_batch=4, default_dtype="fp32", dtypes=("fp32",))
    cfg = WorkloadConfig(name="mlp-io", mode="infer", batch=4, dtype="fp32", device="cpu")
    m = Measurement(warmup=1, steps=1, profile_steps=1, repeats=1)
    res = measure(spec, cfg, m, tmp_path, load_taxonomy(), lambda _: None, record_io=True)
    assert len(calls) == 1 + 1 + 1 + 1  # warm-up, the recording step, a timed and a profiled step
    t = res.module_io.set_index("module")
    assert t.loc["act", "forward_bytes"] == 2 * 4 * 16 * F32
    assert measure(spec, cfg, m, tmp_path, load_taxonomy(), lambda _: None).module_io is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_profile_on_the_gpu_writes_module_io_and_fusion_headroom(tmp_path: Path) -> None:
    from addressable.capture.measure import measurement
    from addressable.capture.profile import profile_workload, resolve_config

    cfg = resolve_config("resnet50", "train", 8, None, None, "cuda")
    res = profile_workload(cfg, measurement("cuda", warmup=2, steps=2, profile_steps=1, repeats=1), tmp_path)
    io = load_module_io(res.path)
    assert io is not None and (io["calls"] > 0).all()
    bn = io[io["class"] == "BatchNorm2d"]
    assert len(bn) == 53 and (bn["backward_bytes"] > bn["forward_bytes"]).all()
    fusion = res.run["roofline"]["fusion_candidates"]
    top = next(c for c in fusion if c["module"] == "BatchNorm2d")
    assert 0 < top["fusion_headroom"] < 1.05 and top["fused_bytes_per_step"] < top["kernel_bytes_per_step"]
