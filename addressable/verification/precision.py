"""Precision: the candidate's error against a float64 reference, beside the reference's own error.

Every trial also runs the reference in float64 (a float64 copy of the model on float64 copies of
the floating inputs), or at the problem's own dtype where float64 is not supported (the copy or
the run raises, or its parameters would take more than `MAX_FLOAT64_BYTES`). The check
``precision`` compares the candidate's relative Frobenius error against that output, e_c, with
the reference's own error at the problem's dtype, e_r:

    bound = precision_ratio × max(e_r, u)       (u: the unit roundoff of the output dtype)

A candidate with e_c above the bound gets the verdict ``review``: "lower precision than the
reference", with the precision it is consistent with. That is found by rounding the reference's
inputs and output to each lower precision P (TF32: a 10-bit mantissa; fp16; bf16) and measuring
the error e_P that rounding alone causes: the candidate is consistent with the highest P for which
e_c <= 4 e_P. ``--allow-precision P`` accepts e_c up to 4 e_P knowingly (it is still reported).

Triton's `tl.dot` rounds fp32 inputs to TF32 unless told otherwise (`input_precision="ieee"`
or `"tf32x3"`, or `allow_tf32=False`); `tl_dot_tf32` finds such calls in a candidate's source, so the
reason can name the cause.
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Any

from addressable.verification.checks import check
from addressable.verification.harness import map_tensors, tensors

ALLOWED = ("tf32", "fp16", "bf16")
NAMES = {"tf32": "TF32 or fp16", "fp16": "TF32 or fp16", "bf16": "bf16"}
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
MAX_FLOAT64_BYTES = 8 << 30
CONSISTENT = 4.0  # e_c <= CONSISTENT × e_P: consistent with precision P


def float64_model(model: Any) -> tuple[Any, str]:
    """A float64 copy of the reference model, or (None, why not)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return None, "the reference is not an nn.Module"
    size = sum(t.numel() for t in [*model.parameters(), *model.buffers()] if t.is_floating_point()) * 8
    if size > MAX_FLOAT64_BYTES:
        return None, f"its float64 copy would take {size / 2**30:.1f} GB"
    try:
        return copy.deepcopy(model).double(), ""
    except Exception as e:
        return None, f"it cannot be copied to float64 ({type(e).__name__})"


def as_float64(inputs: list) -> list:
    """The inputs with every floating tensor as float64."""
    import torch

    return map_tensors(inputs, lambda t: t.to(torch.float64) if t.is_floating_point() else t)


def round_to(t: Any, precision: str) -> Any:
    """A floating tensor rounded to `precision` (tf32: fp32 with a 10-bit mantissa, nearest even), as float64."""
    import torch

    if precision == "fp16":
        return t.to(torch.float16).to(torch.float64)
    if precision == "bf16":
        return t.to(torch.bfloat16).to(torch.float64)
    i = t.to(torch.float32).view(torch.int32)
    i = (i + 0x0FFF + ((i >> 13) & 1)) & ~0x1FFF
    return torch.where(torch.isfinite(t), i.view(torch.float32).to(torch.float64), t.to(torch.float64))


def _rel(a: Any, b: Any) -> float:
    import torch

    ok = torch.isfinite(a) & torch.isfinite(b)
    den = float(torch.linalg.vector_norm(torch.where(ok, b, 0.0)))
    return float(torch.linalg.vector_norm(torch.where(ok, a - b, 0.0))) / (den or 1.0)


def rounding_errors(run64: Any, inputs: list, out64: list) -> dict[str, float]:
    """e_P for each precision P: the error of the float64 reference on inputs rounded to P, its output rounded to P."""
    errs = {}
    for p in ("tf32", "bf16"):
        rounded = map_tensors(inputs, lambda t, p=p: round_to(t, p) if t.is_floating_point() else t)
        outs = run64(rounded)
        errs[p] = max((_rel(round_to(o, p), r) for o, r in zip(outs, out64, strict=True) if r.is_floating_point()),
                      default=0.0)
    errs["fp16"] = errs["tf32"]  # the same 10-bit mantissa
    return errs


def consistent_with(err_c: float, errs: dict[str, float]) -> str:
    """The highest lower precision the candidate's error is consistent with, in words."""
    for p in ("tf32", "bf16"):
        if err_c <= CONSISTENT * errs.get(p, 0.0):
            return NAMES[p]
    return "lower than bf16"


def precision_check(err_c: float, err_r: float, dtype: str, ratio: float, errs: dict[str, float] | None,
                    allow: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The `precision` check entry and its summary, from one trial's errors against float64.

    `errs` (the e_P, see `rounding_errors`) is needed only when e_c exceeds the bound."""
    bound = ratio * max(err_r, UNIT_ROUNDOFF.get(dtype, 2.0**-24))
    summary: dict[str, Any] = {"candidate_error": err_c, "reference_error": err_r, "bound": bound,
                               "consistent_with": "", "allowed": allow or ""}
    if err_c <= bound:
        return check(err_c, bound, True), summary
    summary["consistent_with"] = consistent_with(err_c, errs or {})
    limit = CONSISTENT * (errs or {}).get(allow or "", 0.0)
    return check(err_c, max(bound, limit) if allow else bound, True if err_c <= limit else None), summary


def tl_dot_tf32(path: str | Path) -> bool:
    """Whether a candidate calls Triton's `dot` without asking for IEEE (or tf32x3) precision."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dot" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in ("tl", "language"):
            kw = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
            exact = kw.get("input_precision") in ("ieee", "tf32x3")
            off = kw.get("allow_tf32") is False
            if not (exact or off):
                return True
    return False


def floating(outputs: list) -> bool:
    """Whether any output is floating (precision applies)."""
    return any(t.is_floating_point() for t in tensors(outputs))
