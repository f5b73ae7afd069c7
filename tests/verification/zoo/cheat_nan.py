"""Cheat (or bug): every 97th element is NaN."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.softmax(x, dim=-1)
        out[..., ::97] = float('nan')
        return out
