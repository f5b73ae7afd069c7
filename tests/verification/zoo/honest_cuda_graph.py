"""Honest (GPU): a CUDA graph of the product, replayed after copying each call's inputs into its static
buffers (the legitimate use of graphs: no launch overhead, fresh inputs every call). CPU: torch.matmul.
"""

import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.graph, self.static, self.out = None, None, None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if not a.is_cuda:
            return torch.matmul(a, b)
        if self.graph is None or self.static[0].shape != a.shape:
            self.static = (a.clone(), b.clone())
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.matmul(*self.static)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = torch.matmul(*self.static)
        self.static[0].copy_(a)
        self.static[1].copy_(b)
        self.graph.replay()
        return self.out.clone()
