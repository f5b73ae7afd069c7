"""timing: the parent's wall clock against the times a candidate's process reports."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from addressable.verification.timing import BatchRecord, Timer, backlog_for, take_clocks, timing_checks


def _batches(cand_ms: float = 2.0, cand_reported: float | None = None, ref_ms: float = 2.0, ref_base_ms: float = 2.0,
             overhead: float = 0.5, repeat_cand: float | None = None, k: int = 5) -> list[BatchRecord]:
    """Synthetic batches: wall = k (true time + overhead); a little jitter so spreads are not zero."""
    cand_reported = cand_ms if cand_reported is None else cand_reported
    out = []
    for i in range(2):
        out.append(BatchRecord("ref", "baseline", k * (ref_base_ms + overhead) + 0.01 * i, [ref_base_ms] * k))
    for i in range(4):
        j = 0.01 * (i % 2)
        out.append(BatchRecord("ref", "timed", k * (ref_ms + overhead) + j, [ref_ms] * k))
        out.append(BatchRecord("cand", "timed", k * (cand_ms + overhead) + j, [cand_reported] * k))
    rc = repeat_cand if repeat_cand is not None else cand_ms
    out.append(BatchRecord("ref", "repeat", 4 * (ref_ms + overhead), [ref_ms] * 4))
    out.append(BatchRecord("cand", "repeat", 2 * (cand_ms + rc + 2 * overhead), [cand_ms, rc] * 2))  # fresh, repeated
    return out


def test_honest_batches_pass_every_timing_check() -> None:
    checks, figures = timing_checks(_batches(cand_ms=1.0), 0.1, "cuda")
    assert {k: v["passed"] for k, v in checks.items()} == {"clock": True, "reference_timing": True, "reuse": True}
    assert figures["overhead_ms_candidate"] == pytest.approx(0.5, abs=0.01)


def test_a_clock_that_reads_short_fails() -> None:
    """The candidate took 2 ms per call by the wall clock and reported 0.8 ms (a patched clock, a forged reply)."""
    checks, _ = timing_checks(_batches(cand_ms=2.0, cand_reported=0.8), 0.1, "cuda")
    assert checks["clock"]["passed"] is False and checks["clock"]["value"] == pytest.approx(1.2, abs=0.02)
    small, _ = timing_checks(_batches(cand_ms=2.0, cand_reported=1.9), 0.1, "cuda")
    assert small["clock"]["passed"] is True  # 5% is within clock_tol


def test_load_on_both_sides_is_not_a_lie_but_a_lie_in_every_batch_or_in_most_is() -> None:
    """Load lengthens some batches of either side by 2.5-8.5 ms a call: pass. A lie of 2.5 ms a call in
    every batch fails by the lows; one in 3 of 5 batches leaves a clean low and widens the pooled
    spread, and fails by the medians."""
    def batches(ref_extra: list[float], cand_extra: list[float]) -> list[BatchRecord]:
        out = [BatchRecord("ref", "baseline", 5 * 2.5 + 0.01 * i, [2.0] * 5) for i in range(2)]
        for i, (r, c) in enumerate(zip(ref_extra, cand_extra, strict=True)):
            out.append(BatchRecord("ref", "timed", 5 * (2.5 + r) + 0.01 * i, [2.0] * 5))
            out.append(BatchRecord("cand", "timed", 5 * (2.5 + c), [2.0] * 5))
        return out

    loaded, _ = timing_checks(batches([0.0, 4.5, 0.0, 6.0, 0.0], [2.5, 0.0, 8.5, 0.0, 0.01]), 0.1, "cuda")
    lie, _ = timing_checks(batches([0.0] * 5, [2.5, 2.51, 2.5, 2.51, 2.5]), 0.1, "cuda")
    some, figures = timing_checks(batches([0.0] * 5, [2.5, 0.0, 2.51, 0.01, 2.5]), 0.1, "cuda")
    assert loaded["clock"]["passed"] is True and lie["clock"]["passed"] is False
    assert some["clock"]["passed"] is False and some["clock"]["value"] == pytest.approx(2.5, abs=0.02)
    assert figures["overhead_ms_candidate"] - figures["overhead_ms_reference"] < 0.02  # a clean low


def test_a_second_set_is_judged_with_the_first_by_the_medians_and_alone_by_the_lows() -> None:
    """A lie of 2.5 ms a call in 3 of 4 batches, then in 1 of 4: the second set alone passes (its median is
    clean), both together fail by the medians (4 of 8). A checker's batch 2 ms low in the first set fails the
    first set's lows; with a clean second set it is not the lowest any more (the lows are the last set's)."""
    def one_set(cand_extra: list[float], timed_set: int, ref_extra: float = 0.0) -> list[BatchRecord]:
        out = []
        for i, c in enumerate(cand_extra):
            low = ref_extra if i == 0 else 0.0
            out.append(BatchRecord("ref", "timed", 5 * (2.5 + low) + 0.01 * i, [2.0] * 5, timed_set=timed_set))
            out.append(BatchRecord("cand", "timed", 5 * (2.5 + c), [2.0] * 5, timed_set=timed_set))
        return out

    base = [BatchRecord("ref", "baseline", 5 * 2.5 + 0.01 * i, [2.0] * 5) for i in range(2)]
    first, second = one_set([2.5, 2.52, 2.51, 0.0], 0), one_set([0.0, 2.5, 0.01, 0.0], 1)
    assert timing_checks(base + first, 0.1, "cuda")[0]["clock"]["passed"] is False
    assert timing_checks(base + [replace(b, timed_set=0) for b in second], 0.1, "cuda")[0]["clock"]["passed"] is True
    pooled, figures = timing_checks(base + first + second, 0.1, "cuda")
    assert pooled["clock"]["passed"] is False and pooled["clock"]["value"] == figures["overhead_excess_median_ms"]
    assert figures["overhead_excess_median_ms"] > figures["overhead_allowance_median_ms"]
    low_first = one_set([0.0] * 4, 0, ref_extra=-2.0)
    assert timing_checks(base + low_first, 0.1, "cuda")[0]["clock"]["passed"] is False  # by that low
    assert timing_checks(base + low_first + one_set([0.0] * 4, 1), 0.1, "cuda")[0]["clock"]["passed"] is True


def test_a_slower_reference_is_reviewed_and_repeats_that_help_only_the_candidate_fail() -> None:
    checks, _ = timing_checks(_batches(ref_ms=3.0, ref_base_ms=2.0), 0.1, "cuda")
    assert checks["reference_timing"]["passed"] is None and checks["reference_timing"]["value"] == pytest.approx(1.5)
    checks, figures = timing_checks(_batches(cand_ms=2.0, repeat_cand=1.0), 0.1, "cuda")
    assert checks["reuse"]["passed"] is False and checks["reuse"]["value"] == pytest.approx(2.0)
    assert figures["reuse_gains"] == [pytest.approx(2.0)]
    spiked = _batches(cand_ms=2.0, repeat_cand=1.0)
    spiked.append(BatchRecord("ref", "repeat", 4 * 2.5, [2.0] * 4))
    spiked.append(BatchRecord("cand", "repeat", 4 * 2.5, [2.0] * 4))  # a second round without the effect
    assert timing_checks(spiked, 0.1, "cuda")[0]["reuse"]["passed"] is True  # every round must show it


def test_the_cpu_floor_absorbs_scheduling_noise() -> None:
    checks, _ = timing_checks(_batches(cand_ms=0.3, cand_reported=0.25), 0.1, "cpu")
    assert checks["clock"]["passed"] is True and checks["clock"]["threshold"] == pytest.approx(1.0)  # 5 ms / 5 calls


def test_timer_times_and_sketches_each_call() -> None:
    timer = Timer(take_clocks("cpu"), "cpu")
    inputs = {7: [torch.full((64,), 7.0)], 8: [torch.full((64,), -8.0)]}
    res = timer.batch(torch.relu, lambda s: inputs[s], [7, 8], key=1)
    assert len(res["times"]) == 2 and all(t >= 0 for t in res["times"])
    assert res["sketches"][0][0].abs().sum() == 7 * 64 and res["sketches"][1][0].abs().sum() == 0
    seen = []
    timer.batch(lambda x: seen.append(x.data_ptr()) or x, lambda s: [torch.ones(3) * s], [1, 2, 3, 4], key=1,
                repeat=True)
    assert seen[0] == seen[1] and seen[2] == seen[3]  # repeat: every odd call on the tensors of the call before
    kept = [torch.ones(3), torch.ones(3)]  # (the lambda above allocates anew; the harness's buffers alternate)
    seen.clear()
    timer.batch(lambda x: seen.append(x.data_ptr()) or x, lambda s: [kept[s % 2]], [0, 9, 1, 9], key=1, repeat=True)
    assert seen == [kept[0].data_ptr()] * 2 + [kept[1].data_ptr()] * 2


@pytest.mark.parametrize("name", ["clock", "reuse"])
@pytest.mark.parametrize(("second_set_lies", "verdict"), [(False, "pass"), (True, "fail")])
def test_a_timing_check_that_fails_once_is_timed_again_and_must_fail_again(
        monkeypatch: pytest.MonkeyPatch, name: str, second_set_lies: bool, verdict: str) -> None:
    """Load lengthens some batches: a failed `clock` or `reuse` check gets a second set of its batches, and the
    verdict fails only when the check fails again, judged for `clock` on both sets pooled (a lie told in some
    batches only stays in the pooled median) and for `reuse` on the second set alone."""
    from pathlib import Path

    from addressable.verification import session
    from addressable.verification.checks import check
    from addressable.verification.runner import verify

    real, sets = session.timing_checks, []
    phase = {"clock": "timed", "reuse": "repeat"}[name]

    def judged(batches: list[BatchRecord], tol: float, device: str) -> tuple[dict, dict]:
        checks, figures = real(batches, tol, device)
        sets.append([b for b in batches if b.phase == phase])  # kept alive: no id is reused
        lies = len(sets) == 1 or second_set_lies  # the second set's outcome is set too: load must not decide it
        checks[name] = check(9.0, 1.0, False) if lies else check(0.0, 1.0, True)
        return checks, figures

    monkeypatch.setattr(session, "timing_checks", judged)
    root = Path(__file__).resolve().parents[2]
    r = verify(root / "examples" / "problems" / "05_relu.py", Path(__file__).parent / "zoo" / "honest_relu.py",
               overrides={"batch_size": 64, "dim": 128}, calls=6, warmup=1, isolate=False)
    new = [b for b in sets[1] if not any(b is a for a in sets[0])]
    assert len(sets) == 2 and new, sets  # the second set: new batches, with the first set's for `clock` only
    assert len(new) == (len(sets[1]) - len(sets[0]) if name == "clock" else len(sets[1])), sets
    assert (r.verdict == "fail") == (verdict == "fail") and r.checks[name]["passed"] is (verdict == "pass"), r.reason
    assert r.wall_clock["first_set"][name]["passed"] is False  # (a loaded CPU may add a review for noisy timing)


def test_the_backlog_is_twice_the_slower_models_host_time_within_its_bounds() -> None:
    assert backlog_for([0.03, 0.2], "cuda") == pytest.approx(1.2)  # the slower model's dispatch, six times
    assert backlog_for([0.001, 0.002], "cuda") == pytest.approx(0.05)  # at least 50 us
    assert backlog_for([40.0, 0.1], "cuda") == pytest.approx(2.0)  # at most 2 ms: what a candidate could hide in it
    assert backlog_for([0.2, 0.3], "cpu") == 0.0 and backlog_for([], "cuda") == pytest.approx(0.05)


def test_the_backlog_is_not_overhead_but_a_forged_time_still_is() -> None:
    """Both models' walls hold the parent's backlog (1 ms a call): it is taken out of the overhead, so an
    honest pair passes; a reply that reports 0.8 of 2 ms a call still fails by the wall clock."""
    def with_backlog(batches: list[BatchRecord]) -> list[BatchRecord]:
        return [BatchRecord(b.model, b.phase, b.wall_ms + len(b.times) * 1.0, b.times, 1.0) for b in batches]

    honest, figures = timing_checks(with_backlog(_batches(cand_ms=1.0)), 0.1, "cuda")
    assert honest["clock"]["passed"] is True and figures["overhead_ms_candidate"] == pytest.approx(0.5, abs=0.01)
    lie, _ = timing_checks(with_backlog(_batches(cand_ms=2.0, cand_reported=0.8)), 0.1, "cuda")
    assert lie["clock"]["passed"] is False and lie["clock"]["value"] == pytest.approx(1.2, abs=0.02)


def test_each_timed_call_reports_its_host_time() -> None:
    """On the CPU the host time is the call's time; a call that spends 20 ms on the host reports it."""
    import time

    timer = Timer(take_clocks("cpu"), "cpu")
    res = timer.batch(lambda x: time.sleep(0.02) or x, lambda s: [torch.ones(3)], [1, 2], key=1, backlog_ms=1.0)
    assert res["host"] == res["times"] and all(h >= 20.0 for h in res["host"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_the_backlog_keeps_the_hosts_dispatch_out_of_the_interval() -> None:
    """A call that spends 0.3 ms on the host before launching a tiny kernel: without a backlog the
    interval holds what of the 0.3 ms the flush did not hide (the flush lasts about 0.1 ms), with a
    0.6 ms backlog it holds the kernel alone."""
    import time

    timer = Timer(take_clocks("cuda"), "cuda")
    x = torch.ones(1024, device="cuda")

    def slow_dispatch(t: torch.Tensor) -> torch.Tensor:
        end = time.perf_counter() + 3e-4
        while time.perf_counter() < end:
            pass
        return t + 1

    bare = [timer.call(slow_dispatch, [x], 1).net_ms for _ in range(20)]
    hidden = [timer.call(slow_dispatch, [x], 1, backlog_ms=0.6).net_ms for _ in range(20)]
    import statistics

    assert statistics.median(bare) > 0.15 and statistics.median(hidden) < 0.1, (bare, hidden)


def test_the_sketch_costs_what_the_checker_reported_whatever_the_candidate_says() -> None:
    """On a GPU each time holds the output's sketch: the speedup takes out the checker's median sketch time
    (0.5 ms) from both models, not the 1.4 ms a candidate claims its sketch took."""
    from addressable.verification.session import _summary

    def batch(model: str, call_ms: float, claimed: float, phase: str = "timed") -> BatchRecord:
        return BatchRecord(model, phase, 5 * (call_ms + 0.6), [call_ms + 0.5] * 5, 0.0, None, [claimed] * 5)

    batches = [batch("ref", 2.0, 0.5, "baseline"), *[batch("ref", 2.0, 0.5), batch("cand", 1.0, 1.4)] * 3]
    assert _summary(batches)["speedup"] == pytest.approx(2.0)
    assert _summary([BatchRecord(b.model, b.phase, b.wall_ms, b.times) for b in batches])["speedup"] == pytest.approx(2.5 / 1.5)
    checks, figures = timing_checks(batches, 0.1, "cuda")  # the overhead is the wall less the times as reported
    assert checks["clock"]["passed"] is True and figures["overhead_ms_candidate"] == pytest.approx(0.1)


def test_the_summary_gives_each_models_share_of_late_timed_calls() -> None:
    """`late` (the GPU reached the call before its sketch was queued) is summed per model over the timed
    batches only; batches that report none give None (the CPU, or an older helper)."""
    from addressable.verification.session import _summary

    def batch(model: str, late: list[bool] | None, phase: str = "timed") -> BatchRecord:
        return BatchRecord(model, phase, 10.0, [1.0] * 4, late=late)

    s = _summary([batch("ref", [False] * 4), batch("cand", [True, True, False, False]),
                  batch("cand", [True] * 4, "repeat"), batch("ref", [True] * 4, "baseline")])
    assert s["ref_late"] == 0.0 and s["candidate_late"] == pytest.approx(0.5)
    assert _summary([batch("ref", None), batch("cand", None)])["candidate_late"] is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_the_sketch_reads_the_output_as_the_callers_stream_has_it_at_return() -> None:
    """A call that keeps the GPU busy for 5 ms and returns zeros, while a thread writes ones into the output
    1 ms later: the sketch is queued at the return, so it holds the zeros (queued after a device-wide
    synchronize, it would hold whatever the thread had queued by then)."""
    import threading
    import time

    from addressable.verification.checks import sketch

    timer = Timer(take_clocks("cuda"), "cuda")

    def late(x: torch.Tensor) -> torch.Tensor:
        torch.cuda._sleep(int(5 * timer.cycles_per_ms))
        out = torch.zeros_like(x)
        threading.Thread(target=lambda: (time.sleep(1e-3), out.fill_(1.0))).start()
        return out

    x = torch.ones(1 << 16, device="cuda")
    calls = [timer.call(late, [x], 3) for _ in range(3)]
    torch.cuda.synchronize()
    assert all(torch.equal(c.sketches[0], sketch(torch.zeros_like(x), 3)) for c in calls)
    assert all(0 < c.sketch_ms < c.ms for c in calls)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_the_spin_rate_is_the_busy_gpus_even_when_taken_after_an_idle_second() -> None:
    """An idle GPU clocks down: a rate taken there would make every later backlog shorter than asked."""
    import time

    from addressable.verification.timing import spin_rate

    clocks = take_clocks("cuda")
    torch.cuda.synchronize()
    time.sleep(1.0)
    rate = spin_rate(clocks)
    clocks.spin(100_000_000)
    busy = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        clocks.spin(1_000_000)
        b.record()
        b.synchronize()
        busy.append(1_000_000 / a.elapsed_time(b))
    assert rate >= 0.9 * max(busy), (rate, busy)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_work_left_on_a_stream_the_caller_never_waits_on_is_drained_and_reported_not_timed() -> None:
    """The interval ends at an event on the caller's stream after the output's sketch: a 2 ms spin queued on
    a side stream after the output is written cannot have written what the sketch read, so it is not in the
    time; the device-wide synchronize drains it before the call returns and reports its wait (`left_ms`),
    and the parent's wall clock holds it (the batch's overhead)."""
    timer = Timer(take_clocks("cuda"), "cuda")
    side = torch.cuda.Stream()
    x = torch.ones(1024, device="cuda")

    def leaves_work(t: torch.Tensor) -> torch.Tensor:
        out = t + 1
        with torch.cuda.stream(side):
            torch.cuda._sleep(int(2 * timer.cycles_per_ms))
        return out

    import statistics

    calls = [timer.call(leaves_work, [x], 1, backlog_ms=0.3) for _ in range(10)]
    assert side.query()
    assert statistics.median(c.left_ms for c in calls) > 1.0 and statistics.median(c.ms for c in calls) < 0.5


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_a_20_us_call_times_within_a_tight_spread() -> None:
    """The host's wake-up from the synchronize is not in the time: 100 calls of a ~20 us softmax have an
    IQR under 15% of their median (ending at an event after the synchronize gave 31% on the H200)."""
    import statistics

    timer = Timer(take_clocks("cuda"), "cuda")
    x = torch.rand(4, 32768, device="cuda")
    fn = lambda t: torch.softmax(t, dim=-1)  # noqa: E731
    for _ in range(10):
        timer.call(fn, [x], 1, backlog_ms=0.3)
    ms = [timer.call(fn, [x], 1, backlog_ms=0.3).net_ms for _ in range(100)]
    q1, med, q3 = statistics.quantiles(ms, n=4)
    assert (q3 - q1) / med < 0.15, (q1, med, q3)


def test_each_gpu_call_reports_how_long_its_backlog_spun_and_its_dispatch() -> None:
    """The timed path with stand-in CUDA clocks (events hold a GPU time the stand-in spin advances): each
    call's backlog is spun, and each call reports the spin's GPU time and its host time to the sketch."""
    import contextlib
    import time

    from addressable.verification.timing import Clocks

    gpu_ms = [0.0]
    spins: list[int] = []

    class Event:
        def __init__(self, enable_timing: bool = True) -> None:
            self.t = 0.0

    def spin(cycles: int) -> None:
        spins.append(cycles)
        gpu_ms[0] += cycles / 1000.0

    def record(e: Event) -> None:
        e.t = gpu_ms[0]

    noop = lambda *a: None  # noqa: E731
    clocks = Clocks(time.perf_counter, contextlib.nullcontext, Event, record, lambda a, b: b.t - a.t, noop, noop,
                    noop, spin, noop, noop, lambda e: False)
    timer = object.__new__(Timer)
    timer.clocks, timer.cuda, timer.flush, timer.idle_sync_ms, timer.cycles_per_ms = clocks, True, None, 0.0, 1000.0
    timer.backlog, timer.flush_ms = "spin", 1.0
    res = timer.batch(lambda x: x * 2, lambda s: [torch.ones(4)], [1, 2, 3], key=1, backlog_ms=0.5)
    assert spins == [500, 500, 500]
    assert res["spin_ms"] == pytest.approx([0.5, 0.5, 0.5]) and all(d > 0 for d in res["dispatch"])
