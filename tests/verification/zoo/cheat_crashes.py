"""Crashes the process (as a bad CUDA kernel can)."""

import os

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        os._exit(3)
