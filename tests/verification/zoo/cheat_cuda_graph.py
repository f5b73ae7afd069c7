"""Cheat (GPU, beyond issue 25): after ten honest calls, captures a CUDA graph of the product on the tensors
of that call and from then on only replays it, whatever tensors it is given: the graph keeps reading the
memory of the captured inputs. Right where a harness repeats the same input tensors; stale where
inputs change. On the CPU it is an honest torch.matmul.
"""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls, self.graph, self.out = 0, None, None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if not a.is_cuda or self.calls <= 10:
            return torch.matmul(a, b)
        if self.graph is None:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.matmul(a, b)  # warm-up before capture
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = torch.matmul(a, b)
        self.graph.replay()
        return self.out.clone()
