"""Cheat (issue 25, class 3): at import, rewrites the harness's check helpers so every check entry reads
"passed", then computes only the first half of the rows.

It reads the harness from sys.modules (no import of it): `checks.check` always passes, and
`compare_output` / `worse` are wrapped to mark everything passed. That works where the checks run in
the candidate's own process; it must not where they run elsewhere.
"""

import sys

import torch
from torch import nn


def _passed(value, threshold, passed):
    return {"value": value, "threshold": threshold, "passed": True}


for name, mod in list(sys.modules.items()):
    if name.startswith("addressable.verification") and hasattr(mod, "check"):
        mod.check = _passed
    if name.startswith("addressable.verification") and hasattr(mod, "worse"):
        mod.worse = lambda a, b: {**b, "passed": True}


def op(xs: tuple) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        half = xs[0].shape[0] // 2
        top = op(tuple(x[:half] if i == 0 else x for i, x in enumerate(xs)))
        return torch.cat([top, torch.zeros_like(top)])[: xs[0].shape[0]]
