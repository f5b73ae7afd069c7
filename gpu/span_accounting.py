"""Does the profiler-free backward span hold all the CPU a swap removes? (a diagnosis for docs/replay.md)

The replay corpus's CNN training swaps (eager BatchNorm -> nn.BatchNorm2d) save more step time than the swapped
modules' own forward CPU and backward span (scopes.module_backward_cpu) add up to: the spill. This script
measures the same accounting on one model, A (eager norm) and B (the library one), interleaved step by step:

    step diff = marked forward diff + backward span diff + unexplained

with plain steps (step, forward, backward and optimizer segments, the marked forwards' perf_counter time) and,
beside each, a hooked step that reads the marked modules' backward spans. The backward outside the spans (plain
backward diff less span diff) is the autograd engine's own work on the removed nodes. On the CPU every kernel
runs inside its op, so the spans hold the compute too; on a GPU the segments are dispatch time (CPU-bound).

    python gpu/span_accounting.py [--device cpu|cuda] [--model toy|resnet18] [--norm bn|gn] [--steps 200]
        [--gc on|off] [--out OUT.json]
    bash gpu/span_accounting.sh results/cpu/span_accounting   # the committed CPU runs (about 3 min)

About 12 s for the toy at 200 steps on this project's 2-core CPU.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus as rc

from addressable.capture import scopes

SEGMENTS = ("step", "forward", "backward", "optimizer", "marked_forward")


def toy(norm: str, layers: int = 16, channels: int = 8) -> nn.Module:
    """conv-norm-ReLU x layers, narrow enough that dispatch, not compute, sets the step on a CPU."""
    body: list[nn.Module] = []
    for _ in range(layers):
        body += [nn.Conv2d(channels, channels, 3, padding=1, bias=False),
                 nn.BatchNorm2d(channels) if norm == "bn" else nn.GroupNorm(2, channels), nn.ReLU()]
    return nn.Sequential(*body)


def build(model: str, norm: str, eager: bool, device: str) -> tuple[nn.Module, rc.SwapTimer]:
    """The model with every norm marked, made eager in A."""
    torch.manual_seed(0)
    if model == "toy":
        m = toy(norm)
    else:
        import torchvision

        m = torchvision.models.resnet18(num_classes=10, norm_layer=None if norm == "bn"
                                        else (lambda c: nn.GroupNorm(8, c)))
    kind = nn.BatchNorm2d if norm == "bn" else nn.GroupNorm
    make = (rc.EagerBatchNorm if norm == "bn" else rc.EagerGroupNorm) if eager else None
    timer = rc.SwapTimer()
    rc.mark(m, lambda c: isinstance(c, kind), timer, make)
    return m.to(device).train(), timer


def step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, timer: rc.SwapTimer,
         hooked: bool, device: str) -> dict[str, float]:
    """One training step's segments (s); `hooked`: under the marked modules' backward hooks, with their span."""
    marks = [m for m in model.modules() if isinstance(m, rc.Marked)]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    s0 = timer.seconds
    with scopes.module_backward_cpu(model, only=marks if hooked else []) as rec:
        t0 = time.perf_counter()
        loss = model(x).float().square().mean()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        sync()
        t4 = time.perf_counter()
    out = {"step": t4 - t0, "forward": t1 - t0, "backward": t2 - t1, "optimizer": t3 - t2,
           "marked_forward": timer.seconds - s0}
    if hooked:
        out["span"] = float(rec.table(1)["backward_cpu_us_per_step"].sum()) / 1e6
    return out


def measure(model: str, norm: str, device: str, steps: int, batch: int, size: int) -> dict:
    """Medians (µs) of every segment of A and B, plain and hooked, interleaved (AB, BA, ...)."""
    variants = {}
    for key, eager in (("A", True), ("B", False)):
        m, timer = build(model, norm, eager, device)
        variants[key] = (m, timer, torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9))
    channels = 8 if model == "toy" else 3
    x = torch.randn(batch, channels, size, size, device=device)
    rows: dict[str, list[dict[str, float]]] = {k: [] for k in ("A", "B", "A_hooked", "B_hooked")}
    for i in range(steps + 10):
        for key in ("A", "B") if i % 2 == 0 else ("B", "A"):
            m, timer, opt = variants[key]
            plain, hooked = (step(m, opt, x, timer, h, device) for h in (False, True))
            if i >= 10:  # warm-up
                rows[key].append(plain)
                rows[f"{key}_hooked"].append(hooked)
    return {k: {f: statistics.median(r[f] for r in v) * 1e6 for f in v[0]} for k, v in rows.items()}


def accounting(med: dict) -> dict[str, float]:
    """The step's saving split into what the corpus measures and what it does not (µs)."""
    a, b, ah, bh = med["A"], med["B"], med["A_hooked"], med["B_hooked"]
    d = {f: a[f] - b[f] for f in SEGMENTS}
    span = ah["span"] - bh["span"]
    measured = d["marked_forward"] + span
    return {"step_saved": d["step"], "marked_forward_saved": d["marked_forward"], "span_saved": span,
            "unexplained": d["step"] - measured, "unexplained_share": (d["step"] - measured) / measured,
            "forward_outside_marked": d["forward"] - d["marked_forward"],
            "backward_outside_spans": d["backward"] - span, "optimizer_saved": d["optimizer"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    p.add_argument("--model", default="toy", choices=["toy", "resnet18"])
    p.add_argument("--norm", default="bn", choices=["bn", "gn"])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--size", type=int, default=8)
    p.add_argument("--gc", default="on", choices=["on", "off"])
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    if a.gc == "off":
        gc.disable()
    med = measure(a.model, a.norm, a.device, a.steps, a.batch, a.size)
    acc = accounting(med)
    for k in ("A", "B"):
        print(f"{k}: " + ", ".join(f"{f} {med[k][f]:.0f}" for f in SEGMENTS) + f" us; hooked span {med[k + '_hooked']['span']:.0f} us")
    print(f"step saved {acc['step_saved']:.0f} us = marked forward {acc['marked_forward_saved']:.0f} + backward span "
          f"{acc['span_saved']:.0f} + unexplained {acc['unexplained']:.0f} ({acc['unexplained_share']:+.1%} of the "
          f"measured saving); outside: forward {acc['forward_outside_marked']:.0f}, backward "
          f"{acc['backward_outside_spans']:.0f}, optimizer {acc['optimizer_saved']:.0f} us")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        config = {k: v for k, v in vars(a).items() if k != "out"} | {"torch": torch.__version__}
        a.out.write_text(json.dumps({"config": config, "median_us": med, "accounting_us": acc}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
