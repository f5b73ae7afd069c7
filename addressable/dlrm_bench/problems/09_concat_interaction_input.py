"""Concatenation of the dense vector and 26 pooled embeddings into the interaction input.

Stands for the copies that build DLRM-DCNv2's interaction input in TorchRec: `SparseArch` concatenates
the 26 pooled embeddings (`torch.cat` of the KeyedTensor's per-feature views, then reshape to
(B, 26, D)) and `InteractionDCNArch` concatenates the bottom-MLP output in front (`torch.cat` again,
then reshape to (B, 27 * D)). Eager PyTorch runs two `CatArrayBatchedCopy` kernels, so every byte
is copied twice; one pass is enough. (A generic kernel name, also used by other concatenations: the
share is an upper bound.)
Inputs: dense (BATCH, DIM), then 26 pooled embeddings (BATCH, DIM). Output: (BATCH, 27 * DIM).
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 0.3% of kernel time, 0.2% of the step; infer 2.4% of kernel time, 1.9% of the step.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "data_movement"
DLRM_KERNEL = r"CatArrayBatchedCopy|cat_array|concat"

BATCH = 16384
DIM = 128
NUM_SPARSE = 26
SMALL = {"BATCH": 16, "DIM": 16}
INVARIANTS: list[str] = []  # custom checks below


class Model(nn.Module):
    """TorchRec's two-step concatenation: sparse features to (B, F, D), then the dense vector in front."""

    def forward(self, dense: torch.Tensor, *pooled: torch.Tensor) -> torch.Tensor:
        b, d = dense.shape
        sparse = torch.cat(pooled, dim=1).reshape(b, len(pooled), d)
        return torch.cat([dense.unsqueeze(1), sparse], dim=1).reshape(b, -1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.relu(torch.randn(BATCH, DIM))] + [torch.randn(BATCH, DIM) * 0.05 for _ in range(NUM_SPARSE)]


def get_init_inputs() -> list:
    return []


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """The dense vector comes first, unchanged, and each row keeps the sum of its pieces."""
    dense = inputs[0]
    row_sums = torch.stack([t.double().sum(1) for t in inputs]).sum(0)
    return {"dense_first": bool(torch.equal(output[:, :dense.shape[1]], dense)),
            "row_sums_kept": bool(torch.allclose(output.double().sum(1), row_sums, rtol=1e-6, atol=1e-6))}
