"""Triton softmax over the last dimension that splits each row across many programs (very long rows).

torch's softmax gives each row to one thread block, so 64 rows of 393,216 keep a 132-SM GPU mostly
idle. Here every row is cut into chunks: kernel 1 computes each chunk's max and sum of exp (an online
softmax over BLOCK-wide tiles), kernel 2 merges the chunk statistics of its row and writes
exp(x - max) / sum for its chunk. Two reads and one write of x; works for any row length.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _chunk_stats(x_ptr, m_ptr, s_ptr, n_cols, chunk, n_chunks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    start = c * chunk
    base = x_ptr + row.to(tl.int64) * n_cols
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.full([], 0.0, tl.float32)
    for off in range(start, start + chunk, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = (cols < n_cols) & (cols < start + chunk)
        x = tl.load(base + cols, mask=mask, other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    tl.store(m_ptr + row * n_chunks + c, m)
    tl.store(s_ptr + row * n_chunks + c, s)


@triton.jit
def _chunk_normalize(x_ptr, y_ptr, m_ptr, s_ptr, n_cols, chunk, n_chunks, BLOCK: tl.constexpr,
                     CHUNKS: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    idx = tl.arange(0, CHUNKS)
    ms = tl.load(m_ptr + row * n_chunks + idx, mask=idx < n_chunks, other=-float("inf"))
    ss = tl.load(s_ptr + row * n_chunks + idx, mask=idx < n_chunks, other=0.0)
    row_max = tl.max(ms, axis=0)
    inv_sum = 1.0 / tl.sum(ss * tl.exp(ms - row_max), axis=0)
    start = c * chunk
    offset = row.to(tl.int64) * n_cols
    for off in range(start, start + chunk, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = (cols < n_cols) & (cols < start + chunk)
        x = tl.load(x_ptr + offset + cols, mask=mask, other=0.0).to(tl.float32)
        y = tl.exp(x - row_max) * inv_sum
        tl.store(y_ptr + offset + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax_lastdim(x: torch.Tensor, target_programs: int = 1024) -> torch.Tensor:
    """Softmax over the last dimension of a contiguous copy of x."""
    x2 = x.contiguous().view(-1, x.shape[-1])
    n_rows, n_cols = x2.shape
    y = torch.empty_like(x2)
    if x2.numel() == 0:
        return y.view(x.shape)
    block = min(4096, triton.next_power_of_2(n_cols))
    chunks_per_row = max(1, min(triton.cdiv(target_programs, n_rows), triton.cdiv(n_cols, block)))
    chunk = triton.cdiv(triton.cdiv(n_cols, chunks_per_row), block) * block
    n_chunks = triton.cdiv(n_cols, chunk)
    m = torch.empty(n_rows, n_chunks, device=x.device, dtype=torch.float32)
    s = torch.empty_like(m)
    warps = 8 if block >= 2048 else 4
    _chunk_stats[(n_rows, n_chunks)](x2, m, s, n_cols, chunk, n_chunks, BLOCK=block, num_warps=warps)
    _chunk_normalize[(n_rows, n_chunks)](x2, y, m, s, n_cols, chunk, n_chunks, BLOCK=block,
                                         CHUNKS=triton.next_power_of_2(n_chunks), num_warps=warps)
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_lastdim(x)
