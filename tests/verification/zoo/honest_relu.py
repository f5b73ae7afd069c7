"""Honest: clamp_min(0) for a ReLU problem (examples/problems/05_relu.py)."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp_min(0)
