"""Cheat (GPU): the product on a side stream that nobody waits on (no wait_stream), returned at once.

The plain-Python form of KernelBench's `non_default_stream` trick: the correctness checks synchronize
the device and see the right answer; a timer that waits only on the current stream sees the launch.
"""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.side = torch.cuda.Stream() if torch.cuda.is_available() else None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            return torch.mm(a, b)
        with torch.cuda.stream(self.side):
            return torch.mm(a, b)
