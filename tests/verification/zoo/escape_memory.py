"""Misbehaves: a memory hog (1 GB blocks without bound)."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hoard = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while True:
            self.hoard.append(torch.empty(1 << 30, dtype=torch.uint8))
