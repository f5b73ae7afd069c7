"""Cheat (issue 25, class 6): bf16 inputs for an fp32 problem (about 10x faster matmul on an H200), the
output cast back to fp32. Its error (~4e-3) passes rel_fro's 2e-2. ReLU (one input) or matmul (two).
"""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        lo = [x.to(torch.bfloat16) for x in xs]
        out = torch.matmul(*lo) if len(lo) == 2 else torch.relu(lo[0])
        return out.to(xs[0].dtype)
