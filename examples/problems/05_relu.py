"""ReLU: outputs of order 1 and half of them exactly zero; all zeros do not pass allclose here."""

import torch
from torch import nn

batch_size = 4096
dim = 8192


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


INVARIANTS = ["nonnegative"]
