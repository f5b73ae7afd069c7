"""Triton RMSNorm: one program per row, the row held in registers, one read and one write of x."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x * rsqrt(mean(x², -1) + eps) * weight, for rows of up to 65,536 elements."""
    x2 = x.contiguous().view(-1, x.shape[-1])
    n_rows, n_cols = x2.shape
    block = triton.next_power_of_2(n_cols)
    if block > 65536:
        raise ValueError(f"rows of {n_cols} elements do not fit one program")
    y = torch.empty_like(x2)
    _rmsnorm[(n_rows,)](x2, weight.contiguous(), y, n_cols, eps, BLOCK=block,
                        num_warps=min(16, max(4, block // 512)))
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm(x, self.weight, self.eps)
