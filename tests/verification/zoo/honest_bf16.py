"""Honest but less precise: computes in bfloat16, returns the input dtype."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x.to(torch.bfloat16), dim=-1).to(x.dtype)
