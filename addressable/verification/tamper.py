"""Tampering: what the harness relies on, recorded before the candidate loads and compared after it ran.

A snapshot maps a name to a fingerprint of what it refers to:

- every function, class and module of `time`, `builtins`, `json`, `math`, `gc`, `torch`,
  `torch.Tensor`, `torch.nn.functional`, `torch.linalg`, `torch.cuda`, `torch.cuda.Event`, its C
  base class, and of the verification modules themselves (a function's fingerprint includes its
  code object, defaults and closure, so `f.__code__ = ...` shows);
- global state that changes results or timing: torch's TF32 and reduced-precision flags, the
  float32 matmul precision, cuDNN's flags, deterministic algorithms, grad mode, the default dtype,
  the thread count, the current CUDA stream;
- hooks that run code inside the harness: `sys.settrace`/`setprofile` (and threading's), `gc.callbacks`,
  `sys.meta_path`, signal handlers, global nn.Module hooks;
- the `sys.modules` entries of those modules.

`changed(before, after)` lists the names whose fingerprint changed or that disappeared (names that
appear, such as lazily loaded torch submodules, are not tampering). The snapshot is taken inside
the candidate's process, so a candidate that rewrites this module can hide its changes: it is a
tripwire, not the guarantee (the verdict and the clocks are checked outside, see `session`).
"""

from __future__ import annotations

import builtins
import gc
import inspect
import json
import math
import signal
import statistics
import sys
import threading
import time
from types import FunctionType, ModuleType
from typing import Any

_MODULES = ("addressable.verification.harness", "addressable.verification.checks", "addressable.verification.fresh",
            "addressable.verification.timing", "addressable.verification.channel", "addressable.verification.roles",
            "addressable.verification.tamper", "addressable.verification.sandbox")


def _fingerprint(v: Any) -> str:
    if isinstance(v, FunctionType):
        cells = tuple(id(c.cell_contents) if _filled(c) else 0 for c in v.__closure__ or ())
        return f"{id(v)}:{id(v.__code__)}:{id(v.__defaults__)}:{id(v.__kwdefaults__)}:{cells}"
    return str(id(v))


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _namespace(prefix: str, obj: Any) -> dict[str, str]:
    """Fingerprints of the callables, classes and modules a module holds, or a class resolves (its bases
    included, so a method set on the class over its base's shows)."""
    items = ([(k, inspect.getattr_static(obj, k)) for k in dir(obj)] if isinstance(obj, type)
             else list(vars(obj).items()))
    out = {}
    for k, v in items:
        if callable(v) or isinstance(v, ModuleType | type | staticmethod | classmethod | property):
            out[f"{prefix}.{k}"] = _fingerprint(v)
    return out


def _torch_state(device: str) -> dict[str, str]:
    import torch

    state = {"torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
             "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
                 torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
             "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
                 torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
             "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
             "torch.backends.cudnn.benchmark": torch.backends.cudnn.benchmark,
             "torch.backends.cudnn.deterministic": torch.backends.cudnn.deterministic,
             "torch.backends.cudnn.enabled": torch.backends.cudnn.enabled,
             "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
             "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled(),
             "torch.is_grad_enabled()": torch.is_grad_enabled(), "torch.get_default_dtype()": torch.get_default_dtype(),
             "torch.get_num_threads()": torch.get_num_threads()}
    if device == "cuda":
        state["torch.cuda.current_stream()"] = torch.cuda.current_stream().stream_id
    return {k: repr(v) for k, v in state.items()}


def _hooks() -> dict[str, str]:
    from torch.nn.modules import module

    out = {"sys.gettrace()": repr(sys.gettrace()), "sys.getprofile()": repr(sys.getprofile()),
           "threading tracing": repr((threading.gettrace(), threading.getprofile())),
           "gc.callbacks": repr([id(c) for c in gc.callbacks]), "gc.isenabled()": repr(gc.isenabled()),
           "sys.meta_path": repr([id(f) for f in sys.meta_path])}
    for name in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks"):
        out[f"nn.Module {name}"] = repr(len(getattr(module, name, {})))
    for s in signal.valid_signals():
        if s not in (signal.SIGKILL, signal.SIGSTOP):
            out[f"signal handler {_signal_name(s)}"] = repr(id(signal.getsignal(s)))
    return out


def _signal_name(s: int) -> str:
    try:
        return signal.Signals(s).name
    except ValueError:
        return str(int(s))


def snapshot(device: str) -> dict[str, str]:
    """Fingerprints of everything the harness relies on (see the module docstring)."""
    import torch
    import torch._dynamo  # wraps torch.manual_seed when first imported: first, so that neither the
    # harness's own later imports (the profiler) nor an honest candidate's torch.compile read as tampering

    out: dict[str, str] = {}
    for prefix, obj in (("time", time), ("builtins", builtins), ("json", json), ("math", math), ("gc", gc),
                        ("statistics", statistics), ("torch", torch), ("torch.Tensor", torch.Tensor),
                        ("torch.nn.functional", torch.nn.functional), ("torch.linalg", torch.linalg),
                        ("torch.cuda", torch.cuda), ("torch.cuda.Event", torch.cuda.Event)):
        out.update(_namespace(prefix, obj))
    for name in ("time", "builtins", "json", "torch", *_MODULES):
        mod = sys.modules.get(name)
        out[f"sys.modules[{name!r}]"] = str(id(mod))
        if mod is not None and name.startswith("addressable"):
            out.update(_namespace(name, mod))
    out.update(_torch_state(device))
    out.update(_hooks())
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Names whose fingerprint changed, or that are gone, between two snapshots."""
    return sorted(k for k, v in before.items() if after.get(k) != v)
