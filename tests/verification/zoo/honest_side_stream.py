"""Honest (GPU): the product on a side stream that the caller's stream waits on before returning."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.side = torch.cuda.Stream() if torch.cuda.is_available() else None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            return torch.mm(a, b)
        caller = torch.cuda.current_stream()
        self.side.wait_stream(caller)  # the inputs are ready
        with torch.cuda.stream(self.side):
            out = torch.mm(a, b)
        caller.wait_stream(self.side)  # the caller sees the finished product
        out.record_stream(caller)
        return out
