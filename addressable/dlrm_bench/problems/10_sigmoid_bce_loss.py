"""Sigmoid + binary cross-entropy loss over the click logits (BCEWithLogits, mean).

Stands for DLRM-DCNv2's loss: TorchRec's `DLRMTrain` and the MLPerf reference compute
`binary_cross_entropy_with_logits` of the top-MLP logit against the click label. Eager PyTorch runs
it as several small kernels (`log_sigmoid_forward`, `mul`, `sub`, a mean reduction), each a launch
on a 64 KB input; one fused kernel does it in one pass.
Inputs: logits (BATCH,), labels (BATCH,) in {0, 1} with a Criteo-like click rate POSITIVE_RATE.
Output: the mean loss, a 0-d tensor.
Share of DLRM step time (H200, DLRM-DCNv2 b8192 bf16, unsharded TorchRec; DLRM_KERNEL matched
in results/h200/dlrm-*-b8192-bf16-cuda/kernels.csv): train 0.0% of kernel time, 0.0% of the step; infer 0.1% of kernel time, 0.1% of the step.
"""

from __future__ import annotations

import math

import torch
from torch import nn

CATEGORY = "loss"
DLRM_KERNEL = r"binary_cross_entropy|log_sigmoid|sigmoid|bce"

BATCH = 16384
POSITIVE_RATE = 0.034
SMALL = {"BATCH": 100}
INVARIANTS: list[str] = []  # custom checks below (they hold for any label values, not only 0/1)


class Model(nn.Module):
    """mean(max(x, 0) - x * y + log(1 + exp(-|x|))), computed by PyTorch's BCEWithLogits."""

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.binary_cross_entropy_with_logits(logits, labels)


def get_inputs() -> list[torch.Tensor]:
    labels = (torch.rand(BATCH) < POSITIVE_RATE).float()
    return [torch.randn(BATCH) * 2 - 3, labels]


def get_init_inputs() -> list:
    return []


def check_invariants(inputs: list[torch.Tensor], output: torch.Tensor) -> dict[str, bool]:
    """|loss| <= mean(|x| (1 + |y|)) + log 2, and loss >= 0 when every label is in [0, 1]."""
    logits, labels = inputs
    x, y = logits.double(), labels.double()
    loss = float(output)
    checks = {"scalar": output.numel() == 1,
              "bounded": abs(loss) <= float((x.abs() * (1 + y.abs())).mean() + math.log(2)) * (1 + 1e-5)}
    if bool(((y >= 0) & (y <= 1)).all()):
        checks["nonnegative_for_labels_in_0_1"] = loss >= 0
    return checks
