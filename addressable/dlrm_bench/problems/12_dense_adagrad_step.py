"""Adagrad step over all dense parameters of DLRM-DCNv2 (bottom MLP, cross network, top MLP).

Stands for the dense optimizer of DLRM-DCNv2: `torch.optim.Adagrad` with foreach=True (its CUDA
default) runs `multi_tensor_apply_kernel`s over the 25 parameter tensors (16.0M floats): bottom MLP
13-512-256-128, 3 low-rank (512) cross layers on 3456 features, top MLP 3456-1024-1024-512-256-1.
Inputs are flat buffers holding the 25 tensors back to back (param, grad, state_sum); the reference
splits them into per-tensor views and runs Adagrad's foreach ops on the list, exactly as
torch.optim.Adagrad does (lr_decay = weight_decay = 0):
    s += g * g;   p -= LR * g / (sqrt(s) + EPS)
The Model is functional: it updates copies. Output: (2 * N,) = updated params then updated state_sum.
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 1.5% of kernel time, 0.8% of the step; infer 0.0% of kernel time, 0.0% of the step.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

CATEGORY = "optimizer"
DLRM_KERNEL = r"multi_tensor_apply|FusedAdagrad|(?<!rowwise_)adagrad_(update|step|kernel)"

DENSE_IN = 13
BOTTOM_MLP = [512, 256, 128]
CROSS_IN = 3456  # 27 features x 128
CROSS_LAYERS = 3
LOW_RANK = 512
TOP_MLP = [1024, 1024, 512, 256, 1]
LR = 0.004
EPS = 1e-10
SMALL = {"DENSE_IN": 3, "BOTTOM_MLP": [8, 4], "CROSS_IN": 12, "CROSS_LAYERS": 2, "LOW_RANK": 4,
         "TOP_MLP": [8, 1]}
INVARIANTS: list[str] = []  # custom checks below


class Model(nn.Module):
    """Adagrad's foreach update over per-parameter views of flat buffers."""

    def __init__(self, sizes: list[int], lr: float, eps: float) -> None:
        super().__init__()
        self.sizes, self.lr, self.eps = list(sizes), lr, eps

    def forward(self, param: torch.Tensor, grad: torch.Tensor, state_sum: torch.Tensor) -> torch.Tensor:
        n = param.numel()
        out = torch.cat([param, state_sum])
        params, sums = list(out[:n].split(self.sizes)), list(out[n:].split(self.sizes))
        grads = list(grad.split(self.sizes))
        torch._foreach_addcmul_(sums, grads, grads, value=1)
        std = torch._foreach_sqrt(sums)
        torch._foreach_add_(std, self.eps)
        torch._foreach_addcdiv_(params, grads, std, value=-self.lr)
        return out


def _mlp_sizes(widths: list[int]) -> list[int]:
    sizes = []
    for fan_in, fan_out in itertools.pairwise(widths):
        sizes += [fan_out * fan_in, fan_out]
    return sizes


def _sizes() -> list[int]:
    cross = [LOW_RANK * CROSS_IN, CROSS_IN * LOW_RANK, CROSS_IN] * CROSS_LAYERS
    return _mlp_sizes([DENSE_IN, *BOTTOM_MLP]) + cross + _mlp_sizes([CROSS_IN, *TOP_MLP])


def get_inputs() -> list[torch.Tensor]:
    n = sum(_sizes())
    return [torch.randn(n) * 0.05, torch.randn(n) * 1e-3, torch.rand(n) * 1e-5]


def get_init_inputs() -> list:
    return [_sizes(), LR, EPS]


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """state_sum never shrinks, and where it was >= 0 (its domain) no parameter moves by more than
    LR (|g| / sqrt(s + g^2) <= 1)."""
    param, _, state_sum = inputs
    n = param.numel()
    ok = state_sum >= 0
    step = (output[:n] - param).abs()
    return {"state_sum_nondecreasing": bool((output[n:] >= state_sum).all()),
            "step_at_most_lr": bool((step[ok] <= LR * (1 + 1e-4)).all())}
