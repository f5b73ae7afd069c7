"""Bottom-MLP layer: Linear + bias + ReLU, with the bias and ReLU fused into the GEMM epilogue.

Stands for the bottom MLP of DLRM-DCNv2 (13 -> 512 -> 256 -> 128, ReLU after each layer; this is
its 512 -> 256 layer at one GPU's batch). Eager PyTorch runs `addmm` (cuBLAS, bias in the cuBLASLt
epilogue) and then ReLU as a separate elementwise kernel (`clamp_min`, and `threshold` in the
backward); DLRM_KERNEL names that activation kernel, the part a fused epilogue removes (a generic
name, shared with the top MLP: the share is an upper bound).
Input: (BATCH, 512), itself a ReLU output. Output: (BATCH, 256).
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 0.5% of kernel time, 0.2% of the step; infer 1.4% of kernel time, 1.1% of the step.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "elementwise"
DLRM_KERNEL = r"relu|clamp_scalar|clamp_min|threshold"

BATCH = 16384
IN_FEATURES = 512
OUT_FEATURES = 256
SMALL = {"BATCH": 16, "IN_FEATURES": 32, "OUT_FEATURES": 16}
INVARIANTS = ["nonnegative"]


class Model(nn.Module):
    """relu(x @ W^T + b)."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs() -> list[torch.Tensor]:
    return [torch.relu(torch.randn(BATCH, IN_FEATURES))]


def get_init_inputs() -> list:
    return [IN_FEATURES, OUT_FEATURES]
