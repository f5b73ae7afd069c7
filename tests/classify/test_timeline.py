"""Overlap-aware (timeline) accounting: hand-checked multi-stream traces, real traces, properties."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from addressable.classify.breakdown import breakdown_of_trace, classify_trace
from addressable.classify.ranks import aggregate_ranks, summarize_ranks
from addressable.classify.timeline import TimelineResult, format_overlap_note, timeline_accounting
from addressable.cli import main
from addressable.trace.reader import load_trace

GEMM = "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_TNT"  # gemm, library
NCCL = "ncclDevKernel_AllGather_RING_LL"  # communication, library
ELEM = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >"  # elementwise
NORM = "void at::native::layer_norm_kernel<float>"  # normalization, replaceable
NAMES = {"gemm": GEMM, "communication": NCCL, "elementwise": ELEM, "normalization": NORM}
BASE = 5115133000000.125  # a real-looking Kineto timestamp (µs)


def write_trace(path: Path, kernels: list[tuple], base: float = BASE) -> Path:
    """kernels: (name, start µs, dur µs, stream[, device]) -> a Kineto trace file at path."""
    events = []
    for i, (name, start, dur, stream, *dev) in enumerate(kernels):
        device = dev[0] if dev else 0
        args = {"stream": stream, "correlation": i + 1}
        if device is not None:
            args["device"] = device
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": device if device is not None else 0,
                       "tid": stream, "ts": base + start, "dur": dur, "args": args})
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def timeline(tmp_path: Path, kernels: list[tuple], name: str = "t.json", **kw) -> TimelineResult:
    b = classify_trace(write_trace(tmp_path / name, kernels, **kw))
    assert b.timeline is not None
    return b.timeline


def cat(t: TimelineResult, category: str) -> dict:
    row = t.categories[t.categories["category"] == category]
    assert len(row) == 1, category
    return row.iloc[0].to_dict()


def assert_cat(t: TimelineResult, category: str, **expected: float) -> None:
    row = cat(t, category)
    for key, value in expected.items():
        assert row[f"{key}_us"] == pytest.approx(value, abs=1e-9), (category, key)


def test_two_streams_gemm_under_nccl(tmp_path):
    t = timeline(tmp_path, [(GEMM, 0, 10, 7), (NCCL, 5, 10, 20), (ELEM, 20, 4, 7)])
    assert (t.span_us, t.busy_us, t.idle_us, t.summed_us) == (24, 19, 5, 24)
    assert t.streams_overlap and t.cross_stream_overlap_us == 5
    assert_cat(t, "gemm", summed=10, active=10, exclusive=5, overlapped=5, exposed=7.5)
    assert_cat(t, "communication", summed=10, active=10, exclusive=5, overlapped=5, exposed=7.5)
    assert_cat(t, "elementwise", summed=4, active=4, exclusive=4, overlapped=0, exposed=4)
    assert (t.communication_exposed_us, t.communication_overlapped_us) == (5, 5)
    assert t.addressable_fraction_exposed == pytest.approx(4 / 19)
    assert t.addressable_fraction_summed == pytest.approx(4 / 24)
    d = t.to_dict()
    assert d["busy_time_us"] == 19 and d["idle_time_us"] == 5 and d["streams_overlap"] is True
    assert d["exposed_category_time_us"] == {"gemm": 7.5, "communication": 7.5, "elementwise": 4}
    assert d["communication_exposed_us"] == 5 and d["communication_overlapped_us"] == 5


def test_three_way_overlap(tmp_path):
    # segments: [0,3) G | [3,6) G N | [6,9) G N E | [9,12) G E | [12,15) E
    t = timeline(tmp_path, [(GEMM, 0, 12, 7), (NCCL, 3, 6, 20), (ELEM, 6, 9, 21)])
    assert (t.span_us, t.busy_us, t.idle_us, t.summed_us) == (15, 15, 0, 27)
    assert t.cross_stream_overlap_us == 9
    assert_cat(t, "gemm", summed=12, active=12, exclusive=3, overlapped=9, exposed=3 + 1.5 + 1 + 1.5)
    assert_cat(t, "communication", summed=6, active=6, exclusive=0, overlapped=6, exposed=1.5 + 1)
    assert_cat(t, "elementwise", summed=9, active=9, exclusive=3, overlapped=6, exposed=1 + 1.5 + 3)
    assert (t.communication_exposed_us, t.communication_overlapped_us) == (0, 6)
    assert t.addressable_fraction_exposed == pytest.approx(5.5 / 15)


def test_nested_intervals_same_category(tmp_path):
    # segments: [0,5) A | [5,10) A B | [10,12) A | [12,14) A E | [14,20) A ; A, B gemm on two streams
    t = timeline(tmp_path, [(GEMM, 0, 20, 7), (GEMM, 5, 5, 8), (ELEM, 12, 2, 9)])
    assert (t.busy_us, t.summed_us, t.cross_stream_overlap_us) == (20, 27, 7)
    # two gemm kernels at once: the whole segment is gemm's, counted once
    assert_cat(t, "gemm", summed=25, active=20, exclusive=18, overlapped=2, exposed=5 + 5 + 2 + 1 + 6)
    assert_cat(t, "elementwise", summed=2, active=2, exclusive=0, overlapped=2, exposed=1)


def test_identical_intervals(tmp_path):
    t = timeline(tmp_path, [(GEMM, 0, 10, 7), (GEMM, 0, 10, 8), (NCCL, 0, 10, 20)])
    assert (t.span_us, t.busy_us, t.idle_us) == (10, 10, 0)
    assert_cat(t, "gemm", summed=20, active=10, exclusive=0, overlapped=10, exposed=20 / 3)
    assert_cat(t, "communication", summed=10, active=10, exclusive=0, overlapped=10, exposed=10 / 3)
    assert t.categories["exposed_us"].sum() == pytest.approx(t.busy_us)


def test_zero_duration_kernels(tmp_path):
    t = timeline(tmp_path, [(GEMM, 0, 10, 7), (ELEM, 5, 0, 20), (ELEM, 20, 0, 20)])
    assert (t.span_us, t.busy_us, t.idle_us, t.summed_us) == (20, 10, 10, 10)
    assert not t.streams_overlap and t.cross_stream_overlap_us == 0
    assert_cat(t, "gemm", summed=10, exclusive=10, overlapped=0, exposed=10)
    assert_cat(t, "elementwise", summed=0, active=0, exclusive=0, overlapped=0, exposed=0)


def test_touching_kernels_on_two_streams_do_not_overlap(tmp_path):
    t = timeline(tmp_path, [(GEMM, 0, 10.456, 7), (NCCL, 10.456, 3.001, 20), (ELEM, 13.457, 0.064, 7)])
    assert not t.streams_overlap
    assert t.busy_us == t.summed_us == t.span_us
    assert (t.categories["exposed_us"] == t.categories["summed_us"]).all()


def test_devices_are_swept_separately(tmp_path):
    t = timeline(tmp_path, [(GEMM, 0, 10, 7, 0), (NCCL, 5, 10, 20, 0),  # device 0: busy 15
                            (GEMM, 0, 4, 7, 1), (ELEM, 4, 6, 7, 1)])  # device 1: busy 10, no overlap
    dev = t.devices.set_index("device")
    assert dev.loc[0, "busy_us"] == 15 and dev.loc[1, "busy_us"] == 10
    assert dev.loc[0, "cross_stream_overlap_us"] == 5 and dev.loc[1, "cross_stream_overlap_us"] == 0
    assert dev.loc[1, "addressable_fraction_exposed"] == dev.loc[1, "addressable_fraction_summed"] == 0.6
    assert (t.busy_us, t.span_us, t.summed_us) == (25, 25, 30)
    assert t.addressable_fraction_exposed == pytest.approx(6 / 25)
    assert t.addressable_fraction_summed == pytest.approx(6 / 30)


def test_device_falls_back_to_pid(tmp_path):
    # no args.device: the pid (Kineto's GPU pid is the device index) separates the devices
    t = timeline(tmp_path, [(GEMM, 0, 10, 7, None), (GEMM, 0, 10, 7, None)])
    assert t.busy_us == 10 and len(t.devices) == 1
    kernels = [(GEMM, 0, 10, 7, 0), (GEMM, 0, 10, 7, 1)]
    path = write_trace(tmp_path / "pids.json", kernels)
    doc = json.loads(path.read_text())
    for e in doc["traceEvents"]:
        del e["args"]["device"]
    path.write_text(json.dumps(doc))
    t = classify_trace(path).timeline
    assert t.busy_us == 20 and len(t.devices) == 2 and not t.streams_overlap


def test_single_stream_exposed_equals_summed(tmp_path):
    kernels = [(GEMM, 0, 10.25, 7), (ELEM, 10.25, 3.125, 7), (NORM, 20, 7.5, 7), (NCCL, 30, 2.875, 7)]
    b = classify_trace(write_trace(tmp_path / "one.json", kernels))
    t = b.timeline
    assert not t.streams_overlap
    assert t.busy_us == t.summed_us
    assert t.summed_us == pytest.approx(b.total_time_us, rel=1e-15)
    assert (t.categories["exposed_us"] == t.categories["summed_us"]).all()
    assert (t.categories["exclusive_us"] == t.categories["summed_us"]).all()
    assert t.addressable_fraction_exposed == t.addressable_fraction_summed
    assert t.addressable_fraction_exposed == pytest.approx(b.addressable_fraction, rel=1e-12)
    assert t.communication_exposed_us == 2.875 and t.communication_overlapped_us == 0


def test_empty_work_rows():
    rows = pd.DataFrame({"ts": [], "dur": [], "category": [], "class": [], "device": [], "stream": []})
    t = timeline_accounting(rows)
    assert (t.busy_us, t.idle_us, t.span_us, t.addressable_fraction_exposed) == (0, 0, 0, 0)
    assert not t.streams_overlap and t.to_dict()["exposed_category_time_us"] == {}


def _union(starts: np.ndarray, ends: np.ndarray) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(zip(starts, ends, strict=True)):
        if cur_e is None or s > cur_e:
            total += 0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (0 if cur_e is None else cur_e - cur_s)


def test_real_traces(h200_traces):
    for name, path in h200_traces.items():
        trace = load_trace(path)
        b = breakdown_of_trace(trace)
        t = b.timeline
        assert not t.streams_overlap, name  # one stream per trace
        assert t.cross_stream_overlap_us == 0
        tc = t.categories.set_index("category")
        summed = b.categories.set_index("category")["time_us"].reindex(tc.index)
        assert tc["summed_us"].to_numpy() == pytest.approx(summed.to_numpy(), rel=1e-12)
        # a plain merge of the float intervals (ns timestamps held in float64 at 5e12 µs: ~1 ns error each)
        g = trace.gpu
        starts = g["ts"].to_numpy() - g["ts"].min()
        assert t.busy_us == pytest.approx(_union(starts, starts + g["dur"].to_numpy()), abs=0.05)
        assert t.span_us == pytest.approx((g["ts"] + g["dur"]).max() - g["ts"].min(), abs=0.01)
        assert t.categories["exposed_us"].sum() == pytest.approx(t.busy_us, rel=1e-12)
        if t.busy_us == t.summed_us:  # nothing overlaps at all: both bases identical
            assert (tc["exposed_us"] == tc["summed_us"]).all(), name
            assert t.addressable_fraction_exposed == t.addressable_fraction_summed
            assert t.addressable_fraction_exposed == pytest.approx(b.addressable_fraction, rel=1e-12)
        else:  # Hopper programmatic dependent launch: a few µs of same-stream overlap
            assert t.busy_us > 0.99 * t.summed_us, name
            assert t.addressable_fraction_exposed == pytest.approx(b.addressable_fraction, abs=0.01)
    if "llama8b4l_infer" in h200_traces:
        t = classify_trace(h200_traces["llama8b4l_infer"]).timeline
        assert t.busy_us == t.summed_us


def test_breakdown_json_and_cli(tmp_path):
    path = write_trace(tmp_path / "two.json", [(GEMM, 0, 10, 7), (NCCL, 5, 10, 20), (ELEM, 20, 4, 7)])
    runner = CliRunner()
    res = runner.invoke(main, ["classify", str(path), "--json", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    saved = json.loads((tmp_path / "run" / "breakdown.json").read_text())
    for d in (doc, saved):
        assert d["streams_overlap"] is True and d["busy_time_us"] == 19 and d["idle_time_us"] == 5
        assert d["addressable_fraction_exposed"] == pytest.approx(4 / 19)
        assert d["addressable_fraction"] == pytest.approx(4 / 24)  # summed basis unchanged
        assert d["exposed_category_time_us"]["communication"] == 7.5
        assert (d["communication_exposed_us"], d["communication_overlapped_us"]) == (5, 5)
    res = runner.invoke(main, ["classify", str(path)])
    assert res.exit_code == 0 and "Streams overlap" in res.output and "21.1%" in res.output
    note = format_overlap_note(classify_trace(path).timeline)
    assert note in res.output and note.startswith("Streams overlap: GPU busy 0.019 ms of 0.024 ms summed")
    res = runner.invoke(main, ["classify", str(path), "--basis", "exposed"])
    assert res.exit_code == 0 and "exposed basis" in res.output and "communication" in res.output
    one = write_trace(tmp_path / "one.json", [(GEMM, 0, 10, 7), (ELEM, 10, 4, 7)])
    res = runner.invoke(main, ["classify", str(one)])
    assert res.exit_code == 0 and "Streams overlap" not in res.output


def test_aggregate_ranks(tmp_path):
    ranks = [  # DDP-like: each rank computes, then waits in NCCL for the slowest (rank 0)
        [(GEMM, 0, 10, 7), (NCCL, 10, 2, 20)],
        [(GEMM, 0, 6, 7), (NCCL, 6, 6, 20)],
        [(GEMM, 0, 8, 7), (NCCL, 8, 4, 20), (ELEM, 12, 2, 7)],
    ]
    bs = [classify_trace(write_trace(tmp_path / f"r{i}.json", k)) for i, k in enumerate(ranks)]
    agg = aggregate_ranks(bs).set_index("category")
    assert agg.loc["gemm", "share_median"] == pytest.approx(8 / 14)
    assert agg.loc["gemm", "share_min"] == pytest.approx(6 / 12)
    assert agg.loc["gemm", "share_max"] == pytest.approx(10 / 12)
    assert agg.loc["gemm", "share_spread"] == pytest.approx(10 / 12 - 6 / 12)
    assert agg.loc["gemm", "time_us_median"] == 8
    # absent from ranks 0 and 1: counts as zero there
    assert agg.loc["elementwise", ["share_median", "share_min", "share_max"]].tolist() == pytest.approx([0, 0, 2 / 14])
    assert agg.loc["elementwise", "exposed_share_max"] == pytest.approx(2 / 14)
    assert agg.loc["elementwise", "class"] == "replaceable"
    s = summarize_ranks(bs)
    assert s.straggler.communication_us == [2, 6, 4]
    assert s.straggler.communication_spread_us == 4
    assert s.straggler.communication_spread_share == pytest.approx(4 / 12)
    assert s.straggler.likely_straggler_rank == 0
    assert s.ranks["communication_excess_us"].tolist() == [0, 4, 2]
    assert s.ranks["addressable_fraction_compute"].tolist() == pytest.approx([0, 0, 2 / 10])
    assert aggregate_ranks([]).empty


def test_aggregate_ranks_without_timelines(tmp_path):
    bs = [classify_trace(write_trace(tmp_path / f"r{i}.json", [(GEMM, 0, 10 + i, 7), (ELEM, 20, 2, 7)]))
          for i in range(2)]
    for b in bs:
        b.timeline = None
    agg = aggregate_ranks(bs)
    assert agg["exposed_share_median"].isna().all() and agg["share_median"].notna().all()


# --- properties -----------------------------------------------------------------------------

UNIT = 0.25  # µs; exact in binary, so a unit grid is an exact oracle
kernel = st.tuples(st.sampled_from(sorted(NAMES)), st.integers(0, 40), st.integers(0, 12),
                   st.integers(0, 3), st.integers(0, 1))


def oracle(kernels: list[tuple]) -> dict:
    """Brute force on the unit grid: every unit of time is one elementary segment."""
    out = {"busy": 0.0, "span": 0.0, "cross": 0.0, "cats": {}}
    for dev in {k[4] for k in kernels}:
        ks = [k for k in kernels if k[4] == dev]
        lo, hi = min(k[1] for k in ks), max(k[1] + k[2] for k in ks)
        out["span"] += (hi - lo) * UNIT
        for u in range(lo, hi):
            live = [k for k in ks if k[1] <= u < k[1] + k[2]]
            if not live:
                continue
            out["busy"] += UNIT
            out["cross"] += UNIT * (len({k[3] for k in live}) > 1)
            present = {k[0] for k in live}
            for c in present:
                n_c = sum(k[0] == c for k in live)
                acc = out["cats"].setdefault(c, dict.fromkeys(("exposed", "exclusive", "overlapped"), 0.0))
                acc["exposed"] += UNIT * n_c / len(live)
                acc["exclusive" if present == {c} else "overlapped"] += UNIT
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(kernel, min_size=1, max_size=12))
def test_properties(tmp_path, kernels):
    t = timeline(tmp_path, [(NAMES[c], s * UNIT, d * UNIT, stream, dev) for c, s, d, stream, dev in kernels])
    c = t.categories
    eps = 1e-9
    assert c["exposed_us"].sum() == pytest.approx(t.busy_us, abs=eps)
    assert t.busy_us <= t.summed_us + eps and t.busy_us <= t.span_us + eps
    assert t.idle_us == pytest.approx(t.span_us - t.busy_us, abs=eps) and t.idle_us >= -eps
    assert (c["exposed_us"] <= c["summed_us"] + eps).all()
    assert (c["exclusive_us"] <= c["exposed_us"] + eps).all()
    assert (c["exposed_us"] <= c["active_us"] + eps).all() and (c["active_us"] <= c["summed_us"] + eps).all()
    assert np.allclose(c["exclusive_us"] + c["overlapped_us"], c["active_us"])
    assert t.streams_overlap == (t.cross_stream_overlap_us > 0)
    if t.busy_us == t.summed_us:
        assert (c["exposed_us"] == c["summed_us"]).all()
        assert t.addressable_fraction_exposed == t.addressable_fraction_summed
    want = oracle(kernels)
    assert t.busy_us == pytest.approx(want["busy"], abs=eps)
    assert t.span_us == pytest.approx(want["span"], abs=eps)
    assert t.cross_stream_overlap_us == pytest.approx(want["cross"], abs=eps)
    got = c.set_index("category")
    for category, acc in want["cats"].items():
        for key, value in acc.items():
            assert got.loc[category, f"{key}_us"] == pytest.approx(value, abs=eps), (category, key)
    for category in set(got.index) - set(want["cats"]):  # only zero-length kernels
        assert got.loc[category, "exposed_us"] == 0 and got.loc[category, "summed_us"] == 0
