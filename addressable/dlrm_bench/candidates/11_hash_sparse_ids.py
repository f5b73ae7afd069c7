"""Triton candidate for 11: hash + linearise every id in one pass.

Each program takes BLOCK ids, finds each id's feature by comparing its position with the features'
cumulative ends (26 of them, padded to BLOCK_F), and writes raw % rows[f] + row_offset[f]. The
per-feature ends come from two tiny torch ops on the (F, BATCH) lengths; the reference also builds
a per-id feature tensor with repeat_interleave and gathers rows and offsets through it.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _hash_ids(raw, ends, rows, row_offset, out, n, num_features,
              BLOCK: tl.constexpr, BLOCK_F: tl.constexpr):
    pos = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = pos < n
    f = tl.arange(0, BLOCK_F)
    feature_end = tl.load(ends + f, mask=f < num_features, other=n + 1)
    feature = tl.sum((pos[:, None] >= feature_end[None, :]).to(tl.int32), axis=1)
    feature = tl.minimum(feature, num_features - 1)
    r = tl.load(rows + feature, mask=ok, other=1)
    base = tl.load(row_offset + feature, mask=ok, other=0)
    x = tl.load(raw + pos, mask=ok, other=0)
    tl.store(out + pos, x % r + base, mask=ok)


class ModelNew(nn.Module):
    """Same constructor and forward signature as the problem's Model."""

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
        n = raw_ids.numel()
        out = torch.empty_like(raw_ids)
        block = 1024
        _hash_ids[(triton.cdiv(n, block),)](raw_ids.contiguous(), ends, self.rows, self.row_offset, out, n, f,
                                            BLOCK=block, BLOCK_F=triton.next_power_of_2(f), num_warps=4)
        return out
