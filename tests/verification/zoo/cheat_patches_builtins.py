"""Cheat (beyond issue 25): monkeypatches the builtin `max` so that the harness's own arithmetic on the
candidate's times reads 40% of them.

The harness computes a CUDA interval as max(elapsed - overhead, tiny). The patched `max` looks at its
caller's frame: when the model being timed there is this candidate (a local holding it, or
models[k]), the result is scaled by 0.4. Everything else is the builtin. The work is honest.
"""

import builtins
import sys

import torch
from torch import nn

_max = builtins.max


def _timing_me(frame) -> bool:
    local = frame.f_locals
    models, k = local.get("models"), local.get("k")
    if isinstance(models, dict) and type(models.get(k)).__name__ == "ModelNew":
        return True
    return any(type(v).__name__ == "ModelNew" for v in list(local.values()))


def _patched(*args, **kwargs):
    out = _max(*args, **kwargs)
    if isinstance(out, float) and _timing_me(sys._getframe(1)):
        return out * 0.4
    return out


builtins.max = _patched


def op(xs: tuple) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return op(xs)
