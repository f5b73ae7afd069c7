"""The host time: where the GPU alone holds a step, the step's CPU time to its return fixes the replay's CPU scale."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from addressable.cli import main
from addressable.projection import replay as replay_module
from addressable.projection.replay import (
    Change,
    cpu_scale_basis,
    fit_cpu_scale,
    host_span,
    project_traces,
    replay,
    scales,
    step_span,
)
from tests.projection.test_replay import TraceBuilder, graph, launch_bound, project_json


def gpu_bound(tb: TraceBuilder | None = None) -> TraceBuilder:
    """One step: 10 launches (5 us of CPU, then a 5 us call, so 100 us of CPU to the sync), 100 us kernels back to
    back from 13 us, then a synchronize that returns 2 us after the last kernel's end (1022)."""
    tb = tb or TraceBuilder()
    for j in range(10):
        tb.launch(10 * j + 5, 5, 13 + 101 * j, 100)
    tb.call("cudaDeviceSynchronize", 100, 1024 - 100)
    tb.step(1, 0, 1025)
    return tb


def test_the_host_time_fixes_the_cpu_scale_the_step_time_cannot(tmp_path: Path) -> None:
    g = graph(tmp_path, gpu_bound())
    assert host_span(g, replay(g)) == pytest.approx(100)  # the step reaches its sync after 100 us of CPU
    # the kernels alone take longer than the 1000 us step measured without the profiler (at the CPU's fastest the
    # replayed step is 1019 us, at twice its profiled time 1031): the measured step says nothing about the CPU
    assert step_span(replay(g, cpu_scale=0.05)) == pytest.approx(1019.3)
    assert step_span(replay(g, cpu_scale=2.0)) == pytest.approx(1031)
    assert fit_cpu_scale(g, 1000.0) == 0.05 and cpu_scale_basis(g, 1000.0) == "unidentified"
    # measured without the profiler, the CPU returned after 40 us: scale 0.4
    scale = fit_cpu_scale(g, 1000.0, host_us=40.0)
    assert scale == pytest.approx(0.4, rel=2e-3) and cpu_scale_basis(g, 1000.0, host_us=40.0) == "host"
    assert host_span(g, replay(g, cpu_scale=scale), scale) == pytest.approx(40, rel=2e-3)
    # every kernel 100x faster frees the GPU: the CPU holds the step, at 40 us to the sync, not 5
    fast = [Change(np.ones(g.n_gpu, bool), k=100)]
    with_host, without = (replay(g, fast, s).span for s in (scale, 0.05))
    # the last launch at 38 us (95 x 0.4), its 1 us kernel 8 us after the launch's start, the sync's 2 us after it,
    # and the step's last 1 us of CPU at 0.4
    assert with_host == pytest.approx(38 + 8 + 1 + 2 + 0.4, rel=2e-3)
    # at 0.05 the GPU still holds it: ten 1 us kernels 1 us apart from 8 us, the sync 2 us after, 29.3 us in all
    assert without == pytest.approx(29.3)


def test_the_step_bounds_the_host_times_scale_loosely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU-bound step measured at 1000 us, shorter than its kernels alone replay (1019.3 us): a host time of 200 us
    (2x the profiled CPU) lengthens the replayed step to 1031 us, 1.1% over its least. Within replay.HOST_STEP_SLACK
    (0.1) the host time decides; at the 1% it had before, the step held the scale under 2x."""
    g = graph(tmp_path, gpu_bound())
    assert replay_module.HOST_STEP_SLACK == 0.1
    assert fit_cpu_scale(g, 1000.0, host_us=200.0) == pytest.approx(2.0, rel=2e-3)
    monkeypatch.setattr(replay_module, "HOST_STEP_SLACK", 0.01)
    tight = fit_cpu_scale(g, 1000.0, host_us=200.0)
    assert 1.0 < tight < 1.9 and step_span(replay(g, cpu_scale=tight)) == pytest.approx(1019.3 * 1.01, rel=1e-3)


def test_a_step_the_cpu_holds_is_fitted_by_its_step_and_its_host_time_alike(tmp_path: Path) -> None:
    """The launch-bound step (1000 us of CPU, 5 us kernels): both its step and its host time move with the scale one
    for one, so a host time read with the step (the same steps, one host speed) leaves the step's fit where it is,
    and one that disagrees weighs as much: the fit is the two fits' geometric mean."""
    g = launch_bound(tmp_path)
    s = fit_cpu_scale(g, 500.0)
    assert 0.45 < s < 0.55
    agreeing = host_span(g, replay(g, cpu_scale=s), s)
    assert fit_cpu_scale(g, 500.0, host_us=agreeing) == pytest.approx(s, rel=2e-3)
    alone = fit_cpu_scale(g, 500.0, host_us=900.0, host_first=True)  # the host time's own fit
    assert alone > 1.5 * s
    assert fit_cpu_scale(g, 500.0, host_us=900.0) == pytest.approx(np.sqrt(s * alone), rel=0.02)
    assert cpu_scale_basis(g, 500.0) == "step" and cpu_scale_basis(g, None) == ""


def test_a_step_the_gpu_nearly_holds_takes_its_scale_from_its_host_time(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU-bound step measured at 1030 us: the kernels alone replay at 1019 us, so the step reaches 1030 only at
    about 1.9x the profiled CPU, and moves 11 us from 0.05x to 2x: a 1% error in it would move the scale 2-5x. The
    host time (40 us: 0.4x) moves one for one and outweighs it (replay.HOST_WEIGHTED); without it the step decides."""
    g = graph(tmp_path, gpu_bound())
    scale = fit_cpu_scale(g, 1030.0, host_us=40.0)
    assert scale == pytest.approx(0.4, rel=0.02) and cpu_scale_basis(g, 1030.0, host_us=40.0) == "host"
    assert fit_cpu_scale(g, 1030.0) > 1.5 and cpu_scale_basis(g, 1030.0) == "step"  # no host time
    monkeypatch.setattr(replay_module, "HOST_WEIGHTED", False)
    assert fit_cpu_scale(g, 1030.0, host_us=40.0) > 1.5 and cpu_scale_basis(g, 1030.0, host_us=40.0) == "step"


def test_a_step_with_no_backward_takes_its_scale_from_its_host_time_first(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU-bound step measured at 1030 us: the kernels alone replay at 1019 us, so the step time fixes the scale
    only through the last 11 us (about 1.9x the profiled CPU), though the CPU returned after 40 us (0.4x). With
    replay.HOST_FIRST (off as shipped: `profile` reads its host time apart from its step time) and no backward, the
    host time fixes it; a training step's trace (an autograd node) keeps the step's (HOST_WEIGHTED off, which would
    give both the host time's scale)."""
    none = lambda t, g: np.zeros(g.n_gpu, bool)  # noqa: E731
    monkeypatch.setattr(replay_module, "HOST_WEIGHTED", False)
    shipped = project_traces([gpu_bound().write(tmp_path / "shipped.json")], [], none, 1030.0, 40.0)
    assert not isinstance(shipped, str) and shipped.cpu_scale_basis == "step"
    monkeypatch.setattr(replay_module, "HOST_FIRST", True)
    g = graph(tmp_path, gpu_bound())
    assert cpu_scale_basis(g, 1030.0, host_us=40.0) == "step" and fit_cpu_scale(g, 1030.0, host_us=40.0) > 1.5
    assert cpu_scale_basis(g, 1030.0, host_us=40.0, host_first=True) == "host"
    assert fit_cpu_scale(g, 1030.0, host_us=40.0, host_first=True) == pytest.approx(0.4, rel=2e-3)
    assert cpu_scale_basis(g, 1030.0, host_first=True) == "step"  # no host time: the step, as before
    inference = project_traces([gpu_bound().write(tmp_path / "infer.json")], [], none, 1030.0, 40.0)
    training = gpu_bound()
    training.events.append({"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MulBackward0",
                            "pid": 10, "tid": 2, "ts": training.events[0]["ts"], "dur": 1.0})
    trained = project_traces([training.write(tmp_path / "train.json")], [], none, 1030.0, 40.0)
    assert not isinstance(inference, str) and not isinstance(trained, str)
    assert (inference.cpu_scale_basis, trained.cpu_scale_basis) == ("host", "step")
    assert inference.cpu_scale == pytest.approx(0.4, rel=2e-3) and trained.cpu_scale > 1.5


def test_host_time_ends_at_the_first_closing_wait_or_the_steps_cpu(tmp_path: Path) -> None:
    """Two syncs close the step: the host time ends where the first starts; with none, at the step's CPU end."""
    tb = gpu_bound()
    tb.call("cudaDeviceSynchronize", 1024.5, 0.3)  # a second sync inside the step, nothing left to wait for
    g = graph(tmp_path, tb)
    assert host_span(g, replay(g)) == pytest.approx(100)
    bare = TraceBuilder()
    for j in range(10):
        bare.launch(10 * j + 5, 5, 13 + 101 * j, 100)
    bare.step(1, 0, 120)  # the step returns 20 us after its last launch, without a sync
    g = graph(tmp_path, bare)
    assert host_span(g, replay(g)) == pytest.approx(120)
    assert host_span(g, replay(g, cpu_scale=0.5), 0.5) == pytest.approx(60)
    assert host_span(g, replay(g, cpu_scale=scales(g, 0.5)), scales(g, 0.5)) == pytest.approx(60)


def run_folder(tmp_path: Path, host_ms: float | None) -> Path:
    """The toy run with the GPU-bound step as its trace, its unprofiled step 1.0 ms, and `host_ms` when given."""
    run = tmp_path / f"run-{host_ms}"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "toy-train", run)
    (run / "trace.json.gz").write_bytes(gzip.compress(json.dumps({"traceEvents": gpu_bound().events}).encode()))
    doc = json.loads((run / "breakdown.json").read_text())
    doc.update(step_time_ms=1.0, **({"host_time_ms": host_ms} if host_ms is not None else {}))
    (run / "breakdown.json").write_text(json.dumps(doc))
    return run


def test_project_reads_a_runs_host_time_and_warns_without_one(tmp_path: Path) -> None:
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nelementwise,100\n")
    code, d, err = project_json("--speedups", str(wins), "--runs", str(run_folder(tmp_path, 0.04)), "--json")
    r = d["runs"][0]
    assert code == 0 and r["model"] == "replay" and r["cpu_scale_basis"] == "host"
    assert r["cpu_scale"] == pytest.approx(0.4, rel=2e-3)
    held = r["replay_speedup_wall"]
    assert held == pytest.approx(1020 / 49.4, rel=0.01)  # the CPU's 40 us now hold the step
    assert not any("host time" in w for w in d["warnings"])
    code, d, err = project_json("--speedups", str(wins), "--runs", str(run_folder(tmp_path, None)), "--json")
    r = d["runs"][0]
    assert code == 0 and r["cpu_scale_basis"] == "unidentified" and r["cpu_scale"] == 0.05
    assert r["replay_speedup_wall"] > 1.5 * held  # the CPU at its fastest
    said = [w for w in d["warnings"] if "no host time (host_time_ms)" in w]
    assert len(said) == 1 and said[0] in err and "projected too high" in said[0]


def test_a_trace_files_host_time_comes_with_host_ms(tmp_path: Path) -> None:
    trace = gpu_bound().write(tmp_path / "gpu_bound.json")
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nelementwise,100\n")
    args = ("--speedups", str(wins), "--runs", str(trace), "--json", "--step-ms", "1.0")
    code, d, _ = project_json(*args, "--host-ms", "0.04")
    r = d["runs"][0]
    assert code == 0 and r["cpu_scale_basis"] == "host" and r["cpu_scale"] == pytest.approx(0.4, rel=2e-3)
    code, d, _ = project_json(*args)
    assert code == 0 and d["runs"][0]["cpu_scale_basis"] == "unidentified"
    assert any("--host-ms" in w and "no host time" in w for w in d["warnings"])


@pytest.mark.parametrize("extra", [["--step-ms", "1.0", "--host-ms", "0"], ["--step-ms", "1.0", "--host-ms", "nan"],
                                   ["--host-ms", "0.04"]])
def test_bad_host_ms_is_one_line(tmp_path: Path, extra: list[str]) -> None:
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nelementwise,2\n")
    trace = gpu_bound().write(tmp_path / "gpu_bound.json")
    res = CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(trace), *extra])
    assert res.exit_code == 2 and "--host-ms" in res.stderr and "Traceback" not in res.output
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_step_whose_cpu_nearly_fills_it_is_co_limited(tmp_path: Path) -> None:
    """The GPU alone holds the 1000 us step; a CPU that takes 950 us of it to return makes it co-limited (its own
    regime and error model), one that takes 40 us leaves it gpu-bound."""
    trace = gpu_bound().write(tmp_path / "gpu_bound.json")
    none = lambda t, g: np.zeros(g.n_gpu, bool)  # noqa: E731
    regimes = {host: project_traces([trace], [], none, 1000.0, host).regime for host in (40.0, 950.0, None)}
    assert regimes == {40.0: "gpu-bound", 950.0: "co-limited", None: "gpu-bound"}
