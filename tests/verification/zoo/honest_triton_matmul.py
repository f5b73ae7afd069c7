"""Honest (GPU): a plain Triton fp32 matmul with `tl.dot`'s default input precision, which is TF32 on fp32
inputs: it must be reported as TF32 (review, or pass with --allow-precision tf32), not passed silently.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, n, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * n + rk[None, :], mask=(rm[:, None] < n) & (rk[None, :] < n), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * n + rn[None, :], mask=(rk[:, None] < n) & (rn[None, :] < n), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc, mask=(rm[:, None] < n) & (rn[None, :] < n))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.shape[0]
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty((n, n), device=a.device, dtype=torch.float32)
        block = 64
        _mm[(triton.cdiv(n, block), triton.cdiv(n, block))](a, b, c, n, BLOCK=block, BK=32)
        return c
