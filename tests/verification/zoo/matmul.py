"""Zoo problem: a square fp32 matrix product, KernelBench level-1 problem 1 (N = 4096), the target of its
adversarial test kernels. `--set N=...` shrinks it (CPU tests use N = 64)."""

import torch
from torch import nn

N = 4096


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
