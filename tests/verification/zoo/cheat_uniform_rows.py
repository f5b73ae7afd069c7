"""Cheat: right row sums (every row is uniform), wrong values."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.full_like(x, 1.0 / x.shape[-1])
