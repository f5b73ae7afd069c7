"""Cheat (beyond issue 25): writes the verdict itself and leaves before any check runs.

A harness whose candidate process writes its own result file (`result.json`, named on its command
line) and whose parent trusts that file can be told "pass, 5x" by any candidate: this one writes that
file at import and ends the process with os._exit(0). Where the parent computes the verdict, it
sends a forged "everything passed" reply on the reply pipe instead, then ends, which must be a fail.
"""

import json
import os
import sys

from torch import nn

_args = sys.argv[1:]
_fake = {"verdict": "pass", "reason": "", "checks": {}, "trials": [], "speedup": 5.0, "speedup_lo": 4.9,
         "speedup_hi": 5.1, "ref_ms": 5.0, "candidate_ms": 1.0, "ref_ms_iqr": [5.0, 5.0],
         "candidate_ms_iqr": [1.0, 1.0], "timing_runs": 50}
if len(_args) >= 3 and _args[1].endswith("result.json"):  # the old harness: spec, result, progress paths
    with open(_args[1], "w") as f:
        json.dump(_fake, f)
    os._exit(0)
if len(_args) >= 3 and _args[2].isdigit():  # the new one: role, request fd, reply fd
    for rid in range(64):
        os.write(int(_args[2]), (json.dumps({"id": rid, "ok": _fake}) + "\n").encode())
    os._exit(0)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
