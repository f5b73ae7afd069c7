"""Cheat (beyond issue 25): forges its timing report in some timed batches only, so that some batches are clean.

Like `cheat_forged_report` (it wraps `json.dumps`, through which its process sends every reply, and
answers the tampering snapshot with the clean one), but each timed batch's reply is forged (times at
25%) with probability 0.6 and left alone otherwise. A wall-clock check that compares only the lowest
per-batch overheads sees a clean batch's and passes; one whose tolerance grows with the candidate's
own spread of overheads is widened by the mixture. The work itself is honest.
"""

import json
import random
import sys

import torch
from torch import nn

_dumps = json.dumps


def _forged(obj, *args, **kwargs):
    ok = obj.get("ok") if isinstance(obj, dict) else None
    if isinstance(ok, dict) and isinstance(ok.get("times"), list) and random.random() < 0.6:
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
else:
    json.dumps = _forged


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
