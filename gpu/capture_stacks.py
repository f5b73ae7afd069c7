"""Profile a few steps of each stack the project had not profiled (docs/classification.md's coverage):
FFT, linear algebra, sort and sampling, sparse, an SSM, MoE, attention variants, norms, weight norm,
the native MHA fast path, vision ops and torch.compile'd regions. Random weights, no network, torch only.

python3 gpu/capture_stacks.py OUT [--only fft_fno_train,sort_sampling] [--budget 360] [--smoke]
  --smoke: tiny sizes on the CPU (CUDA-only stacks are skipped), for tests/test_gpu_scripts.py.
Each stack runs in its own try (one failure loses only that stack) and within what is left of the
wall-time budget (a stack that would start too late is skipped; one that overruns is stopped by an
alarm). Kineto trace per stack (CPU+CUDA, record_shapes, no stacks), gzipped, packed into
OUT/stacks.tar (OUT/stacks-2.tar, ... past 15 MiB); OUT/stacks.json says what ran, how long, and why not.
About 5-6 minutes on one H200.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import signal
import tarfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

SMOKE = False
DEV = "cuda"
PART_BYTES = 15 * 2**20  # each tar part stays under the 16 MiB a device file may be
Step = Callable[[], object]


def sz(gpu: int, smoke: int) -> int:
    """A size: the GPU's, or the smoke run's tiny one."""
    return smoke if SMOKE else gpu


def lowp() -> torch.dtype:
    return torch.float32 if SMOKE else torch.bfloat16


def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def adam_step(params: list[torch.Tensor], loss_fn: Callable[[], torch.Tensor]) -> Step:
    """A training step: loss, backward, AdamW (foreach)."""
    opt = torch.optim.AdamW(params, lr=1e-4)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        opt.step()
    return step


class _Timeout(Exception):
    pass


def _alarm(signum, frame) -> None:
    raise _Timeout("stack overran its share of the budget")


# ----------------------------------------------------------------------------------------------- stacks
def fft_fno_train() -> Step:
    """A Fourier-operator (FNO-like) training step: rfft2, a complex mode-mixing einsum, irfft2, 1x1 conv."""
    b, c, n, modes = sz(16, 2), sz(64, 4), sz(128, 16), sz(16, 4)

    class Spectral(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(c, c, modes, modes, 2) / c)
            self.skip = nn.Conv2d(c, c, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            xf = torch.fft.rfft2(x, norm="ortho")
            out = torch.zeros_like(xf)
            w = torch.view_as_complex(self.w)
            out[..., :modes, :modes] = torch.einsum("bixy,ioxy->boxy", xf[..., :modes, :modes], w)
            return F.gelu(torch.fft.irfft2(out, s=x.shape[-2:], norm="ortho") + self.skip(x))

    model = nn.Sequential(nn.Conv2d(3, c, 1), Spectral(), Spectral(), Spectral(), nn.Conv2d(c, 1, 1)).to(DEV)
    x, y = torch.randn(b, 3, n, n, device=DEV), torch.randn(b, 1, n, n, device=DEV)

    def loss() -> torch.Tensor:
        spec = torch.fft.fft(torch.fft.ifft(x[:, 0].to(torch.complex64), dim=-1), dim=-2)  # 1-D c2c transforms too
        return F.mse_loss(model(x), y) + spec.real.mean() * 0
    return adam_step(list(model.parameters()), loss)


def linalg_gp() -> Step:
    """An exact-GP hyperparameter step (RBF kernel, cholesky, cholesky_solve, logdet) plus eigh, solve, qr, svd."""
    n, d, m = sz(2048, 64), 8, sz(256, 16)
    x, y = torch.randn(n, d, device=DEV), torch.randn(n, 1, device=DEV)
    log_ls = torch.zeros(d, device=DEV, requires_grad=True)
    log_noise = torch.tensor(-2.0, device=DEV, requires_grad=True)
    a = torch.randn(8, m, m, device=DEV)
    spd = a @ a.mT + m * torch.eye(m, device=DEV)
    rhs = torch.randn(8, m, 4, device=DEV)

    def loss() -> torch.Tensor:
        xs = x / log_ls.exp()
        k = torch.exp(-0.5 * torch.cdist(xs, xs).square()) + (log_noise.exp() + 1e-3) * torch.eye(n, device=DEV)
        chol = torch.linalg.cholesky(k)
        alpha = torch.cholesky_solve(y, chol)
        nll = 0.5 * (y * alpha).sum() + chol.diagonal().log().sum()
        evals, evecs = torch.linalg.eigh(spd)
        q, r = torch.linalg.qr(a)
        u, s, vh = torch.linalg.svd(a[:2], full_matrices=False)
        sol = torch.linalg.solve(spd, rhs)
        extra = torch.linalg.inv(spd).sum() + torch.linalg.lstsq(a, rhs).solution.sum() + torch.linalg.det(spd[:2]).sum()
        side = evals.sum() + evecs.sum() + q.sum() + r.sum() + u.sum() + s.sum() + vh.sum() + sol.sum() + extra
        return nll + 0 * side
    return adam_step([log_ls, log_noise], loss)


def linalg_f64() -> Step:
    """Double-precision factorisations (MAGMA/cuSOLVER paths): cholesky, eigh, svd, lu, eig."""
    m = sz(512, 16)
    a = torch.randn(m, m, device=DEV, dtype=torch.float64)
    spd = a @ a.T + m * torch.eye(m, device=DEV, dtype=torch.float64)

    def step() -> object:
        lu, piv = torch.linalg.lu_factor(a)
        return (torch.linalg.cholesky(spd).sum() + torch.linalg.eigh(spd)[0].sum() + torch.linalg.svdvals(a).sum()
                + torch.linalg.eigvals(a[:64, :64]).real.sum() + lu.sum() + piv.sum() + torch.linalg.matrix_norm(a, 2))
    return step


def sort_sampling() -> Step:
    """Sort, argsort, topk, unique, kthvalue, multinomial and a top-p sampling loop over a vocabulary."""
    b, vocab, tokens = sz(8, 2), sz(50257, 512), sz(16, 2)
    logits = torch.randn(b, vocab, device=DEV)
    big = torch.randn(sz(1 << 22, 4096), device=DEV)
    ints = torch.randint(0, 1000, (sz(1 << 20, 4096),), device=DEV)

    def step() -> object:
        out = [torch.sort(big).values[0], torch.argsort(big, descending=True)[0], torch.topk(big, 64).values[0],
               torch.unique(ints).sum(), torch.kthvalue(big[:4096], 100).values, torch.median(big[:65536]),
               torch.searchsorted(torch.sort(big[:4096]).values, big[:1024]).sum(), torch.randperm(65536, device=DEV)[0],
               torch.cumsum(big, 0)[-1], torch.bincount(ints).max(), torch.quantile(big[:65536], 0.9)]
        z = logits
        for _ in range(tokens):  # top-p (nucleus) with temperature, as LLM samplers do
            probs = torch.softmax(z / 0.8, dim=-1)
            sp, si = torch.sort(probs, descending=True)
            keep = sp.cumsum(-1) - sp < 0.9
            sp = sp * keep
            nxt = si.gather(-1, torch.multinomial(sp / sp.sum(-1, keepdim=True), 1))
            z = z.scatter_add(-1, nxt, torch.ones_like(nxt, dtype=z.dtype))
            topv, topi = torch.topk(z, 50)
            out.append(torch.multinomial(torch.softmax(topv, -1), 2, replacement=True).sum() + topi[0, 0])
        return out
    return step


def sparse_ops() -> Step:
    """torch.sparse: COO and CSR matmul (forward and backward), CSR@CSR, sampled_addmm, 2:4 semi-structured,
    and EmbeddingBag (sum, mean, per-sample weights, sparse gradients)."""
    n, k, nnz = sz(8192, 64), sz(256, 8), sz(200_000, 200)
    idx = torch.randint(0, n, (2, nnz), device=DEV)
    coo = torch.sparse_coo_tensor(idx, torch.randn(nnz, device=DEV), (n, n)).coalesce()
    csr = coo.to_sparse_csr()
    dense = torch.randn(n, k, device=DEV, requires_grad=True)
    bag = nn.EmbeddingBag(sz(100_000, 100), k, mode="sum").to(DEV)
    bag_mean = nn.EmbeddingBag(sz(100_000, 100), k, mode="mean", sparse=True).to(DEV)
    ids = torch.randint(0, sz(100_000, 100), (sz(65536, 64),), device=DEV)
    offs = torch.arange(0, ids.numel(), sz(32, 8), device=DEV)
    opt_sparse = torch.optim.SGD(bag_mean.parameters(), lr=0.1)
    semi = _semi_structured(k)

    def step() -> object:
        opt_sparse.zero_grad()
        y = torch.sparse.mm(coo, dense) + csr @ dense.detach()
        loss = y.square().mean() + bag(ids, offs, per_sample_weights=torch.rand(ids.shape, device=DEV)).mean()
        (loss + bag_mean(ids, offs).mean()).backward()
        opt_sparse.step()
        small = csr if SMOKE else torch.sparse_coo_tensor(idx[:, :5000], torch.randn(5000, device=DEV), (n, n)).to_sparse_csr()
        extra = [(small @ small).values().sum(), torch.sparse.addmm(dense.detach(), coo, dense.detach()).sum(),
                 coo.to_dense().sum(), torch.sparse.sum(coo)]
        if DEV == "cuda":
            extra.append(torch.sparse.sampled_addmm(csr, dense.detach(), dense.detach().T).values().sum())
        if semi is not None:
            extra.append(semi())
        return extra
    return step


def _semi_structured(k: int) -> Step | None:
    """A 2:4 sparse weight through to_sparse_semi_structured (cuSPARSELt or CUTLASS), or None where unsupported."""
    if DEV != "cuda":
        return None
    try:
        w = torch.tensor([0, 0, 1, 1], dtype=torch.float16, device=DEV).tile(1024, 256) * torch.randn(1024, 1024, device=DEV, dtype=torch.float16)
        ws = torch.sparse.to_sparse_semi_structured(w)
        x = torch.randn(1024, 1024, device=DEV, dtype=torch.float16)
        torch.mm(ws, x)
        return lambda: torch.mm(ws, x).sum()
    except Exception as e:
        print(f"    semi-structured sparsity unavailable: {type(e).__name__}: {str(e)[:120]}", flush=True)
        return None


def ssm_mamba_train() -> Step:
    """A Mamba-like block trained: in_proj, depthwise causal conv1d, selective scan (a loop over time, in torch)."""
    b, length, d, state, layers = sz(8, 2), sz(128, 16), sz(512, 16), 16, 2
    inner = 2 * d

    class Mamba(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm, self.inp = nn.RMSNorm(d), nn.Linear(d, 2 * inner, bias=False)
            self.conv = nn.Conv1d(inner, inner, 4, groups=inner, padding=3)
            self.xp, self.dt = nn.Linear(inner, 2 * state + 16, bias=False), nn.Linear(16, inner)
            self.a_log = nn.Parameter(torch.log(torch.arange(1, state + 1).float()).repeat(inner, 1))
            self.out = nn.Linear(inner, d, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            u, z = self.inp(self.norm(x)).chunk(2, -1)
            u = F.silu(self.conv(u.transpose(1, 2))[..., :length].transpose(1, 2))
            bm, cm, dt = self.xp(u).split([state, state, 16], -1)
            dt = F.softplus(self.dt(dt))
            da = torch.exp(dt.unsqueeze(-1) * -self.a_log.exp())  # b, l, inner, state
            h, ys = torch.zeros(x.shape[0], inner, state, device=x.device), []
            for t in range(length):
                h = da[:, t] * h + (dt[:, t] * u[:, t]).unsqueeze(-1) * bm[:, t].unsqueeze(1)
                ys.append((h * cm[:, t].unsqueeze(1)).sum(-1))
            return x + self.out(torch.stack(ys, 1) * F.silu(z))

    model = nn.Sequential(*[Mamba() for _ in range(layers)]).to(DEV)
    x = torch.randn(b, length, d, device=DEV)
    return adam_step(list(model.parameters()), lambda: model(x).square().mean())


def moe_train() -> Step:
    """An MoE layer trained: router top-k, argsort permutation, index_select, experts as torch._grouped_mm
    (or a loop of matmuls where it is missing), index_add_ and scatter_add combine."""
    tokens, d, h, experts, k = sz(8192, 64), sz(1024, 32), sz(2048, 64), 8, 2
    dt = lowp()
    router = nn.Linear(d, experts).to(DEV, dt)
    w1 = nn.Parameter(torch.randn(experts, d, h, device=DEV, dtype=dt) / d**0.5)
    w2 = nn.Parameter(torch.randn(experts, h, d, device=DEV, dtype=dt) / h**0.5)
    x = torch.randn(tokens, d, device=DEV, dtype=dt)
    grouped = [DEV == "cuda" and hasattr(torch, "_grouped_mm")]

    def experts_mm(xs: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        if grouped[0]:
            offs = counts.cumsum(0).to(torch.int32)
            return torch._grouped_mm(F.silu(torch._grouped_mm(xs, w1, offs=offs)), w2, offs=offs)
        parts = xs.split(counts.tolist())
        return torch.cat([F.silu(p @ w1[e]) @ w2[e] for e, p in enumerate(parts)])

    def loss() -> torch.Tensor:
        probs = torch.softmax(router(x).float(), -1)
        topv, topi = torch.topk(probs, k)
        flat = topi.flatten()
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=experts)
        tok = order // k
        out = experts_mm(x.index_select(0, tok), counts) * topv.flatten()[order, None].to(dt)
        y = torch.zeros_like(x).index_add_(0, tok, out)
        y2 = torch.zeros_like(x).scatter_add_(0, tok[:, None].expand(-1, d), out)
        aux = (probs.mean(0) * counts.float() / flat.numel()).sum()
        return (y.float().square().mean() + y2.float().mean() * 0) + 0.01 * aux

    step = adam_step([*router.parameters(), w1, w2], loss)
    try:
        step()
    except Exception as e:
        print(f"    torch._grouped_mm failed ({type(e).__name__}: {str(e)[:160]}); a loop of matmuls instead", flush=True)
        grouped[0] = False
    return step


def _qkv(b: int, heads: int, length: int, dim: int, grad: bool = True) -> list[torch.Tensor]:
    return [torch.randn(b, heads, length, dim, device=DEV, dtype=lowp(), requires_grad=grad) for _ in range(3)]


def _sdpa(backend: str) -> Step:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = _qkv(sz(4, 1), 16, sz(2048, 32), sz(128, 16))
    which = getattr(SDPBackend, backend)

    def step() -> None:
        with sdpa_kernel([which]):
            F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    step()  # the backend must run here, or the stack fails with its reason
    return step


def attn_sdpa_flash() -> Step:
    return _sdpa("FLASH_ATTENTION")


def attn_sdpa_efficient() -> Step:
    return _sdpa("EFFICIENT_ATTENTION")


def attn_sdpa_math() -> Step:
    return _sdpa("MATH")


def attn_sdpa_cudnn() -> Step:
    return _sdpa("CUDNN_ATTENTION")


def attn_flex_compiled() -> Step:
    """FlexAttention through torch.compile: a causal block mask, a soft-capping score_mod, forward and backward."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    b, heads, length = sz(4, 1), 16, sz(2048, 128)
    q, k, v = _qkv(b, heads, length, sz(64, 16))
    mask = create_block_mask(lambda bb, hh, qi, ki: qi >= ki, b, heads, length, length, device=DEV)
    flex = torch.compile(flex_attention)

    def softcap(s: torch.Tensor, bb: torch.Tensor, hh: torch.Tensor, qi: torch.Tensor, ki: torch.Tensor) -> torch.Tensor:
        return 30 * torch.tanh(s / 30)

    def step() -> None:
        flex(q, k, v, block_mask=mask, score_mod=softcap).sum().backward()
    return step


def attn_nested_varlen() -> Step:
    """Variable-length attention: SDPA on jagged nested tensors and, where present, varlen_attn."""
    heads, dim, lengths = 16, sz(64, 16), [sz(n, n // 64) for n in (512, 1024, 200, 1800, 64)]
    dt = lowp()
    nts = [torch.nested.nested_tensor([torch.randn(n, heads * dim, dtype=dt) for n in lengths],
                                      layout=torch.jagged, device=DEV, requires_grad=True) for _ in range(3)]
    packed = [torch.randn(sum(lengths), heads, dim, device=DEV, dtype=dt, requires_grad=True) for _ in range(3)]
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], device=DEV, dtype=torch.int32)
    varlen = _varlen(packed, cu, max(lengths))

    def step() -> None:
        for t in (*nts, *packed):
            t.grad = None  # a nested leaf cannot accumulate a second gradient
        q, k, v = (t.unflatten(-1, [heads, dim]).transpose(1, 2) for t in nts)
        out = F.scaled_dot_product_attention(q, k, v)
        loss = out.values().float().square().mean()
        if varlen is not None:
            loss = loss + varlen(*packed, cu, cu, max(lengths), max(lengths)).float().square().mean()
        loss.backward()
    return step


def _varlen(packed: list[torch.Tensor], cu: torch.Tensor, longest: int) -> Callable | None:
    """torch.nn.attention.varlen.varlen_attn where it exists and runs on these inputs, else None."""
    if DEV != "cuda":
        return None
    try:
        from torch.nn.attention.varlen import varlen_attn
        varlen_attn(*packed, cu, cu, longest, longest)
        return varlen_attn
    except Exception as e:
        print(f"    varlen_attn unavailable: {type(e).__name__}: {str(e)[:120]}", flush=True)
        return None


def weight_norm_train() -> Step:
    """Weight-normalised layers trained: nn.utils.weight_norm (torch._weight_norm, first and last dim) and
    the parametrization form."""
    d = sz(1024, 16)
    layers = nn.Sequential(nn.utils.weight_norm(nn.Linear(d, d), dim=0), nn.GELU(),
                           nn.utils.weight_norm(nn.Linear(d, d), dim=1), nn.GELU(),
                           nn.utils.parametrizations.weight_norm(nn.Conv1d(d, d, 3, padding=1))).to(DEV)
    x = torch.randn(sz(64, 2), sz(128, 8), d, device=DEV)
    return adam_step(list(layers.parameters()), lambda: layers[4](layers[:4](x).transpose(1, 2)).square().mean())


def norms_train() -> Step:
    """GroupNorm, InstanceNorm, BatchNorm, LayerNorm and RMSNorm trained (their backward parameter kernels)."""
    c = sz(256, 8)
    model = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.GroupNorm(32 if not SMOKE else 2, c), nn.SiLU(),
                          nn.InstanceNorm2d(c, affine=True), nn.BatchNorm2d(c), nn.Flatten(2)).to(DEV)
    ln, rms = nn.LayerNorm(c).to(DEV), nn.RMSNorm(c).to(DEV)
    x = torch.randn(sz(32, 2), 3, sz(64, 8), sz(64, 8), device=DEV)
    return adam_step([*model.parameters(), *ln.parameters(), *rms.parameters()],
                     lambda: rms(ln(model(x).transpose(1, 2))).square().mean())


def mha_fast_path_infer() -> Step:
    """PyTorch's native MHA fast path: nn.MultiheadAttention in eval with need_weights=False, and a
    TransformerEncoder in eval with a padding mask (the nested-tensor fast path)."""
    d, heads = sz(1024, 16), sz(16, 2)
    dt = torch.float32 if SMOKE else torch.float16
    mha = nn.MultiheadAttention(d, heads, batch_first=True).to(DEV, dt).eval()
    layer = nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).to(DEV, dt).eval()
    x = torch.randn(sz(16, 2), sz(512, 8), d, device=DEV, dtype=dt)
    pad = torch.zeros(x.shape[:2], dtype=torch.bool, device=DEV)
    pad[:, x.shape[1] // 2:] = True

    def step() -> object:
        with torch.inference_mode():
            return mha(x, x, x, need_weights=False)[0].sum() + enc(x, src_key_padding_mask=pad).sum()
    return step


def vision_ops_train() -> Step:
    """Vision ops beyond ResNet's: ConvTranspose2d, conv3d, upsampling, grid_sample, pooling, pixel shuffle, dropout."""
    c = sz(64, 4)
    up = nn.ConvTranspose2d(c, c, 4, stride=2, padding=1).to(DEV)
    conv3 = nn.Conv3d(4, c, 3, padding=1).to(DEV)
    x = torch.randn(sz(16, 2), c, sz(64, 8), sz(64, 8), device=DEV)
    vol = torch.randn(2, 4, sz(16, 4), sz(32, 8), sz(32, 8), device=DEV)
    theta = torch.eye(2, 3, device=DEV).repeat(x.shape[0], 1, 1)

    def loss() -> torch.Tensor:
        y = up(x)
        y = F.interpolate(y, scale_factor=0.5, mode="bilinear") + F.interpolate(x, scale_factor=1.0, mode="nearest")
        y = F.grid_sample(y, F.affine_grid(theta, list(y.shape), align_corners=False), align_corners=False)
        y = F.dropout(F.max_pool2d(y, 2), 0.1) + F.avg_pool2d(y, 2)
        y = F.pixel_shuffle(y[:, : c // 4 * 4], 2)
        return y.square().mean() + F.adaptive_avg_pool3d(conv3(vol), 1).mean()
    return adam_step([*up.parameters(), *conv3.parameters()], loss)


def _block(d: int) -> nn.Module:
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.qkv(self.ln1(x)).unflatten(-1, [3, 8, -1]).permute(2, 0, 3, 1, 4)
            x = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2))
            return x + self.mlp(self.ln2(x))
    return Block()


def compiled_block_train() -> Step:
    """A transformer block trained under torch.compile (default mode): Inductor's fused Triton kernels."""
    d = sz(1024, 32)
    model = nn.Sequential(_block(d), _block(d)).to(DEV)
    cmodel = torch.compile(model)
    x = torch.randn(sz(8, 2), sz(1024, 16), d, device=DEV)

    def loss() -> torch.Tensor:
        with torch.autocast(DEV, dtype=lowp(), enabled=DEV == "cuda"):
            return cmodel(x).float().square().mean()
    return adam_step(list(model.parameters()), loss)


def compiled_max_autotune_infer() -> Step:
    """An MLP under torch.compile(mode='max-autotune-no-cudagraphs'): Triton template GEMMs (triton_tem_*)."""
    d = sz(2048, 32)
    model = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.LayerNorm(d)).to(DEV, lowp()).eval()
    cmodel = torch.compile(model, mode="max-autotune-no-cudagraphs")
    x = torch.randn(sz(4096, 16), d, device=DEV, dtype=lowp())

    def step() -> object:
        with torch.no_grad():
            return cmodel(x)
    return step


# (name, function, needs CUDA, seconds to set up and warm up that must remain to start it)
STACKS: list[tuple[str, Callable[[], Step], bool, float]] = [
    ("fft_fno_train", fft_fno_train, False, 10),
    ("linalg_gp_train", linalg_gp, False, 10),
    ("linalg_f64", linalg_f64, False, 10),
    ("sort_sampling", sort_sampling, False, 10),
    ("sparse_ops", sparse_ops, False, 10),
    ("ssm_mamba_train", ssm_mamba_train, False, 15),
    ("moe_train", moe_train, False, 10),
    ("attn_sdpa_flash", attn_sdpa_flash, True, 5),
    ("attn_sdpa_efficient", attn_sdpa_efficient, True, 5),
    ("attn_sdpa_math", attn_sdpa_math, True, 5),
    ("attn_sdpa_cudnn", attn_sdpa_cudnn, True, 5),
    ("attn_nested_varlen", attn_nested_varlen, False, 10),
    ("weight_norm_train", weight_norm_train, False, 5),
    ("norms_train", norms_train, False, 5),
    ("mha_fast_path_infer", mha_fast_path_infer, False, 5),
    ("vision_ops_train", vision_ops_train, False, 5),
    ("attn_flex_compiled", attn_flex_compiled, True, 60),
    ("compiled_block_train", compiled_block_train, True, 60),
    ("compiled_max_autotune_infer", compiled_max_autotune_infer, True, 90),
]


# ----------------------------------------------------------------------------------------------- driver
def save_trace(prof: profile, path: Path) -> None:
    raw = path.with_suffix("")  # .json
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as f, gzip.open(path, "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)
    raw.unlink()


def run_stack(name: str, make: Callable[[], Step], traces: Path, seconds: float) -> dict:
    """Set up, warm up (2 steps) and profile 3 steps of one stack; its row for stacks.json."""
    t0 = time.time()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(max(1, int(seconds)))
    try:
        step = make()
        for _ in range(2):
            step()
        sync()
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEV == "cuda" else [])
        with profile(activities=acts, schedule=schedule(wait=0, warmup=1, active=3, repeat=1),
                     record_shapes=True, with_stack=False) as prof:
            for _ in range(4):
                step()
                sync()
                prof.step()
        signal.alarm(0)
        path = traces / f"{name}.json.gz"
        save_trace(prof, path)
        return {"stack": name, "status": "ok", "seconds": round(time.time() - t0, 1), "bytes": path.stat().st_size}
    except Exception as e:  # one stack's failure must not lose the others
        signal.alarm(0)
        traceback.print_exc()
        status = "timeout" if isinstance(e, _Timeout) else "failed"
        return {"stack": name, "status": status, "seconds": round(time.time() - t0, 1),
                "error": f"{type(e).__name__}: {e}"[:400]}
    finally:
        signal.alarm(0)
        with contextlib.suppress(Exception):
            sync()
            if DEV == "cuda":
                torch.cuda.empty_cache()


def pack(traces: Path, out: Path) -> list[str]:
    """The gzipped traces into OUT/stacks.tar (and stacks-2.tar, ... so that no part passes PART_BYTES)."""
    parts: list[list[Path]] = [[]]
    size = 0
    for f in sorted(traces.glob("*.json.gz")):
        if parts[-1] and size + f.stat().st_size > PART_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(f)
        size += f.stat().st_size
    names = []
    for i, files in enumerate(p for p in parts if p):
        name = "stacks.tar" if i == 0 else f"stacks-{i + 1}.tar"
        with tarfile.open(out / name, "w") as tar:
            for f in files:
                tar.add(f, arcname=f.name)
        names.append(name)
    return names


def main() -> None:
    global SMOKE, DEV
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=os.environ.get("OUT", "stacks_out"))
    ap.add_argument("--only", default="", help="comma-separated stack names")
    ap.add_argument("--budget", type=float, default=360.0, help="wall seconds for everything")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU")
    args = ap.parse_args()
    start = time.time()
    SMOKE, DEV = args.smoke, "cpu" if args.smoke or not torch.cuda.is_available() else "cuda"
    only = {s for s in args.only.split(",") if s}
    unknown = only - {n for n, *_ in STACKS}
    if unknown:
        raise SystemExit(f"unknown stack(s): {', '.join(sorted(unknown))}")
    out = Path(args.out)
    traces = out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    rows = []
    for name, make, cuda_only, setup in STACKS:
        if only and name not in only:
            continue
        left = args.budget - (time.time() - start) - 10  # 10 s kept for packing
        print(f"=== {name} ({left:.0f} s of budget left)", flush=True)
        if cuda_only and DEV != "cuda":
            rows.append({"stack": name, "status": "skipped", "error": "needs CUDA"})
        elif left < setup:
            rows.append({"stack": name, "status": "skipped", "error": f"budget: {left:.0f} s left, needs {setup:.0f}"})
        else:
            rows.append(run_stack(name, make, traces, min(left, max(setup * 2, 60))))
        print(f"    -> {rows[-1]}", flush=True)
    parts = pack(traces, out)
    shutil.rmtree(traces)
    summary = {"device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu", "torch": torch.__version__,
               "smoke": SMOKE, "seconds": round(time.time() - start, 1), "parts": parts, "stacks": rows}
    (out / "stacks.json").write_text(json.dumps(summary, indent=1))
    ok = sum(r["status"] == "ok" for r in rows)
    print(f"{ok}/{len(rows)} stacks profiled in {summary['seconds']} s; {', '.join(parts) or 'no traces'}", flush=True)


if __name__ == "__main__":
    main()
