"""KeyedJaggedTensor permute: lengths and values reordered by feature (fbgemm permute_2D_sparse_data).

Stands for the feature permute of TorchRec's sparse input distribution (KJT.permute before the
all-to-all, and regrouping features per sharding): FBGEMM's `permute_2D_lengths_kernel` and
`permute_2D_data_kernel`. A KJT of DLRM-DCNv2's 26 sparse features for one GPU's batch: `lengths`
(26, BATCH), `values` the ids of all bags, feature-major. Bag lengths vary (uniform in
[0, 2 * multi-hot size], so the mean is MLPerf's multi-hot size, 214 ids a sample).
permute_2D_sparse_data semantics: feature i of the output is feature permute[i] of the input (a
feature may repeat). Like TorchRec, the reference reads the per-feature totals on the host (one
sync); lengths that do not add up to the number of values raise ValueError.
Output: one int64 tensor, the permuted lengths (flattened) followed by the permuted values.
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 0.0% of kernel time, 0.0% of the step; infer 0.0% of kernel time, 0.0% of the step.
The unsharded TorchRec model runs no such kernel; sharded TorchRec (FBGEMM on GPUs) does.
"""

from __future__ import annotations

import torch
from torch import nn

CATEGORY = "data_movement"
DLRM_KERNEL = r"permute_2D|permute_1D|permute_sparse|permute_\w*lengths|permute_\w*data"

BATCH = 16384
MULTI_HOT = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
SMALL = {"BATCH": 16}
INVARIANTS: list[str] = []  # custom checks below


class Model(nn.Module):
    """permute_2D_sparse_data(permute, lengths, values) as a flat int64 tensor."""

    def forward(self, permute: torch.Tensor, lengths: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        seg = lengths.sum(1)
        per_key = seg.tolist()  # KJT's length_per_key, which TorchRec also reads on the host
        if sum(per_key) != values.numel():
            raise ValueError(f"lengths add up to {sum(per_key)}, but there are {values.numel()} values")
        n_out = sum(per_key[f] for f in permute.tolist())
        in_start = seg.cumsum(0) - seg
        seg_out = seg[permute]
        out_start = seg_out.cumsum(0) - seg_out
        shift = torch.repeat_interleave(in_start[permute] - out_start, seg_out, output_size=n_out)
        src = torch.arange(n_out, device=values.device) + shift
        return torch.cat([lengths[permute].reshape(-1), values[src]])


def get_inputs() -> list[torch.Tensor]:
    hot = torch.tensor(MULTI_HOT).unsqueeze(1)
    lengths = (torch.rand(len(MULTI_HOT), BATCH) * (2 * hot + 1)).long()
    values = torch.randint(0, 2**31 - 1, (int(lengths.sum()),))
    return [torch.randperm(len(MULTI_HOT)), lengths, values]


def get_init_inputs() -> list:
    return []


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """The output lengths add up to the output values; for a true permutation the values are a
    rearrangement of the input values."""
    permute, lengths, values = inputs
    n_len = lengths.numel()
    out_lengths, out_values = output[:n_len], output[n_len:]
    checks = {"lengths_match_values": int(out_lengths.sum()) == out_values.numel()}
    if torch.equal(permute.sort().values, torch.arange(permute.numel(), device=permute.device)):
        checks["values_rearranged"] = out_values.numel() == values.numel() and bool(
            torch.equal(out_values.sort().values, values.sort().values))
    return checks
