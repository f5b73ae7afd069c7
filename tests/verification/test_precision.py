"""precision: errors against float64, the review bound, what a lower precision is consistent with, tl.dot's TF32."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from addressable.verification.precision import (
    consistent_with,
    float64_model,
    precision_check,
    round_to,
    rounding_errors,
    tl_dot_tf32,
)

ROOT = Path(__file__).resolve().parents[2]


def test_round_to_tf32_keeps_ten_mantissa_bits() -> None:
    x = torch.tensor([1.0 + 2**-10, 1.0 + 2**-11 + 2**-13, 1.0 + 2**-12, float("inf"), -3.0])
    r = round_to(x, "tf32")
    assert r.dtype == torch.float64
    assert r.tolist() == [1.0 + 2**-10, 1.0 + 2**-10, 1.0, float("inf"), -3.0]
    assert round_to(torch.tensor([1.0 + 2**-7]), "bf16").item() == 1.0 + 2**-7  # 7 mantissa bits
    assert round_to(torch.tensor([1.0 + 2**-7 + 2**-9]), "bf16").item() == 1.0 + 2**-7


def _matmul_errors() -> tuple[dict[str, float], list, list]:
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(256, 256, generator=g, dtype=torch.float64), torch.randn(256, 256, generator=g, dtype=torch.float64)
    out64 = [a @ b]
    return rounding_errors(lambda xs: [xs[0] @ xs[1]], [a, b], out64), [a, b], out64


def test_rounding_errors_order_the_precisions_and_classify() -> None:
    errs, (a, b), out64 = _matmul_errors()
    assert errs["tf32"] == errs["fp16"] and 8 * errs["tf32"] < errs["bf16"] * 2  # 3 mantissa bits apart
    rel = lambda c: float((c - out64[0]).norm() / out64[0].norm())  # noqa: E731
    tf32 = rel(round_to(a, "tf32") @ round_to(b, "tf32"))
    bf16 = rel((a.bfloat16() @ b.bfloat16()).double())
    assert consistent_with(tf32, errs) == "TF32 or fp16" and consistent_with(bf16, errs) == "bf16"
    assert consistent_with(1.0, errs) == "lower than bf16" and consistent_with(1e-3, {}) == "lower than bf16"


def test_precision_check_reviews_far_lower_precision_and_allows_what_is_asked() -> None:
    errs, _, _ = _matmul_errors()
    ok, summary = precision_check(2e-7, 1e-7, "float32", 100.0, None, None)
    assert ok["passed"] is True and summary["bound"] == pytest.approx(1e-5)
    exact, _ = precision_check(3e-6, 0.0, "float32", 100.0, None, None)  # an exact reference: u is the floor
    assert exact["passed"] is True and exact["threshold"] == pytest.approx(100 * 2**-24)
    low, summary = precision_check(errs["bf16"], 1e-7, "float32", 100.0, errs, None)
    assert low["passed"] is None and summary["consistent_with"] == "bf16"
    assert precision_check(errs["bf16"], 1e-7, "float32", 100.0, errs, "tf32")[0]["passed"] is None
    allowed, summary = precision_check(errs["bf16"], 1e-7, "float32", 100.0, errs, "bf16")
    assert allowed["passed"] is True and summary["allowed"] == "bf16" and summary["consistent_with"] == "bf16"
    assert precision_check(errs["tf32"], 1e-7, "float32", 1e6, errs, None)[0]["passed"] is True  # --precision-ratio


def test_float64_model_or_why_not() -> None:
    m, note = float64_model(torch.nn.Linear(3, 2))
    assert note == "" and m.weight.dtype == torch.float64
    assert float64_model(lambda x: x) == (None, "the reference is not an nn.Module")


def test_tl_dot_default_precision_is_found(tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    for body, tf32 in (("acc += tl.dot(a, b)", True), ("acc += tl.dot(a, b, input_precision='ieee')", False),
                       ("acc += tl.dot(a, b, allow_tf32=False)", False), ("acc += tl.dot(a, b, input_precision='tf32')", True),
                       ("acc += tl.sum(a * b)", False)):
        src.write_text(f"import triton.language as tl\ndef k(a, b, acc):\n    {body}\n")
        assert tl_dot_tf32(src) is tf32, body
    assert tl_dot_tf32(ROOT / "tests/verification/zoo/honest_triton_matmul.py")
    assert not tl_dot_tf32(ROOT / "addressable/dlrm_bench/candidates/06_dot_interaction.py")  # IEEE, as its docstring says
    src.write_bytes(b"\x89PNG\r\n")
    assert tl_dot_tf32(src) is False
