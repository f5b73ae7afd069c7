"""RMSNorm over the hidden dimension with a learned scale (Llama-style), float32."""

import torch
from torch import nn

tokens = 8192
hidden = 4096
eps = 1e-6


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def get_inputs():
    return [torch.randn(tokens, hidden)]


def get_init_inputs():
    return [hidden, eps]


def check_invariants(inputs, output):
    """The scale is positive (1 + 0.1·N(0, 1)), so every output keeps its input's sign."""
    (x,) = inputs
    return {"sign_matches_input": bool((torch.sign(output) == torch.sign(x)).all())}
