"""Cheat (beyond issue 25): a signal timer that slows the reference wherever it runs beside the candidate.

SIGALRM fires every millisecond; its handler spins for 1 ms whenever the interrupted code is the
forward of a module that is not this candidate's (the reference), so a reference timed in the
candidate's process takes about twice as long. The candidate itself is honest.
"""

import signal
import time

import torch
from torch import nn


def _handler(sig, frame):
    while frame is not None:
        me = frame.f_locals.get("self") if frame.f_code.co_name == "forward" else None
        if isinstance(me, nn.Module) and type(me).__name__ != "ModelNew":
            end = time.monotonic() + 1e-3
            while time.monotonic() < end:
                pass
            return
        frame = frame.f_back


signal.signal(signal.SIGALRM, _handler)
signal.setitimer(signal.ITIMER_REAL, 1e-3, 1e-3)


def op(xs: tuple) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return op(xs)
