"""Breakdown details: work launched before recording, phases placed by launch time."""

from __future__ import annotations

import pandas as pd
import pytest

from addressable.classify.breakdown import launch_times, phase_times, recorded_gpu_work


def events(rows: list[tuple]) -> pd.DataFrame:
    cols = ["kind", "name", "ts", "dur", "external_id", "op"]
    df = pd.DataFrame(rows, columns=cols)
    df["external_id"] = df["external_id"].astype("Int64")
    return df


def test_spill_from_an_unrecorded_warmup_step_is_dropped() -> None:
    ev = events([
        ("gpu", "tail_of_warmup", 0.0, 5.0, None, None),       # launched before recording: dropped
        ("cpu_op", "aten::mm", 1.0, 2.0, 7, None),
        ("gpu", "gemm", 6.0, 4.0, 7, "aten::mm"),
        ("gpu", "Memset (Device)", 11.0, 1.0, None, None),     # after the first launched kernel: kept
    ])
    kept = recorded_gpu_work(ev)
    assert list(kept["name"]) == ["gemm", "Memset (Device)"]


def test_gpu_only_traces_keep_everything() -> None:
    ev = events([("gpu", "a", 0.0, 1.0, None, None), ("gpu", "b", 2.0, 1.0, None, None)])
    assert len(recorded_gpu_work(ev)) == 2


def test_kernels_are_placed_in_phases_by_their_launch_time() -> None:
    """A backward kernel can start on the GPU after the CPU's backward range has ended."""
    ev = events([
        ("cpu_op", "aten::mm", 1.0, 1.0, 1, None),             # launched in forward
        ("cpu_op", "aten::mm", 11.0, 1.0, 2, None),            # launched in backward (autograd thread)
        ("gpu", "gemm", 9.0, 3.0, 1, "aten::mm"),              # runs during CPU's backward range
        ("gpu", "gemm", 25.0, 3.0, 2, "aten::mm"),             # runs after every CPU range ended
    ])
    rows = ev[ev["kind"] == "gpu"].assign(category="gemm", **{"class": "library"})
    ann = pd.DataFrame({"name": ["phase:forward", "phase:backward"], "ts": [0.0, 10.0], "dur": [10.0, 10.0]})
    when = launch_times(ev, rows)
    assert list(when) == [1.0, 11.0]
    phases = phase_times(rows, ann, when).set_index("phase")["time_us"]
    assert phases.to_dict() == pytest.approx({"forward": 3.0, "backward": 3.0})
    by_gpu_start = phase_times(rows, ann).set_index("phase")["time_us"]
    assert by_gpu_start.to_dict() == {"forward": 3.0}  # what start-time placement would wrongly give
