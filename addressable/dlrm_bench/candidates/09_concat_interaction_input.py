"""Triton candidate for 09: one-pass concatenation through a table of input addresses.

One launch copies every piece straight to its final place in the (BATCH, (1 + F) * DIM) output:
program (row block, piece k) loads the address of piece k from a small int64 table, casts it to a
pointer and copies a (BLOCK_B, DIM) tile. The eager reference copies every byte twice (two cats).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _concat(addresses, out, batch, dim, out_stride, BLOCK_B: tl.constexpr, BLOCK_D: tl.constexpr):
    rb = tl.program_id(0)
    piece = tl.program_id(1)
    src = tl.load(addresses + piece).to(tl.pointer_type(out.dtype.element_ty))
    rows = (rb * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    ok = (rows[:, None] < batch) & (cols[None, :] < dim)
    tile = tl.load(src + rows[:, None] * dim + cols[None, :], mask=ok)
    tl.store(out + rows[:, None] * out_stride + piece * dim + cols[None, :], tile, mask=ok)


class ModelNew(nn.Module):
    """Same signature as the problem's Model: forward(dense, *pooled)."""

    def forward(self, dense: torch.Tensor, *pooled: torch.Tensor) -> torch.Tensor:
        pieces = [t.contiguous() for t in (dense, *pooled)]
        b, d = dense.shape
        out = torch.empty(b, len(pieces) * d, device=dense.device, dtype=dense.dtype)
        addresses = torch.tensor([t.data_ptr() for t in pieces], dtype=torch.int64)
        if dense.is_cuda:  # pinned and non-blocking: a pageable copy makes the host wait for all queued GPU work
            addresses = addresses.pin_memory()
        addresses = addresses.to(dense.device, non_blocking=True)
        block_d = triton.next_power_of_2(d)
        block_b = max(1, 4096 // block_d)
        _concat[(triton.cdiv(b, block_b), len(pieces))](addresses, out, b, d, len(pieces) * d,
                                                         BLOCK_B=block_b, BLOCK_D=block_d, num_warps=4)
        return out
