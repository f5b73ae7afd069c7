"""One low-rank DCN-v2 cross layer: x0 * (W (V x) + b) + x, the DLRM-DCNv2 interaction.

Stands for a layer of TorchRec's `LowRankCrossNet` (MLPerf DLRM-DCNv2: 3 layers, low rank 512,
input 27 * 128 = 3456 features). Eager PyTorch runs two cuBLAS GEMMs and then the epilogue as
separate elementwise kernels (`mul`, `add`); the epilogue is what a fused kernel takes over, so only
those elementwise kernels are named in DLRM_KERNEL (they are generic names, shared with other
layers: the share is an upper bound).
Inputs: x0 (the interaction input: a ReLU'd bottom-MLP output, then 26 embeddings) and x (the
previous layer's output), both (BATCH, 3456). Output: (BATCH, 3456).
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 13.1% of kernel time, 7.1% of the step; infer 25.4% of kernel time, 20.0% of the step.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "elementwise"
DLRM_KERNEL = r"MulFunctor|CUDAFunctor_add|AddFunctor"

BATCH = 16384
EMB_DIM = 128
NUM_FEATURES = 27
LOW_RANK = 512
SMALL = {"BATCH": 16, "EMB_DIM": 8, "LOW_RANK": 16}
INVARIANTS: list[str] = []  # custom checks below


class Model(nn.Module):
    """x_{l+1} = x0 * (W (V x_l) + b) + x_l with V: in -> rank (no bias), W: rank -> in."""

    def __init__(self, in_features: int, low_rank: int) -> None:
        super().__init__()
        self.V = nn.Linear(in_features, low_rank, bias=False)
        self.W = nn.Linear(low_rank, in_features, bias=True)

    def forward(self, x0: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return x0 * self.W(self.V(x)) + x


def get_inputs() -> list[torch.Tensor]:
    dense = torch.relu(torch.randn(BATCH, EMB_DIM))
    x0 = torch.cat([dense, torch.randn(BATCH, (NUM_FEATURES - 1) * EMB_DIM) * 0.1], dim=1)
    return [x0, torch.randn(BATCH, NUM_FEATURES * EMB_DIM)]


def get_init_inputs() -> list:
    return [NUM_FEATURES * EMB_DIM, LOW_RANK]


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """Where x0 is exactly 0 (ReLU zeros of the dense part) the layer passes x through unchanged."""
    x0, x = inputs
    zero = x0 == 0
    return {"finite": bool(torch.isfinite(output).all()),
            "residual_where_x0_is_zero": bool(torch.equal(output[zero], x[zero]))}
