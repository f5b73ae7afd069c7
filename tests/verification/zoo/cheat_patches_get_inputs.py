"""Cheat (beyond issue 25's list, against the `problem` timed inputs): rewrites the problem's get_inputs.

Timed calls draw the problem's own get_inputs() under each fresh seed. At import this candidate finds the
problem module the harness loaded in its process and wraps get_inputs: called for a timed draw (from
`fresh.problem_draw`), it returns one fixed draw, so the timed inputs repeat, while the trials' draws stay
true, so the trials pass. It then serves a repeated input from the output it computed last time (no work).
The checker draws the timed inputs in its own process, where get_inputs is untouched.
"""

import sys

import torch
from torch import nn


def _wrap(get):
    fixed: list = []

    def get_inputs():
        if sys._getframe(1).f_code.co_name != "problem_draw":
            return get()
        if not fixed:
            fixed.extend(get())
        return [t.clone() if isinstance(t, torch.Tensor) else t for t in fixed]
    return get_inputs


for _mod in list(sys.modules.values()):
    if callable(getattr(_mod, "get_inputs", None)) and getattr(_mod, "__name__", "").startswith("_addressable_"):
        _mod.get_inputs = _wrap(_mod.get_inputs)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.last: tuple[torch.Tensor, torch.Tensor] | None = None  # (input, output)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.last is not None and self.last[0].shape == x.shape and torch.equal(self.last[0], x):
            return self.last[1]
        out = torch.relu(x)
        self.last = (x.clone(), out)
        return out
