"""Cheat: writes only the first row of an uninitialised output."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        out[:1] = torch.softmax(x[:1], dim=-1)
        return out
