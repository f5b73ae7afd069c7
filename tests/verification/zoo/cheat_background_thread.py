"""Cheat (beyond issue 25): after ten honest calls, returns at once and lets a thread finish the output.

From the eleventh call on, it computes the first half of the rows and starts a thread for the rest, so
a timed interval sees half the work; the thread fills in the second half a moment after the call has
returned. A harness that checks only its first calls and reads the clock when the call returns sees
the right answer and half the time. ReLU problem (one input) or matmul problem (two inputs).
"""

import threading
import time

import torch
from torch import nn


def op(xs: tuple) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls <= 10:
            return op(xs)
        half = xs[0].shape[0] // 2
        top = op(tuple(x[:half] if i == 0 else x for i, x in enumerate(xs)))
        out = torch.empty((xs[0].shape[0], *top.shape[1:]), dtype=top.dtype, device=top.device)
        out[:half] = top
        rest = tuple(x[half:].clone() if i == 0 else x.clone() for i, x in enumerate(xs))

        def finish() -> None:
            time.sleep(1e-3)
            out[half:] = op(rest)

        threading.Thread(target=finish, daemon=True).start()
        return out
