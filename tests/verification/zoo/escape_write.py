"""Misbehaves: writes files outside its scratch folder (the checkout, /tmp, the real home), then answers honestly."""

import contextlib
import os
import pwd
from pathlib import Path

import torch
from torch import nn

TARGETS = [Path(__file__).resolve().parents[2] / "ESCAPED_BY_CANDIDATE.txt",
           Path("/tmp") / f"addressable-escaped-{os.getuid()}.txt",
           Path(pwd.getpwuid(os.getuid()).pw_dir) / "ESCAPED_BY_CANDIDATE.txt"]


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for t in TARGETS:
            with contextlib.suppress(OSError):
                t.write_text("a candidate was here\n")
        return torch.softmax(x, dim=-1)
