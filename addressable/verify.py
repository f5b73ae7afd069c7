"""Verify a candidate kernel against a KernelBench-format reference, with checks output scale cannot fool.

KernelBench's `torch.allclose(out, ref, atol=1e-2, rtol=1e-2)` is passed by an all-zeros output
whenever the reference output is small (softmax over 393,216-wide rows, a Frobenius-normalised
tensor; see `addressable audit`). Every check here is relative to the reference's own scale, and
each one is reported by name with its value and threshold:

- ``shape``, ``dtype``: the candidate output's shape and dtype equal the reference's.
- ``rel_fro``: ‖out − ref‖_F / ‖ref‖_F < 2e-2 (NaN/Inf in the candidate count as 0).
- ``max_err``: max|out − ref| / max|ref| < 5e-2.
- ``finite``: no NaN/Inf where the reference is finite.
- ``written``: the fraction of nonzero finite elements matches the reference's (±1e-2).
- ``sentinel``: the output does not depend on what the memory held before: the candidate runs twice,
  once with freshly allocated memory pre-filled with 0xFF bytes (NaN) and once with 0x42 bytes, and
  the outputs must agree. Python-level ``torch.empty``/``empty_like``/``new_empty``/``empty_strided``
  return pre-filled memory; on CUDA the caching allocator is also poisoned (a large block filled and
  freed), so ``at::empty`` in C++/CUDA extensions hands out poisoned memory too.
- ``inputs_unchanged``: the candidate does not modify its inputs (compared with clones).
- ``fresh``: from the second trial on, the output changes as much as the reference's did
  (‖c_t − c_{t−1}‖ ≈ ‖r_t − r_{t−1}‖), so outputs cached from an earlier call or hard-coded for one
  seed fail.
- ``invariant:<name>`` / ``custom:<name>``: the problem's declared invariants (see
  `addressable.invariants` for the problem-file format, INVARIANTS and check_invariants).

Both models are built from get_init_inputs() under the same seed; the reference's parameters are also
loaded into the candidate when their names and shapes match. Trials (counted from 0) use fresh
inputs: trial t is seeded with seed + t and alternates the problem's own
``get_inputs()`` ("native") with re-drawn inputs of the same shape and dtype: floating inputs from
N(0, σ²) with σ the native draw's RMS, times 2 on trial 3 (times 0.1 on trial 5), in absolute value
when the native draw is nonnegative; integer inputs (and floats holding only integers, such as
labels) uniformly within the native draw's [min, max], sorted with the native endpoints when the
native draw is a sorted 1-D tensor such as offsets. A trial whose re-drawn inputs the reference
rejects (it raises) falls back to native inputs. Every check must pass on every trial; a declared
invariant is skipped on a trial where the reference output itself breaks it.

Timing (only after every check passed) alternates reference and candidate on the trial-0 inputs after
a warm-up: CUDA events with a 256 MB L2 flush before each run on GPU, `time.perf_counter` on CPU.
Speedup = reference median / candidate median; speedup_lo/hi = reference p25/p75 over candidate
p75/p25. Speedups above 10x are flagged for review (`review`, and "REVIEW:" in wins.csv notes). By default each verification runs in its own subprocess, so a crash, a hang
(``timeout``) or a compile error in the candidate is a clean ``fail`` verdict with the reason.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib.util
import itertools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from addressable.errors import AddressableError
from addressable.jsonutil import to_jsonable

DISTRIBUTIONS = ("native", "randn", "native", "randn*2", "native", "randn*0.1")
_POISON = (0xFF, 0x42)  # byte patterns: 0xFF is NaN in every float dtype, 0x42 a finite value
_PKG_ROOT = str(Path(__file__).resolve().parents[1])
_counter = itertools.count()


@dataclass
class Thresholds:
    """Pass thresholds of the correctness checks, and the speedup above which a result needs review."""

    rel_fro: float = 2e-2
    max_err: float = 5e-2
    written_tol: float = 1e-2
    sentinel_tol: float = 0.0
    fresh_tol: float = 0.5
    invariant_tol: float = 1e-3
    review_speedup: float = 10.0


@dataclass
class VerifyResult:
    """The verdict on one candidate: every named check, and the timing when all of them passed."""

    problem: str
    candidate: str
    target: str
    verdict: str
    reason: str
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    speedup: float | None = None
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    ref_ms: float | None = None
    candidate_ms: float | None = None
    ref_ms_iqr: list[float] | None = None
    candidate_ms_iqr: list[float] | None = None
    timing_runs: int = 0
    review: bool = False
    device: str = ""
    trials: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (NaN/Inf values become the strings "nan"/"inf"/"-inf")."""
        return to_jsonable(asdict(self), nan_as="nan", inf_as="inf")

    def wins_row(self, source: str | None = None, notes: str = "") -> dict[str, Any]:
        """One row of wins.csv, the file `addressable project` reads (speedup 1 when not timed)."""
        why = self.reason if not self.passed else ("REVIEW: " + self.reason if self.review else "")
        if self.speedup is None:
            why = "; ".join(x for x in (why, "not timed: speedup set to 1") if x)
        return {"target": self.target, "speedup": self.speedup or 1.0, "verified": self.passed,
                "source": source or self.candidate, "notes": "; ".join(x for x in (notes, why) if x),
                "speedup_lo": self.speedup_lo, "speedup_hi": self.speedup_hi}


# ---------------------------------------------------------------- files, checked before anything runs


def _top_level_names(path: Path) -> set[str]:
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


def _readable(path: Path, what: str) -> Path:
    if not path.is_file():
        raise AddressableError(f"{what} file not found: {path}")
    return path


def check_problem_file(path: str | Path, overrides: dict[str, Any] | None = None) -> Path:
    """A KernelBench-format problem: Model, get_inputs, get_init_inputs, and the constants to override."""
    path = _readable(Path(path), "reference")
    try:
        names = _top_level_names(path)
    except (SyntaxError, UnicodeDecodeError) as e:
        raise AddressableError(f"reference {path} does not parse: {e}") from None
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise AddressableError(f"reference {path} is not a KernelBench problem: no {', '.join(missing)}")
    unknown = sorted(set(overrides or {}) - names)
    if unknown:
        raise AddressableError(f"--set {unknown[0]}: {path.name} has no module-level constant '{unknown[0]}'")
    return path


def check_candidate_file(path: str | Path) -> str | None:
    """None when the candidate defines ModelNew; a compile-error reason when it does not parse."""
    path = _readable(Path(path), "candidate")
    try:
        names = _top_level_names(path)
    except (SyntaxError, UnicodeDecodeError) as e:
        return f"candidate does not compile: {type(e).__name__}: {e}"
    if "ModelNew" not in names:
        raise AddressableError(f"candidate {path} defines no ModelNew")
    return None


def parse_overrides(values: tuple[str, ...] | list[str] | str | None) -> dict[str, Any]:
    """NAME=VALUE pairs (a list, or one string separated by spaces/semicolons) → {name: literal}."""
    if not values:
        return {}
    if isinstance(values, str):
        values = values.replace(";", " ").split()
    out: dict[str, Any] = {}
    for v in values:
        name, sep, raw = v.partition("=")
        if not sep or not name.strip().isidentifier():
            raise AddressableError(f"--set takes NAME=VALUE, got '{v}'")
        try:
            out[name.strip()] = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            out[name.strip()] = raw.strip()
    return out


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


def resolve_device(device: str) -> str:
    import torch

    if device not in ("auto", "cuda", "cpu"):
        raise AddressableError(f"--device must be auto, cuda or cpu, got '{device}'")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise AddressableError("--device cuda: no CUDA GPU is available")
    return device


# ---------------------------------------------------------------- inputs and outputs


def _map_tensors(obj: Any, fn: Callable) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list | tuple):
        return type(obj)(_map_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    return obj


def _tensors(obj: Any) -> list:
    out: list = []
    _map_tensors(obj, lambda t: out.append(t) or t)
    return out


def _clone(obj: Any) -> Any:
    return _map_tensors(obj, lambda t: t.detach().clone())


def _seed_all(seed: int) -> None:
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

    _seed_all(seed)
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

    return _map_tensors(native, lambda t: redraw(t.cpu()).to(device))


def _outputs(out: Any, who: str) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, list | tuple) and out and all(isinstance(o, torch.Tensor) for o in out):
        return list(out)
    raise TypeError(f"{who} returned {type(out).__name__}, not a tensor or a tuple of tensors")


def _f64(t: Any, device: Any) -> Any:
    """A float64 copy (NaN/Inf kept) on `device`."""
    return t.detach().to(device=device, dtype=__import__("torch").float64, copy=True)


def _check(value: Any, threshold: Any, passed: bool) -> dict[str, Any]:
    return {"value": value, "threshold": threshold, "passed": bool(passed)}


def compare_output(ref: Any, cand: Any, cand_b: Any, th: Thresholds) -> dict[str, dict[str, Any]]:
    """The per-output checks of one trial (ref, cand: the output; cand_b: the output with other poison)."""
    import torch

    checks = {"shape": _check(list(cand.shape), list(ref.shape), cand.shape == ref.shape),
              "dtype": _check(str(cand.dtype).removeprefix("torch."), str(ref.dtype).removeprefix("torch."),
                              cand.dtype == ref.dtype)}
    if cand.shape != ref.shape:
        return checks
    r, c, cb = _f64(ref, ref.device), _f64(cand, ref.device), _f64(cand_b, ref.device)
    fin_r, fin_c = torch.isfinite(r), torch.isfinite(c)
    r0 = torch.where(fin_r, r, 0.0)
    c0 = torch.where(fin_r & fin_c, c, 0.0)
    ref_norm, ref_max = float(torch.linalg.vector_norm(r0)), float(r0.abs().max()) if r0.numel() else 0.0
    diff = c0 - r0
    rel = float(torch.linalg.vector_norm(diff)) / (ref_norm or 1.0)
    mx = (float(diff.abs().max()) if diff.numel() else 0.0) / (ref_max or 1.0)
    checks["rel_fro"] = _check(rel, th.rel_fro, rel < th.rel_fro)
    checks["max_err"] = _check(mx, th.max_err, mx < th.max_err)
    bad = int((fin_r & ~fin_c).sum())
    checks["finite"] = _check(bad, 0, bad == 0)
    n = max(r.numel(), 1)
    frac_c = float((fin_c & (c != 0)).sum()) / n
    frac_r = float((fin_r & (r != 0)).sum()) / n
    checks["written"] = _check(abs(frac_c - frac_r), th.written_tol, abs(frac_c - frac_r) <= th.written_tol)
    if cb.shape == c.shape:
        same = (c == cb) | (torch.isnan(c) & torch.isnan(cb)) | ((c - cb).abs() <= 1e-5 * (ref_max or 1.0))
        changed = 1.0 - float(same.sum()) / n
    else:
        changed = 1.0
    checks["sentinel"] = _check(changed, th.sentinel_tol, changed <= th.sentinel_tol)
    return checks


def fresh_check(prev: tuple, cur: tuple, th: Thresholds) -> dict[str, Any] | None:
    """Did the output change as much as the reference did since the last trial? None if not comparable."""
    import torch

    (r0, c0), (r1, c1) = prev, cur
    if r0.shape != r1.shape or c0.shape != r1.shape or c1.shape != r1.shape:
        return None
    ok = torch.isfinite(r0) & torch.isfinite(r1)
    z = torch.zeros((), dtype=r1.dtype, device=r1.device)
    dr = float(torch.linalg.vector_norm(torch.where(ok, r1 - r0, z)))
    if dr == 0.0:
        return None
    cc = torch.where(ok & torch.isfinite(c0) & torch.isfinite(c1), c1 - c0, z)
    dc = float(torch.linalg.vector_norm(cc))
    norms = float(torch.linalg.vector_norm(torch.where(ok, r0, z)) + torch.linalg.vector_norm(torch.where(ok, r1, z)))
    threshold = th.fresh_tol + th.rel_fro * norms / dr
    value = abs(dc - dr) / dr
    return _check(value, threshold, value <= threshold)


def _worse(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """The entry to report when a check ran more than once: the first failure, else the largest value."""
    if a is None or (b["passed"] is False and a["passed"]):
        return b
    if a["passed"] is False or b["passed"] is False:
        return a
    try:
        return b if float(b["value"]) > float(a["value"]) else a
    except (TypeError, ValueError):
        return a


# ---------------------------------------------------------------- poisoned allocation


@contextlib.contextmanager
def poisoned_allocations(byte: int, device: str, nbytes: int) -> Iterator[None]:
    """Freshly allocated memory holds `byte` in every byte while the block runs."""
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        free = torch.cuda.mem_get_info()[0]
        big = torch.empty(int(min(max(nbytes, 256 << 20), free // 2)), dtype=torch.uint8, device="cuda")
        small = [torch.empty(1 << 20, dtype=torch.uint8, device="cuda") for _ in range(16)]
        for t in [big, *small]:
            t.fill_(byte)
        torch.cuda.synchronize()
        del big, small  # the caching allocator keeps the blocks: at::empty now returns poisoned memory

    def wrap(fn: Callable) -> Callable:
        def filled(*args: Any, **kwargs: Any) -> Any:
            t = fn(*args, **kwargs)
            if isinstance(t, torch.Tensor) and t.dtype != torch.bool and t.numel():
                t.untyped_storage().fill_(byte)
            return t

        return filled

    saved = {name: getattr(torch, name) for name in ("empty", "empty_like", "empty_strided")}
    saved_new = torch.Tensor.new_empty
    try:
        for name, fn in saved.items():
            setattr(torch, name, wrap(fn))
        torch.Tensor.new_empty = wrap(saved_new)
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = saved_new


# ---------------------------------------------------------------- the verification itself


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:300]}" if msg else type(e).__name__


def _sync(device: str) -> None:
    if device == "cuda":
        __import__("torch").cuda.synchronize()


def _call(fn: Callable, args: list, device: str) -> Any:
    import torch

    with torch.no_grad():
        out = fn(*args)
    _sync(device)
    return out


def _n_modified(now: Any, before: Any) -> int:
    """Elements of an input that differ from its pristine clone (all of them if it was resized)."""
    import torch

    if now.shape != before.shape or now.dtype != before.dtype:
        return before.numel()
    differ = now != before
    if now.is_floating_point() or now.is_complex():
        differ &= ~(torch.isnan(now) & torch.isnan(before))
    return int(differ.sum())


def _on_device(model: Any, device: str) -> Any:
    """An nn.Module moved to the device in eval mode; any other callable as it is."""
    import torch

    return model.to(device).eval() if isinstance(model, torch.nn.Module) else model


def _copy_weights(ref: Any, cand: Any) -> None:
    """Load the reference's parameters into the candidate when names and shapes match exactly."""
    import torch

    if not (isinstance(ref, torch.nn.Module) and isinstance(cand, torch.nn.Module)):
        return
    rs, cs = ref.state_dict(), cand.state_dict()
    if rs.keys() == cs.keys() and all(rs[k].shape == cs[k].shape for k in rs):
        with torch.no_grad():
            cand.load_state_dict(rs)


def _single(outs: list) -> Any:
    return outs[0] if len(outs) == 1 else outs


def _invariant_checks(invariants: list, custom: Callable | None, inputs: list, ref_out: list, out: list,
                      th: Thresholds) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Invariant checks of the candidate output; those the reference output breaks are skipped.

    Raises when an invariant cannot be evaluated on the reference output (a problem-file bug).
    """
    from addressable.invariants import check_custom

    checks: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for inv in invariants:
        name = f"invariant:{inv.name}"
        if not inv.check(ref_out[0])["passed"]:
            skipped.append(name)
            continue
        try:
            checks[name] = inv.check(out[0])
        except Exception as e:
            checks[name] = _check(f"raised {type(e).__name__}", inv.tol, False)
    if custom is None:
        return checks, skipped
    ref_res = check_custom(custom(_clone(inputs), _single(ref_out)), th.invariant_tol)
    try:
        cand_res = check_custom(custom(_clone(inputs), _single(out)), th.invariant_tol)
    except Exception as e:
        cand_res = {k: _check(f"raised {type(e).__name__}", v["threshold"], False) for k, v in ref_res.items()}
    for name, ref_entry in ref_res.items():
        if not ref_entry["passed"]:
            skipped.append(name)
            continue
        checks[name] = cand_res.get(name, _check("missing", ref_entry["threshold"], False))
    return checks, skipped


def _time_models(models: dict[str, Callable], inputs: list, device: str, runs: int, warmup: int,
                 budget_s: float) -> dict[str, list[float]]:
    """Per-run milliseconds of each model, alternating the order each round."""
    import torch

    with torch.no_grad():
        for _ in range(warmup):
            for fn in models.values():
                fn(*inputs)
        _sync(device)
        times: dict[str, list[float]] = {k: [] for k in models}
        flush = torch.empty(256 << 20, dtype=torch.uint8, device=device) if device == "cuda" else None
        start = time.perf_counter()
        for i in range(runs):
            for k in (list(models) if i % 2 == 0 else list(models)[::-1]):
                if flush is not None:
                    flush.zero_()
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    models[k](*inputs)
                    b.record()
                    b.synchronize()
                    times[k].append(a.elapsed_time(b))
                else:
                    t0 = time.perf_counter()
                    models[k](*inputs)
                    times[k].append((time.perf_counter() - t0) * 1e3)
            if i >= 4 and time.perf_counter() - start > budget_s:
                break
    return times


def _quartiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def _env(device: str) -> dict[str, Any]:
    import torch

    env = {"torch": torch.__version__, "python": sys.version.split()[0], "device": device}
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        env["cuda"] = torch.version.cuda
    if "triton" in sys.modules:
        env["triton"] = getattr(sys.modules["triton"], "__version__", "?")
    if os.environ.get("TRITON_INTERPRET") == "1":
        env["triton_interpret"] = True
    return env


def run_verification(spec: dict[str, Any], progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Verify in this process. Returns VerifyResult fields, or {"harness_error": msg} for bad problems."""

    from addressable.invariants import parse_invariants

    th = Thresholds(**spec["thresholds"])
    device, seed = spec["device"], spec["seed"]
    base = {"problem": spec["problem"], "candidate": spec["candidate"], "target": spec["target"],
            "device": device, "env": _env(device)}

    def fail(reason: str, **extra: Any) -> dict[str, Any]:
        return {**base, "verdict": "fail", "reason": reason, **extra}

    progress("loading the reference")
    try:
        problem = load_module(spec["problem"], spec["overrides"])
        invariants = parse_invariants(getattr(problem, "INVARIANTS", None), f"{Path(spec['problem']).name} INVARIANTS")
        custom = getattr(problem, "check_invariants", None)
        _seed_all(seed)
        init = list(problem.get_init_inputs())
        _seed_all(seed)
        ref_model = _on_device(problem.Model(*copy.deepcopy(init)), device)
    except AddressableError as e:
        return {"harness_error": str(e)}
    except Exception as e:
        return {"harness_error": f"reference {Path(spec['problem']).name} failed to build: {_one_line(e)}"}

    progress("importing the candidate")
    try:
        cand_mod = load_module(spec["candidate"])
        model_new = getattr(cand_mod, "ModelNew", None)
        if model_new is None:
            return fail("candidate defines no ModelNew")
        progress("building the candidate")
        _seed_all(seed)
        cand_model = _on_device(model_new(*copy.deepcopy(init)), device)
        _copy_weights(ref_model, cand_model)
    except Exception as e:
        return fail(f"candidate failed to build: {_one_line(e)}")

    checks: dict[str, dict[str, Any]] = {}
    trials: list[dict[str, Any]] = []
    prev: list | None = None
    first_inputs: list = []
    for t in range(spec["trials"]):
        dist, tseed, note = DISTRIBUTIONS[t % len(DISTRIBUTIONS)], seed + t, ""
        progress(f"reference, trial {t}")
        try:
            try:
                inputs = make_inputs(problem, tseed, dist, device)
                ref_out = _outputs(_call(ref_model, _clone(inputs), device), "reference")
            except Exception as e:
                if dist == "native":
                    raise
                # the problem's domain excludes re-drawn inputs (inconsistent offsets, ...)
                note = f"reference rejected {dist} inputs ({_one_line(e)[:120]}); used native"
                dist = "native"
                inputs = make_inputs(problem, tseed, dist, device)
                ref_out = _outputs(_call(ref_model, _clone(inputs), device), "reference")
        except Exception as e:
            return {"harness_error": f"reference {Path(spec['problem']).name} failed on trial {t}: {_one_line(e)}"}
        pristine = _clone(inputs)
        nbytes = 4 * sum(x.numel() * x.element_size() for x in _tensors(inputs) + ref_out)
        progress(f"candidate, trial {t}")
        try:
            with poisoned_allocations(_POISON[0], device, nbytes):
                out = _outputs(_call(cand_model, inputs, device), "candidate")
                out = [o.detach().clone() for o in out]  # a reused output buffer must not change it later
            modified = sum(_n_modified(a, b) for a, b in zip(_tensors(inputs), _tensors(pristine), strict=True))
            with poisoned_allocations(_POISON[1], device, nbytes):
                out_b = _outputs(_call(cand_model, _clone(pristine), device), "candidate")
        except Exception as e:
            return fail(f"candidate raised on trial {t}: {_one_line(e)}", checks=checks, trials=trials)
        n_in = max(sum(x.numel() for x in _tensors(pristine)), 1)
        tc: dict[str, dict[str, Any]] = {}
        if len(out) != len(ref_out):
            tc["shape"] = _check(f"{len(out)} outputs", f"{len(ref_out)} outputs", False)
        for r, c, cb in zip(ref_out, out, out_b, strict=False):
            for name, entry in compare_output(r, c, cb if len(out_b) == len(out) else c[:0], th).items():
                tc[name] = _worse(tc.get(name), entry)
        tc["inputs_unchanged"] = _check(modified / n_in, 0, modified == 0)
        cur = [(_f64(r, r.device), _f64(c, r.device)) for r, c in zip(ref_out, out, strict=False)]
        if prev is not None:
            for p, q in zip(prev, cur, strict=False):
                entry = fresh_check(p, q, th)
                if entry is not None:
                    tc["fresh"] = _worse(tc.get("fresh"), entry)
        prev = cur
        try:
            inv_checks, skipped = _invariant_checks(invariants, custom, pristine, ref_out, out, th)
        except Exception as e:
            return {"harness_error": f"invariants of {Path(spec['problem']).name} fail on the reference "
                                     f"output: {_one_line(e)}"}
        tc.update(inv_checks)
        for name, entry in tc.items():
            checks[name] = _worse(checks.get(name), entry)
        failed = [k for k, v in tc.items() if not v["passed"]]
        trials.append({"trial": t, "seed": tseed, "distribution": dist, "failed": failed,
                       "skipped_invariants": skipped, **({"note": note} if note else {})})
        if t == 0:
            first_inputs = pristine
        del inputs, ref_out, out, out_b

    failed = [k for k, v in checks.items() if not v["passed"]]
    if failed:
        parts = []
        for k in failed:
            first = next(tr["trial"] for tr in trials if k in tr["failed"])
            v = checks[k]
            parts.append(f"{k} (trial {first}: {_fmt(v['value'])} vs {_fmt(v['threshold'])})")
        return fail("failed " + ", ".join(parts), checks=checks, trials=trials)

    result = {**base, "verdict": "pass", "reason": "", "checks": checks, "trials": trials}
    if spec["runs"] <= 0:
        return result
    progress("timing")
    try:
        times = _time_models({"ref": ref_model, "cand": cand_model}, first_inputs, device, spec["runs"],
                             spec["warmup"], spec["timing_budget_s"])
    except Exception as e:
        return fail(f"candidate raised while timed: {_one_line(e)}", checks=checks, trials=trials)
    (r25, rmed, r75), (c25, cmed, c75) = _quartiles(times["ref"]), _quartiles(times["cand"])
    speedup = rmed / cmed if cmed > 0 else float("inf")
    result.update(ref_ms=rmed, candidate_ms=cmed, ref_ms_iqr=[r25, r75], candidate_ms_iqr=[c25, c75],
                  speedup=speedup, speedup_lo=r25 / c75 if c75 > 0 else None,
                  speedup_hi=r75 / c25 if c25 > 0 else None, timing_runs=len(times["cand"]))
    if speedup > th.review_speedup:
        result["review"] = True
        result["reason"] = f"speedup {speedup:.1f}x > {th.review_speedup:g}x: check the timing by hand"
    return result


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _worker_main() -> None:
    """Subprocess entry: read the spec, verify, write the result (progress goes to a side file)."""
    spec_path, result_path, progress_path = sys.argv[1:4]
    spec = json.loads(Path(spec_path).read_text())

    def progress(stage: str) -> None:
        Path(progress_path).write_text(stage)

    try:
        result = run_verification(spec, progress)
    except Exception as e:
        traceback.print_exc()
        result = {"harness_error": f"verifier failed: {_one_line(e)}"}
    Path(result_path).write_text(json.dumps(to_jsonable(result, nan_as="nan", inf_as="inf")))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: a candidate's atexit hooks or threads cannot hang us


def _run_isolated(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="addressable-verify-") as d:
        paths = {k: Path(d) / f"{k}" for k in ("spec.json", "result.json", "progress", "stderr")}
        paths["spec.json"].write_text(json.dumps(spec))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PKG_ROOT, env.get("PYTHONPATH", "")) if p)
        cmd = [sys.executable, "-c", "from addressable.verify import _worker_main; _worker_main()",
               str(paths["spec.json"]), str(paths["result.json"]), str(paths["progress"])]
        with open(paths["stderr"], "w") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    env=env, start_new_session=True)
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                stage = paths["progress"].read_text() if paths["progress"].exists() else "starting"
                return {"verdict": "fail", "reason": f"timed out after {timeout:g} s ({stage})"}
        if paths["result.json"].exists():
            return json.loads(paths["result.json"].read_text())
        stage = paths["progress"].read_text() if paths["progress"].exists() else "starting"
        lines = [ln for ln in paths["stderr"].read_text(errors="replace").splitlines() if ln.strip()]
        tail = f": {lines[-1].strip()[:300]}" if lines else ""
        how = f"signal {-rc}" if rc < 0 else f"exit code {rc}"
        return {"verdict": "fail", "reason": f"crashed with {how} ({stage}){tail}"}


def verify(reference_path: str | Path, candidate_path: str | Path, *, device: str = "auto", trials: int = 4,
           seed: int = 42, timeout: float = 300.0, runs: int = 50, warmup: int = 5, timing_budget_s: float = 10.0,
           thresholds: Thresholds | None = None, overrides: dict[str, Any] | None = None,
           isolate: bool = True) -> VerifyResult:
    """Verify CANDIDATE's ModelNew against REFERENCE's Model; see the module docstring for the checks.

    `isolate` runs the verification in a subprocess killed after `timeout` seconds (the robust
    choice); without it the candidate runs in this process and `timeout` is not enforced.
    """
    overrides = overrides or {}
    problem = check_problem_file(reference_path, overrides)
    if trials < 2:
        raise AddressableError("--trials must be at least 2 (the fresh-output check compares two trials)")
    if timeout <= 0:
        raise AddressableError("--timeout must be positive")
    dev = resolve_device(device)
    th = thresholds or Thresholds()
    spec = {"problem": str(problem.resolve()), "candidate": str(Path(candidate_path).resolve()),
            "target": problem.stem, "device": dev, "trials": trials, "seed": seed, "runs": runs,
            "warmup": warmup, "timing_budget_s": timing_budget_s, "thresholds": asdict(th),
            "overrides": overrides}
    t0 = time.perf_counter()
    compile_error = check_candidate_file(candidate_path)
    if compile_error:
        raw = {"verdict": "fail", "reason": compile_error}
    elif isolate:
        raw = _run_isolated(spec, timeout)
    else:
        raw = run_verification(spec)
    if "harness_error" in raw:
        raise AddressableError(raw["harness_error"])
    fields = {k: spec[k] for k in ("problem", "candidate", "target")} | {"device": dev} | raw
    return VerifyResult(**{k: v for k, v in fields.items() if k in VerifyResult.__dataclass_fields__},
                        wall_s=time.perf_counter() - t0)


# ---------------------------------------------------------------- many pairs


def _resolve_near(base: Path, p: str) -> Path:
    q = Path(p).expanduser()
    return q if q.is_absolute() or not (base / q).exists() else base / q


def verify_batch(pairs_csv: str | Path, json_dir: str | Path | None = None, overrides: dict[str, Any] | None = None,
                 on_result: Callable[[VerifyResult], None] | None = None, **kwargs: Any) -> pd.DataFrame:
    """Verify every row of PAIRS.csv (problem, candidate[, target, source, notes, set]); return wins rows.

    Relative paths are looked up next to the CSV first. `set` holds per-row NAME=VALUE overrides;
    `overrides` apply to the problems that define those names.
    With `json_dir`, each result is also written to json_dir/verify_<problem stem>.json
    (verify_<problem stem>__<candidate stem>.json when several rows share a problem).
    """
    from addressable.atomic import write_text

    pairs_csv = Path(pairs_csv)
    if not pairs_csv.is_file():
        raise AddressableError(f"pairs file not found: {pairs_csv}")
    try:
        pairs = pd.read_csv(pairs_csv, dtype=str, comment="#", skipinitialspace=True).fillna("")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise AddressableError(f"cannot read {pairs_csv}: {e}") from None
    missing = {"problem", "candidate"} - set(pairs.columns)
    if missing or pairs.empty:
        raise AddressableError(f"{pairs_csv} needs columns problem,candidate and at least one row")
    base = pairs_csv.parent
    jobs = []
    for i, p in enumerate(pairs.to_dict(orient="records"), 1):
        problem, candidate = _resolve_near(base, p["problem"]), _resolve_near(base, p["candidate"])
        try:  # every row is checked before the first verification starts
            names = _top_level_names(_readable(problem, "reference")) if overrides else set()
            row_over = {**{k: v for k, v in (overrides or {}).items() if k in names},
                        **parse_overrides(p.get("set", ""))}
            check_problem_file(problem, row_over)
            _readable(candidate, "candidate")
        except AddressableError as e:
            raise AddressableError(f"{pairs_csv} row {i}: {e}") from None
        jobs.append((p, problem, candidate, row_over))
    stems = [problem.stem for _, problem, _, _ in jobs]
    rows, seen = [], set()
    for p, problem, candidate, row_over in jobs:
        r = verify(problem, candidate, overrides=row_over, **kwargs)
        if p.get("target"):
            r.target = p["target"]
        if json_dir is not None:
            name = problem.stem if stems.count(problem.stem) == 1 else f"{problem.stem}__{candidate.stem}"
            name = next(f"{name}_{n}" if n else name for n in itertools.count() if (f"{name}_{n}" if n else name) not in seen)
            seen.add(name)
            write_text(Path(json_dir) / f"verify_{name}.json", json.dumps(r.to_dict(), indent=2) + "\n")
        if on_result:
            on_result(r)
        rows.append(r.wins_row(p.get("source") or str(p["candidate"]), p.get("notes", "")))
    return pd.DataFrame(rows, columns=["target", "speedup", "verified", "source", "notes", "speedup_lo", "speedup_hi"])


# ---------------------------------------------------------------- text output


def format_result(r: VerifyResult) -> str:
    """A table of the checks, then the timing or the reason for the failure."""
    lines = [f"{r.target}: {Path(r.candidate).name} on {r.device}: {r.verdict.upper()}"]
    if r.checks:
        width = max(14, *(len(_fmt(c[k])) + 2 for c in r.checks.values() for k in ("value", "threshold")))
        name_w = max(20, *(len(k) + 2 for k in r.checks))
        lines.append(f"  {'check':<{name_w}}{'value':>{width}}{'threshold':>{width}}  passed")
        for name, c in r.checks.items():
            lines.append(f"  {name:<{name_w}}{_fmt(c['value']):>{width}}{_fmt(c['threshold']):>{width}}  "
                         f"{'yes' if c['passed'] else 'NO'}")
    if r.speedup is not None:
        lo = f" [{r.speedup_lo:.2f}-{r.speedup_hi:.2f}]" if r.speedup_lo and r.speedup_hi else ""
        lines.append(f"speedup {r.speedup:.2f}x{lo}: reference {r.ref_ms:.4g} ms, candidate "
                     f"{r.candidate_ms:.4g} ms (median of {r.timing_runs})")
    if r.reason:
        lines.append(("REVIEW: " if r.passed else "reason: ") + r.reason)
    return "\n".join(lines)
