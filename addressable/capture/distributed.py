"""Multi-process (torchrun) profiling: launch, process group and model wrapping.

`addressable profile W --nproc N` re-launches itself as
``python -m torch.distributed.run --standalone --nproc-per-node N -m addressable profile W ...``;
each child sees WORLD_SIZE > 1 (as it does under a torchrun the user starts), joins a process
group (NCCL on CUDA, gloo on the CPU), uses device cuda:LOCAL_RANK, seeds its data with its rank,
and writes a complete run folder ``<run>/rank<k>/``. The workloads wrap their model when the group
is up: DDP for gpt2 and resnet50 training, FSDP2 (``fully_shard`` per decoder layer, then the root)
for Llama training; inference runs one replica per rank. DLRM needs TorchRec's sharded GPU kernels
and is refused.

`addressable.capture.profile.profile_ranks` does the per-rank profiling with this module's helpers.
Timed steps are bracketed by synchronize + barrier, and each step's time is the maximum across
ranks (all_reduce MAX), so every rank records the same step times. After a barrier rank 0 gathers
every rank's Breakdown and writes the top-level run folder: the standard run keys, categories.csv
and kernels.csv are **rank 0's** (so the tables and the addressable fraction that `project` and
`plot` read stay consistent with each other); the ``distributed`` key holds the per-rank rows, the
per-category median/min/max share across ranks on the summed and exposed bases
(`addressable.classify.ranks.aggregate_breakdowns`), the median/min/max addressable fractions, and the
straggler signal (communication time per rank). Rank 0 creates the temporary folder the ranks
write into and renames it into place at the end.

NVLink multicast (NVLS / symmetric-memory multicast) is always switched off (NVLS_OFF_ENV) in the
launched processes: our GPU provider requires it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist

from addressable.core.errors import AddressableError

if TYPE_CHECKING:
    from addressable.capture.workload import WorkloadSpec

NVLS_OFF_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

_strategy: str | None = None  # how the workload built in this process wrapped its model


def world_size() -> int:
    """WORLD_SIZE from the environment (set by torchrun), 1 when unset."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise AddressableError(f"WORLD_SIZE is not a number: {os.environ['WORLD_SIZE']!r}") from None


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def active() -> bool:
    """True inside an initialised process group of more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


# --------------------------------------------------------------------------- launching


def launch_command(nproc: int, args: list[str]) -> list[str]:
    """The torchrun command line that runs `python -m addressable ARGS` in nproc processes."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
            "-m", "addressable", *args]


def launch(nproc: int, args: list[str]) -> int:
    """Run `addressable ARGS` under torchrun with nproc processes (multicast off); its exit code."""
    env = {**os.environ, **NVLS_OFF_ENV}
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
    try:
        return subprocess.run(launch_command(nproc, args), env=env, check=False).returncode
    except OSError as e:
        raise AddressableError(f"cannot start torchrun: {e}") from None


def check_workload(spec: WorkloadSpec, nproc: int) -> None:
    """Refuse workloads that cannot run in nproc processes (DLRM without sharded TorchRec)."""
    if nproc < 1:
        raise AddressableError("--nproc must be at least 1")
    if nproc > 1 and spec.family == "recsys":
        why = _sharded_torchrec_missing() or "DistributedModelParallel is not wired into workloads/dlrm.py yet"
        raise AddressableError(f"{spec.name} with --nproc {nproc} needs TorchRec's sharded GPU embedding "
                               f"kernels: {why}; profile it with --nproc 1")


def check_nproc(spec: WorkloadSpec, nproc: int, layers_subset: tuple[int, int] | None = None) -> bool:
    """Check --nproc against the workload, --layers-subset and torchrun's world size; True when this
    process must re-launch itself under torchrun (nproc > 1, not started by torchrun)."""
    check_workload(spec, nproc)
    world = world_size()
    if world > 1 and nproc != world:
        raise AddressableError(f"--nproc {nproc} but torchrun started {world} processes")
    if layers_subset and nproc > 1:
        raise AddressableError("--layers-subset cannot be combined with --nproc > 1")
    return world == 1 and nproc > 1


def end_child() -> None:
    """In a torchrun child (WORLD_SIZE > 1) whose run is written: flush and end the process now (exit 0),
    skipping the C++ teardown, where gloo's threads can abort the process after the fact. A no-op otherwise."""
    if world_size() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _sharded_torchrec_missing() -> str | None:
    """Why TorchRec's sharded (fbgemm_gpu CUDA) kernels are unavailable; None when they are there."""
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    try:
        import fbgemm_gpu  # noqa: F401  (registers the torch.ops.fbgemm operators)
        import torchrec  # noqa: F401
    except ImportError as e:
        return f"cannot import {e.name or e}"
    if not torch._C._dispatch_has_kernel_for_dispatch_key("fbgemm::asynchronous_complete_cumsum", "CUDA"):
        return "fbgemm_gpu has no CUDA kernels here (the fbgemm-gpu-cpu build is installed)"
    return None


# --------------------------------------------------------------------------- the process group


@contextmanager
def process_group(device: str) -> Iterator[None]:
    """Join the torchrun process group (NCCL on cuda:LOCAL_RANK, gloo on the CPU) and leave it after."""
    os.environ.update(NVLS_OFF_ENV)  # NCCL reads these when its communicators start
    if dist.is_initialized():
        yield
        return
    if device == "cuda":
        if local_rank() >= torch.cuda.device_count():
            raise AddressableError(f"LOCAL_RANK {local_rank()} but only {torch.cuda.device_count()} GPU(s)")
        torch.cuda.set_device(local_rank())
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank()))
    else:
        dist.init_process_group("gloo")
    try:
        yield
        dist.barrier()  # leave together: a rank that tears gloo down while rank 0 still writes aborts
    finally:
        dist.destroy_process_group()


def barrier() -> None:
    """Synchronize this rank's GPU, then wait for every rank (no-op outside a process group)."""
    if not active():
        return
    if dist.get_backend() == "nccl":
        torch.cuda.synchronize()
        dist.barrier(device_ids=[torch.cuda.current_device()])
        torch.cuda.synchronize()
    else:
        dist.barrier()


def max_across_ranks(values: list[float]) -> list[float]:
    """Element-wise maximum of a list of floats over all ranks (unchanged outside a process group)."""
    if not active() or not values:
        return values
    dev = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    t = torch.tensor(values, dtype=torch.float64, device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [float(x) for x in t.cpu()]


# --------------------------------------------------------------------------- wrapping models


def seed_data(offset: int = 0) -> None:
    """Seed the generator for the data so each rank draws its own (no-op outside a process group)."""
    if active():
        torch.manual_seed(1 + offset + dist.get_rank())


def ddp(model: torch.nn.Module) -> torch.nn.Module:
    """DistributedDataParallel around model when a process group is up (the model itself otherwise)."""
    global _strategy
    if not active():
        return model
    _strategy = "ddp"
    ids = [torch.cuda.current_device()] if next(model.parameters()).is_cuda else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)


def fsdp2(model: torch.nn.Module, blocks: list[torch.nn.Module]) -> torch.nn.Module:
    """FSDP2: fully_shard each block (e.g. decoder layer), then the root; in place, returns model."""
    global _strategy
    if not active():
        return model
    from torch.distributed.fsdp import fully_shard

    _strategy = "fsdp2"
    for block in blocks:
        fully_shard(block)
    fully_shard(model)
    return model


def strategy() -> str:
    """How this process's workload spread its model: ddp, fsdp2, or replicated (one copy per rank)."""
    return _strategy or "replicated"
