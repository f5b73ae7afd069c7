"""DLRM dot feature interaction: pairwise dot products of 27 vectors, strict lower triangle flattened.

Stands for the interaction layer of DLRM (v1; DLRM-DCNv2 replaces it with the cross network of
problem 07): a batched `bmm` of the combined features with their transpose (cuBLAS) followed by the
gather of the strict lower triangle (`index_elementwise_kernel`). Only the gather is named in
DLRM_KERNEL: the bmm is indistinguishable from other GEMMs in a profile.
Input: (BATCH, 27, DIM) = the bottom-MLP output and the 26 pooled embeddings of one GPU's batch.
Output: (BATCH, 27 * 26 / 2 = 351), pair (i, j), i > j, in row-major order of the lower triangle.
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 0.0% of kernel time, 0.0% of the step; infer 0.0% of kernel time, 0.0% of the step.
The unsharded TorchRec model runs no such kernel; sharded TorchRec (FBGEMM on GPUs) does.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "data_movement"  # the triangle gather; the bmm itself is cuBLAS (gemm)
DLRM_KERNEL = r"index_elementwise_kernel"

BATCH = 16384
NUM_FEATURES = 27  # the dense vector + 26 sparse features
DIM = 128
SMALL = {"BATCH": 8, "DIM": 32}
INVARIANTS: list[str] = []  # custom checks below


class Model(nn.Module):
    """bmm(x, x^T) and the strict lower triangle of each (F, F) product."""

    li: torch.Tensor  # buffers, registered in __init__
    lj: torch.Tensor

    def __init__(self, num_features: int) -> None:
        super().__init__()
        li, lj = torch.tril_indices(num_features, num_features, offset=-1)
        self.register_buffer("li", li)
        self.register_buffer("lj", lj)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        z = torch.bmm(features, features.transpose(1, 2))
        return z[:, self.li, self.lj]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(BATCH, NUM_FEATURES, DIM)]


def get_init_inputs() -> list:
    return [NUM_FEATURES]


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """Cauchy-Schwarz: |<x_i, x_j>| <= |x_i| |x_j| for every pair."""
    features = inputs[0]
    f = features.shape[1]
    li, lj = torch.tril_indices(f, f, offset=-1, device=features.device)
    norms = features.norm(dim=2)
    bound = norms[:, li] * norms[:, lj] * (1 + 1e-4) + 1e-5
    return {"pairs": output.shape[1] == f * (f - 1) // 2,
            "cauchy_schwarz": bool((output.abs() <= bound).all())}
