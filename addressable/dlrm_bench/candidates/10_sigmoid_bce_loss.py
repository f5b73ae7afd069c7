"""Triton candidate for 10: BCE-with-logits mean in one single-program launch.

The batch is small (16K logits, 64 KB), so one program streams it in BLOCK chunks, accumulates
max(x, 0) - x * y + log(1 + exp(-|x|)) in fp32 and writes the mean: one launch instead of the
eager reference's chain of elementwise kernels and a reduction, and a deterministic sum order.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _bce_mean(logits, labels, out, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK)
        ok = i < n
        x = tl.load(logits + i, mask=ok, other=0.0).to(tl.float32)
        y = tl.load(labels + i, mask=ok, other=0.0).to(tl.float32)
        loss = tl.maximum(x, 0.0) - x * y + tl.log(1.0 + tl.exp(-tl.abs(x)))
        acc += tl.where(ok, loss, 0.0)
    tl.store(out, tl.sum(acc, axis=0) / n)


class ModelNew(nn.Module):
    """Same signature as the problem's Model: forward(logits, labels) -> 0-d mean loss."""

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        out = torch.empty((), device=logits.device, dtype=torch.float32)
        _bce_mean[(1,)](logits.contiguous(), labels.contiguous(), out, logits.numel(), BLOCK=2048,
                        num_warps=8)
        return out.to(logits.dtype)
