"""Embedding backward fused with a row-wise Adagrad update of the touched rows (FBGEMM TBE backward).

Stands for DLRM-DCNv2's sparse backward + optimizer: FBGEMM's
`split_embedding_backward_codegen_rowwise_adagrad_*_kernel` (with its index sort and segment
search) under sharded TorchRec; in an unsharded run (nn.EmbeddingBag(sparse=True) + torch Adagrad,
`workloads/dlrm.py`) ATen's embedding-bag backward kernels and the sparse gradient's `coalesce`.
The gradient of each pooled bag (BATCH x 26 x DIM) flows to every row id in the bag; the gradients
of a row are summed over all its occurrences, then row-wise Adagrad updates that row only:
    m[r] += mean_j(g[r, j]**2);   w[r] -= LR * g[r] / (sqrt(m[r]) + EPS)
Tables and lookups as in problem 02 (MLPerf sizes, rows capped at ROW_CAP, Zipf-skewed ids, so hot
rows collect thousands of gradient rows; `offsets` are bag starts, the last bag runs to the end).
The Model is functional: it returns the updated rows and leaves its tables alone.
Output: (U, DIM + 1) for the U distinct touched rows in ascending row order: the updated weight row
followed by the updated momentum.
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 17.8% of kernel time, 9.6% of the step; infer 0.0% of kernel time, 0.0% of the step.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "embedding"
DLRM_KERNEL = (r"split_embedding\w*backward|embedding_backward|embedding_bag_backward|EmbeddingBag_accGrad"
               r"|embedding_dense_backward|linearize_index|find_long_segments|compute_grad_weight"
               r"|krn_partial|sum_and_scatter|coalesce|rowwise_adagrad")

BATCH = 16384
DIM = 128
ROW_CAP = 1_000_000
INIT_SCALE = 0.01
GRAD_SCALE = 1e-3
LR = 0.004
EPS = 1e-8
ZIPF_ALPHA = 1.15
TABLE_ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10,
              2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
MULTI_HOT = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
SMALL = {"BATCH": 4, "ROW_CAP": 500}
INVARIANTS: list[str] = []  # custom checks below


class Model(nn.Module):
    """Row-wise Adagrad over one (rows, dim) table holding all 26 tables; momentum is one scalar a row."""

    weight: torch.Tensor  # buffers, registered in __init__
    momentum: torch.Tensor

    def __init__(self, num_rows: int, dim: int, num_tables: int, init_scale: float, lr: float,
                 eps: float) -> None:
        super().__init__()
        self.num_tables, self.lr, self.eps = num_tables, lr, eps
        self.register_buffer("weight", torch.empty(num_rows, dim).uniform_(-init_scale, init_scale))
        self.register_buffer("momentum", torch.rand(num_rows) * 1e-6)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
        t, d = self.num_tables, self.weight.shape[1]
        b = grad_output.shape[0]
        bag_grad = grad_output.view(b, t, d).transpose(0, 1).reshape(t * b, d)
        lengths = nn.functional.pad(offsets[1:], (0, 1), value=indices.numel()) - offsets
        per_id = bag_grad.repeat_interleave(lengths, dim=0, output_size=indices.numel())
        rows, inverse = torch.unique(indices, sorted=True, return_inverse=True)
        grad = torch.zeros(rows.numel(), d, dtype=per_id.dtype, device=per_id.device)
        grad.index_add_(0, inverse, per_id)
        m = self.momentum[rows] + grad.square().mean(1)
        w = self.weight[rows] - (self.lr / (m.sqrt() + self.eps)).unsqueeze(1) * grad
        return torch.cat([w, m.unsqueeze(1)], dim=1)


def _rows() -> list[int]:
    return [min(r, ROW_CAP) for r in TABLE_ROWS]


def _zipf(rows: int, n: int) -> torch.Tensor:
    """n row ids in [0, rows): rank k has probability ~ k**-ZIPF_ALPHA, ranks hashed over the table."""
    a = 1.0 - ZIPF_ALPHA
    u = torch.rand(n, dtype=torch.float64)
    rank = (((rows + 1) ** a - 1) * u + 1) ** (1 / a)  # inverse CDF of the power law on [1, rows + 1)
    rank = rank.long().clamp_(1, rows) - 1
    return (rank * 2654435761) % rows


def get_inputs() -> list[torch.Tensor]:
    rows = _rows()
    base = 0
    ids = []
    for r, hot in zip(rows, MULTI_HOT, strict=True):
        ids.append(_zipf(r, BATCH * hot) + base)
        base += r
    lengths = torch.tensor(MULTI_HOT).repeat_interleave(BATCH)
    offsets = lengths.cumsum(0) - lengths
    grad_output = torch.randn(BATCH, len(TABLE_ROWS) * DIM) * GRAD_SCALE
    return [torch.cat(ids), offsets, grad_output]


def get_init_inputs() -> list:
    return [sum(_rows()), DIM, len(TABLE_ROWS), INIT_SCALE, LR, EPS]


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """One row per distinct id; momentum stays >= 0; |w| <= INIT_SCALE + LR * sqrt(DIM).

    The last bound holds because a row-wise Adagrad step moves each coordinate by at most
    LR * |g_j| / sqrt(mean(g**2)) <= LR * sqrt(DIM).
    """
    indices = inputs[0]
    d = output.shape[1] - 1
    bound = INIT_SCALE + LR * d ** 0.5
    return {"one_row_per_touched_id": output.shape[0] == torch.unique(indices).numel(),
            "finite": bool(torch.isfinite(output).all()),
            "momentum_nonnegative": bool((output[:, -1] >= 0).all()),
            "step_bounded": bool((output[:, :-1].abs() <= bound * (1 + 1e-4)).all())}
