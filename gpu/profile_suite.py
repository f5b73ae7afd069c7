"""Profile the study's seven workloads, the extrapolation check and the sweeps on one GPU.

Reproduces docs/results.md (results/h200/: the run folders, suite.csv, extrapolation.csv).

One process, so Python and CUDA start once. A failing configuration is recorded and the
suite goes on. Usage (repo root): python3 gpu/profile_suite.py OUT_DIR [--quick]
Writes OUT_DIR/<run>/ folders, OUT_DIR/suite.csv (one row per configuration) and
OUT_DIR/extrapolation.csv (8B layer-subset extrapolation vs the full-depth run).
"""

from __future__ import annotations

import gc
import sys
import time
import traceback
from pathlib import Path

import pandas as pd
import torch

from addressable.capture.measure import measurement
from addressable.capture.profile import profile_workload, resolve_config, validate_extrapolation

LLM = {"warmup": 2, "steps": 5, "profile_steps": 2, "repeats": 3}
FAST = {"warmup": 8, "steps": 15, "profile_steps": 3, "repeats": 3}

# (workload, mode, batch, seq_len, options, layers_subset, step counts) in priority order
SUITE = [
    ("resnet50", "train", 64, None, {}, None, FAST),
    ("resnet50", "infer", 64, None, {}, None, FAST),
    ("gpt2", "train", 8, 1024, {}, None, FAST),
    ("llama3-8b", "infer", 8, 1024, {}, None, LLM),
    ("llama3-70b", "infer", 8, 1024, {}, (4, 8), LLM),
    ("dlrm", "train", 8192, None, {}, None, FAST),
    ("dlrm", "infer", 8192, None, {}, None, FAST),
    ("dlrm", "train", 8192, None, {"dtype": "bf16"}, None, FAST),
    ("dlrm", "infer", 8192, None, {"dtype": "bf16"}, None, FAST),
    ("llama3-8b", "infer", 8, 1024, {}, (4, 8), LLM),  # extrapolation check against the full run
    ("gpt2", "infer", 8, 1024, {}, None, FAST),
    ("llama3-1b", "infer", 8, 1024, {}, None, LLM),
    ("llama3-1b", "train", 8, 1024, {}, None, FAST),
    ("resnet50", "train", 16, None, {}, None, FAST),
    ("resnet50", "train", 32, None, {}, None, FAST),
    ("resnet50", "train", 128, None, {}, None, FAST),
    ("llama3-8b", "train", 2, 1024, {"layers": 16}, None, LLM),
]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows, results = [], {}
    for workload, mode, batch, seq, options, subset, counts in SUITE:
        t0 = time.time()
        label = f"{workload} {mode} b{batch} {options or ''} {subset or ''}".strip()
        print(f"=== {label}", flush=True)
        try:
            options = dict(options)
            dtype = options.pop("dtype", None)
            cfg = resolve_config(workload, mode, batch, seq, dtype, "cuda", False, options)
            res = profile_workload(cfg, measurement(cfg.device, **counts), out, layers_subset=subset,
                                   argv=["gpu/profile_suite.py", label], progress=lambda s: print("   ", s, flush=True))
            results[(workload, mode, subset)] = res
            r = res.run
            rows.append({"config": label, "run": res.path.name, "ok": True, "seconds": time.time() - t0,
                         "addressable": r.get("addressable_fraction"), "addressable_wall": r.get("addressable_fraction_wall"),
                         "step_time_ms": r.get("step_time_ms")})
            print(f"    -> {res.path.name}: addressable {res.breakdown.addressable_fraction:.3f}, "
                  f"wall {r.get('addressable_fraction_wall')}, step {r.get('step_time_ms')} ms, {time.time() - t0:.0f}s", flush=True)
        except Exception as e:
            traceback.print_exc()
            rows.append({"config": label, "ok": False, "seconds": time.time() - t0, "error": f"{type(e).__name__}: {e}"[:300]})
        finally:
            gc.collect()
            torch.cuda.empty_cache()
        pd.DataFrame(rows).to_csv(out / "suite.csv", index=False)
    full, extrap = results.get(("llama3-8b", "infer", None)), results.get(("llama3-8b", "infer", (4, 8)))
    if full and extrap:
        table = validate_extrapolation(extrap, full)
        table.to_csv(out / "extrapolation.csv", index=False)
        print(table.to_string(), flush=True)
    print(pd.DataFrame(rows).to_string(), flush=True)


if __name__ == "__main__":
    main()
