"""Zoo problem: sum-pooled embedding bags; integer indices and sorted offsets, a custom invariant."""

import torch
from torch import nn

num_rows = 1000
dim = 64
bags = 32
per_bag = 8


class Model(nn.Module):
    def __init__(self, num_rows: int, dim: int) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(num_rows, dim, mode="sum")

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.bag(indices, offsets)


def get_inputs():
    indices = torch.randint(0, num_rows, (bags * per_bag,))
    offsets = torch.arange(0, bags * per_bag, per_bag)
    return [indices, offsets]


def get_init_inputs():
    return [num_rows, dim]


def check_invariants(inputs, output):
    return {"one_row_per_bag": output.shape[0] == inputs[1].shape[0], "no_nan": float(output.isnan().sum())}
