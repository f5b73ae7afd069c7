"""Misbehaves below Python: writes into the checkout through libc, which no Python-level guard sees."""

import ctypes
import os
from pathlib import Path

import torch
from torch import nn

TARGET = Path(__file__).resolve().parents[2] / "ESCAPED_THROUGH_LIBC.txt"


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.open(str(TARGET).encode(), os.O_WRONLY | os.O_CREAT, 0o644)
        if fd >= 0:
            libc.write(fd, b"escaped\n", 8)
            libc.close(fd)
        return torch.softmax(x, dim=-1)
