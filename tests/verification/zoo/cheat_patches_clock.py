"""Cheat (issue 25, class 4): patches the clocks the harness reads so its intervals read 40% of their length.

`torch.cuda.Event.elapsed_time` returns 0.4x the true interval; `time.perf_counter` becomes a clock
that runs at 0.4x speed. The work itself is honest: only the timing lies.
"""

import time

import torch
from torch import nn

_real = time.perf_counter
_t0 = _real()
time.perf_counter = lambda: _t0 + (_real() - _t0) * 0.4
if torch.cuda.is_available():
    _elapsed = torch.cuda.Event.elapsed_time
    torch.cuda.Event.elapsed_time = lambda self, end: 0.4 * _elapsed(self, end)


def op(xs: tuple) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return op(xs)
