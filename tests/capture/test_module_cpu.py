"""The profiler-free module CPU pass (capture.scopes.module_cpu, module_cpu.csv) and forward_cpu_us."""

from __future__ import annotations

import math
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from addressable.capture.measure import host_normalized, measurement, recorded_at_speed
from addressable.capture.profile import profile_workload, resolve_config
from addressable.capture.scopes import (
    backward_cpu_us,
    forward_cpu_us,
    in_step_cpu_us,
    module_backward_cpu,
    module_cpu,
    paired_cpu,
)
from addressable.core.errors import AddressableError
from addressable.runs.folder import MODULE_CPU_FILE, load_run, read_module_cpu

SLEEP_S = 0.004


class Sleep(torch.nn.Module):
    """A module whose forward takes a known CPU time."""

    def __init__(self, seconds: float = SLEEP_S) -> None:
        super().__init__()
        self.seconds = seconds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.seconds)
        return x


class _SleepInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
        return x * 1

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
        time.sleep(SLEEP_S)
        return grad


class SleepBack(torch.nn.Module):
    """A module whose backward takes a known CPU time (one node sleeps), its forward hardly any."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _SleepInBackward.apply(x) * 2


def test_module_cpu_times_each_module_inclusively_by_qualified_name() -> None:
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Sequential(Sleep(), Sleep()))
    x = torch.randn(2, 8)
    with module_cpu(net) as rec:
        for _ in range(3):
            net(x)
    t = rec.table(3).set_index("module")
    assert list(t.columns) == ["class", "calls_per_step", "cpu_us_per_step", "input_dtype", "output_dtype"]
    assert set(t.index) == {"", "0", "1", "1.0", "1.1"} and t.loc["1.0", "class"] == "Sleep"
    assert set(t["input_dtype"]) == set(t["output_dtype"]) == {"float32"}
    assert (t["calls_per_step"] == 1.0).all()
    for leaf in ("1.0", "1.1"):  # the sleep, and little more
        assert SLEEP_S * 1e6 <= t.loc[leaf, "cpu_us_per_step"] < SLEEP_S * 1e6 + 3000
    assert t.loc["1", "cpu_us_per_step"] >= t.loc["1.0", "cpu_us_per_step"] + t.loc["1.1", "cpu_us_per_step"]
    assert t.loc["", "cpu_us_per_step"] >= t.loc["1", "cpu_us_per_step"] + t.loc["0", "cpu_us_per_step"]
    with module_cpu(net) as rec2:  # the hooks are gone after the block: nothing more is recorded in rec
        pass
    net(x)
    assert rec.table(3).equals(rec.table(3)) and not rec2.rows


class Widen(torch.nn.Module):
    """An eager norm's dtype under autocast: it takes bfloat16 and returns float32."""

    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return x.float() * scale


def test_module_cpu_records_the_dtypes_each_module_took_and_returned() -> None:
    """The first floating tensor of the arguments and of the output, as torch names the dtype; a module that took
    or returned no floating tensor records ""; the first call decides (a later one in float32 changes nothing)."""
    net = torch.nn.Sequential(Widen(), torch.nn.Identity())
    ids = torch.nn.Embedding(4, 2)
    with module_cpu(torch.nn.ModuleDict({"net": net, "ids": ids})) as rec:
        net(torch.ones(2, 2, dtype=torch.bfloat16))
        net(torch.ones(2, 2))
        ids(torch.tensor([1, 2]))
    t = rec.table(1).set_index("module")
    assert tuple(t.loc["net.0", ["input_dtype", "output_dtype"]]) == ("bfloat16", "float32")
    assert tuple(t.loc["net.1", ["input_dtype", "output_dtype"]]) == ("float32", "float32")
    assert tuple(t.loc["ids", ["input_dtype", "output_dtype"]]) == ("", "float32")


def test_module_backward_cpu_times_the_nodes_each_call_created() -> None:
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Sequential(SleepBack(), torch.nn.ReLU()))
    x = torch.randn(2, 8)
    with module_backward_cpu(net) as rec:
        for _ in range(3):
            net(x).sum().backward()
        with torch.no_grad():  # no nodes, no backward: not counted
            net(x)
    t = rec.table(3).set_index("module")
    assert list(t.columns) == ["class", "backward_calls_per_step", "backward_cpu_us_per_step"]
    assert set(t.index) == {"", "0", "1", "1.0", "1.1"} and (t["backward_calls_per_step"] == 1.0).all()
    sleep_us = SLEEP_S * 1e6
    assert sleep_us <= t.loc["1.0", "backward_cpu_us_per_step"] < sleep_us + 3000  # the sleeping node and its mul
    assert t.loc["0", "backward_cpu_us_per_step"] < sleep_us and t.loc["1.1", "backward_cpu_us_per_step"] < sleep_us
    # a call's span holds its inner modules' nodes: the outer ones include the sleep, the Linear's does not
    assert t.loc["1", "backward_cpu_us_per_step"] >= t.loc["1.0", "backward_cpu_us_per_step"]
    assert t.loc["", "backward_cpu_us_per_step"] >= t.loc["1", "backward_cpu_us_per_step"]


def test_module_backward_cpu_can_hook_only_some_modules() -> None:
    inner = SleepBack()
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Sequential(inner, torch.nn.ReLU()))
    with module_backward_cpu(net, only=[inner]) as rec:
        net(torch.randn(2, 8)).sum().backward()
    t = rec.table(1)
    assert list(t["module"]) == ["1.0"] and SLEEP_S * 1e6 <= t["backward_cpu_us_per_step"].iloc[0] < SLEEP_S * 1e6 + 3000
    net(torch.randn(2, 8)).sum().backward()  # the hooks are gone after the block
    assert rec.table(1).equals(t)


def test_backward_cpu_us_times_one_call_of_a_replacement() -> None:
    us = backward_cpu_us(SleepBack(), torch.zeros(3), calls=5, warmup=1)
    assert SLEEP_S * 1e6 <= us < SLEEP_S * 1e6 + 3000
    with pytest.raises(ValueError, match="do not require grad"):
        backward_cpu_us(torch.nn.Identity(), torch.zeros(3, dtype=torch.long), calls=1, warmup=0)


def test_forward_cpu_us_is_a_call_dispatch_time() -> None:
    us = forward_cpu_us(Sleep(), torch.zeros(1), calls=5, warmup=1)
    assert SLEEP_S * 1e6 <= us < SLEEP_S * 1e6 + 3000


def test_in_step_cpu_us_times_the_given_modules_calls_inside_the_step() -> None:
    """Per call of the given modules alone (two calls a step of a module that sleeps in its forward, one of one that
    sleeps in its backward), inside the step that runs them; NaN where they ran no backward; no modules is an error."""
    fwd, back, other = Sleep(), SleepBack(), Sleep(2 * SLEEP_S)
    x = torch.zeros(3, requires_grad=True)

    def step() -> None:
        (fwd(fwd(x)) + back(x) + other(x)).sum().backward()

    forward_us, backward_us = in_step_cpu_us(step, [fwd], steps=3)
    assert SLEEP_S * 1e6 <= forward_us < SLEEP_S * 1e6 + 3000  # each of the two calls, not `other`'s 8 ms
    assert math.isnan(backward_us)  # Sleep returns its input: no autograd node of its own to time
    forward_us, backward_us = in_step_cpu_us(step, [back], steps=3)
    assert forward_us < SLEEP_S * 1e6 and SLEEP_S * 1e6 <= backward_us < SLEEP_S * 1e6 + 3000
    with torch.no_grad():
        assert math.isnan(in_step_cpu_us(lambda: fwd(x), [fwd], steps=2)[1])
    with pytest.raises(ValueError, match="at least one module"):
        in_step_cpu_us(step, [])


class Drifting(torch.nn.Module):
    """A module that sleeps `base` s times a host slowdown that grows by half with every step any side runs."""

    def __init__(self, base: float, clock: list[int]) -> None:
        super().__init__()
        self.base, self.clock = base, clock

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.base * (1 + 0.5 * self.clock[0]))
        return x


def test_paired_cpu_reads_both_sides_in_alternating_steps_so_a_drifting_host_cancels() -> None:
    """A replacement twice as slow a call as the original, on a host slowing by half each step: the ratio is read in
    step pairs whose order alternates, so it stays near 2 (each side alone, read one after the other, gives over 3);
    the backward ratio from a module that sleeps in its backward (SleepBack) on B's side and not on A's."""
    clock = [0]
    a_mod, b_mod, back = Drifting(SLEEP_S / 2, clock), Drifting(SLEEP_S, clock), SleepBack()
    x = torch.zeros(3, requires_grad=True)

    def tick() -> None:
        clock[0] += 1

    def step_a() -> None:
        (a_mod(a_mod(x)) * 1).sum().backward()
        tick()

    def step_b() -> None:
        (b_mod(back(x)) * 1).sum().backward()
        tick()

    read = paired_cpu(step_a, [a_mod], step_b, [b_mod], steps=4)
    assert 1.7 < read.forward_ratio < 2.4
    assert read.forward_us[0] < read.forward_us[1]
    assert math.isnan(read.backward_ratio)  # Drifting returns its input: no autograd node of its own
    clock[0] = 0
    alone = in_step_cpu_us(step_a, [a_mod], steps=4)[0], in_step_cpu_us(step_b, [b_mod], steps=4)[0]
    assert alone[1] / alone[0] > 3  # read one after the other, B's steps ran on a slower host
    with_back = paired_cpu(step_a, [a_mod], step_b, [b_mod, back], steps=2)
    assert math.isnan(with_back.backward_ratio)  # A's side ran no backward of its own: no ratio
    assert SLEEP_S * 1e6 <= with_back.backward_us[1] < SLEEP_S * 1e6 + 3000
    with pytest.raises(ValueError, match="each side"):
        paired_cpu(step_a, [a_mod], step_b, [])


ADAPTER = '''
import time
import torch
from addressable.capture.workload import WorkloadSpec


class SleepyBackward(torch.autograd.Function):
    """A backward that sleeps 6 ms."""
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        time.sleep(0.006)
        return grad


class Sleep(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.004)
        return SleepyBackward.apply(x) if torch.is_grad_enabled() else x


def build(cfg):
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), Sleep(), torch.nn.ReLU())
    x = torch.randn(cfg.batch, 16)

    def step():
        if cfg.mode == "train":
            model(x).sum().backward()
            return
        with torch.no_grad():
            model(x)
    step.model = model
    return step


WORKLOADS = [WorkloadSpec("sleepy", "test", "a sleeping module", build, modes=("infer", "train"), default_mode="infer",
                          default_batch=2, default_dtype="fp32", dtypes=("fp32",))]
'''


def sleepy_run(tmp_path: Path, mode: str = "infer", steps: int = 2, module_cpu: bool | None = None) -> Path:
    """The run folder of ADAPTER's workload profiled on the CPU (module_cpu: profile_workload's; None, its default)."""
    path = tmp_path / "sleepy.py"
    path.write_text(textwrap.dedent(ADAPTER))
    cfg = resolve_config("sleepy", mode=mode, device="cpu", adapters=(str(path),))
    return profile_workload(cfg, measurement("cpu", warmup=1, steps=steps, profile_steps=1, repeats=1),
                            tmp_path / "out", adapters=(str(path),), module_cpu=module_cpu).path


def test_by_default_only_a_gpu_run_gets_the_module_pass(tmp_path: Path) -> None:
    """On the CPU the replay has no GPU timeline to use it for: the pass (3 more steps) is not run."""
    run = sleepy_run(tmp_path, steps=1)
    assert read_module_cpu(run) is None and not (run / MODULE_CPU_FILE).exists()


def test_profile_writes_module_cpu_csv_after_the_profiled_steps(tmp_path: Path) -> None:
    run = sleepy_run(tmp_path, module_cpu=True)
    t = read_module_cpu(run)
    assert t is not None and list(t.columns) == ["module", "class", "calls_per_step", "cpu_us_per_step",
                                                 "backward_calls_per_step", "backward_cpu_us_per_step",
                                                 "input_dtype", "output_dtype"]
    assert t["backward_cpu_us_per_step"].isna().all()  # an inference step runs no backward
    assert set(t["input_dtype"]) == set(t["output_dtype"]) == {"float32"}  # written and read back
    row = t.set_index("module").loc["1"]
    assert row["class"] == "Sleep" and row["calls_per_step"] == 1.0
    assert 4000 <= row["cpu_us_per_step"] < 7000
    assert load_run(run).module_cpu is not None
    # the same module names as the trace's module scopes, so the replay can join them
    scoped = set(pd.read_csv(run / "modules.csv", keep_default_na=False, dtype={"module": str})["module"])
    assert {"0", "2"} <= scoped <= set(t["module"])


def test_a_training_run_gets_the_backward_columns(tmp_path: Path) -> None:
    t = read_module_cpu(sleepy_run(tmp_path, "train", module_cpu=True))
    assert t is not None
    t = t.set_index("module")
    assert (t["backward_calls_per_step"] == 1.0).all() and (t["backward_cpu_us_per_step"] > 0).all()
    # the sleeping module's backward sleeps 6 ms, read at the run's speed (the plain steps beside it take about
    # the run's step time on an idle host, more on a loaded one, which the reading is divided by)
    assert 3000 <= t.loc["1", "backward_cpu_us_per_step"] < 9000 and t.loc["1", "cpu_us_per_step"] >= SLEEP_S * 1e6
    assert t.loc["", "backward_cpu_us_per_step"] >= t.loc["1", "backward_cpu_us_per_step"]


def test_the_backward_pass_is_read_at_the_runs_speed() -> None:
    """A step the host ran 2x slow reads 2x long: over its speed it counts as the others do; the median."""
    def step(us: float, calls: float = 1.0) -> pd.DataFrame:
        return pd.DataFrame({"module": ["a"], "class": ["A"], "backward_calls_per_step": [calls],
                             "backward_cpu_us_per_step": [us]})
    t = host_normalized([step(1200.0), step(600.0), step(640.0), step(900.0)], [2.0, 1.0, 0.8, 1.0])
    assert list(t.columns) == ["module", "class", "backward_calls_per_step", "backward_cpu_us_per_step"]
    assert t["backward_cpu_us_per_step"].tolist() == [700.0]  # the median of 600, 600, 800, 900
    # a module that ran in some steps only is read over those
    t = host_normalized([step(1200.0), step(300.0).assign(module="b")], [2.0, 0.5])
    assert dict(zip(t["module"], t["backward_cpu_us_per_step"], strict=True)) == {"a": 600.0, "b": 600.0}


def test_the_forward_pass_is_read_at_the_runs_speed_with_its_dtypes_kept() -> None:
    """The forward's steps are read as the backward's are: CPU over the host's speed, the median; the dtypes stay."""
    def step(us: float) -> pd.DataFrame:
        return pd.DataFrame({"module": ["a"], "class": ["A"], "calls_per_step": [2.0], "cpu_us_per_step": [us],
                             "input_dtype": ["float16"], "output_dtype": ["float32"]})
    t = host_normalized([step(900.0), step(300.0), step(330.0)], [3.0, 1.0, 1.1], "cpu_us_per_step")
    assert list(t.columns) == ["module", "class", "calls_per_step", "cpu_us_per_step", "input_dtype", "output_dtype"]
    assert t.iloc[0].tolist() == ["a", "A", 2.0, 300.0, "float16", "float32"]


def test_recorded_at_speed_reads_each_step_beside_a_plain_one() -> None:
    """A host that slows step by step: each hooked step and the plain step after it are slowed alike, so each
    reading over its speed comes back to the run's step time, where the raw readings grow 4x."""
    calls = []

    def step() -> None:  # step k (hooked or plain) sleeps 10 ms times its pair's slowness, 1, 2, 3, 4
        time.sleep(0.010 * (1 + len(calls) // 2))
        calls.append(1)

    class Clock:
        def __enter__(self) -> Clock:
            self.t0 = time.perf_counter()
            return self

        def __exit__(self, *exc: object) -> None:
            self.us = (time.perf_counter() - self.t0) * 1e6

    recorders, speed = recorded_at_speed(step, Clock, 4, False, 10.0)
    raw = [r.us for r in recorders]
    assert len(calls) == 8 and raw[3] > 3 * raw[0]
    # a loaded machine oversleeps by a ms or so, each step apart: the read speeds stay within a quarter of the run's
    assert all(0.75 < r / s / 10_000 < 1.33 for r, s in zip(raw, speed, strict=True))
    assert recorded_at_speed(step, Clock, 1, False, 0.0)[1] == [1.0]  # no step time known: read as it ran


def test_a_torch_without_the_sequence_counter_still_gets_the_forward(tmp_path: Path, monkeypatch) -> None:
    from addressable.capture import scopes

    def missing() -> int:
        raise AttributeError("module 'torch._C._autograd' has no attribute '_get_sequence_nr'")
    monkeypatch.setattr(scopes, "_next_sequence_nr", missing)
    t = read_module_cpu(sleepy_run(tmp_path, "train", steps=1, module_cpu=True))
    assert t is not None and t["backward_cpu_us_per_step"].isna().all()
    assert t.set_index("module").loc["1", "cpu_us_per_step"] >= SLEEP_S * 1e6


@pytest.mark.parametrize("text, message", [("module,class,calls_per_step\nx,X,1\n", "missing column"),
                                           ("module,class,calls_per_step,cpu_us_per_step,backward_calls_per_step,"
                                            "backward_cpu_us_per_step\nx,X,1,2,1,-3\n", "backward_cpu_us_per_step on row 1"),
                                           ("module,class,calls_per_step,cpu_us_per_step\nx,X,1,abc\n", "row 1")])
def test_a_bad_module_cpu_csv_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / MODULE_CPU_FILE).write_text(text)
    with pytest.raises(AddressableError, match=message):
        read_module_cpu(tmp_path)
    assert read_module_cpu(tmp_path / "none") is None
