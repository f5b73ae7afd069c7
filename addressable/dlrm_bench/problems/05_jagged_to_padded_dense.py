"""Jagged to padded dense: per-sample sequences of embeddings into a (BATCH, MAX_LEN, DIM) tensor.

Stands for FBGEMM's `jagged_to_padded_dense` (`jagged_dense_elementwise_dense_output_kernel_`,
`jagged_2d_to_dense`) as TorchRec models use it to feed sequence features (user histories) to dense
layers. Sizes: one GPU's DLRM batch, the longest MLPerf multi-hot feature (100 ids) as the sequence,
embedding dim 128; each sample has a uniform length in [0, MAX_LEN]. Longer samples are truncated
to MAX_LEN, as in FBGEMM; values past offsets[-1] belong to no sample.
Inputs: `values` (total_length, DIM), `offsets` (BATCH + 1,). Output: (BATCH, MAX_LEN, DIM) with
PAD_VALUE past each sample's length.
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 0.0% of kernel time, 0.0% of the step; infer 0.0% of kernel time, 0.0% of the step.
The unsharded TorchRec model runs no such kernel; sharded TorchRec (FBGEMM on GPUs) does.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "data_movement"
DLRM_KERNEL = r"jagged_to_padded_dense|jagged_dense_elementwise_dense_output|jagged_2d_to_dense"

BATCH = 16384
MAX_LEN = 100
DIM = 128
PAD_VALUE = 0.0
SMALL = {"BATCH": 16, "MAX_LEN": 12, "DIM": 32}
INVARIANTS: list[str] = []  # custom checks below


class Model(nn.Module):
    """fbgemm.jagged_to_padded_dense(values, [offsets], [max_len], pad) for one jagged dimension."""

    def __init__(self, max_len: int, pad_value: float) -> None:
        super().__init__()
        self.max_len, self.pad_value = max_len, pad_value

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        slot = torch.arange(self.max_len, device=values.device)
        inside = slot < offsets.diff().unsqueeze(1)  # (BATCH, MAX_LEN)
        src = (offsets[:-1].unsqueeze(1) + slot).clamp_(max=values.shape[0] - 1)
        return torch.where(inside.unsqueeze(2), values[src], self.pad_value)


def get_inputs() -> list[torch.Tensor]:
    lengths = torch.randint(0, MAX_LEN + 1, (BATCH,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    return [torch.randn(int(offsets[-1]), DIM), offsets]


def get_init_inputs() -> list:
    return [MAX_LEN, PAD_VALUE]


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """Every slot past a sample's length holds PAD_VALUE, and the other slots add up to the sample's
    first min(length, MAX_LEN) values (from prefix sums of the values' row sums)."""
    values, offsets = inputs
    max_len = output.shape[1]
    lengths = offsets.diff()
    past = torch.arange(max_len, device=output.device).unsqueeze(0) >= lengths.unsqueeze(1)
    prefix = torch.nn.functional.pad(values.double().sum(1).cumsum(0), (1, 0))
    kept = prefix[offsets[:-1] + lengths.clamp(max=max_len)] - prefix[offsets[:-1]]
    got = output.double().masked_fill(past.unsqueeze(2), 0).sum((1, 2))
    return {"padding_is_pad_value": bool((output[past] == PAD_VALUE).all()),
            "kept_values_sum": bool(torch.allclose(got, kept, rtol=1e-6, atol=1e-6 * max(values.shape[1], 1)))}
