"""gpu/verify_arbiter.py's per-call grouping: GPU activities belong to the range their launch lies in."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _arbiter():
    spec = importlib.util.spec_from_file_location("verify_arbiter", ROOT / "gpu" / "verify_arbiter.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["verify_arbiter"] = mod
    spec.loader.exec_module(mod)
    return mod


def _x(cat: str, name: str, ts: float, dur: float, corr: int | None = None, gpu: bool = False) -> dict:
    args = {} if corr is None else {"correlation": corr, **({"stream": 7, "device": 0} if gpu else {})}
    return {"ph": "X", "cat": cat, "name": name, "pid": 0 if gpu else 1, "tid": 7 if gpu else 1, "ts": ts,
            "dur": dur, "args": args}


def test_per_call_groups_by_launch_and_leaves_out_what_was_launched_outside(tmp_path: Path) -> None:
    events = [_x("user_annotation", "ref#0", 100, 50), _x("user_annotation", "cand#0", 200, 50),
              _x("cuda_runtime", "cudaLaunchKernel", 110, 5, 7), _x("cuda_runtime", "cudaMemcpyAsync", 120, 5, 8),
              _x("cuda_runtime", "cudaLaunchKernel", 210, 5, 9), _x("cuda_runtime", "cudaLaunchKernel", 300, 5, 10),
              _x("kernel", "k1", 1000, 10, 7, True), _x("gpu_memcpy", "Memcpy HtoD", 1015, 5, 8, True),
              _x("kernel", "k3", 2000, 4, 9, True), _x("kernel", "spin", 3000, 4, 10, True)]  # spin: outside both
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    calls = _arbiter().per_call(path)
    assert calls == {"ref#0": {"busy": 15.0, "span": 20.0, "activities": 2.0},
                     "cand#0": {"busy": 4.0, "span": 4.0, "activities": 1.0}}
