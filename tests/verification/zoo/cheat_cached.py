"""Cheat: returns the output computed on its first call forever after."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cache = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.cache is None:
            self.cache = torch.softmax(x, dim=-1)
        return self.cache
