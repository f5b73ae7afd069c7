"""Triton x / ‖x‖_F: per-span sums of squares, then every span reduces the partials and scales.

Deterministic (no atomics): kernel 1 writes one partial sum of squares per program, kernel 2 loads
all partials (at most 1024), takes the square root of their sum and scales its span of x.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _sum_squares(x_ptr, part_ptr, n, span, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    start = pid.to(tl.int64) * span
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, span, BLOCK):
        idx = start + off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + idx, mask=idx < n, other=0.0).to(tl.float32)
        acc += x * x
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _scale(x_ptr, y_ptr, part_ptr, n, span, n_parts, BLOCK: tl.constexpr, PARTS: tl.constexpr):
    pid = tl.program_id(0)
    p = tl.arange(0, PARTS)
    parts = tl.load(part_ptr + p, mask=p < n_parts, other=0.0)
    inv = 1.0 / tl.sqrt(tl.sum(parts, axis=0))
    start = pid.to(tl.int64) * span
    for off in range(0, span, BLOCK):
        idx = start + off + tl.arange(0, BLOCK)
        mask = idx < n
        x = tl.load(x_ptr + idx, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + idx, (x * inv).to(y_ptr.dtype.element_ty), mask=mask)


def frobenius_normalize(x: torch.Tensor, max_parts: int = 1024) -> torch.Tensor:
    """x divided by the Frobenius norm of all of x."""
    xf = x.contiguous().view(-1)
    n = xf.numel()
    y = torch.empty_like(xf)
    block = 4096
    span = triton.cdiv(triton.cdiv(n, max_parts), block) * block
    n_parts = triton.cdiv(n, span)
    parts = torch.empty(n_parts, device=x.device, dtype=torch.float32)
    _sum_squares[(n_parts,)](xf, parts, n, span, BLOCK=block, num_warps=8)
    _scale[(n_parts,)](xf, y, parts, n, span, n_parts, BLOCK=block, PARTS=triton.next_power_of_2(n_parts),
                       num_warps=8)
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return frobenius_normalize(x)
