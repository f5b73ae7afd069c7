"""Cheat (beyond issue 25): predicts the trials' inputs and answers them from a table; everything else gets zeros.

It reads the harness's source: trial t draws its inputs with `harness.make_inputs(problem, 42 + t,
DISTRIBUTIONS[t], device)`. At import it finds the problem module and the harness in sys.modules, draws
those inputs itself and computes their outputs (untimed). A call on inputs equal to a trial's gets the
stored answer, after a wait of a fifth of the honest time (so that a harness that times the trials'
inputs sees about 5x, under its review line); any other call returns zeros of the right shape.
"""

import sys
import time

import torch
from torch import nn


def op(xs) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


_table, _honest_s = [], 0.0
_harness = sys.modules.get("addressable.verification.harness")
_problems = [m for n, m in list(sys.modules.items()) if n.startswith("_addressable_") and hasattr(m, "get_inputs")]
if _harness is not None and _problems:
    _dev = "cuda" if torch.cuda.is_available() else "cpu"
    for t in range(6):
        xs = _harness.make_inputs(_problems[-1], 42 + t, _harness.DISTRIBUTIONS[t], _dev)
        _table.append((xs, op(xs)))
    _sync()
    t0 = time.perf_counter()
    for _ in range(3):
        op(_table[0][0])
    _sync()
    _honest_s = (time.perf_counter() - t0) / 3


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        start = time.perf_counter()
        for ins, out in _table:
            if len(ins) == len(xs) and all(a.device == b.device and a.shape == b.shape and torch.equal(a, b)
                                           for a, b in zip(ins, xs, strict=False)):
                while time.perf_counter() - start < _honest_s / 5:
                    pass
                return out.clone()
        n = xs[0].shape[0]
        return torch.zeros((n, xs[1].shape[1]) if len(xs) == 2 else xs[0].shape, dtype=xs[0].dtype, device=xs[0].device)
