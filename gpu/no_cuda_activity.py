"""A real GPU trace whose CUDA activity was not recorded: CPU activity only, kernels launched.

Checks what docs/classification.md says of such a trace.

    python gpu/no_cuda_activity.py $OUT        # ~20 s on one H200; writes $OUT/cpu_only_activity.json.gz

Then `addressable classify $OUT/cpu_only_activity.json.gz` must exit 2 with one line naming the
launches and the missing CUDA activity, and `--basis cpu` must print the CPU-op breakdown.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    x = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    with profile(activities=[ProfilerActivity.CPU]) as prof:  # CUDA activity deliberately off
        for _ in range(20):
            y = torch.relu(x @ x)
        torch.cuda.synchronize()
    raw = out / "cpu_only_activity.json"
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as f, gzip.open(out / "cpu_only_activity.json.gz", "wb") as g:
        shutil.copyfileobj(f, g)
    raw.unlink()
    print(f"wrote {out / 'cpu_only_activity.json.gz'} ({float(y.float().mean()):.3f})")


if __name__ == "__main__":
    main()
