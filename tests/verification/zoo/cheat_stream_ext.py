"""Cheat (GPU): a C++ extension runs the product with cuBLAS on its own non-blocking stream and returns at once.

Our own version of the idea behind KernelBench's adversarial `non_default_stream` test kernel
(KernelBench, src/kernelbench/unit_tests/test_kernels/): `cudaStreamCreateWithFlags(&s,
cudaStreamNonBlocking)`, launch there, never make the caller's stream wait. A harness that waits
only on the current stream times the launch, not the product. Built with load_inline at import
(CUDA headers and libcudart from CUDA_HOME or from the nvidia-* wheels torch depends on).
"""

import glob
import os
import sys

import torch
from torch import nn
from torch.utils.cpp_extension import CUDA_HOME, load_inline

SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

static cudaStream_t private_stream() {
  static cudaStream_t s = nullptr;
  if (s == nullptr) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  return s;
}

torch::Tensor escaped_mm(torch::Tensor a, torch::Tensor b) {
  c10::cuda::CUDAStreamGuard guard(c10::cuda::getStreamFromExternal(private_stream(), a.device().index()));
  return torch::mm(a, b);  // cuBLAS on the private stream; nobody waits for it
}
"""


def _cuda_paths() -> tuple[list[str], list[str]]:
    """Include folders (cuda_runtime_api.h, crt/host_config.h) and link flags (libcudart, libc10_cuda)."""
    site = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages"))
    roots = ([CUDA_HOME] if CUDA_HOME else []) + sorted(glob.glob("/usr/local/cuda*"))
    roots += [d for s in site for d in glob.glob(os.path.join(s, "nvidia", "*"))]
    roots += [os.path.join(s, "triton", "backends", "nvidia") for s in site]
    includes = []
    for header in ("cuda_runtime_api.h", os.path.join("crt", "host_config.h")):
        found = [os.path.join(r, "include") for r in roots if os.path.isfile(os.path.join(r, "include", header))]
        includes += found[:1]
    libs = [h for r in roots for d in ("lib64", "lib") for h in sorted(glob.glob(os.path.join(r, d, "libcudart.so*")))]
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    ldflags = [f"-L{torch_lib}", "-lc10_cuda"]
    if libs:
        ldflags += [f"-L{os.path.dirname(libs[0])}", f"-l:{os.path.basename(libs[0])}", f"-Wl,-rpath,{os.path.dirname(libs[0])}"]
    return list(dict.fromkeys(includes)), ldflags


_includes, _ldflags = _cuda_paths()
_ext = load_inline(name="addressable_zoo_escaped_mm", cpp_sources=SOURCE, functions=["escaped_mm"],
                   extra_include_paths=_includes, extra_ldflags=_ldflags, with_cuda=False, verbose=False)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _ext.escaped_mm(a, b)
