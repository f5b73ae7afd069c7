"""Module attribution on the GPU: gpt2 train, llama3-8b infer and resnet50 train, and the cost of module scopes.

Reproduces the H200 table of docs/modules.md (results/h200/modules/).

Usage (repo root, one H200, about 3 minutes): python3 gpu/modules_suite.py OUT_DIR
(LLAMA_LAYERS=N sets llama3-8b's depth, default 16 of 32, to stay well inside 4 minutes.)

For each workload, in one process:
1. `addressable.capture.profile.profile_workload` writes a run folder (module scopes in its profiled steps);
2. a fresh instance of the same step is timed in alternating blocks: unprofiled steps, unprofiled
   steps with the scope hooks on, profiled steps without scopes and profiled steps with them.
   Unprofiled steps before and after show that the timed steps are untouched; profiled with vs
   without shows what the scopes cost while the profiler records.
Writes OUT_DIR/modules_summary.json and .txt (coverage, pseudo-scopes, top fusion candidates,
overhead) and OUT_DIR/modules_runs.tgz (the run folders without their traces).
"""

from __future__ import annotations

import gc
import json
import math
import os
import statistics
import sys
import tarfile
import time
import traceback
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch

from addressable.capture.measure import measurement
from addressable.capture.profile import profile_workload, resolve_config
from addressable.capture.scopes import module_scopes
from addressable.capture.workload import get_workload
from addressable.classify.modules import OPTIMIZER, PSEUDO, format_candidates

LAYERS = int(os.environ.get("LLAMA_LAYERS", "16"))
# workload, mode, batch, seq_len, options, profile counts, overhead (blocks, steps per block)
SUITE: list[tuple[str, str, int, int | None, dict[str, Any], dict[str, int], tuple[int, int]]] = [
    ("gpt2", "train", 8, 1024, {}, {"warmup": 5, "steps": 10, "profile_steps": 3, "repeats": 2}, (3, 10)),
    ("resnet50", "train", 64, None, {}, {"warmup": 5, "steps": 10, "profile_steps": 3, "repeats": 2}, (3, 10)),
    ("llama3-8b", "infer", 8, 1024, {"layers": LAYERS}, {"warmup": 2, "steps": 3, "profile_steps": 2, "repeats": 1},
     (2, 3)),
]


def timed(step: Callable[[], None], n: int, after: Callable[[], None] | None = None) -> list[float]:
    """n steps, each timed with CUDA events (ms)."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    torch.cuda.synchronize()
    for start, end in events:
        start.record()
        step()
        end.record()
        if after:
            after()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def profiled(step: Callable[[], None], n: int, scopes: AbstractContextManager) -> list[float]:
    """n steps under torch.profiler (CPU + CUDA, one warm-up step), trace discarded."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Profiler won't be using warmup")
        sched = torch.profiler.schedule(wait=0, warmup=1, active=n, repeat=1)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with scopes, torch.profiler.profile(activities=acts, schedule=sched, on_trace_ready=lambda p: None) as prof:
        step()
        torch.cuda.synchronize()
        prof.step()
        return timed(step, n, after=prof.step)


def overhead(workload: str, cfg: Any, blocks: int, n: int) -> dict[str, Any]:
    """Median step time (ms) of each variant, measured in alternating blocks in one process."""
    torch.manual_seed(0)
    step = get_workload(workload).build(cfg)
    model = getattr(step, "model", None)
    times: dict[str, list[float]] = {"unprofiled": [], "unprofiled, after scoped profiling": [],
                                     "unprofiled, hooks on": [], "profiled, no scopes": [], "profiled, scopes": []}
    timed(step, 2)
    for _ in range(blocks):
        times["unprofiled"] += timed(step, n)
        with module_scopes(model):
            times["unprofiled, hooks on"] += timed(step, n)
        times["profiled, no scopes"] += profiled(step, n, nullcontext())
        times["profiled, scopes"] += profiled(step, n, module_scopes(model))
        times["unprofiled, after scoped profiling"] += timed(step, n)  # the hooks are gone again
    del step, model
    out: dict[str, Any] = {k: statistics.median(v) for k, v in times.items()}
    out["steps_per_variant"] = len(times["unprofiled"])
    out["timed_steps_change"] = out["unprofiled, after scoped profiling"] / out["unprofiled"] - 1
    out["scope_cost_profiled"] = out["profiled, scopes"] / out["profiled, no scopes"] - 1
    out["hooks_cost_unprofiled"] = out["unprofiled, hooks on"] / out["unprofiled"] - 1
    return out


def summarize(res: Any) -> dict[str, Any]:
    """Coverage, pseudo-scope shares and top fusion candidates of one profiled run."""
    mb = res.breakdown.modules
    by = mb.by("class").set_index("module")
    share = {p: float(by.loc[p, "share"]) if p in by.index else 0.0 for p in PSEUDO}
    cand = mb.fusion_candidates(5)
    return {"run": res.path.name, "coverage_real_modules": mb.coverage,
            "coverage_modules_and_named_pseudo": mb.coverage + share["<loss>"] + share[OPTIMIZER],
            "pseudo_shares": share, "kernel_time_per_step_ms": res.run["kernel_time_per_step_us"] / 1e3,
            "step_time_ms": res.run["step_time_ms"], "addressable_fraction": res.breakdown.addressable_fraction,
            "fusion_candidates": cand.to_dict(orient="records"), "candidates_text": format_candidates(cand)}


def main() -> None:
    out = Path(sys.argv[1])
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "workloads": {}}
    t_start = time.time()
    for workload, mode, batch, seq, options, counts, (blocks, n) in SUITE:
        label = f"{workload} {mode} b{batch}" + (f" s{seq}" if seq else "") + (f" {options}" if options else "")
        print(f"=== {label} ({time.time() - t_start:.0f}s)", flush=True)
        item: dict[str, Any] = {}
        try:
            cfg = resolve_config(workload, mode, batch, seq, None, "cuda", False, options)
            res = profile_workload(cfg, measurement(cfg.device, **counts, budget_s=math.inf), runs,
                                   argv=["gpu/modules_suite.py", label],
                                   progress=lambda s: print("   ", s, flush=True), force=True)
            item.update(summarize(res))
            print(f"    modules {item['coverage_real_modules']:.1%}, pseudo {item['pseudo_shares']}", flush=True)
            print("\n".join("    " + line for line in item["candidates_text"]), flush=True)
            del res
            gc.collect()
            torch.cuda.empty_cache()
            item["overhead"] = overhead(workload, cfg, blocks, n)
            print(f"    overhead {item['overhead']}", flush=True)
        except Exception as e:  # record and go on with the next workload
            traceback.print_exc()
            item["error"] = f"{type(e).__name__}: {e}"[:400]
        finally:
            gc.collect()
            torch.cuda.empty_cache()
        summary["workloads"][label] = item
        (out / "modules_summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    summary["seconds"] = time.time() - t_start
    (out / "modules_summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "modules_summary.txt").write_text(report(summary))
    print(report(summary), flush=True)
    with tarfile.open(out / "modules_runs.tgz", "w:gz") as tar:
        for f in sorted(runs.rglob("*")):
            if f.is_file() and not f.name.endswith(".json.gz"):
                tar.add(f, arcname=str(f.relative_to(runs)))


def report(summary: dict[str, Any]) -> str:
    """The summary as text: coverage and overhead per workload, then its fusion candidates."""
    lines = [f"{summary['gpu']}, torch {summary['torch']}", ""]
    for label, item in summary["workloads"].items():
        if "error" in item:
            lines += [f"{label}: FAILED {item['error']}", ""]
            continue
        o = item.get("overhead", {})
        lines += [f"{label}: real modules {item['coverage_real_modules']:.1%}, modules + <loss> + <optimizer> "
                  f"{item['coverage_modules_and_named_pseudo']:.1%}, <other> {item['pseudo_shares']['<other>']:.2%}; "
                  f"kernel time {item['kernel_time_per_step_ms']:.2f} ms/step, step {item['step_time_ms']:.2f} ms",
                  "  step ms (median): " + ", ".join(f"{k} {v:.2f}" for k, v in o.items() if isinstance(v, float)
                                                      and k[0] in "up"),
                  f"  timed steps after scoped profiling {o.get('timed_steps_change', float('nan')):+.1%}; "
                  f"scopes while profiling {o.get('scope_cost_profiled', float('nan')):+.1%}; "
                  f"hooks on, unprofiled {o.get('hooks_cost_unprofiled', float('nan')):+.1%}",
                  *("  " + line for line in item["candidates_text"]), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
