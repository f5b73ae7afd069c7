"""Phase markers (forward, backward, optimizer, prefill, decode) seen by both profilers.

Each phase opens an NVTX range (for Nsight Systems) and a torch.profiler record_function
named "phase:NAME", which Kineto writes as a gpu_user_annotation spanning the phase's kernels.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import torch

try:
    import nvtx as _nvtx
except ImportError:  # the nvtx package is optional at run time; torch's own NVTX binding stands in
    _nvtx = None

PREFIX = "phase:"


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Mark a phase of a step for torch.profiler and NVTX."""
    with ExitStack() as stack:
        if _nvtx is not None:
            stack.enter_context(_nvtx.annotate(name, domain="addressable"))
        elif torch.cuda.is_available():
            torch.cuda.nvtx.range_push(name)
            stack.callback(torch.cuda.nvtx.range_pop)
        stack.enter_context(torch.profiler.record_function(PREFIX + name))
        yield
