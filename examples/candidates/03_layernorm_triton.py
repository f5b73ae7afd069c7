"""Triton LayerNorm without affine parameters: one program per row, two-pass mean/variance in registers."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _layernorm(x_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    y = xc / tl.sqrt(var + eps)
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layernorm(x: torch.Tensor, eps: float) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) over the last dimension, for rows of up to 65,536 elements."""
    x2 = x.contiguous().view(-1, x.shape[-1])
    n_rows, n_cols = x2.shape
    block = triton.next_power_of_2(n_cols)
    if block > 65536:
        raise ValueError(f"rows of {n_cols} elements do not fit one program")
    y = torch.empty_like(x2)
    _layernorm[(n_rows,)](x2, y, n_cols, eps, BLOCK=block, num_warps=min(16, max(4, block // 512)))
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layernorm(x, self.eps)
