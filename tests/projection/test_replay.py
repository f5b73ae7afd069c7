"""Replay of a trace's dependency graph: synthetic traces with hand-computed spans, real traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from addressable.cli import main
from addressable.projection import replay as replay_module
from addressable.projection.replay import Change, build_graph, original, replay, replayable, residual
from addressable.trace.reader import load_trace

BASE = 5115133000000.125  # a real-looking Kineto timestamp (µs)
ELEM = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >"
GEMM = "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_TNT"


class TraceBuilder:
    """A Kineto trace of one process: runtime calls on the CPU, the kernels they launch, ProfilerSteps."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.corr = 0

    def call(self, name: str, ts: float, dur: float, tid: int = 1) -> int:
        self.corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 10, "tid": tid,
                            "ts": BASE + ts, "dur": dur, "args": {"correlation": self.corr, "cbid": 1}})
        return self.corr

    def launch(self, ts: float, dur: float, k_start: float, k_dur: float, name: str = ELEM, stream: int = 7,
               tid: int = 1, op: str | None = None, grid: list[int] | None = None) -> None:
        """A launch call and its kernel; with `op`, the CPU op that launched it (joined by External id);
        `grid`: the kernel's launch grid (the same name and grid: the same work)."""
        corr = self.call("cudaLaunchKernel", ts, dur, tid)
        args = {"stream": stream, "device": 0, "correlation": corr}
        if grid:
            args["grid"], args["block"] = grid, [128, 1, 1]
        if op:
            args["External id"] = corr
            self.events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 10, "tid": tid, "ts": BASE + ts - 1,
                                "dur": dur + 2, "args": {"External id": corr}})
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": BASE + k_start,
                            "dur": k_dur, "args": args})

    def copy(self, call: str, ts: float, dur: float, c_start: float, c_dur: float, name: str,
             stream: int = 7) -> None:
        """A copy or memset call (`call`: cudaMemcpyAsync, cudaMemcpy, ...) and its GPU op (`name`)."""
        corr = self.call(call, ts, dur)
        cat = "gpu_memset" if name.startswith("Memset") else "gpu_memcpy"
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": BASE + c_start,
                            "dur": c_dur, "args": {"stream": stream, "device": 0, "correlation": corr}})

    def sync_record(self, name: str, ts: float, corr: int, stream: int = -1, wait_on_stream: int = -1,
                    record: int = -1) -> None:
        """The GPU's record of a wait (torch.profiler's enable_cuda_sync_events): `corr`, the waiting call's
        correlation id; `record`, that of the cudaEventRecord whose event it waits for."""
        self.events.append({"ph": "X", "cat": "cuda_sync", "name": name, "pid": 0, "tid": stream, "ts": BASE + ts,
                            "dur": 1, "args": {"cuda_sync_kind": name, "stream": stream, "device": 0,
                                               "correlation": corr, "wait_on_stream": wait_on_stream,
                                               "wait_on_cuda_event_record_corr_id": record}})

    def scope(self, name: str, ts: float, dur: float, tid: int = 1) -> None:
        """A record_function range on the CPU (e.g. a module scope)."""
        self.events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 10, "tid": tid,
                            "ts": BASE + ts, "dur": dur})

    def step(self, n: int, ts: float, dur: float) -> None:
        self.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 10, "tid": 1,
                            "ts": BASE + ts, "dur": dur})

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": self.events}))
        return path


def graph(tmp_path: Path, tb: TraceBuilder):
    trace = load_trace(tb.write(tmp_path / "t.json"), runtime=True)
    assert replayable(trace) == ""
    return build_graph(trace)


def spans(g, *changes: Change) -> tuple[float, float]:
    return original(g).span, replay(g, changes).span


def launch_bound(tmp_path: Path):
    """10 launches, 100 us of CPU each (90 us gap + 10 us call), 5 us kernels 8 us after each launch."""
    tb = TraceBuilder()
    for i in range(10):
        tb.launch(100 * i + 90, 10, 100 * i + 98, 5)
    tb.step(1, 0, 1000)
    return graph(tmp_path, tb)


def test_unmodified_replay_reproduces_the_profile(tmp_path: Path) -> None:
    g = launch_bound(tmp_path)
    r = replay(g)
    assert np.allclose(r.gpu_start, g.gpu_ts) and np.allclose(r.cpu_start, g.cpu_ts)
    assert original(g).span == pytest.approx(1003)  # the last kernel ends 3 us after the step's CPU span
    assert residual(g, r) == pytest.approx(0, abs=1e-12)


def test_launch_bound_faster_kernels_change_nothing_fewer_launches_do(tmp_path: Path) -> None:
    g = launch_bound(tmp_path)
    everything = np.ones(g.n_gpu, bool)
    before, after = spans(g, Change(everything, k=10))
    assert (before, after) == (pytest.approx(1003), pytest.approx(1000))  # kernels end 0.5 us after launch + 8
    # kernels 2..9 fused into one kernel taking their time (k = 1): launches 3..9 and their 90 us gaps go
    fuse = np.arange(g.n_gpu) >= 2
    before, after = spans(g, Change(fuse, k=1, kernels_after=1))
    # calls 0-2 end at 300; the fused kernel starts 8 us after its launch (290) and takes 8 x 5 us
    assert after == pytest.approx(298 + 40)
    r = replay(g, [Change(fuse, k=1, kernels_after=1)])
    wall, kernel = r.speedup_over(replay(g))
    assert wall == pytest.approx(1003 / 338) and kernel == pytest.approx(1.0)


def test_a_fused_call_keeps_a_typical_launch_on_the_cpu(tmp_path: Path) -> None:
    """Kernels 3-5 fused into one: the kept launch costs the CPU the trace's typical time before a
    launch (40 us), not its own 100 us (the first eager op's dispatch); `dispatch="own"` keeps it."""
    tb = TraceBuilder()
    starts = [40, 90, 140, 250, 300, 350, 400, 450]  # 10 us calls; 40 us of CPU before each, 100 before call 3
    for t in starts:
        tb.launch(t, 10, t + 8, 5)
    tb.step(1, 0, 460)
    g = graph(tmp_path, tb)
    assert g.typical["launch_gap_us"] == pytest.approx(40)
    fuse = (np.arange(g.n_gpu) >= 3) & (np.arange(g.n_gpu) <= 5)
    assert original(g).span == pytest.approx(463)
    # own: call 3 keeps 250-260, calls 4-5 go; call 6 at 260 + 40 = 300, call 7 at 350-360, its kernel ends 363
    assert replay(g, [Change(fuse, kernels_after=1, dispatch="own")]).span == pytest.approx(363)
    # typical: call 3 at 150 + 40 = 190; call 6 at 240, call 7 at 290-300, its kernel ends 303
    r = replay(g, [Change(fuse, kernels_after=1)])
    assert r.span == pytest.approx(303)
    assert r.gpu_end[3] - r.gpu_start[3] == pytest.approx(15)  # the fused kernel takes the call's 3 x 5 us
    with pytest.raises(ValueError, match="dispatch"):
        replay(g, [Change(fuse, kernels_after=1, dispatch="fast")])


def test_gpu_bound_amdahl_holds(tmp_path: Path) -> None:
    tb = TraceBuilder()
    for j in range(10):  # launches every 10 us; 100 us kernels back to back with 1 us between them
        tb.launch(10 * j + 5, 5, 13 + 101 * j, 100, name=GEMM if j < 5 else ELEM)
    tb.call("cudaDeviceSynchronize", 100, 1022 + 2 - 100)  # returns 2 us after the last kernel's end
    tb.step(1, 0, 1025)
    g = graph(tmp_path, tb)
    gemm = g.gpu_name == GEMM
    before, after = spans(g, Change(gemm, k=2))
    assert before == pytest.approx(1025)
    # kernels 0-4 take 50 us: kernel 4 ends 13 + 4 * 51 + 50 = 267, kernel 9 at 267 + 1 + 4 * 101 + 100 = 772
    assert after == pytest.approx(772 + 2 + 1)
    amdahl = 1025 / (1025 - 500 + 500 / 2)
    assert before / after == pytest.approx(amdahl)


def queued(tmp_path: Path, memset_call: bool = True, gap: float = 0.0):
    """A GPU-bound step: a 200 us memset (8-208) that the device was idle for, then 10 launches every 10 us
    whose 100 us kernels queue behind it back to back (kernel j at 209 + 101 j), then a sync; with `gap`, kernels
    5-9 start that much later (the device idle a moment before kernel 5, whose launch had queued long before)."""
    tb = TraceBuilder()
    corr = tb.call("cudaMemsetAsync", 0, 5)
    tb.events.append({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": BASE + 8,
                      "dur": 200, "args": {"device": 0, "stream": 7, **({"correlation": corr} if memset_call else {})}})
    for j in range(10):
        tb.launch(10 + 10 * j, 5, 209 + 101 * j + (gap if j >= 5 else 0.0), 100)
    tb.call("cudaDeviceSynchronize", 110, 1220 + gap - 110)  # returns 2 us after the last kernel's end (1218)
    tb.step(1, 0, 1222 + gap)
    return graph(tmp_path, tb)


def test_a_gpu_bound_trace_takes_its_launch_latency_from_an_op_nothing_queued(tmp_path: Path) -> None:
    """Every kernel launch queued (199-1018 us from launch to start): the typical launch latency is the memset's 8
    us, not a quantile of the queue, so a kernel that a change frees starts when its stream does."""
    g = queued(tmp_path)
    assert g.typical["launch_latency_us"] == pytest.approx(8)
    assert original(g).span == pytest.approx(1222)
    # kernels 0-4 (500 us) fused into one of 100 us: 209-309; kernels 5-9 follow their stream, 310-814 (not held
    # to launch + a queued latency: kernel 5's launch at 60 + 281 would start it at 341); sync 816, step end 818
    first_five = (g.gpu_name == ELEM) & (np.cumsum(g.gpu_name == ELEM) <= 5)
    assert replay(g, [Change(first_five, k=5, kernels_after=1)]).span == pytest.approx(818)
    # no op the device idled for has its own call: the least launch-to-start, an upper bound
    assert queued(tmp_path, memset_call=False).typical["launch_latency_us"] == pytest.approx(199)
    # the device idle for 10 us before kernel 5, launched at 60 and started at 724: its 664 us are the queue, not
    # its launch (held-out 21's ResNet-34 at 112 took 2.7 ms so), since the device was busy when the call came
    assert queued(tmp_path, gap=10).typical["launch_latency_us"] == pytest.approx(8)


def two_streams(tmp_path: Path):
    """A on stream 7 (100 us), B on stream 8 (200 us), C on stream 7 waits (event) for B, then a sync."""
    tb = TraceBuilder()
    tb.launch(10, 5, 18, 100, name=GEMM)  # A: 18-118
    tb.launch(20, 5, 28, 200, stream=8, grid=[4096, 1, 1])  # B: 28-228
    tb.call("cudaEventRecord", 30, 3)
    tb.call("cudaStreamWaitEvent", 40, 3)
    tb.launch(50, 5, 229, 10, grid=[64, 1, 1])  # C: held back by B, starts 1 us after B's end
    tb.call("cudaDeviceSynchronize", 60, 239 + 2 - 60)
    tb.step(1, 0, 242)
    return graph(tmp_path, tb)


def test_two_streams_event_wait(tmp_path: Path) -> None:
    g = two_streams(tmp_path)
    assert g.typical["n_cross_stream_waits"] == 1
    # A and B shared the GPU for 90 us (18-118): together they lost 90 us (the pair took 210 us, not
    # 300); neither ran alone, so each lost 45: A alone takes 55 us, B 155 us, each stretched by half its overlap
    ab = [np.flatnonzero(g.gpu_dur == d)[0] for d in (100, 200)]
    assert np.allclose(g.gpu_solo[ab], [55, 155]) and np.allclose(g.gpu_share[ab], [0.5, 0.5])
    side = g.gpu_stream == g.gpu_stream[np.flatnonzero(g.gpu_dur == 200)[0]]
    before, after = spans(g, Change(side, k=2))
    assert before == pytest.approx(242)
    # B alone would take 155 / 2 = 77.5 us, + 45 us for its 90 us beside A: 28-150.5; C at 150.5 + 1
    # (its measured wait), ends 161.5; the sync returns 2 us later; step + 1 us
    assert after == pytest.approx(164.5)
    a = g.gpu_dur == 100
    # A 10x faster: 18-23.5 alone, so B runs alone (155 us, 28-183); C 184-194; sync 196; step 197
    assert spans(g, Change(a, k=10))[1] == pytest.approx(197)


def held_by_a_later_launch(tmp_path: Path, sync_between: bool = False):
    """G (GEMM, stream 8) launched first at 10, held until 150 by K (stream 7), launched after it at 20 and running
    50-150 (G starts as K ends: the SMs' holder); the streams wait on events; a device synchronize ends the step. With
    `sync_between`, a stream synchronize at 15 (between the two launches) returns at once."""
    tb = TraceBuilder()
    tb.call("cudaStreamWaitEvent", 5, 2)
    tb.launch(10, 3, 150, 100, name=GEMM, stream=8, grid=[132, 1, 1])  # G: 150-250
    if sync_between:
        tb.call("cudaStreamSynchronize", 15, 2)
    tb.launch(20, 3, 50, 100, grid=[4096, 1, 1])  # K: 50-150
    tb.call("cudaDeviceSynchronize", 30, 252 - 30)
    tb.step(1, 0, 253)
    return graph(tmp_path, tb)


def test_an_op_held_by_a_kernel_launched_after_it_waits_for_that_kernel(tmp_path: Path) -> None:
    """G waited for K, which the CPU launched after G: G is replayed after K's launch (at the device synchronize, which
    still waits for it), so the wait is kept and a faster K moves G. The wait was dropped before, and G's 140 us hold
    stayed as its launch latency."""
    g = held_by_a_later_launch(tmp_path)
    gemm, k = np.flatnonzero(g.gpu_name == GEMM)[0], np.flatnonzero(g.gpu_name == ELEM)[0]
    assert g.gpu_dep[gemm] == k and g.gpu_position[gemm] > g.gpu_anchor[k]
    sync = int(np.flatnonzero(g.cpu_name == "cudaDeviceSynchronize")[0])
    assert gemm in g.waits[sync]
    base = original(g)
    assert residual(g, base) == pytest.approx(0, abs=1e-12)
    r = replay(g, [Change(g.gpu_name == ELEM, k=2)])  # K: 50-100, G: 100-200, the sync and the step 50 us sooner
    assert r.gpu_start[gemm] == pytest.approx(base.gpu_start[gemm] - 50)
    assert r.span == pytest.approx(base.span - 50)


def test_a_wait_for_a_later_launch_across_a_synchronize_is_not_kept(tmp_path: Path) -> None:
    """With a stream synchronize between G's launch and K's, replaying G after K's launch would take G out of what that
    synchronize waits for: the wait is dropped, G keeps its hold, and a faster K leaves it where it was."""
    g = held_by_a_later_launch(tmp_path, sync_between=True)
    gemm = np.flatnonzero(g.gpu_name == GEMM)[0]
    assert g.gpu_dep[gemm] == -1 and g.gpu_position[gemm] == g.gpu_anchor[gemm]
    assert residual(g) == pytest.approx(0, abs=1e-12)
    assert replay(g, [Change(g.gpu_name == ELEM, k=2)]).gpu_start[gemm] == pytest.approx(original(g).gpu_start[gemm])


def held_by_a_drain(tmp_path: Path, holder_start: float = 100.0, holder_end: float = 168.0):
    """L (GEMM, stream 7) 10-110, then R (launched at 30) held until 160, while K (stream 8, launched at 5) ran from
    `holder_start` to `holder_end`: R got the SMs as K's last blocks drained (8 us before its end), no recorded wait."""
    tb = TraceBuilder()
    tb.launch(5, 3, holder_start, holder_end - holder_start, stream=8, grid=[4096, 1, 1])  # K
    tb.launch(10, 3, 10, 100, name=GEMM, grid=[132, 1, 1])  # L: 10-110
    tb.call("cudaStreamWaitEvent", 20, 2)  # the trace's streams wait on events (none of them R's)
    tb.launch(30, 3, 160, 10, grid=[64, 1, 1])  # R: 160-170
    tb.call("cudaDeviceSynchronize", 40, 172 - 40)
    tb.step(1, 0, 173)
    return graph(tmp_path, tb)


def test_an_op_held_while_another_streams_kernel_drained_waits_for_that_kernel(tmp_path: Path) -> None:
    """R was ready at 110 (its stream) and started at 160, 8 us before K, which ran through the whole hold, ended:
    K held the SMs. A what-if that shortens K frees R; one that holds the hold as a gap on R's stream does not."""
    g = held_by_a_drain(tmp_path)
    k, r = np.flatnonzero(g.gpu_stream != g.gpu_stream[np.flatnonzero(g.gpu_name == GEMM)[0]])[0], \
        np.flatnonzero(g.gpu_dur == 10)[0]
    assert g.gpu_dep[r] == k and g.gpu_dep_gap[r] == pytest.approx(-8)
    base = original(g)
    assert residual(g, base) == pytest.approx(0, abs=1e-12)
    # K 4x faster: 100-117; R at 117 - 8 = 109, but its stream is busy to 110 (L's end): R starts there
    rp = replay(g, [Change(np.arange(g.n_gpu) == k, k=4)])
    lend = base.gpu_end[g.gpu_name == GEMM][0]
    assert base.gpu_start[r] - lend == pytest.approx(50) and rp.gpu_start[r] - lend < 10


def test_a_kernel_that_started_after_the_op_was_ready_did_not_hold_it(tmp_path: Path) -> None:
    """K started at 130, after R was ready (110): K cannot have held R from the start of its hold, so R keeps the hold
    as its stream gap and a faster K does not move it."""
    g = held_by_a_drain(tmp_path, holder_start=130.0)
    r = np.flatnonzero(g.gpu_dur == 10)[0]
    assert g.gpu_dep[r] == -1
    k = g.gpu_stream != g.gpu_stream[r]
    assert replay(g, [Change(k, k=4)]).gpu_start[r] == pytest.approx(original(g).gpu_start[r])


def held_in_turns(tmp_path: Path, tail: int, n: int = 10):
    """Two streams that hold each other in turns (a side stream's GEMMs and ReLUs, launched first, beside the main
    stream's kernels, launched after them; the corpus's main-stream swaps): G_i (GEMM) 100 us, then R_i, held until
    K_i drains; K_i+1 held until R_i ends. Every wait is on an op launched later or after one that was. Then `tail`
    more launches on the main stream (1 us kernels after the chain) and a device synchronize."""
    tb = TraceBuilder()
    tb.call("cudaStreamWaitEvent", 1, 1)  # the streams wait on events
    s = 40.0 + 121.5 * np.arange(n)
    for i in range(n):
        tb.launch(2 + 2 * i, 0.5, s[i], 100, name=GEMM, grid=[132, 1, 1])  # G_i
        tb.launch(3 + 2 * i, 0.5, s[i] + 110, 10, grid=[64, 1, 1])  # R_i: ready at s+100, held by K_i to s+110
    for i in range(n):  # K_0 ready at once; K_i+1 ready at K_i's end (s_i + 112) and held to R_i's end + 2
        tb.launch(30 + i, 0.5, s[i] + 0.5, 111.5, stream=8, grid=[4096, 1, 1])
    end = s[-1] + 112
    for i in range(tail):
        tb.launch(40 + i, 0.5, end + 1.5 + 2.5 * i, 1, stream=8, grid=[1, 1, 1])
    end = max(end + 2.5 * tail, s[-1] + 120)
    tb.call("cudaDeviceSynchronize", 40 + tail, end + 1 - 40 - tail)
    tb.step(1, 0, end + 2)
    return graph(tmp_path, tb)


def test_waits_on_later_launches_are_kept_along_a_chain_of_any_length(tmp_path: Path) -> None:
    """R_i waits for K_i and K_i+1 for R_i: 19 links, each replayed one call after the one before. With calls enough
    before the synchronize, every wait is kept (a fixed eight passes dropped the chain's last ones, their holds then
    fixed gaps), and halving the K's moves the last R."""
    g = held_in_turns(tmp_path, tail=30)
    r = np.flatnonzero(g.gpu_dur == 10)
    k = np.flatnonzero((g.gpu_stream != g.gpu_stream[r[0]]) & (g.gpu_dur > 100))
    assert (g.gpu_dep[r] == k).all() and (g.gpu_dep[k[1:]] == r[:-1]).all()
    assert residual(g) == pytest.approx(0, abs=1e-9)
    faster = replay(g, [Change(np.isin(np.arange(g.n_gpu), k), k=2)])
    assert faster.gpu_start[r[-1]] < original(g).gpu_start[r[-1]] - 100


def test_a_chain_of_waits_stops_at_the_synchronize(tmp_path: Path) -> None:
    """With the synchronize right after the last launch, the chain's links that would carry an op past it are dropped
    (its holds stay gaps) and every op is still replayed, where they once moved past the last call and vanished."""
    g = held_in_turns(tmp_path, tail=0)
    sync = int(np.flatnonzero(g.cpu_name == "cudaDeviceSynchronize")[0])
    assert g.gpu_position.max() <= sync and (g.gpu_dep[g.gpu_dur == 10] == -1).any()
    base = original(g)
    assert not np.isnan(base.gpu_end).any() and residual(g, base) == pytest.approx(0, abs=1e-9)


def kept_apart_by_launches(tmp_path: Path, first: str = ELEM):
    """K1 (stream 7, 5-95) and K2 (stream 8, 104-194, launched at 100): in the profile the CPU's slow launch of K2 kept
    the two streams from running at once, so nothing in the trace says how they share the SMs."""
    tb = TraceBuilder()
    tb.call("cudaStreamWaitEvent", 0, 1)  # the streams wait on events
    tb.launch(1, 1, 5, 90, name=first, grid=[4096, 1, 1])  # K1
    tb.launch(100, 1, 104, 90, stream=8, grid=[4096, 1, 1])  # K2
    tb.call("cudaDeviceSynchronize", 102, 94)
    tb.step(1, 0, 197)
    return graph(tmp_path, tb)


def test_kernels_the_trace_kept_apart_split_the_gpu_where_the_replay_overlaps_them(tmp_path: Path) -> None:
    """At a tenth of the CPU time K2 is launched at 11 and overlaps K1, both elementwise (bound by memory bandwidth):
    each runs at half speed where they overlap (an even split: both take their solo times summed, as one after the
    other), so the GPU's work spans 180 us, not the about 100 of two kernels each filling the GPU alone. At the
    profile's own CPU speed nothing moves."""
    g = kept_apart_by_launches(tmp_path)
    assert g.unshared[g.gpu_kernel].all() and not g.gpu_share.any()
    assert residual(g) == pytest.approx(0, abs=1e-12)
    fast = replay(g, cpu_scale=0.1)
    k1, k2 = np.argsort(g.gpu_ts)
    assert fast.gpu_start[k2] < fast.gpu_end[k1]  # they overlap
    assert fast.gpu_end.max() - fast.gpu_start.min() == pytest.approx(180, abs=1)
    assert fast.gpu_end[k1] - fast.gpu_start[k1] > 150


def test_a_gemm_the_trace_kept_apart_does_not_share_bandwidth(tmp_path: Path) -> None:
    """With K1 a GEMM (bound by its math, not by memory bandwidth) the even split does not apply: brought together by
    a faster CPU, the two kernels run at full speed each."""
    g = kept_apart_by_launches(tmp_path, first=GEMM)
    assert not g.unshared[g.gpu_name == GEMM].any() and g.unshared[g.gpu_name == ELEM].all()
    fast = replay(g, cpu_scale=0.1)
    assert np.allclose(fast.gpu_end - fast.gpu_start, g.gpu_dur)


def prefetch(tmp_path: Path, recorded: bool, resolved: bool = True, third_stream: bool = False):
    """A copy on stream 8 (10-70) that C on stream 7 waits for (an event), though C was held by A (18-118) instead;
    with `recorded`, the trace has the GPU's record of the wait, naming the awaited stream and record call where
    `resolved` (torch 2.11's Kineto writes -1 for both). With `third_stream`, stream 9 launches a kernel too before
    the record call, so an unresolved record cannot tell which stream's work it waited for."""
    tb = TraceBuilder()
    tb.copy("cudaMemcpyAsync", 5, 3, 10, 60, "Memcpy HtoD (Pinned -> Device)", stream=8)
    if third_stream:
        tb.launch(7, 1, 71, 5, stream=9)
    record = tb.call("cudaEventRecordWithFlags", 9, 2)
    tb.launch(12, 4, 18, 100)  # A: 18-118
    wait = tb.call("cudaStreamWaitEvent", 17, 2)
    tb.launch(20, 4, 119, 10)  # C: 119-129, after A
    tb.call("cudaDeviceSynchronize", 25, 131 - 25)
    tb.step(1, 0, 132)
    if recorded:
        tb.sync_record("Stream Wait Event", 20, wait, stream=7, wait_on_stream=8 if resolved else -1,
                       record=record if resolved else -1)
    return graph(tmp_path, tb)


def test_an_unresolved_stream_wait_is_read_from_the_last_event_record(tmp_path: Path) -> None:
    """The event is the last one recorded before the wait call; the work it marks, the other stream's last launch
    before that record, where one other stream launched work since the record before it (torch's wait_stream)."""
    g = prefetch(tmp_path, recorded=True, resolved=False)
    c, copy = np.flatnonzero(g.gpu_dur == 10)[0], np.flatnonzero(g.gpu_dur == 60)[0]
    assert g.gpu_dep[c] == copy
    assert spans(g, Change(g.gpu_dur == 100, k=10))[1] == pytest.approx(83)  # as with a resolved record
    ambiguous = prefetch(tmp_path, recorded=True, resolved=False, third_stream=True)
    assert ambiguous.gpu_dep[np.flatnonzero(ambiguous.gpu_dur == 10)[0]] == -1  # streams 8 and 9: left to timing


def test_a_recorded_stream_wait_binds_when_a_what_if_frees_its_stream(tmp_path: Path) -> None:
    """In the profile C's wait for the copy held nothing (A did), so timing alone cannot see it."""
    inferred, recorded = prefetch(tmp_path, recorded=False), prefetch(tmp_path, recorded=True)
    assert inferred.typical["n_cross_stream_waits"] == 0 and recorded.typical["n_cross_stream_waits"] == 1
    for g in (inferred, recorded):
        assert residual(g) == pytest.approx(0, abs=1e-6)
    a = recorded.gpu_dur == 100
    # A 10x faster (18-28): C waits for the copy (ends 70), 70-80; the sync returns 2 us later; step + 1 us
    assert spans(recorded, Change(a, k=10))[1] == pytest.approx(83)
    # without the record C follows A at once (29-39) and the sync waits for the copy: 10 us short of what it can be
    assert spans(inferred, Change(inferred.gpu_dur == 100, k=10))[1] == pytest.approx(73)


def test_an_unresolved_wait_for_an_earlier_event_is_not_read_as_the_later_ones(tmp_path: Path) -> None:
    """The rule's adversary: events recorded after a copy on stream 8 (E1) and after one on stream 9 (E2), then a
    wait for E1. The last record is E2's, but stream 9's copy ran until 150 and C started at 71, so it cannot be what
    C waited for: the record is left to timing, which finds stream 8's copy ending as C started."""
    tb = TraceBuilder()
    tb.copy("cudaMemcpyAsync", 5, 3, 10, 60, "Memcpy HtoD (Pinned -> Device)", stream=8)  # 10-70
    tb.call("cudaEventRecordWithFlags", 9, 1)  # E1
    tb.copy("cudaMemcpyAsync", 10, 3, 12, 138, "Memcpy DtoH (Device -> Pinned)", stream=9)  # 12-150
    tb.call("cudaEventRecordWithFlags", 14, 1)  # E2
    wait = tb.call("cudaStreamWaitEvent", 17, 2)  # for E1
    tb.launch(20, 4, 71, 10)  # C: 71-81
    tb.call("cudaDeviceSynchronize", 25, 152 - 25)
    tb.step(1, 0, 153)
    tb.sync_record("Stream Wait Event", 20, wait, stream=7)
    g = graph(tmp_path, tb)
    c, first = np.flatnonzero(g.gpu_dur == 10)[0], np.flatnonzero(g.gpu_dur == 60)[0]
    assert g.gpu_dep[c] == first


def test_torchs_own_stream_waits_resolve() -> None:
    """A trace `profile` recorded on an H100 (torch 2.11; the step of tests/test_gpu.py's sync-record test, 3 steps):
    a copy on a side stream that the compute stream's kernel waits for (wait_stream), its records unresolved (-1)."""
    trace = load_trace(Path(__file__).resolve().parents[1] / "data/side_stream_waits_h100_torch211.json.gz",
                       runtime=True)
    ev = trace.events
    assert (ev.loc[(ev["kind"] == "sync").to_numpy() & (ev["name"] == "Stream Wait Event").to_numpy(),
                   "wait_on_stream"] == -1).all()
    g = build_graph(trace)
    waiting = np.flatnonzero(g.gpu_dep >= 0)
    assert len(waiting) == 3
    assert all(str(g.gpu_name[d]).startswith("Memcpy DtoD") for d in g.gpu_dep[waiting])
    assert residual(g) == pytest.approx(0, abs=1e-9)


def test_the_validation_can_read_a_trace_as_if_its_waits_were_not_recorded(gpu_script) -> None:
    """gpu/replay_corpus_validation.py --drop-sync-records: the H100 trace's three waits did not bind in the profile,
    so without their records timing finds none of them; the rest of the trace is untouched and still replays."""
    rv = gpu_script("replay_validation")
    trace = load_trace(Path(__file__).resolve().parents[1] / "data/side_stream_waits_h100_torch211.json.gz",
                       runtime=True)
    bare = rv.without_sync_records(trace)
    n_sync = int((trace.events["kind"] == "sync").sum())
    assert n_sync == 6 and not (bare.events["kind"] == "sync").any() and len(bare.events) == len(trace.events) - n_sync
    recorded, inferred = build_graph(trace), build_graph(bare)
    assert (recorded.gpu_dep >= 0).sum() == 3 and (inferred.gpu_dep >= 0).sum() == 0
    assert residual(inferred) == pytest.approx(0, abs=1e-9)


def event_sync(tmp_path: Path, recorded: bool, resolved: bool = True):
    """The CPU waits (cudaEventSynchronize) for P on stream 7 (10-60), recorded after it; a copy on stream 8 ends
    later (22-61), just before the call returns (62); then 50 us of CPU work, R on stream 8 and a sync. Unless
    `resolved`, the record names neither the event's record call nor its stream (-1), as torch 2.11 writes it."""
    tb = TraceBuilder()
    tb.launch(2, 3, 10, 50)  # P: 10-60
    record = tb.call("cudaEventRecord", 6, 1)
    tb.copy("cudaMemcpyAsync", 18, 3, 22, 39, "Memcpy DtoH (Device -> Pinned)", stream=8)
    call = tb.call("cudaEventSynchronize", 25, 62 - 25)
    tb.launch(112, 3, 115, 10, stream=8)  # R: 115-125
    tb.call("cudaDeviceSynchronize", 116, 127 - 116)
    tb.step(1, 0, 128)
    if recorded:
        tb.sync_record("Event Sync", 26, call, wait_on_stream=7 if resolved else -1, record=record if resolved else -1)
    return graph(tmp_path, tb)


def test_a_recorded_event_sync_waits_for_its_event_not_the_last_work_to_end(tmp_path: Path) -> None:
    inferred, recorded = event_sync(tmp_path, recorded=False), event_sync(tmp_path, recorded=True)
    call = int(np.flatnonzero(recorded.cpu_name == "cudaEventSynchronize")[0])
    p = np.flatnonzero(recorded.gpu_dur == 50)
    assert recorded.waits[call].tolist() == p.tolist()
    assert inferred.waits[call].tolist() != p.tolist()  # timing alone picks the copy, which ended last
    copy = recorded.gpu_dur == 39
    # the copy 10x faster changes nothing the CPU waits for: the step stays 128 us
    assert spans(recorded, Change(copy, k=10)) == (pytest.approx(128), pytest.approx(128))
    # timing alone: the call returns 1 us after the copy (26.9), R runs 79.9-89.9, the step ends 35 us early
    assert spans(inferred, Change(inferred.gpu_dur == 39, k=10))[1] == pytest.approx(92.9)


def test_an_unresolved_event_sync_waits_for_the_work_before_the_last_record(tmp_path: Path) -> None:
    """torch 2.11 writes -1 for the event's record: the work launched before the last record before the call (P, on
    the one stream that launched since), as with the record named."""
    g = event_sync(tmp_path, recorded=True, resolved=False)
    call = int(np.flatnonzero(g.cpu_name == "cudaEventSynchronize")[0])
    assert g.waits[call].tolist() == np.flatnonzero(g.gpu_dur == 50).tolist()
    assert spans(g, Change(g.gpu_dur == 39, k=10)) == (pytest.approx(128), pytest.approx(128))


def test_an_unresolved_event_sync_is_not_read_as_a_later_records_work(tmp_path: Path) -> None:
    """Its adversary: P (stream 7, 10-60) recorded, then Q (stream 8, 15-75) recorded, then a synchronize on the first
    event that returns at 62. The last record's work, Q, was still running when the call returned, so the call did
    not wait for it: timing decides (P, which ended as the call returned), not Q."""
    tb = TraceBuilder()
    tb.launch(2, 3, 10, 50)  # P: 10-60
    tb.call("cudaEventRecord", 6, 1)
    tb.launch(8, 3, 15, 60, stream=8)  # Q: 15-75
    tb.call("cudaEventRecord", 12, 1)
    call_corr = tb.call("cudaEventSynchronize", 25, 62 - 25)
    tb.call("cudaDeviceSynchronize", 63, 76 - 63)
    tb.step(1, 0, 77)
    tb.sync_record("Event Sync", 26, call_corr)
    g = graph(tmp_path, tb)
    call = int(np.flatnonzero(g.cpu_name == "cudaEventSynchronize")[0])
    assert g.waits[call].tolist() == np.flatnonzero(g.gpu_dur == 50).tolist()


def sharing(tmp_path: Path, long_name: str = GEMM):
    """K alone on stream 7 (50 us); L on stream 8 (200 us) with K again beside it, taking 80 us; a sync."""
    tb = TraceBuilder()
    tb.launch(0, 5, 10, 50, grid=[64, 1, 1])  # K1: 10-60, alone: K's solo duration
    tb.launch(90, 5, 100, 200, name=long_name, stream=8, grid=[132, 1, 1])  # L: 100-300
    tb.launch(110, 5, 120, 80, grid=[64, 1, 1])  # K2: 120-200, beside L all the way
    tb.call("cudaDeviceSynchronize", 120, 302 - 120)  # returns 2 us after L
    tb.step(1, 0, 303)
    return graph(tmp_path, tb)


def test_kernels_sharing_the_gpu(tmp_path: Path) -> None:
    g = sharing(tmp_path)
    k2, long = np.flatnonzero(g.gpu_dur == 80)[0], np.flatnonzero(g.gpu_dur == 200)[0]
    # K2 lost 80 - 50 = 30 us of its 80 us beside L; the pair took 200 us for 280 us of work, so L lost 50
    assert (g.gpu_solo[k2], g.gpu_share[k2]) == (pytest.approx(50), pytest.approx(30 / 80))
    assert (g.gpu_solo[long], g.gpu_share[long]) == (pytest.approx(150), pytest.approx(50 / 80))
    assert g.typical["n_shared_kernels"] == 2
    base = replay(g)
    assert residual(g, base) == pytest.approx(0, abs=1e-12)  # the unmodified graph replays the profile
    # K infinitely fast: L runs alone, 100-250; the sync returns at 252, the step ends 1 us later.
    # Without the sharing model, L would keep its 200 us and nothing would change (303).
    r = replay(g, [Change(g.gpu_dur != 200, k=np.inf)])
    assert r.span == pytest.approx(253)
    assert r.gpu_end[long] == pytest.approx(250)
    assert r.busy == pytest.approx(150) and base.busy == pytest.approx(250)  # K1 10-60 + L 100-300
    # L 2x faster (solo 75 us), K2 still inside it: K2 = 50 + 0.375 x K2 -> 80 us (120-200), L = 75 + 0.625 x 80
    # = 125 us (100-225): the union of the two is their solo work, 75 + 50
    r = replay(g, [Change(g.gpu_dur == 200, k=2)])
    assert r.gpu_end[long] - r.gpu_start[long] == pytest.approx(125, abs=0.05)
    assert r.gpu_end[k2] - r.gpu_start[k2] == pytest.approx(80, abs=0.05)


def test_concurrent_work_leaves_the_unsampled_kernel_less_loss(tmp_path: Path, monkeypatch) -> None:
    """With CONCURRENT_WORK 1.25 the pair of test_kernels_sharing_the_gpu did 0.25 x its 80 us overlapped of extra
    work: L's loss is 50 - 20 = 30 us (solo 170); K2's, from its solo sample, stays 30."""
    monkeypatch.setattr(replay_module, "CONCURRENT_WORK", 1.25)
    g = sharing(tmp_path)
    k2, long = np.flatnonzero(g.gpu_dur == 80)[0], np.flatnonzero(g.gpu_dur == 200)[0]
    assert (g.gpu_solo[long], g.gpu_share[long]) == (pytest.approx(170), pytest.approx(30 / 80))
    assert (g.gpu_solo[k2], g.gpu_share[k2]) == (pytest.approx(50), pytest.approx(30 / 80))
    assert residual(g, replay(g)) == pytest.approx(0, abs=1e-12)


def test_collectives_do_not_share_the_gpu(tmp_path: Path) -> None:
    """A collective's time is set by its peers, not by the SMs it shares: no stretch either way."""
    g = sharing(tmp_path, long_name="ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
    assert g.typical["n_shared_kernels"] == 0 and np.array_equal(g.gpu_solo, g.gpu_dur)
    assert replay(g, [Change(g.gpu_dur != 200, k=np.inf)]).span == pytest.approx(303)


def test_sync_in_the_middle_of_the_step(tmp_path: Path) -> None:
    tb = TraceBuilder()
    tb.launch(10, 5, 18, 500, name=GEMM)  # K1: 18-518
    tb.call("cudaStreamSynchronize", 20, 520 - 20)  # returns 2 us after K1
    tb.launch(620, 10, 628, 10)  # 100 us of CPU after the sync, then K2: 628-638
    tb.step(1, 0, 640)
    g = graph(tmp_path, tb)
    assert list(g.waits) == [1]
    before, after = spans(g, Change(g.gpu_name == GEMM, k=5))
    # K1: 18-118; the sync returns at 120; K2's launch at 220-230; the step ends 10 us after it
    assert (before, after) == (pytest.approx(640), pytest.approx(240))
    assert spans(g, Change(g.gpu_name == ELEM, k=10))[1] == pytest.approx(640)  # K2 ends before the CPU does


def copy_after_a_kernel(tmp_path: Path, call: str, name: str):
    """A profiled step whose GPU was idle at its copy: K1 (18-118), a copy's call at 200-240 whose 5 us op ran
    inside it (210-215), 100 us of CPU, then K2's launch at 340-350 (K2: 358-368)."""
    tb = TraceBuilder()
    tb.launch(10, 5, 18, 100, name=GEMM)
    tb.copy(call, 200, 40, 210, 5, name)
    tb.launch(340, 10, 358, 10)
    tb.step(1, 0, 370)
    return graph(tmp_path, tb)


@pytest.mark.parametrize(("call", "name", "waits"), [
    ("cudaMemcpyAsync", "Memcpy DtoD (Device -> Device)", False),  # within device memory: returns at once
    ("cudaMemsetAsync", "Memset (Device)", False),
    ("cudaMemcpy", "Memcpy DtoD (Device -> Device)", False),
    ("cudaMemcpyAsync", "Memcpy HtoD (Pinned -> Device)", False),  # pinned host memory, asynchronous call
    ("cudaMemcpy", "Memcpy HtoD (Pinned -> Device)", True),  # ... synchronous call
    ("cudaMemcpyAsync", "Memcpy DtoH (Device -> Pageable)", True),  # pageable host memory: the host waits
])
def test_a_copy_waits_only_where_its_call_can_block(tmp_path: Path, call: str, name: str, waits: bool) -> None:
    g = copy_after_a_kernel(tmp_path, call, name)
    assert (1 in g.waits) is waits
    # the GEMM 30x longer (3000 us): a copy that waits holds K2's launch until the GEMM ends; one that returns at
    # once does not, and the CPU's 340 us (first call to K2's launch's end) run under the GEMM
    slow = replay(g, [Change(g.gpu_name == GEMM, k=1 / 30)])
    cpu = float(slow.cpu_end.max() - slow.cpu_start.min())
    assert cpu > 3000 if waits else cpu == pytest.approx(340)


def synchronous_copies(tmp_path: Path):
    """Two cudaMemcpy calls to pageable memory, each returning 10 us after its copy (10-50, 110-150) ends, 40 us
    of CPU between them, nothing else on the GPU."""
    tb = TraceBuilder()
    tb.copy("cudaMemcpy", 0, 60, 10, 40, "Memcpy DtoH (Device -> Pageable)")
    tb.copy("cudaMemcpy", 100, 60, 110, 40, "Memcpy DtoH (Device -> Pageable)")
    tb.step(1, 0, 170)
    return graph(tmp_path, tb)


def test_a_synchronous_copy_holds_its_call_for_as_long_as_it_runs(tmp_path: Path) -> None:
    """Its call waits for its own copy, so a what-if on the copy moves the CPU; it used to wait for the stream's
    previous op, its own copy frozen into the wake-up time (and counted twice once a run of copies was merged)."""
    g = synchronous_copies(tmp_path)
    copies = np.flatnonzero(g.gpu_dur == 40)
    assert [g.waits[c].tolist() for c in (0, 1)] == [[copies[0]], [copies[1]]]
    # copies 2x faster: 10-30, call returns 40; 40 us of CPU, call at 80, copy 90-110, returns 120; step + 10
    assert spans(g, Change(g.gpu_dur == 40, k=2)) == (pytest.approx(170), pytest.approx(130))
    # the CPU waited between the two launches, so they are two calls of one kernel each, not one to merge (merged,
    # the first call waited for both copies and the span grew: HolisticTraceAnalysis's simple_add trace, +0.09%)
    one_each = replay(g, [Change(g.gpu_dur == 40, k=1, kernels_after=1)])
    assert one_each.cpu_end[0] == pytest.approx(60) and one_each.span == pytest.approx(170)


def side_stream_runs(tmp_path: Path):
    """X1 and X2 on stream 8 (10-20, 110-120), each awaited (recorded event waits) by the compute stream's next
    kernel, C1 (20-100) and C2 (120-200), launched between them."""
    tb = TraceBuilder()
    tb.launch(0, 4, 10, 10, stream=8)  # X1
    r1 = tb.call("cudaEventRecord", 5, 1)
    w1 = tb.call("cudaStreamWaitEvent", 7, 1)
    tb.launch(9, 4, 20, 80, name=GEMM)  # C1
    tb.launch(14, 4, 110, 10, stream=8)  # X2: queued behind nothing, held by its event (not modelled)
    r2 = tb.call("cudaEventRecord", 19, 1)
    w2 = tb.call("cudaStreamWaitEvent", 21, 1)
    tb.launch(23, 4, 120, 80, name=GEMM)  # C2
    tb.call("cudaDeviceSynchronize", 30, 202 - 30)
    tb.step(1, 0, 203)
    for r, w in ((r1, w1), (r2, w2)):
        tb.sync_record("Stream Wait Event", 8, w, stream=7, wait_on_stream=8, record=r)
    return graph(tmp_path, tb)


def test_a_call_of_kernels_after_is_one_piece_of_launched_work(tmp_path: Path) -> None:
    """X1 and X2 follow each other on their stream, but C1 was launched between them and waits for X1: merging
    them into one kernel at X1's place held C1 back by X2's time (a communication stream in DeepSeek's public
    trace: +18% for a change that fuses without speeding up)."""
    g = side_stream_runs(tmp_path)
    x = g.gpu_stream == g.gpu_stream[np.flatnonzero(g.gpu_dur == 10)[0]]
    assert spans(g, Change(x, k=1, kernels_after=1)) == (pytest.approx(203), pytest.approx(203))


def late_partner(tmp_path: Path):
    """K1 alone (10-60): the work's solo time. K2, the same work, 100-200 on stream 7, shares the SMs with L
    (stream 8, 150-450) for its last 50 us: it lost all of them (share 1). L waits behind a copy (100-150)."""
    tb = TraceBuilder()
    tb.launch(0, 5, 10, 50, grid=[64, 1, 1])  # K1
    tb.copy("cudaMemcpyAsync", 90, 5, 100, 50, "Memcpy HtoD (Pinned -> Device)", stream=8)
    tb.launch(95, 3, 100, 100, grid=[64, 1, 1])  # K2
    tb.launch(98, 3, 150, 300, name=GEMM, stream=8, grid=[132, 1, 1])  # L
    tb.call("cudaDeviceSynchronize", 101, 452 - 101)
    tb.step(1, 0, 453)
    return graph(tmp_path, tb)


def test_a_kernel_loses_no_more_to_sharing_than_it_did_in_the_trace(tmp_path: Path) -> None:
    g = late_partner(tmp_path)
    k2 = np.flatnonzero(g.gpu_dur == 100)[0]
    assert (g.gpu_solo[k2], g.gpu_share[k2]) == (pytest.approx(50), pytest.approx(1))
    # the copy 10x faster: L starts at 105 and would overlap K2 for 95 us; K2 keeps its measured loss, 50 us (it
    # used to take solo + its whole overlap, which grew with it, to L's end)
    r = replay(g, [Change(g.gpu_name == "Memcpy HtoD (Pinned -> Device)", k=10)])
    assert r.gpu_end[k2] - r.gpu_start[k2] == pytest.approx(100)


def test_not_replayable(tmp_path: Path) -> None:
    tb = TraceBuilder()
    tb.launch(0, 5, 8, 10)
    gpu_only = [e for e in tb.events if e["cat"] != "cuda_runtime"]
    (tmp_path / "g.json").write_text(json.dumps({"traceEvents": gpu_only}))
    assert "no CPU runtime events" in replayable(load_trace(tmp_path / "g.json", runtime=True))
    tb.call("cudaGraphLaunch", 20, 5)
    assert "CUDA-graph" in replayable(load_trace(tb.write(tmp_path / "cg.json"), runtime=True))


def test_a_real_memset_that_found_the_gpu_idle_is_no_wait() -> None:
    """ResNet-18 inference at batch 64 with eager BatchNorm (the project's corpus, part 21, captured on an H100):
    the profiler slowed the CPU so far that a reduction's cudaMemsetAsync ended inside its call; read as a wait it
    held the replayed CPU back at the unprofiled speed (7.30 ms at CPU scale 0.5, measured 6.36-6.70 ms). Only the
    closing cudaDeviceSynchronize calls wait, and the replay runs the CPU under the GPU."""
    root = Path(__file__).resolve().parents[2]
    trace = load_trace(root / "results/h200/replay_corpus/part-21/resnet18-infer-b64-bn.A.json.gz", runtime=True)
    g = build_graph(trace)
    assert {g.cpu_name[i] for i in g.waits} == {"cudaDeviceSynchronize"}
    assert "cudaMemsetAsync" in set(g.cpu_name)
    r = replay(g, cpu_scale=0.5)
    assert (r.span / len(g.steps)) / 1e3 == pytest.approx(6.48, abs=0.05)


@pytest.mark.parametrize("name", ["resnet50_train", "llama8b4l_infer"])
def test_real_traces_replay_exactly(h200_traces: dict[str, Path], name: str) -> None:
    trace = load_trace(h200_traces[name], runtime=True)
    assert replayable(trace) == ""
    g = build_graph(trace)
    r = replay(g)
    assert abs(residual(g, r)) < 1e-9
    assert np.allclose(r.gpu_start, g.gpu_ts, atol=1e-6)
    # every kernel 10x faster: the kernel basis gets 10x, the wall clock much less (launch-bound ResNet)
    wall, kernel = replay(g, [Change(np.ones(g.n_gpu, bool), k=10)]).speedup_over(r)
    assert kernel == pytest.approx(10, rel=0.02) and 1.0 <= wall < kernel


# ------------------------------------------------------------------ project --model replay


def project_json(*args: str) -> tuple[int, dict | None, str]:
    res = CliRunner().invoke(main, ["project", *args])
    return res.exit_code, (json.loads(res.stdout) if res.exit_code == 0 and "--json" in args else None), res.stderr


def launch_bound_trace(tmp_path: Path) -> Path:
    tb = TraceBuilder()
    for i in range(10):
        tb.launch(100 * i + 90, 10, 100 * i + 98, 5)
    tb.step(1, 0, 1000)
    return tb.write(tmp_path / "launch_bound.json")


def test_project_replays_a_trace_file(tmp_path: Path) -> None:
    trace = launch_bound_trace(tmp_path)
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup,kernels_after\nelementwise,1,1\n")
    code, d, _ = project_json("--speedups", str(wins), "--runs", str(trace), "--json")
    assert code == 0
    r = d["runs"][0]
    assert r["model"] == "replay" and r["replay_residual"] == pytest.approx(0, abs=1e-12)
    assert r["wall_basis"] == "profiled step" and r["profiled_step_ms"] == pytest.approx(1.003)
    # the 10 kernels are one call, fused into one: launches 1-9 and their gaps go; the kernel takes
    # all 50 us from 8 us after the first launch (90): 1003 / 148 us
    assert r["speedup_wall"] == pytest.approx(1003 / 148) == r["replay_speedup_wall"]
    assert r["replay_speedup_kernel"] == pytest.approx(1.0)
    assert r["amdahl_speedup_wall"] == pytest.approx(1.0)  # k = 1: Amdahl sees no gain at all
    code, d, _ = project_json("--speedups", str(wins), "--runs", str(trace), "--json", "--model", "amdahl")
    assert d["runs"][0]["model"] == "amdahl" and d["runs"][0]["speedup_wall"] == pytest.approx(1.0)
    # a measured step of 0.5 ms: the CPU is scaled to match it, so the same fusion buys less
    code, d, _ = project_json("--speedups", str(wins), "--runs", str(trace), "--json", "--step-ms", "0.5")
    r = d["runs"][0]
    assert r["wall_basis"] == "--step-ms" and 0.45 < r["cpu_scale"] < 0.55
    assert 1.0 < r["speedup_wall"] < 1003 / 148


def test_a_bare_trace_replayed_as_profiled_says_it_is_bounded_by_the_cpu(tmp_path: Path) -> None:
    """Issue 26: a launch-bound trace without --step-ms gave 1.000x, cpu_scale 1.0, and no word why."""
    trace = launch_bound_trace(tmp_path)
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nelementwise,2\n")
    code, d, err = project_json("--speedups", str(wins), "--runs", str(trace), "--json")
    r = d["runs"][0]
    assert code == 0 and r["cpu_scale"] == 1.0 and r["speedup_wall"] == pytest.approx(1003 / 1000.5)
    said = [w for w in d["warnings"] if "replayed as profiled" in w]
    assert len(said) == 1 and "bounded by the profiled CPU time" in said[0] and "--step-ms MS" in said[0]
    assert "with every replaceable kernel free the replayed step runs 1.003x faster, its kernels inf" in said[0]
    assert said[0] in err
    _, d, _ = project_json("--speedups", str(wins), "--runs", str(trace), "--json", "--step-ms", "0.5")
    assert not any("replayed as profiled" in w for w in d["warnings"])  # the unprofiled step is known


def test_project_falls_back_to_amdahl_with_a_reason(tmp_path: Path) -> None:
    tb = TraceBuilder()
    tb.launch(0, 5, 8, 10)
    tb.step(1, 0, 30)
    (tmp_path / "g.json").write_text(json.dumps({"traceEvents": [e for e in tb.events if e["cat"] != "cuda_runtime"]}))
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nelementwise,2\n")
    code, d, err = project_json("--speedups", str(wins), "--runs", str(tmp_path / "g.json"), "--json")
    assert code == 0 and d["runs"][0]["model"] == "amdahl" and "no CPU runtime events" in d["runs"][0]["model_reason"]
    assert "projected with Amdahl's law" in err
    res = CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(tmp_path / "g.json")])
    assert res.exit_code == 0 and "(Amdahl: no CPU runtime events" in res.stdout


@pytest.mark.parametrize("bad", ["0", "-3", "nan"])
def test_project_bad_step_ms(tmp_path: Path, bad: str) -> None:
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup\nelementwise,2\n")
    res = CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(launch_bound_trace(tmp_path)),
                                    "--step-ms", bad])
    assert res.exit_code == 2 and "--step-ms" in res.stderr and "Traceback" not in res.output


def test_bad_kernels_after(tmp_path: Path) -> None:
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup,kernels_after\nelementwise,2,1.5\n")
    res = CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(launch_bound_trace(tmp_path))])
    assert res.exit_code == 2 and "kernels_after" in res.stderr


def test_validation_on_real_pairs(tmp_path: Path) -> None:
    """gpu/replay_validation.py on two real H200 pairs: replay within 10% of the measured speedups."""
    import subprocess
    import sys

    import pandas as pd

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "v.csv"
    res = subprocess.run([sys.executable, str(root / "gpu" / "replay_validation.py"), str(root / "tests/data/pairs"),
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(out).set_index("pair")
    assert list(t.index) == ["llama8b-prefill-b4-rmsnorm", "two-stream-gelu"]
    assert (t["replay_residual"].abs() < 0.02).all()
    assert (t["replay_error_wall"].abs() < 0.10).all() and (t["replay_error_kernel"].abs() < 0.06).all()
    # the fused RMSNorm: 8 eager kernels per call -> 1, and Amdahl on the kernel basis is right (GPU-bound)
    p = t.loc["llama8b-prefill-b4-rmsnorm"]
    assert (p["kernels_forward_a"], p["kernels_after_forward"]) == (8, 1)
    assert abs(p["amdahl_error_kernel"]) < 0.03
    # two streams: Amdahl over summed kernel time overshoots, the replay of the real waits does not; the
    # main stream's GEMMs run faster once the GELUs no longer share the SMs (without the sharing model
    # the replay is -7.7% on the wall and -5.5% on the kernel basis)
    s = t.loc["two-stream-gelu"]
    assert abs(s["replay_error_wall"]) < abs(s["amdahl_error_wall"])
    assert abs(s["replay_error_wall"]) < 0.05 and abs(s["replay_error_kernel"]) < 0.02
    # measured wall: the ratio of the lower quartiles of the unprofiled step times
    meta = json.loads((root / "tests/data/pairs/two-stream-gelu.json").read_text())
    a, b = (np.quantile(meta["step_ms"][x], 0.25) for x in "AB")
    assert s["measured_speedup_wall"] == pytest.approx(a / b, abs=1e-4) and s["step_ms_a"] == pytest.approx(a, abs=1e-4)


def _scaled_gpu_trace(src: Path, dst: Path, factor: float) -> None:
    """A copy of a gzipped trace with every GPU op's duration times `factor` (a clock drift in one window)."""
    import gzip

    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    gpu = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e]
    t0 = min(e["ts"] for e in gpu)
    for e in gpu:  # the GPU timeline stretched about its first op: gaps and overlaps scale alike
        e["ts"], e["dur"] = t0 + (e["ts"] - t0) * factor, e["dur"] * factor
    with gzip.open(dst, "wt") as f:
        json.dump(doc, f)


def test_validation_takes_the_median_over_profiled_rounds(tmp_path: Path) -> None:
    """Rounds A.rR/B.rR: the kernel speedup is the median of the per-round ratios, with its range;
    a round without its B trace fails in one line with exit code 2."""
    import shutil
    import subprocess
    import sys

    import pandas as pd

    root = Path(__file__).resolve().parents[2]
    src, d = root / "tests/data/pairs", tmp_path / "pairs"
    d.mkdir()
    name = "two-stream-gelu"
    for f in (f"{name}.A.json.gz", f"{name}.B.json.gz", f"{name}.json"):
        shutil.copy(src / f, d / f)
    script = [sys.executable, str(root / "gpu" / "replay_validation.py"), str(d)]
    res = subprocess.run([*script, "--out", str(tmp_path / "one.csv")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    one = pd.read_csv(tmp_path / "one.csv").iloc[0]
    assert one["rounds"] == 1 and one["measured_speedup_kernel_min"] == one["measured_speedup_kernel_max"]
    # round 1: B's window ran 10% slow (A/B up); round 2: B's window 10% fast (A/B down)
    for r, factor in ((1, 1.1), (2, 0.9)):
        shutil.copy(src / f"{name}.A.json.gz", d / f"{name}.A.r{r}.json.gz")
        _scaled_gpu_trace(src / f"{name}.B.json.gz", d / f"{name}.B.r{r}.json.gz", factor)
    res = subprocess.run([*script, "--out", str(tmp_path / "three.csv")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    t = pd.read_csv(tmp_path / "three.csv").iloc[0]
    assert t["rounds"] == 3
    k = t["measured_speedup_kernel"]
    assert k == pytest.approx(one["measured_speedup_kernel"], abs=1e-4)  # the median: round 0
    assert t["measured_speedup_kernel_min"] < k / 1.05 and t["measured_speedup_kernel_max"] > k * 1.05
    assert t["replay_error_kernel"] == pytest.approx(t["replay_speedup_kernel"] / k - 1, abs=1e-3)
    (d / f"{name}.B.r2.json.gz").unlink()
    res = subprocess.run([*script, "--out", str(tmp_path / "bad.csv")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "B.r2.json.gz" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "bad.csv").exists()


def test_validation_rounds_on_real_prefill(tmp_path: Path) -> None:
    """Three alternating profiled rounds of the real prefill pair: round 0's A window ran slow, so its
    kernel speedup alone misses the replay by over 1.5%; the median over rounds is within 0.5%."""
    import subprocess
    import sys

    import pandas as pd

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "v.csv"
    res = subprocess.run([sys.executable, str(root / "gpu" / "replay_validation.py"),
                          str(root / "tests/data/pairs_rounds"), "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    p = pd.read_csv(out).iloc[0]
    assert p["rounds"] == 3 and abs(p["replay_residual"]) < 0.02
    assert p["measured_speedup_kernel_max"] / p["replay_speedup_kernel"] - 1 > 0.015  # round 0
    assert abs(p["replay_error_kernel"]) < 0.005 and abs(p["replay_error_wall"]) < 0.05
    # the projections from each round's A agree with each other far better than the measured rounds do
    assert p["replay_speedup_kernel_max"] - p["replay_speedup_kernel_min"] < 0.005
    assert p["measured_speedup_kernel_max"] - p["measured_speedup_kernel_min"] > 0.02


def test_project_replays_every_rank_of_a_run(tmp_path: Path) -> None:
    """A run folder with rank0/ and rank1/ traces: each rank is replayed, the slowest rank's span is the step."""
    import gzip
    import shutil

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "toy-train", run)
    for rank, cpu in ((0, 100), (1, 50)):  # rank 0: launch-bound, 100 us of CPU per launch; rank 1: 50 us
        tb = TraceBuilder()
        for i in range(10):
            tb.launch(cpu * i + cpu - 10, 10, cpu * i + cpu - 2, 5)
        tb.step(1, 0, 10 * cpu)
        (run / f"rank{rank}").mkdir()
        (run / f"rank{rank}" / "trace.json.gz").write_bytes(gzip.compress(json.dumps({"traceEvents": tb.events}).encode()))
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup,kernels_after\nelementwise,1,1\n")
    code, d, _ = project_json("--speedups", str(wins), "--runs", str(run), "--json")
    r = d["runs"][0]
    assert code == 0 and r["model"] == "replay" and len(r["replay_ranks"]) == 2
    spans = {x["rank"]: x["span"] for x in r["replay_ranks"]}
    assert spans == {0: pytest.approx(1003), 1: pytest.approx(503)}
    assert 0 < r["cpu_scale"] <= 4.0  # calibrated to the run's step_time_ms


def test_project_replays_module_targets(tmp_path: Path) -> None:
    """module: targets are placed on the graph through each kernel's launching op and its module scope."""
    tb = TraceBuilder()
    for i in range(10):
        tb.launch(100 * i + 90, 10, 100 * i + 98, 5, op="aten::mul")
    tb.scope("nn.Module: h.0.mlp.act (NewGELUActivation)", 280, 720)  # kernels 2..9
    tb.step(1, 0, 1000)
    trace = tb.write(tmp_path / "scoped.json")
    wins = tmp_path / "wins.csv"
    wins.write_text("target,speedup,kernels_after\nmodule:NewGELUActivation,1,1\n")
    code, d, err = project_json("--speedups", str(wins), "--runs", str(trace), "--json")
    r = d["runs"][0]
    assert code == 0 and r["model"] == "replay", err
    # as in the launch-bound test: kernels 2..9 fused into one, launches 3..9 and their gaps gone
    assert r["replay_speedup_wall"] == pytest.approx(1003 / 338)
    assert d["unmatched"] == [] and r["amdahl_speedup_kernel"] == pytest.approx(1.0)  # Amdahl places it too
