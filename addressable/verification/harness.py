"""The verification harness: loading problem files, seeding, inputs, device and timing.

Public building blocks shared by `verify` (the runner), `audit` and DLRM-Bench (`bench time`);
the device comes from `addressable.core.device.resolve_device`.
Problem files are KernelBench format (see `addressable.verification.invariants` for the full format): module-level
`Model`, `get_inputs()` and `get_init_inputs()`, and size constants that `--set NAME=VALUE` overrides.

Timing (`time_calls`): CUDA events around each call on the current stream, with a 256 MB L2 flush
before it; then a device-wide synchronize, whose host wait beyond its idle cost (`idle_sync_ms`,
measured once) is added, so work the call left on any stream (a private non-blocking stream included)
counts: no output sketch bounds the call here, so work left after it may be its own (`timing.Timer`,
which sketches the output inside the interval, reports that wait instead). (An end event after that synchronize put the host's wake-up from it in every interval: see
`addressable.verification.timing`.) On the CPU, `time.perf_counter` around each call.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from addressable.core.errors import AddressableError

DISTRIBUTIONS = ("native", "randn", "native", "randn*2", "native", "randn*0.1")
PROBLEM_NAMES = ("Model", "get_inputs", "get_init_inputs")
_counter = itertools.count()


# ---------------------------------------------------------------- files, checked before anything runs


def top_level_names(path: Path) -> set[str]:
    """Names a file defines at module level (classes, functions, assignments, imports)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                out.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


def readable(path: Path, what: str) -> Path:
    """`path` when it is a file, else AddressableError naming `what` it should have been."""
    if not path.is_file():
        raise AddressableError(f"{what} file not found: {path}")
    return path


def problem_symbols(path: str | Path) -> set[str]:
    """The module-level names of a KernelBench problem file; AddressableError when it is not one."""
    path = readable(Path(path), "reference")
    try:
        names = top_level_names(path)
    except SyntaxError as e:
        raise AddressableError(f"reference {path} does not parse: {e}") from None
    except (UnicodeDecodeError, ValueError):
        raise AddressableError(f"reference {path} is not a Python source file (binary, or not UTF-8)") from None
    missing = [n for n in PROBLEM_NAMES if n not in names]
    if missing:
        raise AddressableError(f"reference {path} is not a KernelBench problem: no {', '.join(missing)}")
    return names


def problem_category(path: str | Path) -> str | None:
    """A problem file's taxonomy category: its `CATEGORY = "..."` constant, else a `Category: ...` line in its
    docstring; None when it has neither or does not parse. Read with ast, never imported."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    category = next((n.value.value for n in tree.body if isinstance(n, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "CATEGORY" for t in n.targets)
                     and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)), None)
    if category is None:
        m = re.search(r"^\s*category\s*[:=]\s*`?(\w+)", ast.get_docstring(tree) or "", re.I | re.M)
        category = m.group(1) if m else None
    return category or None


def check_problem_file(path: str | Path, overrides: dict[str, Any] | None = None) -> Path:
    """A KernelBench-format problem: Model, get_inputs, get_init_inputs, and the constants to override."""
    names = problem_symbols(path)
    unknown = sorted(set(overrides or {}) - names)
    if unknown:
        raise AddressableError(f"--set {unknown[0]}: {Path(path).name} has no module-level constant '{unknown[0]}'")
    return Path(path)


def check_candidate_file(path: str | Path) -> str | None:
    """None when the candidate defines ModelNew; a compile-error reason when it does not parse.

    A file that is not Python source at all (binary, not UTF-8) is bad input: AddressableError."""
    path = readable(Path(path), "candidate")
    try:
        names = top_level_names(path)
    except SyntaxError as e:
        return f"candidate does not compile: {type(e).__name__}: {e}"
    except (UnicodeDecodeError, ValueError):
        raise AddressableError(f"candidate {path} is not a Python source file (binary, or not UTF-8)") from None
    if "ModelNew" not in names:
        raise AddressableError(f"candidate {path} defines no ModelNew")
    return None


def uses_triton(path: str | Path) -> bool:
    """Whether a candidate file imports triton (read with ast, never imported)."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
            return True
    return False


def parse_overrides(values: tuple[str, ...] | list[str] | str | None) -> dict[str, Any]:
    """NAME=VALUE pairs (a list, or one string separated by spaces/semicolons) → {name: literal}."""
    return {k: v for (problem, k), v in parse_scoped_overrides(values).items() if _no_scope(problem, k)}


def _no_scope(problem: str | None, name: str) -> bool:
    if problem is not None:
        raise AddressableError(f"--set {problem}:{name}=...: a problem prefix only works with audit")
    return True


def parse_scoped_overrides(values: tuple[str, ...] | list[str] | str | None) -> dict[tuple[str | None, str], Any]:
    """[PROBLEM:]NAME=VALUE pairs → {(problem or None, name): literal}; PROBLEM is a file stem or its number."""
    if not values:
        return {}
    if isinstance(values, str):
        values = values.replace(";", " ").split()
    out: dict[tuple[str | None, str], Any] = {}
    for v in values:
        key, sep, raw = v.partition("=")
        problem, colon, name = key.strip().rpartition(":")
        if not sep or not name.strip().isidentifier() or (colon and not problem.strip()):
            raise AddressableError(f"--set takes NAME=VALUE or PROBLEM:NAME=VALUE, got '{v}'")
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            value = raw.strip()
        out[(problem.strip() or None, name.strip())] = value
    return out


def overrides_for(stem: str, scoped: dict[tuple[str | None, str], Any]) -> dict[str, Any]:
    """The overrides that apply to problem `stem`: unscoped ones, then those scoped to its stem or number."""
    number = stem.partition("_")[0]

    def mine(p: str | None) -> bool:
        return p is not None and (p == stem or (p.isdigit() and number.isdigit() and int(p) == int(number)))

    return {**{k: v for (p, k), v in scoped.items() if p is None}, **{k: v for (p, k), v in scoped.items() if mine(p)}}


def load_module(path: str | Path, overrides: dict[str, Any] | None = None) -> ModuleType:
    """Import a Python file under a unique module name, then set its module-level overrides."""
    path = Path(path).resolve()
    name = f"_addressable_{path.stem.replace('-', '_')}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    for k, v in (overrides or {}).items():
        setattr(mod, k, v)
    return mod


# ---------------------------------------------------------------- inputs and outputs


def map_tensors(obj: Any, fn: Callable) -> Any:
    """`obj` with fn applied to every tensor in it (lists, tuples and dicts walked)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list | tuple):
        return type(obj)(map_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def tensors(obj: Any) -> list:
    """Every tensor in `obj`, in order."""
    out: list = []

    def keep(t: Any) -> Any:
        out.append(t)
        return t

    map_tensors(obj, keep)
    return out


def clone(obj: Any) -> Any:
    """`obj` with every tensor detached and cloned."""
    return map_tensors(obj, lambda t: t.detach().clone())


def seed_all(seed: int) -> None:
    """Seed Python's, numpy's and torch's generators."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def make_inputs(problem: ModuleType, seed: int, distribution: str, device: str) -> list:
    """Inputs of one trial: the problem's get_inputs() under `seed`, re-drawn for non-native trials.

    Re-drawn floating inputs are N(0, 1) times the native draw's RMS (times k for "randn*k"),
    in absolute value when the native draw is nonnegative. Integer inputs, and floating inputs that
    hold only integers (labels, masks), are drawn uniformly within the native [min, max]; a sorted
    1-D one (offsets) is sorted and keeps its first and last element. Booleans are kept.
    """
    import torch

    seed_all(seed)
    native = list(problem.get_inputs())
    gen = torch.Generator("cpu").manual_seed(seed + 1_000_003)
    scale = float(distribution.partition("*")[2] or 1.0)

    def redraw(t: torch.Tensor) -> torch.Tensor:
        if distribution == "native" or t.numel() == 0 or t.dtype == torch.bool or t.is_complex():
            return t
        if t.is_floating_point() and not bool((t == t.round()).all()):
            rms = float(t.double().pow(2).mean().sqrt()) or 1.0
            new = torch.randn(t.shape, generator=gen, dtype=torch.float64) * (scale * rms)
            return (new.abs() if bool((t >= 0).all()) else new).to(t.dtype)
        lo, hi = int(t.min()), int(t.max())
        new = torch.randint(lo, hi + 1, t.shape, generator=gen, dtype=torch.int64).to(t.dtype)
        if t.dim() == 1 and t.numel() > 1 and bool((t[1:] >= t[:-1]).all()):  # offsets stay offsets
            new = new.sort().values
            new[0], new[-1] = t[0], t[-1]
        return new

    return map_tensors(native, lambda t: redraw(t.cpu()).to(device))


def as_outputs(out: Any, who: str) -> list:
    """A model's output as a list of tensors; TypeError for anything else."""
    import torch

    outs = [out] if isinstance(out, torch.Tensor) else list(out) if isinstance(out, list | tuple) else []
    if not outs or not all(isinstance(o, torch.Tensor) for o in outs):
        raise TypeError(f"{who} returned {type(out).__name__}, not a tensor or a tuple of tensors")
    odd = [type(o).__name__ for o in outs if type(o) not in (torch.Tensor, torch.nn.Parameter)]
    if odd and who == "candidate":  # a subclass can defer its work until the output is read, outside the timing
        raise TypeError(f"candidate returned a {odd[0]} (a torch.Tensor subclass): return plain tensors")
    return outs


def to_f64(t: Any, device: Any) -> Any:
    """A float64 copy (NaN/Inf kept) on `device`."""
    import torch

    return t.detach().to(device=device, dtype=torch.float64, copy=True)


def on_device(model: Any, device: str) -> Any:
    """An nn.Module moved to the device in eval mode; any other callable as it is."""
    import torch

    return model.to(device).eval() if isinstance(model, torch.nn.Module) else model


def copy_weights(ref: Any, cand: Any) -> None:
    """Load the reference's parameters into the candidate when names and shapes match exactly."""
    import torch

    if not (isinstance(ref, torch.nn.Module) and isinstance(cand, torch.nn.Module)):
        return
    rs, cs = ref.state_dict(), cand.state_dict()
    if rs.keys() == cs.keys() and all(rs[k].shape == cs[k].shape for k in rs):
        with torch.no_grad():
            cand.load_state_dict(rs)


def synchronize(device: str) -> None:
    """Wait for all work on the device (every stream), a no-op on the CPU."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def call(fn: Callable, args: list, device: str) -> Any:
    """fn(*args) without autograd, then a device-wide synchronize."""
    import torch

    with torch.no_grad():
        out = fn(*args)
    synchronize(device)
    return out


def one_line(e: BaseException) -> str:
    """An exception as one line: its type and the first 300 characters of its message."""
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:300]}" if msg else type(e).__name__


# ---------------------------------------------------------------- timing


def idle_sync_ms(device_sync: Callable[[], None], perf: Callable[[], float], repeats: int = 25) -> float:
    """Median host ms of a device-wide synchronize (`device_sync`, timed by `perf`) on an idle device."""
    out = []
    for _ in range(repeats):
        device_sync()
        t0 = perf()
        device_sync()
        out.append((perf() - t0) * 1e3)
    return statistics.median(out)


def left_after(device_sync: Callable[[], None], perf: Callable[[], float], idle_ms: float) -> float:
    """Host ms a device-wide synchronize waits beyond its idle cost: work still running on any stream."""
    t0 = perf()
    device_sync()
    return max((perf() - t0) * 1e3 - idle_ms, 0.0)


def time_calls(models: dict[str, Callable], inputs: list, device: str, repeats: int, warmup: int,
               budget_s: float, device_sync: bool = True) -> dict[str, list[float]]:
    """Per-call milliseconds of each model, alternating the order each round (see the module docstring).

    `device_sync=False` is the old timing (end event on the current stream, no device synchronize),
    kept only to compare the two.
    """
    import torch

    with torch.no_grad():
        for _ in range(warmup):
            for fn in models.values():
                fn(*inputs)
        synchronize(device)
        times: dict[str, list[float]] = {k: [] for k in models}
        cuda = device == "cuda"
        flush = torch.empty(256 << 20, dtype=torch.uint8, device=device) if cuda else None
        idle = idle_sync_ms(torch.cuda.synchronize, time.perf_counter) if cuda and device_sync else 0.0
        start = time.perf_counter()
        for i in range(repeats):
            for k in (list(models) if i % 2 == 0 else list(models)[::-1]):
                if flush is not None:
                    flush.zero_()
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    models[k](*inputs)
                    b.record()
                    b.synchronize()
                    left = left_after(torch.cuda.synchronize, time.perf_counter, idle) if device_sync else 0.0
                    times[k].append(max(a.elapsed_time(b) + left, 1e-6))
                else:
                    t0 = time.perf_counter()
                    models[k](*inputs)
                    times[k].append((time.perf_counter() - t0) * 1e3)
            if i >= 4 and time.perf_counter() - start > budget_s:
                break
    return times


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    """(p25, median, p75) of a non-empty list."""
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def environment(device: str) -> dict[str, Any]:
    """torch/python/GPU/CUDA/Triton versions of this process, for a result's `env`."""
    import torch

    env: dict[str, Any] = {"torch": torch.__version__, "python": sys.version.split()[0], "device": device}
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        env["cuda"] = torch.version.cuda
    if "triton" in sys.modules:
        env["triton"] = getattr(sys.modules["triton"], "__version__", "?")
    if os.environ.get("TRITON_INTERPRET") == "1":
        env["triton_interpret"] = True
    return env
