"""Hash raw sparse ids into their table's rows and linearise them (modulo hash + row offset).

Stands for the id transforms on DLRM's sparse input path: the modulo hash of raw Criteo ids into each
table (MLPerf hashes them into its 26 row counts; eager PyTorch runs `remainder`), and FBGEMM's
linearisation / bucketisation of ids into row ranges (`linearize_cache_indices`,
`block_bucketize_sparse_features`, `bucketize_sparse_features`).
Inputs: raw ids (int64, 32-bit hash values) of a KJT of 26 features, feature-major, with MLPerf's
multi-hot sizes; lengths (26 * BATCH,). Output: int64 row ids into one table holding all 26 tables
(MLPerf's full row counts): id % rows[f] + row_offset[f] for an id of feature f. Ids past the
lengths' total count as the last feature.
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 0.0% of kernel time, 0.0% of the step; infer 0.0% of kernel time, 0.0% of the step.
The unsharded TorchRec model runs no such kernel; sharded TorchRec (FBGEMM on GPUs) does.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "data_movement"
DLRM_KERNEL = r"bucketize|linearize_cache_indices|linearize_index|remainder|fmod"

BATCH = 16384
TABLE_ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10,
              2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
MULTI_HOT = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
SMALL = {"BATCH": 16}
INVARIANTS = ["nonnegative"]


class Model(nn.Module):
    """Row id of each raw id: raw % rows[feature] + row_offset[feature]."""

    rows: torch.Tensor  # buffers, registered in __init__
    row_offset: torch.Tensor

    def __init__(self, table_rows: list[int]) -> None:
        super().__init__()
        rows = torch.tensor(table_rows, dtype=torch.long)
        self.register_buffer("rows", rows)
        self.register_buffer("row_offset", rows.cumsum(0) - rows)

    def forward(self, raw_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        f = self.rows.numel()
        ends = lengths.view(f, -1).sum(1).cumsum(0)
        pos = torch.arange(raw_ids.numel(), device=raw_ids.device)
        feature = torch.searchsorted(ends, pos, right=True).clamp_(max=f - 1)
        return raw_ids % self.rows[feature] + self.row_offset[feature]


def get_inputs() -> list[torch.Tensor]:
    lengths = torch.tensor(MULTI_HOT).repeat_interleave(BATCH)
    return [torch.randint(0, 2**32, (int(lengths.sum()),)), lengths]


def get_init_inputs() -> list:
    return [TABLE_ROWS]


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """Each id lands inside its own feature's row range [row_offset[f], row_offset[f] + rows[f])."""
    raw_ids, lengths = inputs
    if output.numel() != raw_ids.numel():
        return {"same_count": False}
    rows = torch.tensor(TABLE_ROWS, device=output.device)
    start = rows.cumsum(0) - rows
    ends = lengths.view(rows.numel(), -1).sum(1).cumsum(0)
    pos = torch.arange(raw_ids.numel(), device=output.device)
    feature = torch.searchsorted(ends, pos, right=True).clamp_(max=rows.numel() - 1)
    lo = start[feature]
    return {"same_count": True, "in_own_table": bool(((output >= lo) & (output < lo + rows[feature])).all())}
