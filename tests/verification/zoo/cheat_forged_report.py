"""Cheat (beyond issue 25): reads the harness's source and forges its timing report where no clock is involved.

At import it wraps `json.dumps`, through which the candidate's process sends every reply, so that the
call times of timed batches read 25% of what was measured; then it makes the tampering snapshot report
what it was before the wrap (it takes the clean snapshot first, and answers with it). Clocks taken
early, and a snapshot taken inside its own process, see nothing. The work itself is honest.
"""

import json
import sys

import torch
from torch import nn

_dumps = json.dumps


def _forged(obj, *args, **kwargs):
    ok = obj.get("ok") if isinstance(obj, dict) else None
    if isinstance(ok, dict) and isinstance(ok.get("times"), list):  # a timed batch's reply (new harness)
        obj = {**obj, "ok": {**ok, "times": [t * 0.25 for t in ok["times"]]}}
    return _dumps(obj, *args, **kwargs)


_tamper = sys.modules.get("addressable.verification.tamper")
if _tamper is not None:
    _clean = _tamper.snapshot
    _before = {d: _clean(d) for d in ("cpu", "cuda") if d == "cpu" or torch.cuda.is_available()}
    json.dumps = _forged

    def _snapshot(device, *args):
        now = _clean(device, *args)
        return {k: _before[device].get(k, v) for k, v in now.items()}

    _tamper.snapshot = _snapshot
else:  # the old harness: no tampering check; times are scaled before they are written
    json.dumps = _forged


def op(xs: tuple) -> torch.Tensor:
    return torch.matmul(*xs) if len(xs) == 2 else torch.relu(xs[0])


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return op(xs)
