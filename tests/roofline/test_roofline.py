"""The roofline: per-kernel bytes/FLOPs from launching ops, headroom, and ceilings computed by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from addressable.core.errors import AddressableError
from addressable.roofline.model import (
    Peaks,
    gpu_peaks,
    read_peaks,
    resolve_peaks,
    roofline_of_trace,
    write_peaks,
)

BF16, F32 = "c10::BFloat16", "float"
PEAKS = {"gpu": "test GPU", "memory_gbps": 1000, "tflops": {"bf16": 100}}  # 1e6 bytes/µs, 1e8 FLOP/µs

ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>(int, T1, T2)"
GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
STATS = "void at::native::batch_norm_collect_statistics_channels_last_kernel<c10::BFloat16, float>(int)"
TRANSFORM = "void at::native::batch_norm_transform_input_channels_last_kernel<c10::BFloat16>(int)"
# the real name: the running-stats update's template argument says "stats", its own name does not
UPDATE = ("void at::native::(anonymous namespace)::unrolled_elementwise_kernel_for_multi_outputs<3, "
          "at::native::(anonymous namespace)::batch_norm_update_stats_and_invert(at::Tensor const&)"
          "::{lambda()#1}::operator()() const::{lambda(float, float, float, float)#1}>(int)")
FOO = "void at::native::vectorized_elementwise_kernel<4, at::native::foo_kernel>(int)"


def _op(name: str, ts: float, ext: int, inputs: list[tuple], shapes: bool = True) -> dict:
    args: dict = {"External id": ext}
    if shapes:
        args["Input Dims"] = [i[0] for i in inputs]
        args["Input type"] = [i[1] for i in inputs]
        args["Input Strides"] = [i[2] if len(i) > 2 else [] for i in inputs]
        args["Concrete Inputs"] = [i[3] if len(i) > 3 else "" for i in inputs]
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 5, "args": args}


def _kernel(name: str, ts: float, dur: float, ext: int) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"External id": ext, "correlation": ext, "stream": 7, "device": 0}}


def synthetic_trace(path: Path, shapes: bool = True) -> Path:
    """One profiled step: a broadcast add (10 µs), a bf16 GEMM (30 µs), a training BatchNorm (three kernels,
    15 µs) and an op without a model (5 µs)."""
    s = lambda v: ([], "Scalar", [], str(v))  # noqa: E731
    x_cl = ([8, 64, 32, 32], BF16, [65536, 1, 2048, 64])
    p = ([64], F32, [1])
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 200},
        _op("aten::add", 10, 1, [([1024, 1024], BF16, [1024, 1]), ([1024], BF16, [1]), s(1)], shapes),
        _op("aten::mm", 20, 2, [([1024, 1024], BF16, [1024, 1]), ([1024, 1024], BF16, [1024, 1])], shapes),
        _op("aten::batch_norm", 30, 3, [x_cl, p, p, p, p], shapes),
        _op("aten::native_batch_norm", 31, 4, [x_cl, p, p, p, p, s(True), s(0.1), s(1e-5)], shapes),
        _op("aten::foo", 40, 5, [([1024], BF16, [1])], shapes),
        _kernel(ADD, 100, 10, 1),
        _kernel(GEMM, 111, 30, 2),
        _kernel(STATS, 142, 8, 4),
        _kernel(TRANSFORM, 151, 6, 4),
        _kernel(UPDATE, 158, 1, 4),
        _kernel(FOO, 160, 5, 5),
    ]
    path.write_text(json.dumps({"deviceProperties": [{"name": "NVIDIA H200"}], "traceEvents": ev}))
    return path


def test_ceiling_by_hand(tmp_path: Path) -> None:
    r = roofline_of_trace(synthetic_trace(tmp_path / "t.json"), peaks=PEAKS, step_time_ms=0.1)
    # add: reads 2 MiB + 2 KiB, writes 2 MiB -> 4196352 B = 4.196352 µs at 1e6 B/µs
    # BatchNorm: x = 1 MiB, 256 B per channel statistic: statistics 1049088 B, transform 2098176 B,
    # running-stats update 1024 B -> 3.148288 µs; aten::foo has no model and keeps its 5 µs
    saved = (10 - 4.196352) + (15 - 3.148288)
    assert r.total_time_us == 60
    assert r.ceiling_kernel == pytest.approx(2.0)  # Amdahl: 30 of 60 µs replaceable
    assert r.ceiling_kernel_roofline == pytest.approx(60 / (60 - saved))
    assert r.ceiling_wall_roofline == pytest.approx(100 / (100 - saved))  # one step of 0.1 ms
    assert r.unmodelled_time_share == pytest.approx(5 / 30)
    k = r.kernels().set_index("name")
    assert k.loc[ADD, "bytes"] == 4196352
    assert k.loc[ADD, "headroom"] == pytest.approx(4.196352 / 10)
    assert k.loc[ADD, "achieved_gbps"] == pytest.approx(4196352 / 10 / 1e3)
    assert k.loc[STATS, "bytes"] == 1049088 and k.loc[TRANSFORM, "bytes"] == 2098176  # split by pass
    assert k.loc[STATS, "bound"] == "memory"
    # GEMM: 2 * 1024^3 FLOPs at 1e8 FLOP/µs = 21.47 µs > its 6.29 µs of bytes: compute-bound
    assert k.loc[GEMM, "bound"] == "compute"
    assert k.loc[GEMM, "achieved_tflops"] == pytest.approx(2 * 1024**3 / 30 / 1e6)
    assert k.loc[GEMM, "headroom"] == pytest.approx(2 * 1024**3 / 1e8 / 30)
    assert k.loc[FOO, "bound"] == "unmodelled" and math.isnan(k.loc[FOO, "headroom"])
    assert list(r.unmodelled_ops()["op"]) == ["aten::foo"]
    cats = r.categories().set_index("category")
    # the running-stats update is BatchNorm work too (its template names batch_norm_update_stats)
    assert cats.loc["normalization", "time_roof_us"] == pytest.approx(1.049088 + 2.098176 + 0.001024)
    d = r.to_dict()
    assert set(d) >= {"peaks", "kernels", "ceiling_kernel_roofline", "ceiling_wall_roofline", "unmodelled_time_share"}
    assert set(d["kernels"][0]) == {"name", "category", "time_us", "bytes", "flops", "achieved_gbps",
                                    "achieved_tflops", "bound", "headroom"}
    assert d["over_peak"] == []


def test_multi_kernel_op_without_matching_passes_splits_by_duration(tmp_path: Path) -> None:
    path = synthetic_trace(tmp_path / "t.json")
    doc = json.loads(path.read_text())
    for e in doc["traceEvents"]:
        if e["name"] == UPDATE:
            e["name"] = "some_other_kernel_for_bn"  # matches the catch-all pass ...
        if e["name"] == TRANSFORM:
            e["name"] = "renamed_kernel"  # ... but now the transform pass has no kernel
    path.write_text(json.dumps(doc))
    r = roofline_of_trace(path, peaks=PEAKS)
    k = r.kernels().set_index("name")
    total = 2 * 1048576 + 6 * 256 + 1048576 + 4 * 256
    assert k.loc[STATS, "bytes"] == pytest.approx(total * 8 / 15)
    assert k.loc["renamed_kernel", "bytes"] == pytest.approx(total * 6 / 15)


def test_trace_without_shapes_is_all_unmodelled(tmp_path: Path) -> None:
    r = roofline_of_trace(synthetic_trace(tmp_path / "t.json", shapes=False), peaks=PEAKS)
    assert not r.has_shapes
    assert r.ceiling_kernel_roofline == 1.0 and r.unmodelled_time_share == 1.0


def test_a_kernel_faster_than_its_roofline_is_reported(tmp_path: Path) -> None:
    r = roofline_of_trace(synthetic_trace(tmp_path / "t.json"), peaks={**PEAKS, "memory_gbps": 100})
    over = set(r.over_peak()["name"])
    assert ADD in over and STATS in over  # 41.96 µs of bytes in 10 µs: the model (or the peak) is wrong
    # the ceiling never counts a kernel as slower than it ran
    assert r.ceiling_kernel_roofline >= 1.0


def test_wall_ceiling_is_undefined_when_the_saving_exceeds_the_step(tmp_path: Path) -> None:
    """Amdahl's law (addressable.core.amdahl) with the parts above the whole: the kernels' saved time per step
    (about 17.7 µs here) beyond a 10 µs step (kernels overlapping on streams) gives no ceiling, not infinity."""
    r = roofline_of_trace(synthetic_trace(tmp_path / "t.json"), peaks=PEAKS, step_time_ms=0.01)
    assert math.isnan(r.ceiling_wall_roofline) and r.ceiling_kernel_roofline > 1
    assert r.to_dict()["ceiling_wall_roofline"] is None


def test_peaks_from_the_trace_device_the_table_or_a_file(tmp_path: Path) -> None:
    assert resolve_peaks(metadata={"deviceProperties": [{"name": "NVIDIA H200"}]}, datasheet_only=True).memory_gbps == 4800
    assert gpu_peaks("NVIDIA A100-SXM4-80GB", use_calibrated=False).tflops["bf16"] == 312
    assert resolve_peaks(gpu="MI300X").gpu == "MI300X"
    f = tmp_path / "peaks.json"
    f.write_text(json.dumps({"gpu": "NVIDIA H200", "copy_gbps": 4200, "read_gbps": 4400, "tflops": {"bf16": 800}}))
    p = resolve_peaks(peaks=f)
    assert p.memory_gbps == 4400 and p.measured["copy_gbps"] == 4200
    assert resolve_peaks(manifest={"peaks": p.to_dict()}).memory_gbps == 4400
    with pytest.raises(AddressableError, match="no peaks for GPU"):
        gpu_peaks("Voodoo 3")
    with pytest.raises(AddressableError, match="no GPU named"):
        resolve_peaks(metadata={})
    assert Peaks.from_dict(PEAKS).tflops_of("fp8") != Peaks.from_dict(PEAKS).tflops_of("fp8")  # NaN: unknown


def test_peaks_file_round_trip(tmp_path: Path) -> None:
    """`calibrate --peaks FILE` writes what `roofline --peaks FILE` reads: one owner, write_peaks and read_peaks."""
    p = Peaks("H200", 4400.0, {"bf16": 800.0}, "calibrate: 1 GiB copy", {"copy_gbps": 4200.0, "read_gbps": 4400.0})
    f = write_peaks(tmp_path / "p.json", p)
    assert f.read_text() == json.dumps(p.to_dict(), indent=2) + "\n"
    back = read_peaks(f)
    assert back == Peaks("H200", 4400.0, {"bf16": 800.0}, f"calibrated: {f}", p.measured)
    assert resolve_peaks(peaks=f) == back
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(AddressableError, match="cannot read peaks file"):
        read_peaks(tmp_path / "bad.json")


def test_real_trace_without_shapes(h200_traces: dict[str, Path]) -> None:
    r = roofline_of_trace(h200_traces["llama8b4l_infer"])
    assert r.peaks.gpu == "H200" and not r.has_shapes
    assert r.ceiling_kernel == pytest.approx(1 / (1 - 0.231), rel=0.01)


# ---------------------------------------------------------------- CLI


def test_cli_roofline_table_json_and_errors(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from addressable.cli import main

    path = synthetic_trace(tmp_path / "t.json")
    runner = CliRunner()
    res = runner.invoke(main, ["roofline", str(path), "--gpu", "H200", "--datasheet"])
    assert res.exit_code == 0, res.output
    assert "Ceiling, kernel time: Amdahl 2.00x, roofline" in res.output and "aten::foo" in res.output
    res = runner.invoke(main, ["roofline", str(path), "--json", "--gpu", "H200", "--datasheet"])
    doc = json.loads(res.output)
    assert doc["peaks"]["memory_gbps"] == 4800 and doc["unmodelled_time_share"] == pytest.approx(5 / 30)
    res = runner.invoke(main, ["roofline", str(path), "--gpu", "Voodoo 3"])
    assert res.exit_code == 2 and "no peaks for GPU" in res.output and "Traceback" not in res.output
    res = runner.invoke(main, ["roofline", str(tmp_path)])
    assert res.exit_code == 2 and "no trace.json.gz" in res.output


def test_cli_calibrate_needs_a_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import torch
    from click.testing import CliRunner

    from addressable.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    res = CliRunner().invoke(main, ["calibrate", "--peaks", str(tmp_path / "p.json")])
    assert res.exit_code == 2 and "calibrate needs a CUDA GPU" in res.output
    assert not (tmp_path / "p.json").exists()


@pytest.mark.gpu
def test_calibrate_on_the_gpu(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from addressable.cli import main

    res = CliRunner().invoke(main, ["calibrate", "--peaks", str(tmp_path / "p.json")])
    assert res.exit_code == 0, res.output
    p = json.loads((tmp_path / "p.json").read_text())
    assert p["memory_gbps"] > 100 and p["tflops"]["bf16"] > p["tflops"]["fp32"] > 0


def _run_with_roofline(tmp_path: Path) -> Path:
    from addressable.classify.breakdown import classify_trace
    from addressable.runs.folder import write_breakdown

    path = synthetic_trace(tmp_path / "t.json")
    folder = tmp_path / "run"
    write_breakdown(classify_trace(path), folder, extra={"roofline": roofline_of_trace(path, peaks=PEAKS).to_dict()})
    return folder


def test_cli_plot_roofline(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from addressable.cli import main
    from addressable.report.plot import roofline_points
    from addressable.runs.folder import load_run

    run = _run_with_roofline(tmp_path)
    k, peaks = roofline_points(load_run(run))
    assert peaks["memory_gbps"] == 1000
    assert set(k["name"]) == {ADD, GEMM, STATS, TRANSFORM, UPDATE}  # the unmodelled kernel has no bytes: no point
    assert k.set_index("name").loc[ADD, "bytes_per_launch"] == 4196352
    out = tmp_path / "roofline.png"
    res = CliRunner().invoke(main, ["plot", "roofline", str(run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 10_000
    bare = tmp_path / "bare"
    from addressable.classify.breakdown import classify_trace
    from addressable.runs.folder import write_breakdown

    write_breakdown(classify_trace(tmp_path / "t.json"), bare)
    res = CliRunner().invoke(main, ["plot", "roofline", str(bare), "--out", str(tmp_path / "x.png")])
    assert res.exit_code == 2 and "has no roofline" in res.output
    assert not (tmp_path / "x.png").exists()


def test_project_prints_the_roofline_ceiling_beside_amdahl() -> None:
    from addressable.projection.project import format_projection, project

    root = Path(__file__).resolve().parents[2]
    run = root / "tests" / "fixtures" / "plot_runs" / "resnet50-train-b64"
    expected = json.loads((run / "breakdown.json").read_text())["roofline"]["ceiling_kernel_roofline"]
    p = project([run, root / "tests" / "fixtures" / "plot_runs" / "gpt2-train-b8-s1024"], root / "examples" / "wins.csv")
    assert p.runs["ceiling_kernel_roofline"].iloc[0] == pytest.approx(expected)
    assert math.isnan(p.runs["ceiling_kernel_roofline"].iloc[1])  # no roofline in that run
    d = p.to_dict()
    assert d["runs"][0]["ceiling_kernel_roofline"] == pytest.approx(expected)
    assert d["runs"][1]["ceiling_kernel_roofline"] is None
    assert f"{expected:.3f}x" in format_projection(p)


# ---------------------------------------------------------------- real H200 traces with shapes (pinned figures)


def test_real_resnet50_training_roofline(h200_traces: dict[str, Path]) -> None:
    """ResNet-50 train b64 bf16 channels_last on the H200, against the shipped H200 calibration."""
    r = roofline_of_trace(h200_traces["resnet50_train_b64_shapes"])
    assert r.peaks.gpu == "H200" and r.peaks.memory_gbps == pytest.approx(4303.3)
    assert r.ceiling_kernel == pytest.approx(3.160, abs=0.005)
    assert r.ceiling_kernel_roofline == pytest.approx(1.492, abs=0.005)
    # the SGD's foreach ops, whose long tensor lists Kineto leaves out, take the 161 parameters' gradients
    assert r.unmodelled_time_share == 0.0 and r.unmodelled_ops().empty
    foreach = r.rows[r.rows["launch_op"] == "aten::_foreach_mul_"]
    assert foreach["bytes"].sum() == 2 * 25_557_032 * 4  # momentum buffers read and written, fp32
    assert r.over_peak().empty  # no kernel beats the calibrated roofs by more than 5%
    k = r.kernels()
    stats = k[k["name"].str.contains("batch_norm_collect_statistics")].iloc[0]
    # about 14% of the roof: Nsight Compute put these kernels at 11% of a 4.2 TB/s copy peak (issue 19)
    assert stats["bound"] == "memory" and 0.1 < stats["headroom"] < 0.2


def test_real_llama_prefill_roofline(h200_traces: dict[str, Path]) -> None:
    """Llama-3-8B shapes, 4 layers, prefill b4 x 1024 on the H200: GEMMs near their roof, elementwise chains not."""
    r = roofline_of_trace(h200_traces["llama8b_prefill_b4_shapes"])
    assert r.ceiling_kernel == pytest.approx(1.290, abs=0.005)
    assert r.ceiling_kernel_roofline == pytest.approx(1.114, abs=0.005)
    assert r.unmodelled_time_share < 0.001 and r.over_peak().empty
    cats = r.categories().set_index("category")
    assert cats.loc["gemm", "headroom"] > 0.9


@pytest.mark.gpu
def test_profile_on_the_gpu_stores_calibrated_peaks_and_the_roofline(tmp_path: Path) -> None:
    from addressable.capture.measure import measurement
    from addressable.capture.profile import profile_workload, resolve_config

    cfg = resolve_config("resnet50", "train", 8, None, None, "cuda")
    res = profile_workload(cfg, measurement("cuda", warmup=1, steps=1, profile_steps=1, repeats=1), tmp_path)
    doc = json.loads((res.path / "breakdown.json").read_text())
    man = json.loads((res.path / "manifest.json").read_text())
    assert man["peaks"]["memory_gbps"] > 100 and man["peaks"]["source"].startswith("calibrated")
    roof = doc["roofline"]
    assert roof["peaks"] == man["peaks"] and roof["has_shapes"]
    assert 1.0 < roof["ceiling_kernel_roofline"] <= roof["ceiling_kernel"]
    assert roof["unmodelled_time_share"] < 0.1


SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>(float*)"
SOFTMAX_SMEM = SOFTMAX.replace("cunn_SoftMaxForward<", "cunn_SoftMaxForwardSmem<")
FOREACH = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::TensorListMetadata<1>>(int)"


def _step(ev: list[dict], path: Path) -> Path:
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 500}
    path.write_text(json.dumps({"deviceProperties": [{"name": "NVIDIA H200"}], "traceEvents": [step, *ev]}))
    return path


def test_a_multipass_kernel_moves_its_variants_bytes(tmp_path: Path) -> None:
    """log_softmax over 4 rows of 50257 floats: the multi-pass kernel reads each row three times."""
    x = ([4, 50257], F32, [50257, 1])
    n = 4 * 50257 * 4
    ev = [_op("aten::_log_softmax", 10, 1, [x, ([], "Scalar", [], "1"), ([], "Scalar", [], "False")]),
          _kernel(SOFTMAX, 100, 10, 1),
          _op("aten::_log_softmax", 20, 2, [x, ([], "Scalar", [], "1"), ([], "Scalar", [], "False")]),
          _kernel(SOFTMAX_SMEM, 120, 10, 2)]
    k = roofline_of_trace(_step(ev, tmp_path / "t.json"), peaks=PEAKS).kernels().set_index("name")
    assert k.loc[SOFTMAX, "bytes"] == 4 * n and k.loc[SOFTMAX_SMEM, "bytes"] == 2 * n


def test_unrecorded_optimizer_lists_are_the_steps_parameters_where_the_blocks_agree(tmp_path: Path) -> None:
    """Two fp32 parameters got gradients (100,000 and 10 elements: 2 + 1 multi_tensor_apply blocks);
    _foreach_mul_(params, 0.9) reads and writes 400,040 bytes. A _foreach_add_ whose kernels launched
    other blocks (a list of step counters, say) stays unmodelled."""
    def acc(ts: float, ext: int, shape: list[int]) -> dict:
        return _op("torch::autograd::AccumulateGrad", ts, ext, [(shape, F32, [1] * len(shape))])

    def launch(ts: float, ext: int, blocks: int) -> dict:
        k = _kernel(FOREACH, ts, 5, ext)
        k["args"].update(grid=[blocks, 1, 1], block=[512, 1, 1])
        return k

    unrecorded = [([], "TensorList", []), ([], "Scalar", [], "0.9")]
    ev = [acc(10, 1, [1000, 100]), acc(11, 2, [10]),
          _op("aten::_foreach_mul_", 20, 3, unrecorded), launch(100, 3, 2), launch(106, 3, 1),
          _op("aten::_foreach_add_", 30, 4, unrecorded), launch(120, 4, 2)]
    r = roofline_of_trace(_step(ev, tmp_path / "t.json"), peaks=PEAKS)
    rows = r.rows.set_index("external_id")
    assert rows.loc[3, "bytes"].sum() == pytest.approx(2 * 400_040)
    assert rows.loc[3, "modelled"].all() and not rows.loc[4, "modelled"]
    assert list(r.unmodelled_ops()["op"]) == ["aten::_foreach_add_"]


def test_batchnorm_backward_splits_its_bytes_between_its_two_kernels(tmp_path: Path) -> None:
    """x and dy: 1 MiB each (bf16, channels_last), 64 channels (256 B per float statistic). The reduce kernel
    reads dy and x and the saved mean and invstd and writes two sums, grad_weight and grad_bias; the elemt
    kernel reads dy, x, w, mean, invstd and the sums and writes dx."""
    x_cl = ([8, 64, 32, 32], BF16, [65536, 1, 2048, 64])
    p = ([64], F32, [1])
    s = lambda v: ([], "Scalar", [], str(v))  # noqa: E731
    reduce = "void at::native::batch_norm_backward_reduce_channels_last_kernel<4, c10::BFloat16, float>(int)"
    elemt = "void at::native::batch_norm_backward_elemt_channels_last_kernel<4, c10::BFloat16, float>(int)"
    ev = [_op("aten::native_batch_norm_backward", 10, 1, [x_cl, x_cl, p, p, p, p, p, s(True), s(1e-5),
                                                          ([], "GenericList", [], "[True, True, True]")]),
          _kernel(reduce, 100, 10, 1), _kernel(elemt, 111, 30, 1)]
    k = roofline_of_trace(_step(ev, tmp_path / "t.json"), peaks=PEAKS).kernels().set_index("name")
    mib = 1048576
    assert k.loc[reduce, "bytes"] == 2 * mib + 6 * 256
    assert k.loc[elemt, "bytes"] == 3 * mib + 5 * 256


def test_roofline_table_rows_stay_apart(h200_traces: dict[str, Path]) -> None:
    """issue 26: three rows read `void at::native::vectorized_elementwise_kernel<8, at::nativ`."""
    from addressable.roofline.model import format_roofline

    r = roofline_of_trace(h200_traces["resnet50_train_b64_shapes"])
    text = format_roofline(r, 15).splitlines()
    head = text.index(next(line for line in text if line.startswith("Top 15 replaceable kernels")))
    rows = [line[2:62] for line in text[head + 2: head + 17]]
    k = r.kernels()
    k = k[k["class"] == "replaceable"].head(15)
    assert len(set(zip(rows, k["category"], strict=True))) == 15  # name and category tell every row apart
    assert len(set(rows)) == 15
    assert sum(row.startswith("vectorized_elementwise_kernel<8, ") for row in rows) >= 3  # own name first
    assert not any(row.startswith("void ") for row in rows)


def test_routes_to_plot_roofline_connect(tmp_path: Path) -> None:
    """issue 26: `plot roofline TRACE` sent users to `roofline TRACE`, which writes nothing plot reads, and
    `classify --out` stored no roofline. Now a trace plots directly, and classify --out stores its roofline."""
    from click.testing import CliRunner

    from addressable.cli import main

    trace = synthetic_trace(tmp_path / "t.json")
    runner = CliRunner()
    res = runner.invoke(main, ["plot", "roofline", str(trace), "--figure", str(tmp_path / "direct.png")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["classify", str(trace), "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    stored = json.loads((tmp_path / "run" / "breakdown.json").read_text())["roofline"]
    assert stored == json.loads(json.dumps(roofline_of_trace(trace).to_dict()))
    res = runner.invoke(main, ["plot", "roofline", str(tmp_path / "run"), "--figure", str(tmp_path / "run.png")])
    assert res.exit_code == 0, res.output
    # --class flips reach the stored roofline; a trace without shapes stores why there is none
    runner.invoke(main, ["classify", str(trace), "--class", "elementwise=library", "--out", str(tmp_path / "lib")])
    cats = json.loads((tmp_path / "lib" / "breakdown.json").read_text())["roofline"]["categories"]
    assert {c["category"]: c["class"] for c in cats}["elementwise"] == "library"
    bare = synthetic_trace(tmp_path / "bare.json", shapes=False)
    runner.invoke(main, ["classify", str(bare), "--out", str(tmp_path / "bare")])
    doc = json.loads((tmp_path / "bare" / "breakdown.json").read_text())
    assert "roofline" not in doc and doc["roofline_note"].startswith("no input shapes in the trace")
    res = runner.invoke(main, ["plot", "roofline", str(tmp_path / "bare"), "--figure", str(tmp_path / "x.png")])
    assert res.exit_code == 2 and "bare has no roofline: no input shapes in the trace" in res.output
    assert "`addressable roofline TRACE`" not in res.output and not (tmp_path / "x.png").exists()
    runner.invoke(main, ["classify", str(trace), "--basis", "cpu", "--out", str(tmp_path / "cpu")])
    doc = json.loads((tmp_path / "cpu" / "breakdown.json").read_text())
    assert "roofline" not in doc and "roofline_note" not in doc  # a CPU-op breakdown has no kernel roofline
