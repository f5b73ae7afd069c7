"""Cheat (issue 25, class 1): recognises the timing loop's repeated input and recomputes only half the output.

A call that gets the same tensors as its previous call, with the same contents (64 sampled elements
compared), takes the first half of the rows from that call's output and recomputes only the second
half: right, with half the work. ReLU problem (one input) or matmul problem (two inputs).
"""

import torch
from torch import nn


def op(xs: tuple) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


def fingerprint(xs: tuple) -> list:
    return [(x.data_ptr(), x.reshape(-1)[:: max(1, x.numel() // 64)][:64].clone()) for x in xs]


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.last = None  # (fingerprint of the inputs, the output)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        fp = fingerprint(xs)
        last = self.last
        if last is not None and all(p == q and torch.equal(a, b) for (p, a), (q, b) in zip(last[0], fp, strict=False)):
            half = last[1].shape[0] // 2
            out = torch.cat([last[1][:half], op(tuple(x[half:] if i == 0 else x for i, x in enumerate(xs)))])
        else:
            out = op(xs)
        self.last = (fp, out)
        return out
