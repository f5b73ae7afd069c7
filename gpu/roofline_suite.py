"""The README's roofline table: the seven workloads profiled with shapes on one GPU, then, per run, the
addressable fraction, the Amdahl ceiling and the roofline ceiling (breakdown.json's roofline key).

Usage (repo root, on the device): python3 gpu/roofline_suite.py OUT_DIR   (about 4 minutes on an H200)
Writes OUT_DIR/<run>/ folders and OUT_DIR/roofline_table.md. Short measurements (1 repeat, 1 profiled
step): the ceilings are ratios of kernel times, which vary little between steps. llama3-70b is
profiled at 4 of its 80 layers (no extrapolation: the roofline needs one trace).
"""

from __future__ import annotations

import gc
import sys
import traceback
from pathlib import Path

import torch

from addressable.measure import measurement
from addressable.profile import profile_workload, resolve_config
from addressable.runs import load_run

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


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    lines = ["| workload | addressable (kernel time) | Amdahl ceiling | roofline ceiling | roofline ceiling, wall "
             "| unmodelled share of replaceable time | fusion headroom, top 3 candidates |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for workload, mode, batch, seq, dtype, options in SUITE:
        label = f"{workload} {mode} b{batch}" + (f" s{seq}" if seq else "") + (f" {dtype}" if dtype else "") + \
            "".join(f" {k}={v}" for k, v in options.items())
        print(f"=== {label}", flush=True)
        try:
            cfg = resolve_config(workload, mode, batch, seq, dtype, "cuda", False, dict(options))
            res = profile_workload(cfg, measurement(cfg.device, warmup=3, steps=3, profile_steps=1, repeats=1), out,
                                   force=True)
            roof = load_run(res.path).info.get("roofline") or {}
            lines.append(f"| {label} | {res.breakdown.addressable_fraction:.1%} | {_x(roof.get('ceiling_kernel'))} "
                         f"| {_x(roof.get('ceiling_kernel_roofline'))} | {_x(roof.get('ceiling_wall_roofline'))} "
                         f"| {roof.get('unmodelled_time_share', float('nan')):.1%} | n/a (no module scopes) |")
        except Exception:  # one failing workload must not stop the table
            traceback.print_exc()
            lines.append(f"| {label} | failed | | | | | |")
        gc.collect()
        torch.cuda.empty_cache()
        (out / "roofline_table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
