"""Cheat (GPU, aimed at the timing backlog): half the product on a side stream that starts during the backlog.

`verify` keeps the GPU busy before each timed call (a backlog) so that the host's dispatch stays out
of the timed interval. This candidate spends 1 ms on the host at the start of every call, which makes
the backlog long (twice the slower model's host time, at most 2 ms), then launches the first half of
the rows on a side stream that does not wait for the caller's stream: that half runs beside the
backlog, before the interval opens. The second half runs on the caller's stream, which then waits for
the side stream, so no work escapes a synchronize and the profiled call shows a stream the caller
waits on. The backlog (a one-thread spin) leaves the SMs idle, so the first half runs unseen by the
timed interval and the wall clock alike. What catches it is the profiled call: there a marker holds
the caller's stream for longer than any backlog, and side-stream work that starts before the caller's
stream reaches the call did not wait for its inputs' producer (`stream_escape`).
"""

import time

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.side = torch.cuda.Stream() if torch.cuda.is_available() else None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            return torch.mm(a, b)
        end = time.perf_counter() + 1e-3
        while time.perf_counter() < end:  # the inputs' draw and the flush finish meanwhile
            pass
        half = a.shape[0] // 2
        out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        with torch.cuda.stream(self.side):
            torch.mm(a[:half], b, out=out[:half])
        torch.mm(a[half:], b, out=out[half:])
        torch.cuda.current_stream().wait_stream(self.side)
        return out
