"""The replay's CPU model `given` (docs/replay.md): a module group's forward calls at their profiler-free
CPU scale (module_cpu.csv), each fused call taking the replacement's measured CPU time (wins.csv's
cpu_us_after), in `project` and in replay.project_traces; the fallback to `uniform` per target."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from addressable.classify.breakdown import breakdown_of_trace
from addressable.projection import intervals
from addressable.projection.project import project
from addressable.projection.replay import WhatIf, consumer_casts, group_cpu, load_graph, project_traces
from addressable.runs.folder import MODULE_CPU_FILE, write_breakdown
from addressable.trace.reader import load_trace
from tests.projection.test_replay import BASE, TraceBuilder

SCOPE = "nn.Module: act (EagerGELU)"


def scoped_trace(path: Path, memset: bool = False) -> Path:
    """10 launches, 100 us of CPU each (90 us gap + 10 us call) and a 5 us kernel 8 us after each; the
    calls 2-5 (and their gaps: 400 us from 200 to 600) inside the module scope of `act` (EagerGELU);
    with `memset`, a 10 us cudaMemsetAsync call at 250 inside it too (in call 2's gap)."""
    tb = TraceBuilder()
    if memset:
        tb.call("cudaMemsetAsync", 250, 10)
    for i in range(10):
        tb.launch(100 * i + 90, 10, 100 * i + 98, 5, op="aten::mul" if 2 <= i <= 5 else "aten::add")
    tb.scope(SCOPE, 200, 400)
    tb.step(1, 0, 1000)
    return tb.write(path)


def run_folder(tmp_path: Path, step_us: float, module_cpu_us: float | None, memset: bool = False) -> Path:
    """A run folder of scoped_trace: its breakdown, one unprofiled step time, and module_cpu.csv (act's
    profiler-free CPU per step) when given."""
    folder = tmp_path / "run"
    folder.mkdir()
    raw = scoped_trace(tmp_path / "t.json", memset)
    (folder / "trace.json.gz").write_bytes(gzip.compress(raw.read_bytes()))
    b = breakdown_of_trace(load_trace(raw))
    b.n_steps = 1
    write_breakdown(b, folder, extra={"step_time_ms": step_us / 1e3, "n_steps": 1, "workload": "toy"})
    pd.DataFrame({"repeat": 0, "step": [0, 1, 2], "time_ms": [step_us / 1e3] * 3, "profiled": False}).to_csv(
        folder / "steps.csv", index=False)
    if module_cpu_us is not None:
        pd.DataFrame({"module": ["act", ""], "class": ["EagerGELU", "Net"], "calls_per_step": [1.0, 1.0],
                      "cpu_us_per_step": [module_cpu_us, 900.0]}).to_csv(folder / MODULE_CPU_FILE, index=False)
    return folder


def wins(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "wins.csv"
    p.write_text(text)
    return p


@pytest.mark.parametrize("memset", [False, True])
def test_given_by_hand(tmp_path: Path, memset: bool) -> None:
    """act's 4 calls took 400 us profiled and 200 unprofiled (scale 0.5); the unprofiled step is 803 us, so
    the rest keeps scale 1: calls 0-1 end at 200, act's at 400, calls 6-9 at 800, the last kernel at 803.
    Fused into one kernel (k 1) whose call costs 250 us: calls 0-1 end at 200, the fused call at 450, calls
    6-9 at 850, the last kernel ends at 853: slower (the replacement's dispatch costs more than the eager
    ops' 200 us). uniform, blind to both, projects a gain. A memset the eager module issued inside its
    scope goes with it (its 30 us at scale 0.5 would make it 883)."""
    run = run_folder(tmp_path, 803.0, 200.0, memset)
    p = project([run], wins(tmp_path, "target,speedup,kernels_after,cpu_us_after\nmodule:EagerGELU,1,1,250\n"))
    r = p.runs.iloc[0]
    assert r["replay_cpu_model"] == "given" and r["model"] == "replay"
    assert r["speedup_wall"] == pytest.approx(803 / 853, rel=2e-3)
    assert r["cpu_scale"] == pytest.approx(1.0, rel=2e-3)  # the rest's scale; act's calls kept 0.5
    assert not [w for w in p.warnings if "replay CPU model" in w]  # every target ran given: nothing to say
    # the same wins without cpu_us_after: uniform (one scale), one line saying so
    p = project([run], wins(tmp_path, "target,speedup,kernels_after\nmodule:EagerGELU,1,1\n"))
    u = p.runs.iloc[0]
    assert u["replay_cpu_model"] == "uniform" and u["speedup_wall"] > 1.1
    notes = [w for w in p.warnings if "replay CPU model" in w]
    assert len(notes) == 1 and "no cpu_us_after" in notes[0] and "module:EagerGELU" in notes[0]


def test_project_and_project_traces_agree(tmp_path: Path) -> None:
    """What `project` runs is replay.project_traces with the module's scopes and module_cpu.csv (the
    validation scores the same function with the swap group's ranges)."""
    run = run_folder(tmp_path, 900.0, 300.0)
    p = project([run], wins(tmp_path, "target,speedup,kernels_after,cpu_us_after\nmodule:EagerGELU,2,1,120\n"))
    trace, g, _ = load_graph(run / "trace.json.gz")
    ev = trace.events
    ranges = ev[(ev["name"] == SCOPE).to_numpy()]
    cal = group_cpu(g, trace, ranges, 300.0)
    assert cal.scale == pytest.approx(0.75) and cal.share == pytest.approx(1.0)
    assert cal.calls.sum() == 4 and (cal.op_call[2:6] == 0).all() and (cal.op_call[[0, 1, 6]] == -1).all()
    fwd = WhatIf(lambda t, gg: cal.op_call >= 0, 2.0, 2.0, 2.0, 1.0, lambda t, gg: cal.op_call,
                 lambda t, gg: group_cpu(gg, t, ranges, 300.0), 120.0)
    res = project_traces([trace], [fwd], lambda t, gg: np.zeros(gg.n_gpu, bool), 900.0)
    assert not isinstance(res, str) and res.cpu_groups == 1
    assert p.runs.iloc[0]["speedup_wall"] == pytest.approx(res.speedup_wall, rel=1e-9)


def forward_whatif(tmp_path: Path) -> tuple:
    """scoped_trace's run (803 us unprofiled step, act 200 us profiler-free), its trace, act's calibration and
    act's forward what-if at its measured scale."""
    run = run_folder(tmp_path, 803.0, 200.0)
    trace, _, _ = load_graph(run / "trace.json.gz")
    ev = trace.events
    ranges = ev[(ev["name"] == SCOPE).to_numpy()]
    cal = lambda t, gg: group_cpu(gg, t, ranges, 200.0)  # noqa: E731
    return trace, cal, WhatIf(lambda t, gg: cal(t, gg).op_call >= 0, 1.0, 1.0, 1.0, cpu=cal)


def test_a_backward_what_if_scaled_like_the_forward_takes_its_measured_scale(tmp_path: Path) -> None:
    """act's forward (calls 2-5, 400 us profiled, 200 unprofiled: scale 0.5) and, as its backward, the kernels
    of calls 7-8 (200 us profiled). The unprofiled step is 803 us: with the backward's launches at the
    forward's 0.5 the rest (calls 0, 1, 6 and 9's gap and call: 300 us at r) is fitted to about 1.48 (the
    90 us before call 0 at the median of the per-call scales, now 0.5: 45 + 300 r + 200 + 100 + 13 = 803);
    without `scale_like` they are part of the rest, which stays at 1."""
    trace, cal, fwd = forward_whatif(tmp_path)
    bwd_ops = lambda t, gg: np.isin(np.arange(gg.n_gpu), [7, 8])  # noqa: E731
    none = lambda t, gg: np.zeros(gg.n_gpu, bool)  # noqa: E731
    like = project_traces([trace], [fwd, WhatIf(bwd_ops, 1.0, 1.0, 1.0, scale_like=cal)], none, 803.0)
    rest = project_traces([trace], [fwd, WhatIf(bwd_ops, 1.0, 1.0, 1.0)], none, 803.0)
    assert not isinstance(like, str) and not isinstance(rest, str)
    assert (like.cpu_groups, rest.cpu_groups) == (2, 1)
    assert like.cpu_scale == pytest.approx(445 / 300, rel=1e-2) and rest.cpu_scale == pytest.approx(1.0, rel=2e-3)


@pytest.mark.parametrize("module_cpu, target, reason", [
    (None, "module:EagerGELU", "no module_cpu.csv"),
    (200.0, "elementwise", "not a module: target"),
    (200.0, "module:EagerGELU@backward", "@backward"),
    (200.0, "module:NoSuchClass", "module_cpu.csv has no row for NoSuchClass"),
])
def test_each_fallback_to_uniform_is_said_once(tmp_path: Path, module_cpu: float | None, target: str,
                                               reason: str) -> None:
    run = run_folder(tmp_path, 803.0, module_cpu)
    p = project([run], wins(tmp_path, f"target,speedup,kernels_after,cpu_us_after\n{target},1,1,250\n"))
    notes = [w for w in p.warnings if "replay CPU model" in w]
    assert len(notes) == 1 and reason in notes[0] and "uniform (one fitted cpu_scale" in notes[0]
    assert p.runs.iloc[0]["replay_cpu_model"] == "uniform"


def test_a_mix_of_given_and_uniform_targets_is_named_and_takes_the_wider_error(tmp_path: Path, monkeypatch) -> None:
    run = run_folder(tmp_path, 803.0, 200.0)
    err = tmp_path / "err.yaml"
    models = {m: intervals.ErrorModel(0.8, w, {"cpu-bound": w}, {"cpu-bound": 13}, {"cpu-bound": h})
              for m, w, h in (("given", 0.05, 0.20), ("uniform", 0.07, 0.77))}
    err.write_text(intervals.error_model_yaml(models))
    monkeypatch.setattr(intervals, "ERROR_MODEL", err)
    w = "target,speedup,kernels_after,cpu_us_after\nmodule:EagerGELU,1,1,250\nre:FillFunctor,1.5,,\n"
    p = project([run], wins(tmp_path, w))
    r = p.runs.iloc[0]
    assert r["replay_cpu_model"] == "mixed" and r["replay_model_error"] == pytest.approx(0.07)
    notes = [x for x in p.warnings if "replay CPU model" in x]
    assert len(notes) == 1 and "given (the module's measured CPU" in notes[0] and "re:FillFunctor (not a module" in notes[0]
    p = project([run], wins(tmp_path, "target,speedup,kernels_after,cpu_us_after\nmodule:EagerGELU,1,1,250\n"))
    assert p.runs.iloc[0]["replay_model_error"] == pytest.approx(0.05)  # given alone: given's error model
    assert [x for x in p.warnings if "off by up to 20.0%" in x]
    d = p.to_dict()["runs"][0]
    assert d["replay_cpu_model"] == "given"
    assert json.dumps(d)  # JSON-ready


def test_an_unmeasured_backward_is_replayed_under_both_hypotheses(tmp_path: Path) -> None:
    """The backward's launches (calls 7-8) fused into one: a launch's 100 us of profiled CPU goes. At the
    forward's measured scale (0.5) that saves 50 us of the 803 us step, fitted with the rest (scale 1) 100 us.
    No clock timed the backward, so the point is the geometric mean of 803/753 and 803/703 and the interval
    holds both (held-out 6's resnet18-train-b4-bn: +45% with the forward's scale alone, docs/replay.md)."""
    trace, cal, fwd = forward_whatif(tmp_path)
    bwd_ops = lambda t, gg: np.isin(np.arange(gg.n_gpu), [7, 8])  # noqa: E731
    none = lambda t, gg: np.zeros(gg.n_gpu, bool)  # noqa: E731
    both = project_traces([trace], [fwd, WhatIf(bwd_ops, 1.0, 1.0, 1.0, 1.0, scale_like=cal)], none, 803.0)
    rest = project_traces([trace], [fwd, WhatIf(bwd_ops, 1.0, 1.0, 1.0, 1.0)], none, 803.0)
    assert not isinstance(both, str) and not isinstance(rest, str)
    like_h, rest_h = both.speedup_wall_hypotheses
    assert like_h == pytest.approx(803 / 753, rel=1e-2) and rest_h == pytest.approx(803 / 703, rel=1e-2)
    assert rest_h == pytest.approx(rest.speedup_wall, rel=1e-9)
    assert both.speedup_wall == pytest.approx((like_h * rest_h) ** 0.5, rel=1e-9)
    assert both.speedup_wall_lo <= like_h and both.speedup_wall_hi >= rest_h
    # without a scale_like what-if there is one hypothesis, and it is the point
    assert rest.speedup_wall_hypotheses == (rest.speedup_wall, rest.speedup_wall)


@pytest.mark.parametrize(("backward", "share"), [([7, 8], 200 / 910), ([6, 7, 8, 9], 400 / 910)])
def test_a_large_unmeasured_backward_is_its_own_regime(tmp_path: Path, backward: list[int], share: float) -> None:
    """The graph's profiled CPU is 910 us (ten 10 us calls, the gaps before calls 1-9): the backward's
    launches, each with its 90 us gap, hold 200 or 400 of it; from LARGE_BACKWARD_SHARE (30%) the run's
    regime says " large backward", whose validated error is its own (docs/replay.md)."""
    from addressable.projection.replay import LARGE_BACKWARD_SHARE
    trace, cal, fwd = forward_whatif(tmp_path)
    bwd = WhatIf(lambda t, gg: np.isin(np.arange(gg.n_gpu), backward), 1.0, 1.0, 1.0, 1.0, scale_like=cal)
    res = project_traces([trace], [fwd, bwd], lambda t, gg: np.zeros(gg.n_gpu, bool), 803.0)
    assert not isinstance(res, str)
    assert res.backward_cpu_share == pytest.approx(share, rel=1e-6)
    assert res.regime.endswith(" large backward") == (share >= LARGE_BACKWARD_SHARE)


def test_a_measured_backward_is_replayed_like_a_forward_and_the_rest_spills(tmp_path: Path, monkeypatch) -> None:
    """The backward's calls 7-8 (200 us profiled: 90 us gap and 10 us call each) timed profiler-free at 100 us
    (scale 0.5), fused into one launch whose measured backward CPU is 40 us: 60 us of the step's CPU goes. The
    forward keeps act's 0.5, so the rest (calls 0, 1, 6 and 9: 310 us profiled) is fitted to r = 458/310 (the
    90 us before call 0 at the median per-call scale, 0.5: 45 + 310 r + 200 + 100 = 803), and the step
    becomes 743 us. The rest then spills SPILLOVER x 60 us (6 us at 0.1): 737 us; in a CNN's run SPILLOVER_CONV with
    the consumer-cast term and SPILLOVER_CONV_KEPT without."""
    from addressable.projection import replay
    trace, _, fwd = forward_whatif(tmp_path)
    ev = trace.events
    g = replay.build_graph(trace)
    t0 = float(ev["ts"].iloc[g.cpu_row[0]]) - float(g.cpu_ts[0])  # the graph's clock starts at call 0
    ranges = pd.DataFrame({"ts": [t0 + 605.0], "dur": [200.0], "tid": [ev.loc[ev["kind"] == "runtime", "tid"].iloc[0]]})
    bcal = lambda t, gg: group_cpu(gg, t, ranges, 100.0)  # noqa: E731
    calls = lambda t, gg: bcal(t, gg).op_call  # noqa: E731
    bwd_ops = lambda t, gg: np.isin(np.arange(gg.n_gpu), [7, 8])  # noqa: E731
    none = lambda t, gg: np.zeros(gg.n_gpu, bool)  # noqa: E731
    measured = WhatIf(bwd_ops, 1.0, 1.0, 1.0, 1.0, calls, bcal, 40.0, backward=True)
    monkeypatch.setattr(replay, "SPILLOVER", 0.1)
    res = project_traces([trace], [fwd, measured], none, 803.0)
    assert not isinstance(res, str)
    assert res.cpu_scale == pytest.approx(458 / 310, rel=2e-3) and res.regime.endswith(" measured backward")
    assert res.speedup_wall == pytest.approx(803 / 737, rel=1e-3)
    assert res.speedup_wall_hypotheses == (res.speedup_wall, res.speedup_wall)  # measured: one hypothesis
    monkeypatch.setattr(replay, "SPILLOVER", 0.0)
    res = project_traces([trace], [fwd, measured], none, 803.0)
    assert not isinstance(res, str) and res.speedup_wall == pytest.approx(803 / 743, rel=1e-3)
    # a CNN's measured backward spills SPILLOVER_CONV (unpooled here) beside the consumer-cast term (a what-if of no
    # GPU op here, so it changes nothing else), and SPILLOVER_CONV_KEPT without one; never SPILLOVER
    monkeypatch.setattr(replay, "is_convnet", lambda t: True)
    monkeypatch.setattr(replay, "BACKWARD_POOL_CONV", 0.0)
    casts = WhatIf(none, 1.0, 1.0, 1.0, 0.0, casts=True)
    for conv, kept, step, kept_step in ((0.0, 0.1, 743, 737), (0.1, 0.0, 737, 743), (0.05, 0.05, 740, 740)):
        monkeypatch.setattr(replay, "SPILLOVER_CONV", conv)
        monkeypatch.setattr(replay, "SPILLOVER_CONV_KEPT", kept)
        with_term = project_traces([trace], [casts, fwd, measured], none, 803.0)
        without = project_traces([trace], [fwd, measured], none, 803.0)
        assert not isinstance(with_term, str) and with_term.speedup_wall == pytest.approx(803 / step, rel=1e-3)
        assert not isinstance(without, str) and without.speedup_wall == pytest.approx(803 / kept_step, rel=1e-3)
    monkeypatch.undo()
    # without the replacement's backward CPU nothing is measured after the swap: no spill, no regime
    monkeypatch.setattr(replay, "SPILLOVER", 0.1)
    res = project_traces([trace], [fwd, WhatIf(bwd_ops, 1.0, 1.0, 1.0, 1.0, calls, bcal, backward=True)], none, 803.0)
    assert not isinstance(res, str) and not res.regime.endswith(" measured backward")


def test_a_cnns_measured_backward_is_pooled_toward_the_uniform_scale(tmp_path: Path, monkeypatch) -> None:
    """The measured backward above (scale 0.5) in a CNN's run: its scale becomes 0.5^(1-w) * u^w, u the scale that
    fits the whole step alone (BACKWARD_POOL_CONV w); the same projection as a backward measured at that scale.
    A run that is not a CNN keeps the measured scale (BACKWARD_POOL 0), and so does one without the replacement's
    backward CPU."""
    from addressable.projection import replay
    trace, _, fwd = forward_whatif(tmp_path)
    ev = trace.events
    g = replay.build_graph(trace)
    t0 = float(ev["ts"].iloc[g.cpu_row[0]]) - float(g.cpu_ts[0])
    ranges = pd.DataFrame({"ts": [t0 + 605.0], "dur": [200.0], "tid": [ev.loc[ev["kind"] == "runtime", "tid"].iloc[0]]})
    u = replay.fit_cpu_scale(g, 803.0)
    pooled_us = 200.0 * 0.5 ** 0.5 * u ** 0.5  # the profiled 200 us at the pooled scale

    def measured(per_step_us: float, after: float | None = 40.0) -> WhatIf:
        bcal = lambda t, gg: group_cpu(gg, t, ranges, per_step_us)  # noqa: E731
        return WhatIf(lambda t, gg: np.isin(np.arange(gg.n_gpu), [7, 8]), 1.0, 1.0, 1.0, 1.0,
                      lambda t, gg: bcal(t, gg).op_call, bcal, after, backward=True)

    none = lambda t, gg: np.zeros(gg.n_gpu, bool)  # noqa: E731
    monkeypatch.setattr(replay, "BACKWARD_POOL_CONV", 0.5)
    monkeypatch.setattr(replay, "BACKWARD_POOL", 0.0)
    monkeypatch.setattr(replay, "SPILLOVER_CONV_KEPT", replay.SPILLOVER)  # the pooling alone tells the runs apart
    plain = project_traces([trace], [fwd, measured(100.0)], none, 803.0)
    monkeypatch.setattr(replay, "is_convnet", lambda t: True)
    cnn = project_traces([trace], [fwd, measured(100.0)], none, 803.0)
    monkeypatch.setattr(replay, "BACKWARD_POOL_CONV", 0.0)
    at_pooled = project_traces([trace], [fwd, measured(pooled_us)], none, 803.0)
    unpooled = project_traces([trace], [fwd, measured(100.0)], none, 803.0)
    for r in (plain, cnn, at_pooled, unpooled):
        assert not isinstance(r, str)
    assert u != pytest.approx(0.5, rel=0.05)  # pooling moves the scale
    assert cnn.speedup_wall == pytest.approx(at_pooled.speedup_wall, rel=1e-9)
    assert cnn.speedup_wall != pytest.approx(plain.speedup_wall, rel=1e-3)
    assert plain.speedup_wall == pytest.approx(unpooled.speedup_wall, rel=1e-9)
    # without the replacement's backward CPU nothing is measured: nothing pooled
    monkeypatch.setattr(replay, "BACKWARD_POOL_CONV", 0.5)
    a = project_traces([trace], [fwd, measured(100.0, None)], none, 803.0)
    monkeypatch.setattr(replay, "BACKWARD_POOL_CONV", 0.0)
    b = project_traces([trace], [fwd, measured(100.0, None)], none, 803.0)
    assert not isinstance(a, str) and not isinstance(b, str) and a.speedup_wall == b.speedup_wall


def test_a_cnns_measured_forward_group_is_pooled_toward_a_multiple_of_the_uniform_fit(tmp_path: Path, monkeypatch) -> None:
    """FORWARD_POOL_CONV pools a CNN's measured forward group's scale toward FORWARD_POOL_RATIO × the uniform fit's:
    weight 0 leaves the projection as it was whatever the ratio, a weight moves it and so does the ratio then, and a
    run that is not a CNN is not pooled."""
    from addressable.projection import replay
    trace, cal, _ = forward_whatif(tmp_path)
    # act's forward fused to one kernel a call, the replacement's CPU given (40 us a call): the group is measured
    fwd = WhatIf(lambda t, gg: cal(t, gg).op_call >= 0, 1.0, 1.0, 1.0, 1.0, lambda t, gg: cal(t, gg).op_call, cal, 40.0)
    none = lambda t, gg: np.zeros(gg.n_gpu, bool)  # noqa: E731
    monkeypatch.setattr(replay, "is_convnet", lambda t: True)

    def wall(weight: float, ratio: float) -> float:
        monkeypatch.setattr(replay, "FORWARD_POOL_CONV", weight)
        monkeypatch.setattr(replay, "FORWARD_POOL_RATIO", ratio)
        r = project_traces([trace], [fwd], none, 803.0)
        assert not isinstance(r, str)
        return r.speedup_wall

    unpooled = wall(0.0, 1.0)
    assert wall(0.0, 1.1) == pytest.approx(unpooled, rel=1e-9)
    pooled = wall(0.5, 1.0)
    assert pooled != pytest.approx(unpooled, rel=1e-3) and wall(0.5, 1.1) != pytest.approx(pooled, rel=1e-3)
    monkeypatch.setattr(replay, "is_convnet", lambda t: False)
    assert wall(0.5, 1.1) == pytest.approx(unpooled, rel=1e-9)


def training_run(tmp_path: Path, backward_us: float | None) -> Path:
    """A training step of 12 launches (100 us of CPU each: 90 us gap, 10 us call; a 5 us kernel 8 us after each):
    the forward on the main thread (calls 2-3 inside act's scope, 200 us), then the backward on the autograd
    thread, last forward op first, so that backward calls 2-3 (at 890 and 990) are the nodes of act's ops
    (their sequence numbers). The unprofiled step is 1000 us of the profiled 1200; module_cpu.csv gives act 100
    us forward and, unless `backward_us` is None, that much backward."""
    tb = TraceBuilder()
    for i in range(6):
        tb.launch(100 * i + 90, 10, 100 * i + 98, 5, op="aten::mul" if 2 <= i <= 3 else "aten::add")
        tb.events[-2]["args"].update({"Sequence number": 10 + i, "Fwd thread id": 0})
    for j in range(6):
        tb.launch(690 + 100 * j, 10, 698 + 100 * j, 5, tid=2, op="MulBackward0" if 2 <= j <= 3 else "AddBackward0")
        tb.events[-2]["args"].update({"Sequence number": 15 - j, "Fwd thread id": 1})
    tb.scope(SCOPE, 200, 200)
    tb.step(1, 0, 1200)
    folder = tmp_path / "run"
    folder.mkdir()
    raw = tb.write(tmp_path / "t.json")
    (folder / "trace.json.gz").write_bytes(gzip.compress(raw.read_bytes()))
    b = breakdown_of_trace(load_trace(raw))
    b.n_steps = 1
    write_breakdown(b, folder, extra={"step_time_ms": 1.0, "n_steps": 1, "workload": "toy"})
    pd.DataFrame({"repeat": 0, "step": [0, 1, 2], "time_ms": [1.0] * 3, "profiled": False}).to_csv(
        folder / "steps.csv", index=False)
    cpu = pd.DataFrame({"module": ["act", ""], "class": ["EagerGELU", "Net"], "calls_per_step": [1.0, 1.0],
                        "cpu_us_per_step": [100.0, 900.0]})
    if backward_us is not None:
        cpu = cpu.assign(backward_calls_per_step=[1.0, 1.0], backward_cpu_us_per_step=[backward_us, 500.0])
    cpu.to_csv(folder / MODULE_CPU_FILE, index=False)
    return folder


@pytest.mark.parametrize(("after", "span"), [
    # forward 200 -> 40 us (scale 0.5, one launch kept); backward 100 -> 20 x 200/112 us (the nodes' 112 us span
    # timed 56: scale 0.5; the two launches' gaps and calls, 200 us, are 200/112 of it); the rest, 710 us at the
    # fitted scale and the 90 us before the first call at the median one (both ~1), then spills 0.1 of the removal
    (20.0, 1000 - (60 + 100 - 20 * 200 / 112) * (1 + 0.1 * 800 / 710)),
    # a replacement whose backward costs more than the eager one's: the backward slows, the forward still gains
    (60.0, 1000 - (60 + 100 - 60 * 200 / 112) * (1 + 0.1 * 800 / 710)),
])
def test_project_replays_a_measured_backward(tmp_path: Path, after: float, span: float) -> None:
    run = training_run(tmp_path, 56.0)
    w = f"target,speedup,kernels_after,cpu_us_after,backward_cpu_us_after\nmodule:EagerGELU,1,1,40,{after}\n"
    r = project([run], wins(tmp_path, w)).runs.iloc[0]
    assert r["replay_cpu_model"] == "given" and r["replay_regime"] == "cpu-bound training measured backward"
    assert r["speedup_wall"] == pytest.approx(1000 / span, rel=2e-3)
    assert r["replay_speedup_wall_backward_like"] == r["replay_speedup_wall_backward_rest"] == r["speedup_wall"]


def test_a_win_that_removes_cpu_work_can_pass_the_kernel_ceiling_and_says_why(tmp_path: Path) -> None:
    """The wall ceiling makes the replaceable kernels free and keeps the CPU; a fused module also drops launches and
    dispatch, so on a CPU-bound step its projection lies above the ceiling, and the table says why."""
    from addressable.projection.project import format_projection

    run = training_run(tmp_path, 56.0)
    p = project([run], wins(tmp_path, "target,speedup,kernels_after,cpu_us_after,backward_cpu_us_after\n"
                                      "module:EagerGELU,1,1,40,20\n"))
    r = p.runs.iloc[0]
    assert r["ceiling_wall"] < 1.01 < r["speedup_wall"]
    assert f"(wall clock above the wall ceiling for {r['label']}: the wins also remove CPU work" in format_projection(p)
    plain = project([run], wins(tmp_path, "target,speedup\nmodule:EagerGELU,2\n"))  # kernels alone: never above
    assert plain.runs.iloc[0]["speedup_wall"] <= plain.runs.iloc[0]["ceiling_wall"]
    assert "above the wall ceiling" not in format_projection(plain)


@pytest.mark.parametrize(("backward_us", "column"), [(None, ",20"), (56.0, ",")])
def test_a_backward_without_both_measurements_keeps_the_two_hypotheses(tmp_path: Path, backward_us: float | None,
                                                                       column: str) -> None:
    """No backward columns in module_cpu.csv, or no backward_cpu_us_after in the win: the two hypotheses."""
    run = training_run(tmp_path, backward_us)
    w = f"target,speedup,kernels_after,cpu_us_after,backward_cpu_us_after\nmodule:EagerGELU,1,1,40{column}\n"
    r = project([run], wins(tmp_path, w)).runs.iloc[0]
    assert r["replay_cpu_model"] == "given" and r["replay_regime"] == "cpu-bound training"
    assert r["replay_speedup_wall_backward_like"] < r["replay_speedup_wall_backward_rest"]


def test_cpu_ratio_after_carries_the_replacements_ratio_onto_module_cpu(tmp_path: Path) -> None:
    """cpu_ratio_after and backward_cpu_ratio_after (scopes.paired_cpu's ratios) times module_cpu.csv's CPU per call
    (forward 100 us, backward 56 us, one call each) project as cpu_us_after 40 and backward_cpu_us_after 20 do; a row
    giving both forms of one is a one-line error."""
    from addressable.core.errors import AddressableError
    run = training_run(tmp_path, 56.0)
    given = project([run], wins(tmp_path, "target,speedup,kernels_after,cpu_us_after,backward_cpu_us_after\n"
                                          "module:EagerGELU,1,1,40,20\n")).runs.iloc[0]
    ratio = project([run], wins(tmp_path, "target,speedup,kernels_after,cpu_ratio_after,backward_cpu_ratio_after\n"
                                          f"module:EagerGELU,1,1,0.4,{20 / 56}\n")).runs.iloc[0]
    assert ratio["replay_cpu_model"] == "given" and ratio["replay_regime"] == given["replay_regime"]
    assert ratio["speedup_wall"] == pytest.approx(given["speedup_wall"], rel=1e-9)
    w = "target,speedup,cpu_us_after,cpu_ratio_after\nmodule:EagerGELU,1,40,0.4\n"
    with pytest.raises(AddressableError, match="row 1: give cpu_us_after or cpu_ratio_after, not both"):
        project([run], wins(tmp_path, w))


def test_a_bad_backward_cpu_us_after_is_one_line(tmp_path: Path) -> None:
    from addressable.core.errors import AddressableError
    run = training_run(tmp_path, 56.0)
    w = "target,speedup,kernels_after,cpu_us_after,backward_cpu_us_after\nmodule:EagerGELU,1,1,40,-3\n"
    with pytest.raises(AddressableError, match="row 1: backward_cpu_us_after must be a number of µs >= 0"):
        project([run], wins(tmp_path, w))


def _op(tb: TraceBuilder, name: str, ts: float, dur: float, seq: int | None = None) -> None:
    args = {"Sequence number": seq} if seq is not None else {}
    tb.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 10, "tid": 1, "ts": BASE + ts, "dur": dur,
                      "args": args})


def test_consumer_casts_are_the_first_copying_cast_after_each_call_and_its_gradients_cast_back(tmp_path: Path) -> None:
    """Three calls of the module (100-300, 600-800, 1000-1100). After the first, the next layer casts its input
    (350, sequence 7) and then its weight (400, sequence 8); after the second an `aten::to` to the same dtype copies
    nothing (820) and the next cast (850, sequence 9) is the consumer's; after the third the only cast is in the
    backward. The backward's node for sequence 7 casts a gradient back, the one for sequence 8 a weight's: the
    consumer casts are the kernels of 350, 850 and node 7, and nothing else."""
    tb = TraceBuilder()
    for start in (100, 600, 1000):
        tb.launch(start + 10, 5, start + 20, 5)  # the module's own kernel
    for ts, seq in ((350, 7), (400, 8), (850, 9)):
        _op(tb, "aten::to", ts - 2, 20, seq)
        _op(tb, "aten::_to_copy", ts - 1, 18, seq)
        tb.launch(ts + 5, 4, ts + 10, 3, op="aten::copy_")
    _op(tb, "aten::to", 820, 1, 10)
    tb.launch(450, 5, 460, 30, op="aten::mm")  # the next layer's GEMM
    for ts, seq in ((1500, 7), (1600, 8)):
        _op(tb, "autograd::engine::evaluate_function: ToCopyBackward0", ts, 40, seq)
        _op(tb, "aten::_to_copy", ts + 5, 20, None)
        tb.launch(ts + 10, 4, ts + 15, 3, op="aten::copy_")
    for start, dur in ((100, 200), (600, 200), (1000, 100)):
        tb.scope(SCOPE, start, dur)
    tb.step(1, 0, 2000)
    trace, g, why = load_graph(load_trace(tb.write(tmp_path / "t.json"), runtime=True))
    assert g is not None, why
    ev = trace.events
    ranges = ev[(ev["name"] == SCOPE).to_numpy()]
    mask = consumer_casts(g, trace, ranges)
    starts = np.round(g.gpu_ts - g.gpu_ts.min() + 120).astype(int)  # the first kernel starts at 120
    assert sorted(starts[mask].tolist()) == [360, 860, 1515]  # the kernels of the casts at 350, 850 and node 7
    assert not consumer_casts(g, trace, ranges.iloc[:0]).any()


def test_output_dtype_removes_the_consumers_cast_where_the_module_widened_its_dtype(tmp_path: Path) -> None:
    """scoped_trace with call 6 (600-700, right after act's calls) a cast of act's output (`aten::_to_copy`).
    test_given_by_hand's replacement (k 1, one kernel, 250 us a call) makes the step 853 us; where act took bfloat16
    and returned float32 and the win says the replacement returns bfloat16, the cast and its 100 us go too: 753.
    Returning float32 changes nothing; with no dtypes recorded the cast stays, and a line says why."""
    tb = TraceBuilder()
    for i in range(10):
        tb.launch(100 * i + 90, 10, 100 * i + 98, 5,
                  op="aten::mul" if 2 <= i <= 5 else "aten::_to_copy" if i == 6 else "aten::add")
    tb.scope(SCOPE, 200, 400)
    tb.step(1, 0, 1000)
    folder = run_folder(tmp_path, 803.0, 200.0)
    (folder / "trace.json.gz").write_bytes(gzip.compress(tb.write(tmp_path / "cast.json").read_bytes()))
    cpu = pd.read_csv(folder / MODULE_CPU_FILE)

    def projected(output_dtype: str, dtypes: tuple[str, str] | None) -> tuple[float, list[str]]:
        t = cpu if dtypes is None else cpu.assign(input_dtype=[dtypes[0], "float32"], output_dtype=[dtypes[1], "float32"])
        t.to_csv(folder / MODULE_CPU_FILE, index=False)
        p = project([folder], wins(tmp_path, f"target,speedup,kernels_after,cpu_us_after,output_dtype\n"
                                              f"module:EagerGELU,1,1,250,{output_dtype}\n"))
        return float(p.runs.iloc[0]["speedup_wall"]), p.warnings

    assert projected("", ("bfloat16", "float32"))[0] == pytest.approx(803 / 853, rel=2e-3)
    assert projected("bfloat16", ("bfloat16", "float32"))[0] == pytest.approx(803 / 753, rel=2e-3)
    assert projected("float32", ("bfloat16", "float32"))[0] == pytest.approx(803 / 853, rel=2e-3)
    speedup, warnings = projected("bfloat16", None)
    assert speedup == pytest.approx(803 / 853, rel=2e-3)
    assert any("records no dtypes" in w for w in warnings)
    speedup, warnings = projected("float16", ("bfloat16", "float32"))  # a third dtype: not modelled, said
    assert speedup == pytest.approx(803 / 853, rel=2e-3) and any("not the dtype the module took" in w for w in warnings)
