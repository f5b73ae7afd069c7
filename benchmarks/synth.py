"""Synthetic Kineto traces for benchmarks and tests, in Kineto's own pretty-printed layout.

The event mix follows the real H200 traces (../shared/traces/h200): every GPU kernel has
a launching CPU op (nested in a parent op), a cuda_runtime/cuda_driver launch call and an
ac2g flow pair (s/f); there are extra CPU ops that launch nothing (aten::empty, views),
memsets and memcpys, runtime calls without a kernel, autograd fwdbwd flows,
ProfilerStep#N rows on the CPU and the GPU, gpu_user_annotation ranges, and Kineto's
process/thread metadata ("M") at the end. Kernel names are drawn from the real traces
and from the kinds the taxonomy names (nvjet_*, cuDNN xmma, at::native elementwise and
reduce, triton_*, ncclDevKernel_*, FBGEMM split_embedding_codegen_*, FlashAttention ...).

    python -m benchmarks.synth out.json.gz --events 1000000
"""

from __future__ import annotations

import argparse
import gzip
import queue
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

# (category, weight, launching CPU op chain (outermost first), kernel names, median dur us)
_EW = "void at::native::vectorized_elementwise_kernel<{v}, at::native::{f}, std::array<char*, {n}ul> >(int, at::native::{f}, std::array<char*, {n}ul>)"
_ELEMENTWISE = [
    _EW.format(v=8, f="CUDAFunctor_add<c10::BFloat16>", n=3),
    _EW.format(v=4, f="FillFunctor<int>", n=1),
    _EW.format(v=4, f="CUDAFunctorOnSelf_add<float>", n=2),
    _EW.format(v=8, f="BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >", n=3),
    _EW.format(v=8, f="(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::operator()() const::{lambda(c10::BFloat16)#1}", n=2),
    _EW.format(v=4, f="rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}", n=2),
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})",
]
_KINDS: list[tuple[str, float, tuple[str, ...], list[str], float]] = [
    ("gemm", 14, ("aten::linear", "aten::addmm"), [
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
        "nvjet_sm90_tst_128x192_64x5_2x1_v_bz_coopB_NNN",
        "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT",
        "nvjet_sm90_tst_64x64_64x13_1x2_h_bz_splitK_NTT",
        "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)",
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, false, float, __nv_bfloat16, __nv_bfloat16, true, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, float*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*, float*, float*, float const*, float const*, float const*, float const*, float const*)",
    ], 120.0),
    ("conv", 10, ("aten::conv2d", "aten::cudnn_convolution"), [
        "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
        "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
        "sm90_xmma_wgrad_indexed_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_warpgroupsize1x1x1_g1_execute_split_k_kernel__5x_cudnn",
        "void nhwcAddPaddingKernel<__nv_bfloat16, __nv_bfloat16, float, true, (cudnnKernelDataType_t)0>(int, int, int, int, int, int, int, int, __nv_bfloat16 const*, __nv_bfloat16*, int, int, int, int, float, float, cudnn::reduced_divisor, cudnn::reduced_divisor, cudnn::reduced_divisor)",
    ], 60.0),
    ("attention", 3, ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_cudnn_attention"), [
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)",
        "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
    ], 90.0),
    ("communication", 2, ("c10d::allreduce_", "nccl:all_reduce"), [
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    ], 200.0),
    ("elementwise", 30, ("aten::add", "aten::add_"), _ELEMENTWISE, 8.0),
    ("normalization", 8, ("aten::batch_norm", "aten::native_batch_norm"), [
        "void at::native::batch_norm_transform_input_channels_last_kernel<c10::BFloat16, float, float, 4>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, float const*, float const*, c10::BFloat16*, int, int, bool)",
        "void at::native::batch_norm_collect_statistics_channels_last_kernel<at::native::Var, c10::BFloat16, float, 4>(c10::BFloat16 const*, float*, float*, float volatile*, int*, int, int, float)",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    ], 25.0),
    ("reduction", 5, ("aten::mean", "aten::mean"), [
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)",
        "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)",
    ], 12.0),
    ("softmax", 2, ("aten::softmax", "aten::_softmax"), [
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    ], 15.0),
    ("data_movement", 8, ("aten::to", "aten::copy_"), [
        "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)",
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)",
        "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)",
    ], 10.0),
    ("embedding", 3, ("fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function", "fbgemm::split_embedding_codegen_forward_unweighted_cuda"), [
        "void fbgemm_gpu::split_embedding_codegen_forward_unweighted_kernel<c10::Half, float, float, long, 4, false, 4>(pta::PackedTensorAccessor64<c10::Half, 1, at::RestrictPtrTraits>, pta::PackedTensorAccessor32<long, 1, at::RestrictPtrTraits>, int, long, pta::PackedTensorAccessor32<int, 1, at::RestrictPtrTraits>, pta::PackedTensorAccessor64<float, 2, at::RestrictPtrTraits>)",
        "void fbgemm_gpu::split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<float, float, float, long, 4, 32>(pta::PackedTensorAccessor64<float, 2, at::RestrictPtrTraits>, pta::PackedTensorAccessor64<float, 1, at::RestrictPtrTraits>)",
        "void fbgemm_gpu::bounds_check_indices_kernel<long, false>(pta::PackedTensorAccessor32<long, 1, at::RestrictPtrTraits>, int, pta::PackedTensorAccessor32<long, 1, at::RestrictPtrTraits>)",
    ], 40.0),
    ("optimizer", 2, ("Optimizer.step#SGD.step", "aten::_foreach_add_"), [
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)",
    ], 30.0),
    ("pooling", 1, ("aten::max_pool2d", "aten::max_pool2d_with_indices"), [
        "void at::native::(anonymous namespace)::max_pool_forward_nhwc<c10::BFloat16, float>(c10::BFloat16 const*, int, long, long, long, int, int, int, int, int, int, int, int, int, int, int, int, c10::BFloat16*, long*)",
    ], 50.0),
]
_TRITON_PREFIXES = ("triton_poi_fused_add_mul_", "triton_red_fused__to_copy_mean_pow_", "triton_per_fused_native_layer_norm_")
_N_TRITON = 300  # distinct generated Triton kernels (a compiled model has hundreds)
_TRITON_WEIGHT = 12
_LEAF_OPS = ("aten::empty", "aten::view", "aten::as_strided", "aten::reshape", "aten::t", "aten::detach")
_RUNTIME_ONLY = ("cudaFuncGetAttributes", "cudaPeekAtLastError", "cudaStreamIsCapturing")

_HEAD = """
  {
    "schemaVersion": 1,
    "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }
    ],
      "trace_id": "0972E876ED6B47929DC81DB5EFBBF820",
      "cuda_driver_version": 13000,
      "cuda_runtime_version": 13000,
      "cupti_version": 130001,
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1, "pg_count": 1, "pg_config": [], "nccl_version": "2.27.7"},
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1790857026000000000,
  "traceEvents": ["""
_CPU_OP = """
  {
    "ph": "X", "cat": "%s", "name": %s, "pid": 423, "tid": %d,
    "ts": %.3f, "dur": %.3f,
    "args": {
      "External id": %d,"Record function id": 0, "Ev Idx": %d
    }
  },"""
_KERNEL = """
  {
    "ph": "X", "cat": "kernel", "name": %s, "pid": 0, "tid": 7,
    "ts": %.3f, "dur": %.3f,
    "args": {
      "External id": %d,      "queued": 0, "device": 0, "context": 1,      "stream": 7, "correlation": %d,      "registers per thread": %d,      "shared memory": 0,      "blocks per SM": %.6f,      "warps per SM": %.6f,      "grid": [%d, 1, 1],      "block": [128, 1, 1],      "est. achieved occupancy %%": %d
    }
  },"""
_GPU_MEM = """
  {
    "ph": "X", "cat": "%s", "name": "%s", "pid": 0, "tid": 7,
    "ts": %.3f, "dur": %.3f,
    "args": {
      "External id": %d,      "device": 0, "context": 1,      "stream": 7, "correlation": %d,      "bytes": %d, "memory bandwidth (GB/s)": %r
    }
  },"""
_RUNTIME = """
  {
    "ph": "X", "cat": "%s", "name": "%s", "pid": 423, "tid": %d,
    "ts": %.3f, "dur": %.3f,
    "args": {
      "External id": %d,      "cbid": %d, "correlation": %d
    }
  },"""
_FLOW_S = """
  {
    "ph": "s", "id": %d, "pid": 423, "tid": %d, "ts": %.3f,
    "cat": "%s", "name": "%s"
  },"""
_FLOW_F = """
  {
    "ph": "f", "id": %d, "pid": %s, "tid": %d, "ts": %.3f,
    "cat": "%s", "name": "%s", "bp": "e"
  },"""
_GPU_ANN = """
  {
    "ph": "X", "cat": "gpu_user_annotation", "name": "%s", "pid": 0, "tid": 7,
    "ts": %.3f, "dur": %.3f,
    "args": {
      "External id": %d
    }
  },"""
_TAIL_EVENTS = """
  {
    "name": "process_name", "ph": "M", "ts": %.3f, "pid": 423, "tid": 0,
    "args": {
      "name": "python3"
    }
  },
  {
    "name": "process_labels", "ph": "M", "ts": %.3f, "pid": 423, "tid": 0,
    "args": {
      "labels": "CPU"
    }
  },
  {
    "name": "process_name", "ph": "M", "ts": %.3f, "pid": 0, "tid": 0,
    "args": {
      "name": "python3"
    }
  },
  {
    "name": "process_labels", "ph": "M", "ts": %.3f, "pid": 0, "tid": 0,
    "args": {
      "labels": "GPU 0"
    }
  },
  {
    "name": "thread_name", "ph": "M", "ts": %.3f, "pid": 423, "tid": 423,
    "args": {
      "name": "thread 423 (python3)"
    }
  },
  {
    "ph": "X", "cat": "Trace", "ts": %.3f, "dur": %.3f,
    "pid": "Spans", "tid": "PyTorch Profiler",
    "name": "PyTorch Profiler (0)",
    "args": {
      "Op count": 0
    }
  },
  {
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": %.3f
  }
  ],
  "traceName": "synthetic.json"
}"""


@dataclass
class SynthTrace:
    """What was written: the file, and how many events of each kind it holds."""

    path: Path
    n_events: int
    n_kernels: int  # GPU work rows: kernels, memsets and memcpys
    n_steps: int
    uncompressed_bytes: int


def _kinds(rng: random.Random) -> list[tuple[str, tuple[str, ...], list[str], float]]:
    kinds = [(cat, ops, [orjson.dumps(n).decode() for n in names], dur) for cat, _, ops, names, dur in _KINDS]
    weights = [w for _, w, *_ in _KINDS]
    triton = [orjson.dumps(f"{rng.choice(_TRITON_PREFIXES)}{i}").decode() for i in range(_N_TRITON)]
    kinds.append(("triton", ("Torch-Compiled Region: 0/0", "CompiledFunction"), triton, 10.0))
    weights.append(_TRITON_WEIGHT)
    return [k for k, w in zip(kinds, weights, strict=True) for _ in range(int(w))]


def events(n_events: int | None = None, n_kernels: int | None = None, seed: int = 0,
           kernels_per_step: int = 2000) -> Iterator[tuple[str, int, int, int]]:
    """Yield (text, events, gpu work rows, steps) pieces of a trace's event list, in order.

    Stops at the first piece boundary at or after n_events events (or n_kernels GPU rows).
    """
    if (n_events is None) == (n_kernels is None):
        raise ValueError("give exactly one of n_events and n_kernels")
    rng = random.Random(seed)
    kinds = _kinds(rng)
    dumps = {n: orjson.dumps(n).decode() for k in kinds for n in k[1]}
    leaf = [orjson.dumps(n).decode() for n in _LEAF_OPS]
    t = 5115132874200.0
    gpu_t = t
    ext = corr = idx = 0
    step, step_start, gpu_step_start, step_kernels = 0, t, t, 0
    done_events = done_kernels = 0
    while True:
        out: list[str] = []
        n_ev = n_k = n_s = 0
        for _ in range(256):
            _, ops, names, median = rng.choice(kinds)
            name = rng.choice(names)
            t += rng.uniform(2.0, 8.0)
            outer_ts, ext, idx = t, ext + 1, idx + 1
            outer_ext, outer_idx = ext, idx
            body: list[str] = []
            # the launching op, nested in the outer one
            t += rng.uniform(1.0, 4.0)
            ext, idx = ext + 1, idx + 1
            launch_ts, launch_ext = t, ext
            if rng.random() < 0.5:  # a CPU op that launches nothing (aten::empty, views)
                ext, idx = ext + 1, idx + 1
                body.append(_CPU_OP % ("cpu_op", rng.choice(leaf), 423, t + 0.5, rng.uniform(0.3, 6.0), ext, idx))
                n_ev += 1
            t += rng.uniform(3.0, 9.0)
            corr += 1
            launch = rng.uniform(3.0, 40.0)
            api = ("cuda_driver", "cuLaunchKernelEx", 652) if name.startswith('"nvjet') else \
                  ("cuda_runtime", "cudaLaunchKernel", 211)
            body.append(_RUNTIME % (api[0], api[1], 423, t, launch, launch_ext, api[2], corr))
            body.append(_FLOW_S % (corr, 423, t, "ac2g", "ac2g"))
            gpu_t = max(gpu_t + rng.uniform(0.5, 3.0), t + launch)
            dur = rng.lognormvariate(0.0, 0.8) * median
            if rng.random() < 0.05:
                body.append(_GPU_MEM % ("gpu_memset", "Memset (Device)", gpu_t, 1.2, launch_ext, corr, 51380224, 4148.9))
            elif rng.random() < 0.02:
                body.append(_GPU_MEM % ("gpu_memcpy", "Memcpy DtoD (Device -> Device)", gpu_t, 1.1, launch_ext,
                                        corr, 262144, 234.05714285714285))
            else:
                grid = rng.choice((10, 264, 1024, 9408))
                body.append(_KERNEL % (name, gpu_t, dur, launch_ext, corr, rng.choice((32, 64, 128, 168)),
                                       grid / 132, grid / 33, grid, rng.choice((0, 50, 100))))
            body.append(_FLOW_F % (corr, 0, 7, gpu_t, "ac2g", "ac2g"))
            n_ev, n_k = n_ev + 4, n_k + 1
            if rng.random() < 0.1:
                body.append(_RUNTIME % ("cuda_runtime", rng.choice(_RUNTIME_ONLY), 423, t + launch + 0.5, 0.8, launch_ext,
                                        0, 0))
                n_ev += 1
            if rng.random() < 0.05:  # autograd forward -> backward link
                body.append(_FLOW_S % (ext, 423, outer_ts, "fwdbwd", "fwdbwd"))
                body.append(_FLOW_F % (ext, 423, 454, t, "fwdbwd", "fwdbwd"))
                n_ev += 2
            gpu_t += dur
            t += launch + rng.uniform(1.0, 3.0)
            out.append(_CPU_OP % ("cpu_op", dumps[ops[0]], 423, outer_ts, t - outer_ts, outer_ext, outer_idx))
            out.append(_CPU_OP % ("cpu_op", dumps[ops[1]], 423, launch_ts, t - 1.0 - launch_ts, launch_ext, idx))
            out.extend(body)
            n_ev += 2
            step_kernels += 1
            if step_kernels >= kernels_per_step:
                ext, idx = ext + 1, idx + 1
                out.append(_CPU_OP % ("user_annotation", f'"ProfilerStep#{step}"', 423, step_start - 1.0,
                                      t - step_start + 1.5, ext, idx))
                out.append(_GPU_ANN % (f"ProfilerStep#{step}", gpu_step_start, gpu_t - gpu_step_start, ext))
                n_ev, n_s = n_ev + 2, n_s + 1
                step, step_start, gpu_step_start, step_kernels = step + 1, t + 1.0, gpu_t, 0
        done_events += n_ev
        done_kernels += n_k
        last = (done_events >= n_events) if n_events is not None else (done_kernels >= n_kernels)
        if last:
            t0 = 5115132874100.0
            out.append(_TAIL_EVENTS % (t0, t0, t0, t0, t0, t0, t - t0, t))
            n_ev += 7
        yield "".join(out), n_ev, n_k, n_s
        if last:
            return


def write_trace(path: str | Path, n_events: int | None = None, *, n_kernels: int | None = None,
                seed: int = 0, compresslevel: int = 1, kernels_per_step: int = 2000) -> SynthTrace:
    """Write a synthetic Kineto trace; gzipped when the name ends in .gz."""
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    total_ev = total_k = total_s = size = 0
    with open(tmp, "wb") as raw:
        sink = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=compresslevel, mtime=0) \
            if path.suffix == ".gz" else raw
        with _BackgroundWriter(sink) as write:
            write(_HEAD.encode())
            size += len(_HEAD)
            for text, n_ev, n_k, n_s in events(n_events, n_kernels, seed, kernels_per_step):
                data = text.encode()
                write(data)
                size += len(data)
                total_ev, total_k, total_s = total_ev + n_ev, total_k + n_k, total_s + n_s
        if sink is not raw:
            sink.close()
    tmp.replace(path)
    return SynthTrace(path, total_ev, total_k, total_s, size)


def ensure_trace(path: str | Path, n_events: int | None = None, *, n_kernels: int | None = None,
                 seed: int = 0) -> SynthTrace:
    """The trace at path if an earlier call wrote it with the same arguments, else a new one.

    What was written is remembered next to the trace, in <path>.info (JSON; not *.json, which HTA would read as a trace).
    """
    path = Path(path)
    info = path.with_name(path.name + ".info")
    want = {"n_events": n_events, "n_kernels": n_kernels, "seed": seed}
    if path.exists() and info.exists():
        saved = orjson.loads(info.read_bytes())
        if saved.get("args") == want:
            return SynthTrace(path, **saved["trace"])
    t = write_trace(path, n_events, n_kernels=n_kernels, seed=seed)
    trace = {"n_events": t.n_events, "n_kernels": t.n_kernels, "n_steps": t.n_steps,
             "uncompressed_bytes": t.uncompressed_bytes}
    info.write_bytes(orjson.dumps({"args": want, "trace": trace}))
    return t


class _BackgroundWriter:
    """Write (and compress: zlib drops the GIL) on a second thread while the next piece is made."""

    def __init__(self, sink) -> None:
        self.sink, self.q = sink, queue.Queue(maxsize=8)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        while (data := self.q.get()) is not None:
            try:
                self.sink.write(data)
            except BaseException as e:  # surfaced in __exit__
                self.error = e

    def __enter__(self):
        self.thread.start()
        return self.q.put

    def __exit__(self, *exc) -> None:
        self.q.put(None)
        self.thread.join()
        if self.error:
            raise self.error


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--events", type=int)
    ap.add_argument("--kernels", type=int)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    info = write_trace(a.path, a.events, n_kernels=a.kernels, seed=a.seed)
    print(info)


if __name__ == "__main__":
    main()
