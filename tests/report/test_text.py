"""Terminal tables (addressable.report.text)."""

from __future__ import annotations

from pathlib import Path

from addressable.classify.breakdown import classify_trace
from addressable.report.text import format_breakdown, short_kernel_names


def test_largest_replaceable_kernels_never_look_alike(h200_traces: dict[str, Path]) -> None:
    """Two different kernels both shortened to "elementwise: mul": each gets its template arguments."""
    b = classify_trace(h200_traces["llama8b4l_infer"])
    text = format_breakdown(b, 5)
    rows = text.split("Largest replaceable kernels:\n")[1].splitlines()
    assert len(rows) == 5 and len(set(rows)) == 5
    muls = [r for r in rows if "elementwise: mul" in r]
    assert len(muls) == 2 and all("elementwise: mul <128, " in r for r in muls)
    assert "elementwise: add" in text and "elementwise: add <" not in text  # a name that is unique stays short


def test_short_kernel_names_keep_unique_names_as_before() -> None:
    names = ["void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, "
             "float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, ...>)", "triton_poi_fused_0"]
    assert short_kernel_names(names) == ["reduce: mean", "triton_poi_fused_0"]
