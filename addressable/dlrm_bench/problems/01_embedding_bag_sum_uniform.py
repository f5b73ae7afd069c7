"""Pooled EmbeddingBag sum forward over 26 tables, uniform indices (FBGEMM TBE forward).

Stands for the table-batched embedding forward of DLRM-DCNv2: FBGEMM's
`split_embedding_codegen_forward_*_kernel` under TorchRec, ATen's `EmbeddingBag_updateOutputKernel`
in plain PyTorch. One lookup batch of the MLPerf DLRM-DCNv2 model: 26 tables of dim 128 with MLPerf's
row counts (capped at ROW_CAP rows so a reference and a candidate copy fit one GPU; 7.1M rows, 3.6 GB
fp32, far larger than L2), MLPerf's multi-hot sizes (214 ids per sample), uniform row ids.
Inputs: `indices` are linearised like FBGEMM's (the table's row offset already added); `offsets`
holds the start of each (table, sample) bag, table-major, as nn.EmbeddingBag takes them: bag i is
indices[offsets[i]:offsets[i + 1]], the last bag runs to the end of `indices`.
Output: (BATCH, 26 * DIM), sample-major, like the TBE output.
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 5.1% of kernel time, 2.7% of the step; infer 36.8% of kernel time, 28.9% of the step.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "embedding"
DLRM_KERNEL = r"split_embedding\w*codegen_forward|EmbeddingBag_updateOutput|embedding_bag\w*forward"

BATCH = 16384
DIM = 128
ROW_CAP = 1_000_000
INIT_SCALE = 0.01
TABLE_ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10,
              2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
MULTI_HOT = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
SMALL = {"BATCH": 4, "ROW_CAP": 500}
INVARIANTS: list[str] = []  # custom checks below: every pooled value is bounded by its bag length


class Model(nn.Module):
    """Sum-pooled lookups of all tables in one call; weights are one (rows, dim) table."""

    def __init__(self, num_rows: int, dim: int, num_tables: int, init_scale: float) -> None:
        super().__init__()
        self.num_tables = num_tables
        self.weight = nn.Parameter(torch.empty(num_rows, dim).uniform_(-init_scale, init_scale))

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        pooled = nn.functional.embedding_bag(indices, self.weight, offsets, mode="sum")
        t, d = self.num_tables, self.weight.shape[1]
        b = pooled.shape[0] // t
        return pooled.view(t, b, d).transpose(0, 1).reshape(b, t * d)


def _rows() -> list[int]:
    return [min(r, ROW_CAP) for r in TABLE_ROWS]


def get_inputs() -> list[torch.Tensor]:
    rows = _rows()
    base = 0
    ids = []
    for r, hot in zip(rows, MULTI_HOT, strict=True):
        ids.append(torch.randint(0, r, (BATCH * hot,)) + base)
        base += r
    lengths = torch.tensor(MULTI_HOT).repeat_interleave(BATCH)
    return [torch.cat(ids), lengths.cumsum(0) - lengths]


def get_init_inputs() -> list:
    return [sum(_rows()), DIM, len(TABLE_ROWS), INIT_SCALE]


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """|pooled value| <= bag length * INIT_SCALE (weights are uniform in +-INIT_SCALE)."""
    indices, offsets = inputs
    t = len(TABLE_ROWS)
    b = offsets.numel() // t
    lengths = nn.functional.pad(offsets[1:], (0, 1), value=indices.numel()) - offsets
    lengths = lengths.view(t, b).transpose(0, 1)
    bound = (lengths.to(output.dtype) * INIT_SCALE).unsqueeze(2) * (1 + 1e-4) + 1e-6
    return {"finite": bool(torch.isfinite(output).all()),
            "bounded_by_bag_length": bool((output.view(b, t, -1).abs() <= bound).all())}
