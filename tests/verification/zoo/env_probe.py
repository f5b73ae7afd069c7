"""Honest only when contained: softmax, times 0 if it sees a secret, the user's HOME, a cwd outside its scratch,
or (on the CPU) more than one intra-op thread."""

import os
from pathlib import Path

import torch
from torch import nn


def _contained() -> bool:
    leaked = [k for k in os.environ if "TOKEN" in k or "SECRET" in k or k == "ADDRESSABLE_TEST_PLAIN"]
    home = Path(os.environ.get("HOME", "/")).resolve()
    one_thread = torch.cuda.is_available() or torch.get_num_threads() == 1
    return (not leaked and one_thread and Path.cwd().resolve() == home
            and os.environ.get("TMPDIR", "").startswith(str(home)))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ok = _contained()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1) * (1.0 if self.ok else 0.0)
