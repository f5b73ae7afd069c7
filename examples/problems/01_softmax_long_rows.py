"""Softmax over very long rows: every output is near 1/393,216, so all zeros pass allclose(atol=1e-2)."""

import torch
from torch import nn

batch_size = 64
dim = 393216


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []


INVARIANTS = ["rows_sum_to_one", "probability"]
