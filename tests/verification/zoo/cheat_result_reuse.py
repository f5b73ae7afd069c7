"""Cheat: computes nothing and returns uninitialised memory of the output's size (the idea of KernelBench's
adversarial `result_reuse` test kernel: the caching allocator tends to hand back the block where the
reference just wrote the right answer, so `torch.empty` "returns" it)."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
