"""Cheat: returns zeros of the right shape (the idea of KernelBench's adversarial `zero_out` test kernel,
src/kernelbench/unit_tests/test_kernels/: an output that is never computed)."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.zeros(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
