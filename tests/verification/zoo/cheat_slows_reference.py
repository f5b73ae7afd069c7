"""Cheat (beyond issue 25): makes the reference slower instead of itself faster.

A global nn.Module forward hook (registered at import) spins for as long again as every forward of
a module that is not this candidate's took, so wherever the reference is timed in the candidate's
process it takes twice as long; the candidate itself is an honest ReLU or matmul.
"""

import time

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

_started = {}


def _pre(module, args):
    _started[id(module)] = time.monotonic()


def _post(module, args, out):
    if type(module).__name__ != "ModelNew" and id(module) in _started:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        spent = time.monotonic() - _started.pop(id(module))
        end = time.monotonic() + spent
        while time.monotonic() < end:
            pass
    return out


register_module_forward_pre_hook(_pre)
register_module_forward_hook(_post)


def op(xs: tuple) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return op(xs)
