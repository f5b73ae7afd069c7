"""Check the Amdahl projection against reality with real kernel swaps, on a GPU.

Reproduces docs/projection.md's "Checked against reality" table (results/h200/validation/validation.json).

Two experiments, each run eager and with a group of replaceable kernels swapped for fused ones:

* llama: Llama-3-8B shapes cut to 4 layers, bf16 prefill. The RMSNorm and the SwiGLU
  elementwise chain are replaced by torch.compile'd (Triton) fusions. The group's kernels are
  those inside `group:` annotations, in both variants.
* resnet50: ResNet-50 training step, bf16 autocast, channels_last. Every BatchNorm+ReLU pair
  is replaced by a torch.compile'd fusion. The group is normalization + ReLU (threshold)
  kernels in eager, and those plus the Triton kernels in the fused variant.

For each: measured kernel speedup of the group (k), its share (s) on kernel and wall bases,
the projection 1/((1-s)+s/k), and the measured end-to-end speedup on both bases.
Writes $OUT/validation.json (or ./validation.json) and prints a table.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from addressable.classify.breakdown import classify_events
from addressable.classify.taxonomy import load_taxonomy
from addressable.core.amdahl import amdahl
from addressable.trace.reader import load_trace

torch._dynamo.config.cache_size_limit = 128
DEV = "cuda"


def timed_steps(step, n: int) -> list[float]:
    """Unprofiled wall-clock step times in ms (CUDA events)."""
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return times


def profiled_events(step, n: int):
    """Classified GPU rows and annotations of n profiled steps."""
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(n):
            step()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.json"
        prof.export_chrome_trace(str(path))
        ev = load_trace(path).events
    gpu = classify_events(ev[ev["kind"] == "gpu"], load_taxonomy(), "gpu_kernel_time")
    return gpu, ev[ev["kind"] == "annotation"]


def in_group_annotations(gpu, ann) -> np.ndarray:
    g = ann[ann["name"].astype(str).str.startswith("group:")].sort_values("ts")
    if g.empty:
        return np.zeros(len(gpu), bool)
    starts, ends = g["ts"].to_numpy(), (g["ts"] + g["dur"]).to_numpy()
    ts = gpu["ts"].to_numpy()
    i = np.searchsorted(starts, ts, side="right") - 1
    return (i >= 0) & (ts < ends[np.clip(i, 0, None)])


def measure(step, group_mask, warmup: int, timed: int, profiled: int) -> dict:
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    step_ms = statistics.median(timed_steps(step, timed))
    gpu, ann = profiled_events(step, profiled)
    mask = group_mask(gpu, ann)
    total = gpu["dur"].sum() / profiled
    group = gpu.loc[mask, "dur"].sum() / profiled
    return {"step_ms": step_ms, "kernel_us": float(total), "group_us": float(group),
            "group_kernels": sorted(set(gpu.loc[mask, "name"].astype(str).str[:80]))[:12]}


def compare(name: str, eager: dict, fused: dict) -> dict:
    k = eager["group_us"] / fused["group_us"]
    s_kernel = eager["group_us"] / eager["kernel_us"]
    s_wall = eager["group_us"] / 1e3 / eager["step_ms"]
    out = {
        "experiment": name, "group_speedup_k": k, "share_kernel": s_kernel, "share_wall": s_wall,
        "projected_kernel": amdahl([s_kernel], [k], 1.0), "measured_kernel": eager["kernel_us"] / fused["kernel_us"],
        "projected_wall": amdahl([s_wall], [k], 1.0), "measured_wall": eager["step_ms"] / fused["step_ms"],
        "eager": eager, "fused": fused,
    }
    out["error_kernel"] = out["projected_kernel"] / out["measured_kernel"] - 1
    out["error_wall"] = out["projected_wall"] / out["measured_wall"] - 1
    return out


# --- llama: RMSNorm + SwiGLU --------------------------------------------------------------------

def llama_experiment() -> dict:
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama import modeling_llama as ml

    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=4, num_attention_heads=32,
                      num_key_value_heads=8, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=8192)
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).to(DEV, torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (4, 1024), device=DEV)

    def rms_eager(x, w, eps):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return w * x.to(dtype)

    def swiglu_eager(g, u):
        return F.silu(g) * u

    results = {}
    for variant, rms, swiglu in (("eager", rms_eager, swiglu_eager),
                                 ("fused", torch.compile(rms_eager, dynamic=False), torch.compile(swiglu_eager, dynamic=False))):
        def norm_forward(self, x, rms=rms):
            with torch.profiler.record_function("group:rmsnorm"):
                return rms(x, self.weight, self.variance_epsilon)

        def mlp_forward(self, x, swiglu=swiglu):
            g, u = self.gate_proj(x), self.up_proj(x)
            with torch.profiler.record_function("group:swiglu"):
                h = swiglu(g, u)
            return self.down_proj(h)

        ml.LlamaRMSNorm.forward = norm_forward
        ml.LlamaMLP.forward = mlp_forward

        def step():
            with torch.inference_mode():
                model(ids, use_cache=False, logits_to_keep=1)

        results[variant] = measure(step, in_group_annotations, warmup=5, timed=30, profiled=3)
    return compare("llama3-8b 4-layer prefill (b4 x 1024): RMSNorm + SwiGLU -> torch.compile", results["eager"], results["fused"])


# --- resnet50: BatchNorm + ReLU -----------------------------------------------------------------

def resnet_experiment() -> dict:
    import torchvision
    from torchvision.models.resnet import Bottleneck

    def bn_relu(x, bn: nn.BatchNorm2d):
        return F.relu(F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                                   bn.training, bn.momentum, bn.eps))

    def group_mask(gpu, ann):
        names = gpu["name"].astype(str)
        return ((gpu["category"].astype(str).isin(["normalization", "triton"]))
                | names.str.contains("threshold")).to_numpy()

    results = {}
    for variant in ("eager", "fused"):
        torch.manual_seed(0)
        model = torchvision.models.resnet50().to(DEV, memory_format=torch.channels_last).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = torch.randn(64, 3, 224, 224, device=DEV).to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (64,), device=DEV)
        if variant == "fused":
            fused = torch.compile(bn_relu, dynamic=False)

            def forward(self, x, fused=fused):
                identity = x
                out = fused(self.conv1(x), self.bn1)
                out = fused(self.conv2(out), self.bn2)
                out = self.bn3(self.conv3(out))
                if self.downsample is not None:
                    identity = self.downsample(x)
                return F.relu(out + identity)

            Bottleneck.forward = forward

        def step(model=model, opt=opt, x=x, y=y):
            with torch.autocast("cuda", torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        results[variant] = measure(step, group_mask, warmup=8, timed=30, profiled=3)
    return compare("resnet50 train b64 bf16: BatchNorm+ReLU -> torch.compile", results["eager"], results["fused"])


def main() -> None:
    torch.backends.cudnn.benchmark = True
    which = sys.argv[1:] or ["llama", "resnet50"]
    runs = {"llama": llama_experiment, "resnet50": resnet_experiment}
    out = [runs[w]() for w in which]
    dest = Path(os.environ.get("OUT", ".")) / "validation.json"
    dest.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "results": out}, indent=2))
    print(f"{'experiment':<70}{'k':>6}{'s_kern':>8}{'proj_k':>8}{'meas_k':>8}{'err_k':>8}{'s_wall':>8}{'proj_w':>8}{'meas_w':>8}{'err_w':>8}")
    for r in out:
        print(f"{r['experiment'][:69]:<70}{r['group_speedup_k']:>6.2f}{r['share_kernel']:>8.3f}{r['projected_kernel']:>8.3f}"
              f"{r['measured_kernel']:>8.3f}{r['error_kernel']:>+8.1%}{r['share_wall']:>8.3f}{r['projected_wall']:>8.3f}"
              f"{r['measured_wall']:>8.3f}{r['error_wall']:>+8.1%}")


if __name__ == "__main__":
    main()
