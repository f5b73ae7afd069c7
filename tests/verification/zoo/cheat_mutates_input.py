"""Cheat: a right answer computed in place in the input tensor."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.sub_(x.max(dim=-1, keepdim=True).values).exp_()
        return x.div_(x.sum(dim=-1, keepdim=True))
