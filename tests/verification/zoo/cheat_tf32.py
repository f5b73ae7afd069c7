"""Cheat (issue 25, class 5, GPU): TF32 tensor cores for the fp32 matmul, the global flag restored afterwards.

On the CPU, TF32 does not exist and this is an honest torch.matmul.
"""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.matmul(a, b)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
