"""`addressable compare A B`: two runs side by side, and the projection from A beside what B measured.

The synthetic run folders (per profiled step, 2 profiled steps each):
  A  gemm 500 us (10 kernels, library, module encoder.fc), elementwise 300 us (20 kernels, replaceable,
     encoder.act: EagerGELU), normalization 200 us (4 kernels, replaceable, encoder.norm); busy 1000 us;
     unprofiled steps 2.0, 2.2, 1.8, 2.4 ms (median 2.1, q25 1.95, q75 2.25) and a profiled 5.0 ms
  B  the same, but elementwise 100 us (5 kernels, encoder.act: GELU); busy 800 us;
     unprofiled steps 1.6, 1.8, 1.7, 1.9 ms (median 1.75, q25 1.675, q75 1.825)
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.projection.compare import compare, format_comparison

ROOT = Path(__file__).resolve().parents[2]
PAIRS = ROOT / "tests" / "data" / "pairs"
GEMM = "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_TNT"
ELEM = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >"
NORM = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float)"


def run_folder(path: Path, elementwise_us: float, elementwise_n: int, steps_ms: list[float], *,
               act_class: str = "EagerGELU", device: str = "cuda", gpu: str = "NVIDIA H200",
               basis: str = "gpu_kernel_time", modules: bool = True, busy: bool = True) -> Path:
    """A run folder as `addressable profile` writes it, over 2 profiled steps (times per step given)."""
    path.mkdir(parents=True)
    rows = [("encoder.fc", "Linear", GEMM, "gemm", "library", 500.0, 10),
            ("encoder.act", act_class, ELEM, "elementwise", "replaceable", elementwise_us, elementwise_n),
            ("encoder.norm", "LayerNorm", NORM, "normalization", "replaceable", 200.0, 4)]
    k = pd.DataFrame(rows, columns=["module", "module_class", "name", "category", "class", "time_us", "count"])
    k[["time_us", "count"]] *= 2  # two profiled steps
    total = float(k["time_us"].sum())
    k["share"] = k["time_us"] / total
    k[["name", "category", "class", "time_us", "count", "share"]].to_csv(path / "kernels.csv", index=False)
    k[["category", "class", "time_us", "share", "count"]].to_csv(path / "categories.csv", index=False)
    doc = {"basis": basis, "total_kernel_time_us": total, "n_steps": 2, "workload": "toy",
           "mode": "infer", "device": device, "step_time_ms": float(np.median(steps_ms))}
    if busy:  # the union of kernel intervals: one stream here, so the summed time
        doc["busy_time_us"] = total
    if modules:
        k.assign(direction="forward")[["module", "module_class", "direction", "name", "category", "class",
                                       "time_us", "count"]].to_csv(path / "modules.csv", index=False)
        doc["modules"] = {"coverage": 1.0, "n_steps": 2, "by_name": [
            {"module": m, "class": c, "calls": 1, "dispatch_per_step_us": 10.0}
            for m, c in zip(k["module"], k["module_class"], strict=True)]}
    (path / "breakdown.json").write_text(json.dumps(doc))
    (path / "manifest.json").write_text(json.dumps({"gpu": gpu}))
    steps = pd.DataFrame({"repeat": 0, "step": range(len(steps_ms) + 1), "time_ms": [*steps_ms, 5.0],
                          "profiled": [False] * len(steps_ms) + [True]})
    steps.to_csv(path / "steps.csv", index=False)
    return path


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = run_folder(tmp_path / "A", 300.0, 20, [2.0, 2.2, 1.8, 2.4])
    b = run_folder(tmp_path / "B", 100.0, 5, [1.6, 1.8, 1.7, 1.9], act_class="GELU")
    return a, b


def test_two_run_folders_side_by_side(runs: tuple[Path, Path]) -> None:
    c = compare(*runs)
    s = c.summary.set_index("metric")
    assert s.loc["step_ms", "a"] == pytest.approx(2.1) and s.loc["step_ms", "b"] == pytest.approx(1.75)
    assert s.loc["step_ms_q25", "a"] == pytest.approx(1.95) and s.loc["step_ms_q75", "b"] == pytest.approx(1.825)
    assert s.loc["step_samples", "a"] == 4  # the profiled 5.0 ms step is not a timed step
    assert s.loc["kernel_ms_per_step", "a"] == pytest.approx(1.0) and s.loc["kernel_ms_per_step", "b"] == pytest.approx(0.8)
    assert s.loc["kernel_ms_per_step", "ratio"] == pytest.approx(1.25)
    assert s.loc["addressable_fraction_kernel", "a"] == pytest.approx(0.5)
    assert s.loc["addressable_fraction_kernel", "b"] == pytest.approx(300 / 800)
    assert s.loc["addressable_fraction_wall", "a"] == pytest.approx(500 / 2100)  # replaceable / step
    assert s.loc["addressable_fraction_wall", "b"] == pytest.approx(300 / 1750)
    assert (s.loc["kernels_per_step", "a"], s.loc["kernels_per_step", "b"]) == (34, 19)
    assert np.isnan(s.loc["launches_per_step", "a"])  # no trace kept
    m = c.measured.set_index("basis")
    assert m.loc["wall", "measured"] == pytest.approx(2.1 / 1.75)
    assert (m.loc["wall", "measured_lo"], m.loc["wall", "measured_hi"]) == pytest.approx((1.95 / 1.825, 2.25 / 1.675))
    assert m.loc["kernel", "measured"] == pytest.approx(1.25) and "busy" in m.loc["kernel", "how"]


def test_category_and_module_deltas(runs: tuple[Path, Path]) -> None:
    c = compare(*runs)
    cat = c.categories.iloc[0]  # the largest change first
    assert cat["category"] == "elementwise" and cat["class"] == "replaceable"
    assert (cat["a_ms"], cat["b_ms"], cat["delta_ms"]) == pytest.approx((0.3, 0.1, -0.2))
    assert (cat["a_share"], cat["b_share"]) == pytest.approx((0.3, 0.125))
    assert (cat["a_kernels"], cat["b_kernels"]) == (20, 5)
    assert c.categories.set_index("category").loc["gemm", "delta_ms"] == pytest.approx(0.0)
    mod = c.modules.iloc[0]  # the swapped module keeps its name; its class changes
    assert (mod["module"], mod["a_class"], mod["b_class"]) == ("encoder.act", "EagerGELU", "GELU")
    assert (mod["a_ms"], mod["b_ms"], mod["delta_ms"]) == pytest.approx((0.3, 0.1, -0.2))
    assert (mod["a_kernels"], mod["b_kernels"]) == (20, 5)
    assert set(c.modules["module"]) == {"encoder.act", "encoder.fc", "encoder.norm"}


def test_the_projection_from_a_beside_b(runs: tuple[Path, Path], tmp_path: Path) -> None:
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nelementwise,3\n")
    p = compare(*runs, speedups=wins).projection
    assert p is not None and list(p["model"]) == ["amdahl", "amdahl"]  # no trace kept: no replay
    p = p.set_index("basis")
    assert p.loc["kernel", "projected"] == pytest.approx(1 / (0.7 + 0.3 / 3))  # = 1.25, what B measured
    assert p.loc["kernel", "error"] == pytest.approx(0.0, abs=1e-12)
    share = 300 / 2100  # A's elementwise over its median step
    assert p.loc["wall", "projected"] == pytest.approx(1 / (1 - share + share / 3))
    assert p.loc["wall", "error"] == pytest.approx(p.loc["wall", "projected"] / 1.2 - 1)
    assert not p.loc["wall", "covers"]  # a point projection, 1.105x, against 1.2x measured
    q = compare(*runs, speedups=wins, step_stat="q25")  # A's lower quartile is what the wall share is over
    assert q.measured.set_index("basis").loc["wall", "measured"] == pytest.approx(1.95 / 1.675)
    share = 300 / 1950
    assert q.projection.set_index("basis").loc["wall", "projected"] == pytest.approx(1 / (1 - share + share / 3))


def test_one_side_without_module_scopes_or_busy_time(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "A", 300.0, 20, [2.0])
    b = run_folder(tmp_path / "B", 100.0, 5, [1.0], modules=False, busy=False)
    c = compare(a, b)
    assert c.modules.empty and c.warnings == ["run B has no module scopes: no per-module deltas"]
    kernel = c.measured.set_index("basis").loc["kernel"]  # B's busy time unknown: summed on both sides
    assert kernel["measured"] == pytest.approx(1000 / 800) and kernel["how"] == "summed kernel time per step A / B"
    assert np.isnan(c.summary.set_index("metric").loc["busy_ms_per_step", "b"])


class Trace:
    """A Kineto trace: ProfilerSteps, and in each a number of launches of 50 us kernels."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def step(self, n: int, ts: float, dur: float, launches: int) -> Trace:
        self.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1,
                            "ts": ts, "dur": dur})
        for i in range(launches):
            corr = len(self.events) + 1
            t = ts + 10 + 100 * i
            self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                                "ts": t, "dur": 5, "args": {"correlation": corr}})
            self.events.append({"ph": "X", "cat": "kernel", "name": ELEM, "pid": 0, "tid": 7, "ts": t + 8, "dur": 50,
                                "args": {"correlation": corr, "stream": 7, "device": 0}})
        return self

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps({"traceEvents": self.events}))
        return path


def traces(tmp_path: Path) -> tuple[Path, Path]:
    a = Trace().step(1, 0, 1000, 5).step(2, 2000, 1200, 5).step(3, 4000, 1100, 5).write(tmp_path / "a.json")
    b = Trace().step(1, 0, 400, 2).step(2, 2000, 500, 2).step(3, 4000, 600, 2).write(tmp_path / "b.json")
    return a, b


def test_two_bare_traces_compare_their_profiled_steps(tmp_path: Path) -> None:
    c = compare(*traces(tmp_path))
    assert c.sides()["a"]["step_kind"] == "profiled" and c.sides()["a"]["step_source"] == "ProfilerStep spans"
    s = c.summary.set_index("metric")
    assert (s.loc["step_ms", "a"], s.loc["step_ms", "b"]) == pytest.approx((1.1, 0.5))  # median spans
    assert (s.loc["launches_per_step", "a"], s.loc["launches_per_step", "b"]) == (5, 2)
    assert (s.loc["kernels_per_step", "a"], s.loc["kernels_per_step", "b"]) == (5, 2)
    assert s.loc["busy_ms_per_step", "a"] == pytest.approx(0.25)
    m = c.measured.set_index("basis")
    assert m.loc["wall", "measured"] == pytest.approx(1.1 / 0.5) and m.loc["kernel", "measured"] == pytest.approx(2.5)
    given = compare(*traces(tmp_path), step_ms_a=[0.9, 1.0, 1.3], step_ms_b=[0.5])
    assert given.sides()["b"]["step_kind"] == "unprofiled"
    assert given.measured.set_index("basis").loc["wall", "measured"] == pytest.approx(1.0 / 0.5)


def test_launches_from_a_kept_trace_and_a_run_without_a_step_count(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "A", 300.0, 20, [2.0])
    b = run_folder(tmp_path / "B", 100.0, 5, [1.0])
    with gzip.open(a / "trace.json.gz", "wt") as f:  # the kept trace: 3 steps of 5 launches
        f.write(traces(tmp_path)[0].read_text())
    doc = json.loads((b / "breakdown.json").read_text())
    del doc["n_steps"]
    (b / "breakdown.json").write_text(json.dumps(doc))
    c = compare(a, b)
    s = c.summary.set_index("metric")
    assert s.loc["launches_per_step", "a"] == 5 and np.isnan(s.loc["launches_per_step", "b"])
    assert c.warnings == ["run B: no step count recorded, so its times are read as one step"]
    assert s.loc["kernel_ms_per_step", "b"] == pytest.approx(1.6)  # both profiled steps read as one


@pytest.mark.parametrize(("kw", "said"), [
    ({"device": "cpu"}, "run A ran on H200, run B on cpu"),
    ({"gpu": "NVIDIA A100-SXM4-80GB"}, "run A ran on H200, run B on A100-SXM4-80GB"),
    ({"device": "", "basis": "cpu_op_time"}, "run A's times are gpu_kernel_time, run B's cpu_op_time"),
])
def test_runs_that_cannot_be_compared(tmp_path: Path, kw: dict, said: str) -> None:
    a = run_folder(tmp_path / "A", 300.0, 20, [2.0])
    b = run_folder(tmp_path / "B", 100.0, 5, [1.0], **kw)
    with pytest.raises(AddressableError, match=said.replace("(", r"\(")):
        compare(a, b)


def test_unprofiled_against_profiled_steps_is_refused(runs: tuple[Path, Path], tmp_path: Path) -> None:
    _, b = traces(tmp_path)
    with pytest.raises(AddressableError, match=r"run A's step times are unprofiled, run B's profiled.*--step-ms-b"):
        compare(runs[0], b)
    assert compare(runs[0], b, step_ms_b=[1.5]).measured["measured"].iloc[0] == pytest.approx(2.1 / 1.5)


def cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["compare", *map(str, args)])
    return res.exit_code, res.stdout, res.stderr


def test_bad_input_is_one_line_and_exit_2(runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = runs
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nattention,2\n")  # A has no attention
    (tmp_path / "C").mkdir()
    (tmp_path / "C" / "steps.csv").write_text("repeat,step,time_ms,profiled\n0,0,abc,False\n")
    bad_steps = run_folder(tmp_path / "D", 100.0, 5, [1.0])
    (bad_steps / "steps.csv").write_text("repeat,step,time_ms,profiled\n0,0,-1,False\n")
    for args, said in [((a, tmp_path / "nothere"), "run B: no such run folder or trace file"),
                       ((a, b, "--speedups", wins), "no win applies to run A"),
                       ((a, b, "--step-ms-a", "2"), "run A is a run folder"),
                       ((*traces(tmp_path), "--step-ms-a", "0"), "--step-ms-a must be positive"),
                       ((a, bad_steps), "steps.csv: time_ms on row 1 is not a positive number"),
                       ((a, tmp_path / "C"), "no breakdown.json")]:
        code, _, err = cli(*args)
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, (args, err)


def test_cli_text_json_and_csv(runs: tuple[Path, Path], tmp_path: Path) -> None:
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nelementwise,3\n")
    code, out, _ = cli(*runs, "--speedups", wins, "--csv", tmp_path / "c.csv", "--top", "2")
    assert code == 0
    assert "step time (ms)                   2.100       1.750      -0.350    1.200" in out
    assert "Per category (summed kernel time): the 2 largest changes of 3" in out
    assert "  encoder.act" in out and "EagerGELU" not in out  # B's class is shown
    assert "amdahl  kernel  1.250x [1.250-1.250]" in out
    t = pd.read_csv(tmp_path / "c.csv")
    assert set(t["section"]) == {"summary", "category", "module", "projection"}
    assert t.loc[t["section"] == "category", "category"].iloc[0] == "elementwise"
    code, out, _ = cli(*runs, "--speedups", wins, "--json")
    d = json.loads(out)
    assert d["step_stat"] == "median" and d["sides"]["a"]["step_source"] == "steps.csv"
    assert d["projection"][0]["model"] == "amdahl" and d["measured"][0]["measured"] == pytest.approx(1.2)
    assert format_comparison(compare(*runs)).count("\n") > 10


def _replay_validation():
    spec = importlib.util.spec_from_file_location("replay_validation", ROOT / "gpu" / "replay_validation.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_shipped_pair_measures_what_replay_validation_measures() -> None:
    """The real H200 RMSNorm swap: compare's measured speedups on its traces and unprofiled steps (the
    lower quartile, as the validation takes it) are those of gpu/replay_validation.py."""
    name = "llama8b-prefill-b4-rmsnorm"
    meta = json.loads((PAIRS / f"{name}.json").read_text())
    c = compare(PAIRS / f"{name}.A.json.gz", PAIRS / f"{name}.B.json.gz", step_ms_a=meta["step_ms"]["A"],
                step_ms_b=meta["step_ms"]["B"], step_stat="q25")
    row = _replay_validation().validate(PAIRS, name)
    m = c.measured.set_index("basis")
    assert m.loc["wall", "measured"] == pytest.approx(row["measured_speedup_wall"], rel=1e-12)
    assert m.loc["kernel", "measured"] == pytest.approx(row["measured_speedup_kernel"], rel=1e-9)
    assert m.loc["wall", "measured_lo"] < m.loc["wall", "measured"] < m.loc["wall", "measured_hi"]
    s = c.summary.set_index("metric")
    assert s.loc["step_ms", "a"] == pytest.approx(row["step_ms_a"])
    # the swap: 8 eager kernels per RMSNorm call become 1 (9 calls per step: 63 fewer kernels and launches)
    assert s.loc["kernels_per_step", "delta"] == -63 and s.loc["launches_per_step", "delta"] == -63
