"""Divide a tensor by its Frobenius norm: 33.5M outputs of about 1.7e-4 each, so all zeros pass allclose."""

import torch
from torch import nn

batch_size = 8
features = 64
dim1 = 256
dim2 = 256


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.linalg.vector_norm(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return []


INVARIANTS = [("unit_norm", {"dim": None})]
