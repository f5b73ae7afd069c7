"""Progress on stderr (only on a terminal) and step counts that fit a time budget."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from addressable.capture.measure import CPU_DEFAULTS, GPU_DEFAULTS, cost_s, fit_budget, measurement
from addressable.core.errors import AddressableError
from addressable.core.progress import Progress, duration


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_progress_counts_with_time_left_and_keeps_log_lines_apart() -> None:
    out, clock = Terminal(), Clock()
    p = Progress(10, "resnet50", stream=out, clock=clock)
    clock.t = 30.0  # the first step carries one-time costs: it does not set the pace
    p.advance()
    assert p.text() == "resnet50: 1/10 steps"
    clock.t = 34.0
    p.counting(lambda: None)()
    clock.t = 38.0
    p.advance()
    assert p.eta() == pytest.approx(28.0)  # 4 s a step since the first, 7 steps left
    assert p.text() == "resnet50: 3/10 steps, about 28 s left"
    lines = []
    p.log(lambda line: (out.write(line + "\n"), lines.append(line)))("repeat 1/2: done")
    text = out.getvalue()
    assert text.endswith("\r\033[K" + "resnet50: 3/10 steps, about 28 s left")  # redrawn after the log line
    assert "\r\033[Krepeat 1/2: done\n" in text  # the live line was cleared before it
    p.close()
    assert out.getvalue().endswith("\r\033[K")


def test_progress_is_silent_when_stderr_is_not_a_terminal() -> None:
    out = io.StringIO()
    p = Progress(3, "audit", unit="problems", stream=out)
    for _ in range(3):
        p.advance()
    p.log(out.write)("a log line\n")
    p.close()
    assert out.getvalue() == "a log line\n" and p.text() == "audit: 3/3 problems"


@pytest.mark.parametrize(("seconds", "text"), [(0.2, "1 s"), (42, "42 s"), (185, "3 min 05 s"),
                                               (3720, "1 h 02 min")])
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_budget_lowers_only_the_counts_not_given() -> None:
    m = measurement("cuda", budget_s=60)
    assert (m.warmup, m.steps, m.profile_steps, m.repeats) == (10, 20, 5, 3) and m.fixed == ()
    fast = fit_budget(m, 0.023, cuda=True)  # ResNet-50 on an H200: the defaults fit
    assert (fast.steps, fast.profile_steps, fast.repeats) == (20, 5, 3)
    slow = fit_budget(m, 0.7, cuda=True)  # llama3-8b inference: 85 steps of 0.7 s do not fit in 60 s
    assert (slow.steps, slow.profile_steps, slow.repeats) == (10, 5, 3)
    assert slow.estimate_s == pytest.approx(cost_s(slow, 0.7, True)) and slow.estimate_s <= 60
    # 3 × (10 + 2 × (5 + 1) steps, and each repeat's 4 host-time steps), of 0.7 s
    assert slow.estimate_s == pytest.approx(3 * (22 + 4) * 0.7)
    assert slow.plan() == "3 repeats × (10 timed + 5 profiled steps), about 55 s of steps"
    assert cost_s(slow, 0.7, cuda=False) == pytest.approx(3 * 20 * 0.7)  # no host-time steps on the CPU
    huge = fit_budget(m, 30.0, cuda=True)  # nothing fits: the least there is, 1 × (1 + 1)
    assert (huge.steps, huge.profile_steps, huge.repeats) == (1, 1, 1)
    kept = fit_budget(measurement("cuda", steps=20, repeats=3, budget_s=60), 0.7, cuda=True)
    assert (kept.steps, kept.repeats) == (20, 3) and kept.profile_steps < 5  # only --profile-steps was free
    cpu = fit_budget(measurement("cpu"), 12.0, cuda=False)  # a 12 s CPU step under the default 60 s
    assert (cpu.steps, cpu.profile_steps, cpu.repeats) == (1, 1, 1)
    assert fit_budget(measurement("cpu", budget_s=float("inf")), 12.0, cuda=False).repeats == CPU_DEFAULTS.repeats
    assert GPU_DEFAULTS.steps == 20


@pytest.mark.parametrize("budget", [0, -5, float("nan")])
def test_bad_budget(budget: float) -> None:
    with pytest.raises(AddressableError, match="--budget"):
        measurement("cpu", budget_s=budget)


def test_wall_fraction_never_exceeds_one_and_says_its_basis() -> None:
    from addressable.classify.breakdown import wall_fraction

    assert wall_fraction(250.0, 500.0, 1_000.0) == (0.25, "step")  # 250 us of a 1 ms step
    # CPU ops on two threads: 4,440 us of op time in a 1 ms step -> over the summed op time, not 444%
    frac, basis = wall_fraction(3_000.0, 4_440.0, 1_000.0)
    assert basis == "work" and frac == pytest.approx(3_000 / 4_440) and frac <= 1.0
    assert wall_fraction(0.0, 0.0, 0.0) == (0.0, "step")


def test_overlapping_cpu_threads_print_a_sound_wall_fraction() -> None:
    """A CPU run whose op time per step (4.4 ms) exceeds its step (1 ms): the wall fraction is over the
    summed op time and the output says so; nothing prints a share above 100% of wall time."""
    import pandas as pd

    from addressable.capture.measure import Measurement, run_keys
    from addressable.capture.profile import ProfileResult, format_profile
    from addressable.capture.workload import WorkloadConfig, get_workload
    from addressable.classify.breakdown import breakdown_from_tables

    kernels = pd.DataFrame({"name": ["aten::mm", "aten::add"], "category": ["gemm", "elementwise"],
                            "class": ["library", "replaceable"], "time_us": [1_440.0, 3_000.0], "count": [1, 1]})
    b = breakdown_from_tables(kernels, "cpu_op_self_time", n_steps=1)
    cfg = WorkloadConfig("resnet50", "train", 2, "fp32", "cpu")
    keys = run_keys(get_workload("resnet50"), cfg, b, [b, b], [1.0, 1.0], 1.0)
    assert keys["addressable_fraction_wall"] == pytest.approx(3_000 / 4_440) and keys["wall_basis"] == "work"
    assert all(r["addressable_fraction_wall"] <= 1.0 for r in keys["repeats"])
    res = ProfileResult(b, keys, Path("outputs/x"), {"measurement": vars(Measurement(1, 1, 1, 2)), "gpu": None})
    text = format_profile(res, "cpu")
    assert "Addressable fraction of wall time: 67.6%" in text
    assert "CPU ops on several threads overlap in time" in text and "never above 100%" in text
    assert "(444% of the step time; summed over overlapping threads or streams)" in text
