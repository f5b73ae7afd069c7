"""The named checks of `verify`: output comparisons, poisoned memory, fresh outputs, invariants, escaped GPU work.

Each check is a dict ``{"value", "threshold", "passed"}``. ``passed`` is True, False (the
candidate fails), or None: the check could not decide, and the result needs a person to look at it
(verdict ``review``).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from addressable.core.profiler import sync_event_options
from addressable.verification.harness import clone

MARKER = "spin_kernel"  # the kernel of torch.cuda._sleep: the harness's own markers in a profile
_SPIN_CYCLES = 2000
_HOLD_CYCLES = 5_000_000  # the marker before the call: at least 2.5 ms at clocks up to 2 GHz, longer than any timing backlog
_GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


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
    precision_ratio: float = 100.0
    clock_tol: float = 0.1


def check(value: Any, threshold: Any, passed: bool | None) -> dict[str, Any]:
    """One check entry; passed None means "could not decide: look at it"."""
    return {"value": value, "threshold": threshold, "passed": None if passed is None else bool(passed)}


def worse(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """The entry to report when a check ran more than once: the first failure, else the largest value."""
    if a is None or (b["passed"] is False and a["passed"] is not False):
        return b
    if a["passed"] is False or b["passed"] is False:
        return a
    try:
        return b if float(b["value"]) > float(a["value"]) else a
    except (TypeError, ValueError):
        return a


_CHUNK = 1 << 20  # elements per float64 chunk (8 MB): the checks stream through outputs of any size


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread in the block: chunked checks are 8x faster so on a loaded machine
    (no OpenMP barrier per chunk), and no slower on an idle one."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def _chunks(*ts: Any) -> Iterator[tuple]:
    """Aligned float64 chunks of same-sized tensors (None stays None), flattened."""
    import torch

    flats = [None if t is None else t.detach().reshape(-1) for t in ts]
    n = next(f.numel() for f in flats if f is not None)
    for i in range(0, max(n, 1), _CHUNK):
        yield tuple(None if f is None else f[i:i + _CHUNK].to(torch.float64) for f in flats)


def _sq(x: Any) -> float:
    return float(x.square().sum()) if x.numel() else 0.0


def _amax(x: Any) -> float:
    return float(x.abs().max()) if x.numel() else 0.0


def compare_output(ref: Any, cand: Any, cand_b: Any, th: Thresholds, ref64: Any = None
                   ) -> tuple[dict[str, dict[str, Any]], tuple[float, float] | None]:
    """The per-output checks of one trial (ref, cand: the output; cand_b: the output with other poison),
    and with ref64 (the reference's float64 output) the candidate's and the reference's relative
    Frobenius errors against it."""
    import torch

    checks = {"shape": check(list(cand.shape), list(ref.shape), cand.shape == ref.shape),
              "dtype": check(str(cand.dtype).removeprefix("torch."), str(ref.dtype).removeprefix("torch."),
                             cand.dtype == ref.dtype)}
    if cand.shape != ref.shape:
        return checks, None
    s = dict.fromkeys(("ref_sq", "diff_sq", "ref_max", "diff_max", "bad", "nz_c", "nz_r", "e64_c", "e64_r", "n64"), 0.0)
    for r, c, r64 in _chunks(ref, cand, ref64):
        fin_r, fin_c = torch.isfinite(r), torch.isfinite(c)
        r0 = torch.where(fin_r, r, 0.0)
        diff = torch.where(fin_r & fin_c, c, 0.0) - r0
        s["ref_sq"] += _sq(r0)
        s["diff_sq"] += _sq(diff)
        s["ref_max"], s["diff_max"] = max(s["ref_max"], _amax(r0)), max(s["diff_max"], _amax(diff))
        s["bad"] += int((fin_r & ~fin_c).sum())
        s["nz_c"] += int((fin_c & (c != 0)).sum())
        s["nz_r"] += int((fin_r & (r != 0)).sum())
        if r64 is not None:
            fin64 = torch.isfinite(r64)
            t64 = torch.where(fin64, r64, 0.0)
            s["n64"] += _sq(t64)
            s["e64_c"] += _sq(torch.where(fin64 & fin_c, c, 0.0) - t64)
            s["e64_r"] += _sq(torch.where(fin64 & fin_r, r, 0.0) - t64)
    n = max(ref.numel(), 1)
    rel = (s["diff_sq"] ** 0.5) / ((s["ref_sq"] ** 0.5) or 1.0)
    mx = s["diff_max"] / (s["ref_max"] or 1.0)
    checks["rel_fro"] = check(rel, th.rel_fro, rel < th.rel_fro)
    checks["max_err"] = check(mx, th.max_err, mx < th.max_err)
    checks["finite"] = check(int(s["bad"]), 0, s["bad"] == 0)
    gap = abs(s["nz_c"] - s["nz_r"]) / n
    checks["written"] = check(gap, th.written_tol, gap <= th.written_tol)
    changed = _sentinel_changed(cand, cand_b, s["ref_max"])
    checks["sentinel"] = check(changed, th.sentinel_tol, changed <= th.sentinel_tol)
    if ref64 is None:
        return checks, None
    norm64 = (s["n64"] ** 0.5) or 1.0
    return checks, ((s["e64_c"] ** 0.5) / norm64, (s["e64_r"] ** 0.5) / norm64)


def _sentinel_changed(cand: Any, cand_b: Any, ref_max: float) -> float:
    """The fraction of elements that differ between the two poisoned runs (1 when their shapes differ)."""
    import torch

    if cand_b.shape != cand.shape:
        return 1.0
    same = 0
    for c, cb in _chunks(cand, cand_b):
        same += int(((c == cb) | (torch.isnan(c) & torch.isnan(cb)) | ((c - cb).abs() <= 1e-5 * (ref_max or 1.0))).sum())
    return 1.0 - same / max(cand.numel(), 1)


def fresh_check(prev: tuple, cur: tuple, th: Thresholds) -> dict[str, Any] | None:
    """Did the output change as much as the reference did since the last trial? None if not comparable.

    prev, cur: (reference output, candidate output) of two trials, in any dtype."""
    import torch

    (r0, c0), (r1, c1) = prev, cur
    if r0.shape != r1.shape or c0.shape != r1.shape or c1.shape != r1.shape:
        return None
    dr = dc = n0 = n1 = 0.0
    for a0, a1, b0, b1 in _chunks(r0, r1, c0, c1):
        ok = torch.isfinite(a0) & torch.isfinite(a1)
        dr += _sq(torch.where(ok, a1 - a0, 0.0))
        dc += _sq(torch.where(ok & torch.isfinite(b0) & torch.isfinite(b1), b1 - b0, 0.0))
        n0, n1 = n0 + _sq(torch.where(ok, a0, 0.0)), n1 + _sq(torch.where(ok, a1, 0.0))
    if dr == 0.0:
        return None
    dr, dc = dr ** 0.5, dc ** 0.5
    threshold = th.fresh_tol + th.rel_fro * (n0 ** 0.5 + n1 ** 0.5) / dr
    value = abs(dc - dr) / dr
    return check(value, threshold, value <= threshold)


def n_modified(now: Any, before: Any) -> int:
    """Elements of an input that differ from its pristine clone (all of them if it was resized)."""
    import torch

    if now.shape != before.shape or now.dtype != before.dtype:
        return before.numel()
    if not (now.is_floating_point() or now.is_complex()):
        return int((now != before).sum())
    differ = 0
    for a, b in _chunks(now, before):
        differ += int(((a != b) & ~(torch.isnan(a) & torch.isnan(b))).sum())
    return differ


# ---------------------------------------------------------------- sketches of timed outputs

SKETCH_ROWS = 2048


@functools.lru_cache(maxsize=8)
def _signs(m: int, key: int, dtype: Any, device: Any) -> Any:
    """The m signs of a sketch's rows, made once per (m, key, dtype, device): a copy to the GPU would
    synchronize the host, and `sketch_rows` must not."""
    import torch

    gen = torch.Generator().manual_seed(key % 2**63)
    return (torch.randint(0, 2, (m,), generator=gen, dtype=torch.int8) * 2 - 1).to(dtype=dtype, device=device)


def sketch_rows(t: Any, key: int) -> Any:
    """The sketch (`sketch`) where the tensor lives, queued on the current stream without waiting on the
    device (after the first call for a size): taken as a call returns, it reads the output as the
    caller's stream has it then, so writes queued later, from any thread or stream, are not in it."""
    import torch

    x = t.detach().reshape(-1)
    dt = torch.float64 if x.dtype == torch.float64 or not x.is_floating_point() else torch.float32
    x = torch.nan_to_num(x.to(dt), nan=0.0, posinf=0.0, neginf=0.0)
    n = x.numel()
    if n == 0:
        return torch.zeros(0, dtype=dt, device=x.device)
    m = -(-n // min(SKETCH_ROWS, n))
    s = _signs(m, key, dt, x.device)
    full = (n // m) * m
    main = x[:full].view(-1, m) @ s
    return torch.cat([main, (x[full:] @ s[:n - full]).reshape(1)]) if full < n else main


def sketch(t: Any, key: int) -> Any:
    """A random-sign sketch of a tensor: SKETCH_ROWS numbers that bind every element (float64, on the CPU).

    Element i of the flattened tensor goes to row i // m with sign s[i % m] (m = ceil(n / rows)); a row
    is the signed sum of its elements, so the sketch of a difference estimates its Frobenius norm
    (E|S(d)|² = |d|²). Floating tensors are summed in float32 (float64 when they are float64),
    integers in float64; non-finite elements count as 0."""
    return finish_sketch(sketch_rows(t, key))


def finish_sketch(rows: Any) -> Any:
    """A `sketch_rows` result as `sketch` gives it: float64 on the CPU (this waits for the device)."""
    import torch

    return rows.to(device="cpu", dtype=torch.float64)


def sketch_error(cand: list, ref: list) -> float:
    """Largest estimated relative Frobenius error over outputs, from their sketches (inf when sizes differ)."""
    import torch

    if len(cand) != len(ref):
        return float("inf")
    worst = 0.0
    for c, r in zip(cand, ref, strict=True):
        if c.shape != r.shape:
            return float("inf")
        d = float(torch.linalg.vector_norm(c - r))
        worst = max(worst, d / (float(torch.linalg.vector_norm(r)) or 1.0))
    return worst if worst == worst else float("inf")


def _single(outs: list) -> Any:
    return outs[0] if len(outs) == 1 else outs


def invariant_checks(invariants: list, custom: Callable | None, inputs: list, ref_out: list, out: list,
                     th: Thresholds) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Invariant checks of the candidate output; those the reference output breaks are skipped.

    Raises when an invariant cannot be evaluated on the reference output (a problem-file bug).
    """
    from addressable.verification.invariants import check_custom

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
            checks[name] = check(f"raised {type(e).__name__}", inv.tol, False)
    if custom is None:
        return checks, skipped
    ref_res = check_custom(custom(clone(inputs), _single(ref_out)), th.invariant_tol)
    try:
        cand_res = check_custom(custom(clone(inputs), _single(out)), th.invariant_tol)
    except Exception as e:
        cand_res = {k: check(f"raised {type(e).__name__}", v["threshold"], False) for k, v in ref_res.items()}
    for name, ref_entry in ref_res.items():
        if not ref_entry["passed"]:
            skipped.append(name)
            continue
        checks[name] = cand_res.get(name, check("missing", ref_entry["threshold"], False))
    return checks, skipped


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
                t.untyped_storage().fill_(byte)  # type: ignore[attr-defined]
            return t

        return filled

    saved = {name: getattr(torch, name) for name in ("empty", "empty_like", "empty_strided")}
    saved_new = torch.Tensor.new_empty
    try:
        for name, fn in saved.items():
            setattr(torch, name, wrap(fn))
        torch.Tensor.new_empty = wrap(saved_new)  # type: ignore[method-assign]
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = saved_new  # type: ignore[method-assign]


# ---------------------------------------------------------------- escaped GPU work


def profile_call(fn: Callable, inputs: list, trace_path: Path) -> list[dict[str, Any]]:
    """The trace events of one call of fn under torch.profiler, bracketed by the harness's markers.

    Before the call: a marker kernel on a side stream that the current stream waits on (it shows
    whether the trace records stream waits), then a marker on the current stream that holds it for
    longer than the timing's backlog (`timing.backlog_for`, at most 2 ms), as the backlog holds it
    before a timed call. Right after the call returns, before any synchronize: a marker on the
    current stream, where the caller's next work (reading the output) would start.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    kwargs = sync_event_options(cuda=True)
    torch.cuda.synchronize()
    probe = torch.cuda.Stream()
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], **kwargs) as prof:
        with torch.cuda.stream(probe):
            torch.cuda._sleep(_SPIN_CYCLES)
        torch.cuda.current_stream().wait_stream(probe)
        torch.cuda._sleep(_HOLD_CYCLES)
        fn(*inputs)
        torch.cuda._sleep(_SPIN_CYCLES)
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace_path))
    doc = json.loads(trace_path.read_text())
    return doc.get("traceEvents", []) if isinstance(doc, dict) else doc


def gpu_work(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What one profiled call did on the GPU (events from `profile_call`).

    Returns kernels (the call's kernel count), streams (streams other than the caller's that ran
    its work), escaped (names of work on those streams still running when the caller's next work
    started, or never waited on when the trace records waits, or started before the caller's stream
    reached the call: beside the marker that holds it, as work beside the timing's backlog would run
    before the timed interval opens) and waits_recorded.
    """
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in _GPU_CATS]
    markers = sorted((e for e in gpu if e.get("cat") == "kernel" and MARKER in str(e.get("name", ""))),
                     key=lambda e: float(e["ts"]))
    if len(markers) < 3:
        raise RuntimeError(f"the profile has {len(markers)} of the harness's 3 marker kernels")
    probe, first, last = markers[0], markers[-2], markers[-1]
    caller = first.get("args", {}).get("stream")
    work = [e for e in gpu if e not in markers and float(e["ts"]) >= float(probe["ts"])]
    read_at = float(last["ts"])
    side = [e for e in work if e.get("args", {}).get("stream") != caller]
    escaped = {str(e.get("name", "?")) for e in side if float(e["ts"]) + float(e.get("dur", 0)) > read_at}
    held_until = float(first["ts"]) + float(first.get("dur", 0))
    escaped |= {str(e.get("name", "?")) for e in side if float(e["ts"]) < held_until}
    waits = _joined_streams(events, caller, read_at)
    recorded = waits is not None and (waits == "all" or probe.get("args", {}).get("stream") in waits)
    if recorded and isinstance(waits, set):
        escaped |= {str(e.get("name", "?")) for e in side if e.get("args", {}).get("stream") not in waits}
    return {"kernels": sum(e.get("cat") == "kernel" for e in work), "escaped": sorted(escaped),
            "streams": sorted({str(e.get("args", {}).get("stream")) for e in side}), "waits_recorded": recorded}


def _joined_streams(events: list[dict[str, Any]], caller: Any, before: float) -> set | str | None:
    """Streams the caller's stream waited on (transitively) in synchronizations that ended before
    `before`; "all" after a device or event sync; None when the trace records no synchronization."""
    syncs = [e for e in events if e.get("cat") == "cuda_sync"]
    if not syncs:
        return None
    waits: dict[Any, set] = {}
    for e in syncs:
        if float(e.get("ts", 0)) + float(e.get("dur", 0)) >= before:
            continue
        name, args = str(e.get("name", "")), e.get("args", {})
        if "Wait" in name and "wait_on_stream" in args:
            waits.setdefault(args.get("stream"), set()).add(args["wait_on_stream"])
        elif "Event Sync" in name or "Context Sync" in name:
            return "all"
        elif "Stream Sync" in name:
            waits.setdefault(caller, set()).add(args.get("stream"))
    seen, todo = set(), [caller]
    while todo:
        s = todo.pop()
        for t in waits.get(s, ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def stream_checks(ref: dict[str, Any] | None, cand: dict[str, Any] | None, error: str = "") -> dict[str, dict[str, Any]]:
    """`stream_escape` (fails when the candidate's work escaped the caller's stream) and `no_gpu_work`
    (review when the candidate launched no kernel where the reference launches some)."""
    if cand is None or ref is None:
        why = f"could not run: {error}" if error else "could not run"
        return {"stream_escape": check(why, "0 escaped", None)}
    esc = cand["escaped"]
    value = f"{len(esc)} escaped ({', '.join(n[:60] for n in esc[:3])})" if esc else "0 escaped"
    out = {"stream_escape": check(value, "0 escaped", not esc)}
    none = cand["kernels"] == 0 and ref["kernels"] > 0
    out["no_gpu_work"] = check(f"{cand['kernels']} kernels", f"> 0 (reference: {ref['kernels']})", None if none else True)
    return out
