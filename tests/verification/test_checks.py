"""checks: the chunked comparisons give the whole-tensor answers; sketches bind every element of an output."""

from __future__ import annotations

import pytest
import torch

from addressable.verification import checks
from addressable.verification.checks import (
    Thresholds,
    compare_output,
    fresh_check,
    n_modified,
    one_thread,
    sketch,
    sketch_error,
)


def _whole(ref: torch.Tensor, cand: torch.Tensor) -> tuple[float, float]:
    r, c = ref.double(), cand.double()
    fin = torch.isfinite(r) & torch.isfinite(c)
    r0 = torch.where(torch.isfinite(r), r, 0.0)
    d = torch.where(fin, c, 0.0) - r0
    return float(d.norm() / r0.norm()), float(d.abs().max() / r0.abs().max())


def test_chunked_compare_matches_the_whole_tensor_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "_CHUNK", 1000)  # several chunks, a ragged last one
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(37, 101, generator=g)
    cand = ref + 1e-3 * torch.randn(37, 101, generator=g)
    cand[3, 4], cand[20, :7] = float("nan"), 0.0
    entries, errs = compare_output(ref, cand, cand.clone(), Thresholds(), ref.double() + 1e-9)
    rel, mx = _whole(ref, cand)
    assert entries["rel_fro"]["value"] == pytest.approx(rel) and entries["max_err"]["value"] == pytest.approx(mx)
    assert entries["finite"]["value"] == 1 and entries["sentinel"]["value"] == 0.0
    assert entries["written"]["value"] == pytest.approx(8 / ref.numel())
    assert errs[1] == pytest.approx(1e-9 * 37 ** 0.5 * 101 ** 0.5 / float(ref.double().norm()), rel=1e-3)
    other = cand.clone()
    other[0, :50] += 1
    assert compare_output(ref, cand, other, Thresholds())[0]["sentinel"]["value"] == pytest.approx(50 / ref.numel())
    assert compare_output(ref, cand[:3], cand, Thresholds()) == (
        {"shape": {"value": [3, 101], "threshold": [37, 101], "passed": False},
         "dtype": {"value": "float32", "threshold": "float32", "passed": True}}, None)


def test_fresh_and_n_modified_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "_CHUNK", 64)
    r0, r1 = torch.rand(500), torch.rand(500)
    assert fresh_check((r0, r0), (r1, r1), Thresholds())["passed"] is True
    assert fresh_check((r0, r0), (r1, r0), Thresholds())["value"] == pytest.approx(1.0)  # stale
    x = torch.rand(500)
    y = x.clone()
    y[::7] = float("nan")
    x[::7] = float("nan")
    y[1] += 1
    assert n_modified(y, x) == 1 and n_modified(y[:3], x) == 500


def test_one_thread_restores_the_thread_count() -> None:
    n = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == n


def test_a_sketch_estimates_the_norm_of_a_difference() -> None:
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(1024, 1024, generator=g)
    half = ref.clone()
    half[512:] = 0  # half the work
    noisy = ref + 1e-3 * torch.randn(1024, 1024, generator=g)
    s_ref = sketch(ref, key=7)
    assert s_ref.shape == (2048,) and s_ref.dtype == torch.float64
    est = sketch_error([sketch(half, 7)], [s_ref])
    true = float((half - ref).norm() / ref.norm())
    assert est == pytest.approx(true, rel=0.1)
    assert sketch_error([sketch(noisy, 7)], [s_ref]) == pytest.approx(1e-3, rel=0.15)
    assert sketch_error([sketch(ref.clone(), 7)], [s_ref]) == 0.0
    assert sketch(ref, 8).ne(s_ref).any()  # another key, other signs


def test_sketch_edge_cases() -> None:
    small = torch.arange(10.0)
    assert torch.equal(sketch(small, 1).abs(), small.double())  # up to 2048 elements: one per row
    ragged = torch.rand(2049 * 3 + 5)
    assert sketch(ragged, 1).numel() == (ragged.numel() + 3) // 4 + 0 or sketch(ragged, 1).numel() > 2000
    ints = torch.randint(0, 2**40, (5000,))
    assert sketch_error([sketch(ints, 2)], [sketch(ints.clone(), 2)]) == 0.0
    nan = torch.rand(4096)
    nan[5] = float("nan")
    s = sketch(nan, 2)
    assert bool(torch.isfinite(s).all())  # non-finite elements count as 0
    assert sketch_error([s], [sketch(torch.rand(4096), 2)]) > 0.1
    assert sketch_error([s], [s[:10]]) == float("inf") and sketch_error([s], []) == float("inf")
    assert sketch(torch.zeros(0), 1).numel() == 0
