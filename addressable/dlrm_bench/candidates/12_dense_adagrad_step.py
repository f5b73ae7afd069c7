"""Triton candidate for 12: the whole dense Adagrad step as one elementwise pass over flat buffers.

The per-tensor split only matters to multi_tensor_apply; over flat buffers every element is
independent, so one kernel reads p, g, s once and writes the new p and s into the output halves
(the reference makes a copy, then runs four foreach passes over it).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _adagrad(param, grad, state_sum, out, n, lr, eps, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    p = tl.load(param + i, mask=ok)
    g = tl.load(grad + i, mask=ok)
    s = tl.load(state_sum + i, mask=ok) + g * g
    tl.store(out + n + i, s, mask=ok)
    tl.store(out + i, p - lr * g / (tl.sqrt(s) + eps), mask=ok)


class ModelNew(nn.Module):
    """Same constructor and forward signature as the problem's Model."""

    def __init__(self, sizes: list[int], lr: float, eps: float) -> None:
        super().__init__()
        self.sizes, self.lr, self.eps = list(sizes), lr, eps

    def forward(self, param: torch.Tensor, grad: torch.Tensor, state_sum: torch.Tensor) -> torch.Tensor:
        n = param.numel()
        out = torch.empty(2 * n, device=param.device, dtype=param.dtype)
        block = 1024
        _adagrad[(triton.cdiv(n, block),)](param.contiguous(), grad.contiguous(), state_sum.contiguous(), out,
                                           n, self.lr, self.eps, BLOCK=block, num_warps=4)
        return out
