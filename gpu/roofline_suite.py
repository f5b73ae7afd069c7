"""docs/roofline.md's table of the seven workloads: the seven workloads profiled with shapes on one GPU, then, per run, the
addressable fraction, the Amdahl ceiling, the roofline ceiling (breakdown.json's roofline key) and the
fusion headroom of the top 3 fusion candidates (module classes; their external bytes from the run's
module_io.json, recorded in one extra step after warm-up).

Usage (repo root, on the device): python3 gpu/roofline_suite.py OUT_DIR   (about 5 minutes on an H200)
Writes into OUT_DIR three files: roofline_table.md (the table of docs/roofline.md), fusion.csv (every fusion
candidate of every workload: time, kernel bytes, fused bytes, time at the roof, fusion headroom) and
runs.tar.gz (the run folders without their traces). Short measurements (1 repeat, 1 profiled step): the
ceilings are ratios of kernel times, which vary little between steps. llama3-70b is profiled at 4 of
its 80 layers (no extrapolation: the roofline needs one trace).
"""

from __future__ import annotations

import gc
import sys
import tarfile
import tempfile
import traceback
from pathlib import Path

import pandas as pd
import torch

from addressable.capture.measure import measurement
from addressable.capture.profile import profile_workload, resolve_config
from addressable.runs.folder import load_run

SUITE = [  # (workload, mode, batch, seq_len, dtype, options)
    ("resnet50", "train", 64, None, None, {}),
    ("resnet50", "infer", 64, None, None, {}),
    ("gpt2", "train", 8, 1024, None, {}),
    ("llama3-8b", "infer", 8, 1024, None, {}),
    ("llama3-70b", "infer", 8, 1024, None, {"layers": 4}),
    ("dlrm", "train", 8192, None, "bf16", {}),
    ("dlrm", "infer", 8192, None, "bf16", {}),
]


def _x(v: object) -> str:
    return f"{v:.2f}x" if isinstance(v, int | float) else "n/a"


def top_fusion(roof: dict, n: int = 3) -> str:
    """The top n class-scope fusion candidates by replaceable time: 'Class headroom (speedup)', or why none."""
    cands = [c for c in roof.get("fusion_candidates") or [] if c.get("scope") == "class"][:n]
    if not cands:
        return roof.get("fusion_note") or "no candidates"
    parts = []
    for c in cands:
        h, s = c.get("fusion_headroom"), c.get("fusion_speedup")
        figure = f"{h:.0%} ({s:.1f}x)" if isinstance(h, int | float) and isinstance(s, int | float) else \
            f"n/a ({c.get('note')})"
        parts.append(f"{c['module']} {figure}")
    return "; ".join(parts)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="roofline_suite_"))  # run folders with traces: only the light files come back
    lines = ["| workload | addressable (kernel time) | Amdahl ceiling | roofline ceiling | roofline ceiling, wall "
             "| unmodelled share of replaceable time | fusion headroom, top 3 candidates (speedup) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    fusion = []
    for workload, mode, batch, seq, dtype, options in SUITE:
        label = f"{workload} {mode} b{batch}" + (f" s{seq}" if seq else "") + (f" {dtype}" if dtype else "") + \
            "".join(f" {k}={v}" for k, v in options.items())
        print(f"=== {label}", flush=True)
        try:
            cfg = resolve_config(workload, mode, batch, seq, dtype, "cuda", False, dict(options))
            res = profile_workload(cfg, measurement(cfg.device, warmup=3, steps=3, profile_steps=1, repeats=1), work,
                                   force=True)
            roof = load_run(res.path).info.get("roofline") or {}
            lines.append(f"| {label} | {res.breakdown.addressable_fraction:.1%} | {_x(roof.get('ceiling_kernel'))} "
                         f"| {_x(roof.get('ceiling_kernel_roofline'))} | {_x(roof.get('ceiling_wall_roofline'))} "
                         f"| {roof.get('unmodelled_time_share', float('nan')):.1%} | {top_fusion(roof)} |")
            fusion += [{"workload": label, **c} for c in roof.get("fusion_candidates") or []]
            print(lines[-1], flush=True)
        except Exception:  # one failing workload must not stop the table
            traceback.print_exc()
            lines.append(f"| {label} | failed | | | | | |")
        gc.collect()
        torch.cuda.empty_cache()
        (out / "roofline_table.md").write_text("\n".join(lines) + "\n")
        pd.DataFrame(fusion).to_csv(out / "fusion.csv", index=False)
    with tarfile.open(out / "runs.tar.gz", "w:gz") as tar:
        for f in sorted(work.rglob("*")):
            if f.is_file() and not f.name.endswith(".json.gz"):
                tar.add(f, arcname=str(f.relative_to(work)))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
