"""Misbehaves: fills the disk (one file, 1 MB at a time, until writing fails), then answers honestly."""

import contextlib

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with contextlib.suppress(OSError), open("filler.bin", "wb") as f:
            for _ in range(1 << 20):
                f.write(b"\0" * (1 << 20))
                f.flush()
        return torch.softmax(x, dim=-1)
