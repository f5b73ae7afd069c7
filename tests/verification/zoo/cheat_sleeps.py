"""Hangs: sleeps far longer than any timeout."""

import time

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(600)
        return torch.softmax(x, dim=-1)
