"""Capture, in one device call, the H200 data that other checks read (see gpu/README.md):

  peaks      copy bandwidth and dense matmul rates (the calibrated H200 entry of addressable/roofline/peaks.yaml)
  workloads  Kineto traces of models the package does not ship (docs/classification.md's coverage table)
  pairs      A/B swap pairs (one module or kernel group replaced by a faster one): A and B profiled in
             alternating windows (A, B, A, B, A, B; every trace kept: NAME.A.json.gz is round 0,
             NAME.A.r1.json.gz round 1, ...), unprofiled step times of both measured interleaved step
             by step in the same process (docs/projection.md's replay check: gpu/replay_validation.py reads them)

python3 gpu/capture_session.py OUT [--only peaks,workloads,pairs] [--profile-rounds 3] [--smoke]
  (--smoke: tiny sizes, runs on the CPU)
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import shutil
import statistics
import sys
import tarfile
import time
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

SMOKE = False
DEV = "cuda"
LOG: list[str] = []


def log(msg: str) -> None:
    print(msg, flush=True)
    LOG.append(msg)


def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def activities() -> list[ProfilerActivity]:
    return [ProfilerActivity.CPU, ProfilerActivity.CUDA] if DEV == "cuda" else [ProfilerActivity.CPU]


def save_trace(prof: profile, path: Path) -> None:
    raw = path.with_suffix("")  # .json
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as f, gzip.open(path, "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)
    raw.unlink()


def profile_steps(step, path: Path, active: int = 2, **kw) -> None:
    """wait 0, warm-up 1, `active` recorded steps, one ProfilerStep#N per step; synchronised."""
    sched = schedule(wait=0, warmup=1, active=active, repeat=1)
    with profile(activities=activities(), schedule=sched, **kw) as prof:
        for _ in range(1 + active):
            step()
            sync()
            prof.step()
    save_trace(prof, path)


def time_steps(step, n: int) -> list[float]:
    out = []
    for _ in range(n):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


# ------------------------------------------------------------------------------------------ peaks
def peaks(out: Path) -> None:
    res: dict = {"device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
                 "torch": torch.__version__}

    def bench(fn, reps=20):
        for _ in range(3):
            fn()
        sync()
        ts = []
        for _ in range(reps):
            if DEV == "cuda":
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    n = (1 << 28) if not SMOKE else (1 << 20)  # 256M bf16 = 512 MiB
    x = torch.randn(n, device=DEV, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    t = bench(lambda: y.copy_(x))
    res["copy_gbps"] = 2 * x.numel() * 2 / t / 1e9
    t = bench(lambda: x.sum(dtype=torch.float32))
    res["read_gbps"] = x.numel() * 2 / t / 1e9
    z = torch.empty_like(x)
    t = bench(lambda: torch.add(x, y, out=z))
    res["add_gbps"] = 3 * x.numel() * 2 / t / 1e9
    m = 8192 if not SMOKE else 256
    rates = {}
    for name, dt, tf32 in (("bf16", torch.bfloat16, False), ("fp16", torch.float16, False),
                           ("tf32", torch.float32, True), ("fp32", torch.float32, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(m, m, device=DEV, dtype=dt)
        b = torch.randn(m, m, device=DEV, dtype=dt)
        t = bench(lambda a=a, b=b: a @ b, reps=10)
        rates[name] = 2 * m**3 / t / 1e12
    torch.backends.cuda.matmul.allow_tf32 = False
    with contextlib.suppress(Exception):
        a = torch.randn(m, m, device=DEV).to(torch.float8_e4m3fn)
        b = torch.randn(m, m, device=DEV).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device=DEV)
        t = bench(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16), reps=10)
        rates["fp8"] = 2 * m**3 / t / 1e12
    res["matmul_tflops"] = rates
    (out / "peaks.json").write_text(json.dumps(res, indent=1))
    log(f"peaks: {json.dumps(res)}")


# ------------------------------------------------------------------------------------------ workloads
def _train_step(model, make_batch, loss_fn, dtype=torch.bfloat16, opt=None):
    opt = opt or torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    batch = make_batch()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEV, dtype=dtype, enabled=DEV == "cuda"):
            loss = loss_fn(model, *batch)
        loss.backward()
        opt.step()
    return step


def vision_train(arch: str, bsz: int = 32):
    """A torchvision classifier's training step (SGD, bf16 autocast, channels_last, 224x224)."""
    import torchvision
    m = getattr(torchvision.models, arch)().to(DEV).to(memory_format=torch.channels_last)
    b = bsz if not SMOKE else 2
    r = 224 if not SMOKE else 64

    def batch():
        return (torch.randn(b, 3, r, r, device=DEV).to(memory_format=torch.channels_last),
                torch.randint(0, 1000, (b,), device=DEV))
    return _train_step(m, batch, lambda m, x, y: F.cross_entropy(m(x), y))


class LSTMTagger(nn.Module):
    def __init__(self, vocab=10000, emb=512, hidden=1024):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True)
        self.gru = nn.GRU(hidden, hidden // 2, batch_first=True)
        self.head = nn.Linear(hidden // 2, vocab)

    def forward(self, ids):
        h, _ = self.lstm(self.emb(ids))
        h, _ = self.gru(h)
        return self.head(h)


def workload_lstm():
    m = LSTMTagger().to(DEV)
    b, s = (32, 128) if not SMOKE else (2, 8)

    def batch():
        ids = torch.randint(0, 10000, (b, s), device=DEV)
        return ids, torch.randint(0, 10000, (b, s), device=DEV)
    return _train_step(m, batch, lambda m, x, y: F.cross_entropy(m(x).flatten(0, 1), y.flatten()),
                       opt=torch.optim.Adam(m.parameters(), lr=1e-3))


def workload_moe():
    from transformers import AutoModelForCausalLM, MixtralConfig
    cfg = MixtralConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                        num_attention_heads=16, num_key_value_heads=4, num_local_experts=8,
                        num_experts_per_tok=2, max_position_embeddings=4096)
    if SMOKE:
        cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers = 64, 128, 1
    torch.manual_seed(0)
    with torch.device(DEV):
        m = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).eval()
    b, s = (4, 512) if not SMOKE else (1, 16)
    ids = torch.randint(0, 32000, (b, s), device=DEV)

    @torch.no_grad()
    def step():
        out = m(ids, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(8):
            out = m(nxt, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
    return step


def workload_lowp_gemm():
    n = 4096 if not SMOKE else 64
    x = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    xi = torch.randint(-8, 8, (n, n), device=DEV, dtype=torch.int8)
    wi = torch.randint(-8, 8, (n, n), device=DEV, dtype=torch.int8)

    def quant(t):
        amax = t.abs().amax().float().clamp(min=1e-12)
        scale = 448.0 / amax
        return (t.float() * scale).to(torch.float8_e4m3fn), (1.0 / scale)

    def step():
        for _ in range(4):
            qx, sx = quant(x)
            qw, sw = quant(w)
            y = torch._scaled_mm(qx, qw.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)
            torch._int_mm(xi, wi.t().contiguous().t())
            F.silu(y)
    return step


def workload_cudnn_attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, s, d = (8, 16, 1024, 128) if not SMOKE else (1, 2, 16, 8)
    blk = nn.TransformerEncoderLayer(h * d, h, 4 * h * d, batch_first=True, norm_first=True,
                                     dropout=0.0).to(DEV).to(torch.bfloat16)
    q = torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn_like(q, requires_grad=True)
    v = torch.randn_like(q, requires_grad=True)
    xin = torch.randn(b, s, h * d, device=DEV, dtype=torch.bfloat16)

    def step():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION] if DEV == "cuda" else [SDPBackend.MATH]):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            o.float().square().mean().backward()
            blk(xin).float().mean().backward()
    return step


def workload_cudagraph_infer():
    import torchvision
    m = torchvision.models.resnet50().to(DEV).eval().to(memory_format=torch.channels_last)
    b = 16 if not SMOKE else 1
    static = torch.randn(b, 3, 224, 224, device=DEV).to(memory_format=torch.channels_last)
    if DEV != "cuda":
        return lambda: m(static)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(static)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = m(static)
    src = torch.randn_like(static)

    def step():
        for _ in range(4):
            static.copy_(src)
            g.replay()
        out.float().softmax(-1).argmax(-1)
    return step


def workload_compiled_graphs_infer():
    """torch.compile(mode='reduce-overhead'): CUDA graphs via cudagraph trees, inference only."""
    d = 2048 if not SMOKE else 32
    m = nn.Sequential(*[nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                        for _ in range(4)]).to(DEV).to(torch.bfloat16).eval()
    cm = torch.compile(m, mode="reduce-overhead" if DEV == "cuda" else "default")
    x = torch.randn(64, 256, d, device=DEV, dtype=torch.bfloat16)

    @torch.no_grad()
    def step():
        for _ in range(4):
            cm(x + 1)
    return step


def workload_gcn():
    from torch_geometric.nn import GCNConv  # on the GPU image
    n, e, f = (200_000, 2_000_000, 128) if not SMOKE else (100, 400, 8)

    class GCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = GCNConv(f, 256), GCNConv(256, 40)

        def forward(self, x, ei):
            return self.c2(F.relu(self.c1(x, ei)), ei)
    m = GCN().to(DEV)
    x = torch.randn(n, f, device=DEV)
    ei = torch.randint(0, n, (2, e), device=DEV)
    y = torch.randint(0, 40, (n,), device=DEV)
    return _train_step(m, lambda: (x, ei, y), lambda m, x, ei, y: F.cross_entropy(m(x, ei), y),
                       opt=torch.optim.Adam(m.parameters(), lr=1e-2))


WORKLOADS = {
    "convnext_tiny_train_b32": lambda: vision_train("convnext_tiny"),
    "efficientnet_b0_train_b32": lambda: vision_train("efficientnet_b0"),
    "lstm_gru_train": workload_lstm,
    "mixtral_moe_infer": workload_moe,
    "fp8_int8_gemm": workload_lowp_gemm,
    "cudnn_attention_train": workload_cudnn_attention,
    "cudagraph_resnet50_infer": workload_cudagraph_infer,
    "compiled_reduce_overhead_infer": workload_compiled_graphs_infer,
    "gcn_train": workload_gcn,
    # traces with shapes and Python stacks (module scopes), one profiled step each
    "gpt2_train_b8_shapes_stack": (lambda: _lm_train_step(_hf("gpt2", "gelu_new").train(), *((8, 1024) if not SMOKE else (1, 16)), 50257),
                                   dict(record_shapes=True, with_stack=True, active=1)),
    "resnet50_train_b64_shapes": (lambda: vision_train("resnet50", 64), dict(record_shapes=True, active=1)),
    "llama8b_prefill_b4_shapes": (lambda: _prefill_step(_hf("llama8b", layers=4).eval(), *((4, 1024) if not SMOKE else (1, 16))),
                                  dict(record_shapes=True, active=1)),
}



def workloads(out: Path) -> None:
    d = out / "workloads"
    d.mkdir(exist_ok=True)
    for name, build in WORKLOADS.items():
        t0 = time.perf_counter()
        build, kw = build if isinstance(build, tuple) else (build, {"active": 2})
        try:
            step = build()
            for _ in range(3):
                step()
            sync()
            profile_steps(step, d / f"{name}.json.gz", **kw)
            log(f"workload {name}: ok {time.perf_counter() - t0:.1f}s {(d / f'{name}.json.gz').stat().st_size/1e6:.1f} MB")
        except Exception as e:  # one failing workload must not lose the others
            log(f"workload {name}: FAILED {type(e).__name__}: {str(e)[:300]}")
            traceback.print_exc()
        torch.cuda.empty_cache() if DEV == "cuda" else None


# ------------------------------------------------------------------------------------------ pairs
class Marked(nn.Module):
    """Wraps the swapped module so both A and B traces mark its forward with record_function('swap_group')."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *a, **k):
        with record_function("swap_group"):
            return self.inner(*a, **k)


def _hf(kind: str, act: str | None = None, layers: int | None = None, seq: int = 1024):
    from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig
    if kind == "gpt2":
        cfg = GPT2Config(n_layer=layers or 12, n_embd=768, n_head=12, vocab_size=50257,
                         n_positions=max(1024, seq), activation_function=act, resid_pdrop=0.0,
                         embd_pdrop=0.0, attn_pdrop=0.0)
    elif kind == "llama1b":
        cfg = LlamaConfig(num_hidden_layers=layers or 16, hidden_size=2048, num_attention_heads=32,
                          num_key_value_heads=8, intermediate_size=8192, vocab_size=128256,
                          max_position_embeddings=8192, tie_word_embeddings=True)
    else:  # llama8b shapes
        cfg = LlamaConfig(num_hidden_layers=layers or 4, hidden_size=4096, num_attention_heads=32,
                          num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
                          max_position_embeddings=8192)
    if SMOKE:
        for k, v in dict(n_layer=1, n_embd=64, n_head=2, hidden_size=64, num_attention_heads=2,
                         num_key_value_heads=1, intermediate_size=128, num_hidden_layers=1,
                         vocab_size=1000).items():
            if hasattr(cfg, k):
                setattr(cfg, k, v)
    torch.manual_seed(0)
    with torch.device(DEV):
        return AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")


def _mark_gpt2_act(m):
    for blk in m.transformer.h:
        blk.mlp.act = Marked(blk.mlp.act)
    return m


def _rmsnorm_fused(m):
    """Every LlamaRMSNorm replaced by torch.nn.RMSNorm holding the same weight (one fused kernel)."""
    for mod in list(m.modules()):
        for cname, child in list(mod.named_children()):
            if type(child).__name__ == "LlamaRMSNorm":
                new = nn.RMSNorm(child.weight.shape[0], eps=child.variance_epsilon, device=child.weight.device,
                                 dtype=child.weight.dtype)
                new.weight.data.copy_(child.weight.data)
                setattr(mod, cname, new)
    return m


def _mark_rmsnorm(m):
    for mod in list(m.modules()):
        for cname, child in list(mod.named_children()):
            if type(child).__name__ in ("LlamaRMSNorm", "RMSNorm"):
                setattr(mod, cname, Marked(child))
    return m


def _decode_step(m, batch=1, prompt=16, tokens=16, vocab=50257):
    ids = torch.randint(0, vocab if not SMOKE else 1000, (batch, prompt), device=DEV)

    @torch.no_grad()
    def step():
        out = m(ids, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(tokens):
            out = m(nxt, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
    return step


def _lm_train_step(m, b, s, vocab):
    ids = torch.randint(0, vocab if not SMOKE else 1000, (b, s), device=DEV)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, foreach=True)

    def step():
        opt.zero_grad(set_to_none=True)
        out = m(ids, labels=ids)
        out.loss.backward()
        opt.step()
    return step


def _prefill_step(m, b, s):
    ids = torch.randint(0, 128256 if not SMOKE else 1000, (b, s), device=DEV)

    @torch.no_grad()
    def step():
        m(ids, use_cache=False)
    return step


def pair_decode_gelu():
    a = _mark_gpt2_act(_hf("gpt2", "gelu_new").eval())
    b = _mark_gpt2_act(_hf("gpt2", "gelu_pytorch_tanh").eval())
    return (_decode_step(a), _decode_step(b), "batch-1 decode (CPU-bound)",
            "GPT-2 124M, bf16, batch 1: 16-token prompt + 16 greedy decode tokens per step. A: HF gelu_new "
            "(tanh-GELU as eager elementwise ops); B: gelu_pytorch_tanh (one fused F.gelu tanh kernel). "
            "Swapped module: every transformer.h[i].mlp.act (class NewGELUActivation -> "
            "GELUTanh/PytorchGELUTanh), marked by record_function('swap_group').")


def pair_decode_rmsnorm():
    a = _mark_rmsnorm(_hf("llama1b", layers=8).eval())
    b = _mark_rmsnorm(_rmsnorm_fused(_hf("llama1b", layers=8).eval()))
    return (_decode_step(a, vocab=128256), _decode_step(b, vocab=128256), "batch-1 decode (CPU-bound)",
            "Llama-3.2-1B shapes cut to 8 layers, bf16, batch 1: 16-token prompt + 16 decode tokens per step. "
            "A: HF LlamaRMSNorm (eager pow/mean/rsqrt/mul/cast); B: torch.nn.RMSNorm with the same weights "
            "(fused rms_norm). Swapped modules: every LlamaRMSNorm, marked by record_function('swap_group').")


def pair_resnet_small_train():
    import torchvision
    mods = []
    for foreach in (False, True):
        torch.manual_seed(0)
        m = torchvision.models.resnet50().to(DEV).to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, foreach=foreach)
        bsz = 16 if not SMOKE else 2
        x = torch.randn(bsz, 3, 224, 224, device=DEV).to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (bsz,), device=DEV)

        def step(m=m, opt=opt, x=x, y=y):
            opt.zero_grad(set_to_none=True)
            with torch.autocast(DEV, dtype=torch.bfloat16, enabled=DEV == "cuda"):
                loss = F.cross_entropy(m(x), y)
            loss.backward()
            with record_function("swap_group"):
                opt.step()
        mods.append(step)
    return (mods[0], mods[1], "small-batch CNN training (CPU-bound)",
            "torchvision ResNet-50 train, batch 16, bf16 autocast, channels_last. A: SGD momentum with "
            "foreach=False (two kernels per parameter per step, launched one by one); B: foreach=True "
            "(multi_tensor_apply kernels). Swapped group: the optimizer step, marked by "
            "record_function('swap_group').")


def pair_gpt2_train():
    a = _mark_gpt2_act(_hf("gpt2", "gelu_new", seq=1024).train())
    b = _mark_gpt2_act(_hf("gpt2", "gelu_pytorch_tanh", seq=1024).train())
    bs, s = (8, 1024) if not SMOKE else (1, 16)
    return (_lm_train_step(a, bs, s, 50257), _lm_train_step(b, bs, s, 50257), "LLM training (GPU-bound)",
            "GPT-2 124M train, b8 x 1024, bf16 weights, AdamW foreach. A: gelu_new (eager tanh-GELU, "
            "forward and backward as elementwise chains); B: gelu_pytorch_tanh (fused gelu / gelu_backward). "
            "Swapped module: every mlp.act (forward marked by record_function('swap_group'); its backward "
            "ops link to it by autograd sequence number).")


def pair_llama_prefill():
    a = _mark_rmsnorm(_hf("llama8b", layers=4).eval())
    b = _mark_rmsnorm(_rmsnorm_fused(_hf("llama8b", layers=4).eval()))
    bs, s = (4, 1024) if not SMOKE else (1, 16)
    return (_prefill_step(a, bs, s), _prefill_step(b, bs, s), "LLM prefill (GPU-bound)",
            "Llama-3-8B shapes cut to 4 layers, bf16, prefill of b4 x 1024 (no cache). A: HF LlamaRMSNorm; "
            "B: torch.nn.RMSNorm, same weights. Swapped modules: every LlamaRMSNorm (9), marked by "
            "record_function('swap_group').")


def _gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def pair_two_streams():
    n = 4096 if not SMOKE else 64
    torch.manual_seed(0)
    ws = [torch.randn(n, n, device=DEV, dtype=torch.bfloat16) / math.sqrt(n) for _ in range(6)]
    x = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    side_in = torch.randn(8 * n, n // 2, device=DEV, dtype=torch.bfloat16)
    side = torch.cuda.Stream() if DEV == "cuda" else None

    def make(fused: bool):
        def step():
            if side is not None:
                side.wait_stream(torch.cuda.current_stream())
            ctx = torch.cuda.stream(side) if side is not None else contextlib.nullcontext()
            with ctx, record_function("swap_group"):
                h = side_in
                for _ in range(3):
                    h = F.gelu(h, approximate="tanh") if fused else _gelu_new(h)
            y = x
            for w in ws:
                y = torch.relu(y @ w)
            if side is not None:
                torch.cuda.current_stream().wait_stream(side)
            return (y.float().mean() + h.float().mean())
        return step
    return (make(False), make(True), "two streams (side-stream elementwise overlapped with GEMMs)",
            "Main stream: 6 bf16 4096^2 GEMM+ReLU; side stream (waits for main at step start, main waits "
            "for it at the end via wait_stream, i.e. event record/wait): 3 tanh-GELUs over a 32768x2048 bf16 "
            "tensor. A: eager tanh-GELU chains; B: fused F.gelu(tanh). Swapped group: the side-stream work, "
            "marked by record_function('swap_group').")


PAIRS = {
    "gpt2-decode-b1-gelu": pair_decode_gelu,
    "llama1b-decode-b1-rmsnorm": pair_decode_rmsnorm,
    "resnet50-train-b16-sgd-foreach": pair_resnet_small_train,
    "gpt2-train-b8-gelu": pair_gpt2_train,
    "llama8b-prefill-b4-rmsnorm": pair_llama_prefill,
    "two-stream-gelu": pair_two_streams,
}


def interleaved(step_a, step_b, n: int, times: dict[str, list[float]]) -> None:
    """n timed steps of each, A and B adjacent (AB, BA, AB, ...): drift and mode changes hit both alike."""
    for i in range(n):
        for key, step in (("A", step_a), ("B", step_b)) if i % 2 == 0 else (("B", step_b), ("A", step_a)):
            times[key] += time_steps(step, 1)


PROFILED_STEPS = 3  # recorded steps per profiled window


def trace_name(name: str, key: str, r: int) -> str:
    """NAME.A.json.gz for round 0 (the name older captures used), NAME.A.r1.json.gz, ... after it."""
    return f"{name}.{key}.json.gz" if r == 0 else f"{name}.{key}.r{r}.json.gz"


def kernel_busy_us(path: Path) -> float:
    """Union of the GPU op intervals (kernels, memcpy, memset) in a saved trace, in microseconds."""
    with gzip.open(path, "rt") as f:
        events = json.load(f).get("traceEvents", [])
    iv = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in events
                if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    total, end = 0.0, -math.inf
    for a, b in iv:
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def pairs(out: Path, rounds: int, steps: int, profile_rounds: int) -> None:
    d = out / "pairs"
    d.mkdir(exist_ok=True)
    for name, build in PAIRS.items():
        t0 = time.perf_counter()
        try:
            step_a, step_b, regime, desc = build()
            for _ in range(3):
                step_a()
                step_b()
            sync()
            times = {"A": [], "B": []}
            interleaved(step_a, step_b, rounds * steps, times)
            busy: dict[str, list[float]] = {"A": [], "B": []}
            for r in range(profile_rounds):  # A, B, A, B, ...: clock drift between windows hits both alike
                for key, step in (("A", step_a), ("B", step_b)):
                    path = d / trace_name(name, key, r)
                    profile_steps(step, path, active=PROFILED_STEPS)
                    busy[key].append(kernel_busy_us(path) / PROFILED_STEPS)
            interleaved(step_a, step_b, rounds * steps, times)  # timed again after profiling, to see drift
            meta = {"pair": name, "regime": regime, "description": desc,
                    "step_ms": times, "step_ms_median": {k: statistics.median(v) for k, v in times.items()},
                    "step_ms_p25": {k: statistics.quantiles(v, n=4, method="inclusive")[0]
                                    for k, v in times.items()},
                    "device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
                    "torch": torch.__version__, "profiled_steps": PROFILED_STEPS,
                    "profile_rounds": profile_rounds,
                    "traces": {k: [trace_name(name, k, r) for r in range(profile_rounds)] for k in "AB"},
                    "kernel_busy_us_per_step": busy,
                    "timing": "perf_counter around one step, "
                    "synchronised before and after; A and B interleaved step by step (A_i and B_i adjacent, "
                    "the order within each pair alternating), so host and clock modes hit both alike",
                    "profiling": "profile_rounds alternating profiled windows A, B, A, B, ... (each: one "
                    "warm-up step, then profiled_steps recorded steps); kernel_busy_us_per_step is the union "
                    "of GPU op intervals per recorded step, per window"}
            (d / f"{name}.json").write_text(json.dumps(meta, indent=1))
            med = meta["step_ms_median"]
            ratios = [a / b if b else math.nan for a, b in zip(busy["A"], busy["B"], strict=True)]  # no GPU ops on the CPU
            log(f"pair {name}: A {med['A']:.2f} ms  B {med['B']:.2f} ms  speedup {med['A'] / med['B']:.3f}x; "
                f"kernel busy/step A {' '.join(f'{x:.0f}' for x in busy['A'])} us, "
                f"B {' '.join(f'{x:.0f}' for x in busy['B'])} us, "
                f"A/B per round {' '.join(f'{x:.3f}' for x in ratios)} ({time.perf_counter() - t0:.1f}s)")
            del step_a, step_b
        except Exception as e:
            log(f"pair {name}: FAILED {type(e).__name__}: {str(e)[:300]}")
            traceback.print_exc()
        if DEV == "cuda":
            torch.cuda.empty_cache()


def pack(out: Path, limit: int = 15 * 2**20, max_files: int = 6) -> None:
    """Pack everything under out/{pairs,workloads} into <= max_files tars of <= limit bytes each."""
    files = sorted(p for sub in ("pairs", "workloads") for p in (out / sub).glob("*") if p.is_file())
    bins: list[list[Path]] = []
    sizes: list[int] = []
    for f in sorted(files, key=lambda p: -p.stat().st_size):
        s = f.stat().st_size
        for i in range(len(bins)):
            if sizes[i] + s <= limit:
                bins[i].append(f)
                sizes[i] += s
                break
        else:
            bins.append([f])
            sizes.append(s)
    for i, group in enumerate(bins[:max_files]):
        with tarfile.open(out / f"bundle{i}.tar", "w") as t:
            for f in group:
                t.add(f, arcname=f"{f.parent.name}/{f.name}")
    if len(bins) > max_files:
        log(f"pack: {len(bins) - max_files} bundles left out: " +
            ", ".join(f.name for g in bins[max_files:] for f in g))
    for sub in ("pairs", "workloads"):
        shutil.rmtree(out / sub, ignore_errors=True)


def main() -> None:
    global SMOKE, DEV
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="peaks,workloads,pairs")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--profile-rounds", type=int, default=3,
                    help="pairs: alternating profiled windows A, B, A, B, ... (each traced, kept)")
    args = ap.parse_args()
    SMOKE = args.smoke
    DEV = "cuda" if torch.cuda.is_available() else "cpu"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    only = args.only.split(",")
    log(f"device {DEV} torch {torch.__version__} smoke={SMOKE}")
    t0 = time.perf_counter()
    if "peaks" in only:
        peaks(out)
    if "pairs" in only:
        pairs(out, args.rounds, args.steps, args.profile_rounds)
    if "workloads" in only:
        workloads(out)
    pack(out)
    log(f"total {time.perf_counter() - t0:.1f}s")
    (out / "capture.log").write_text("\n".join(LOG) + "\n")


if __name__ == "__main__":
    sys.exit(main())
