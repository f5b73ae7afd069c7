"""Raises on call, as a Triton kernel with a compile error does."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError('triton.compiler.errors.CompilationError: at 3:4: unsupported op')
