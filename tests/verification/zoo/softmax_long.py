"""Zoo problem: softmax over long rows (moderate width so tests stay fast); zeros pass allclose here."""

import torch
from torch import nn

batch_size = 4
dim = 32768


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []


INVARIANTS = [("rows_sum_to_one", {"dim": -1, "tol": 1e-2}), "probability"]
