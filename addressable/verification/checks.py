"""The named checks of `verify`: output comparisons, poisoned memory, fresh outputs, invariants, escaped GPU work.

Each check is a dict ``{"value", "threshold", "passed"}``. ``passed`` is True, False (the
candidate fails), or None: the check could not decide, and the result needs a person to look at it
(verdict ``review``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from addressable.verification.harness import clone, to_f64

MARKER = "spin_kernel"  # the kernel of torch.cuda._sleep: the harness's own markers in a profile
_SPIN_CYCLES = 2000
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


def compare_output(ref: Any, cand: Any, cand_b: Any, th: Thresholds) -> dict[str, dict[str, Any]]:
    """The per-output checks of one trial (ref, cand: the output; cand_b: the output with other poison)."""
    import torch

    checks = {"shape": check(list(cand.shape), list(ref.shape), cand.shape == ref.shape),
              "dtype": check(str(cand.dtype).removeprefix("torch."), str(ref.dtype).removeprefix("torch."),
                             cand.dtype == ref.dtype)}
    if cand.shape != ref.shape:
        return checks
    r, c, cb = to_f64(ref, ref.device), to_f64(cand, ref.device), to_f64(cand_b, ref.device)
    fin_r, fin_c = torch.isfinite(r), torch.isfinite(c)
    r0 = torch.where(fin_r, r, 0.0)
    c0 = torch.where(fin_r & fin_c, c, 0.0)
    ref_norm, ref_max = float(torch.linalg.vector_norm(r0)), float(r0.abs().max()) if r0.numel() else 0.0
    diff = c0 - r0
    rel = float(torch.linalg.vector_norm(diff)) / (ref_norm or 1.0)
    mx = (float(diff.abs().max()) if diff.numel() else 0.0) / (ref_max or 1.0)
    checks["rel_fro"] = check(rel, th.rel_fro, rel < th.rel_fro)
    checks["max_err"] = check(mx, th.max_err, mx < th.max_err)
    bad = int((fin_r & ~fin_c).sum())
    checks["finite"] = check(bad, 0, bad == 0)
    n = max(r.numel(), 1)
    frac_c = float((fin_c & (c != 0)).sum()) / n
    frac_r = float((fin_r & (r != 0)).sum()) / n
    checks["written"] = check(abs(frac_c - frac_r), th.written_tol, abs(frac_c - frac_r) <= th.written_tol)
    if cb.shape == c.shape:
        same = (c == cb) | (torch.isnan(c) & torch.isnan(cb)) | ((c - cb).abs() <= 1e-5 * (ref_max or 1.0))
        changed = 1.0 - float(same.sum()) / n
    else:
        changed = 1.0
    checks["sentinel"] = check(changed, th.sentinel_tol, changed <= th.sentinel_tol)
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
    return check(value, threshold, value <= threshold)


def n_modified(now: Any, before: Any) -> int:
    """Elements of an input that differ from its pristine clone (all of them if it was resized)."""
    import torch

    if now.shape != before.shape or now.dtype != before.dtype:
        return before.numel()
    differ = now != before
    if now.is_floating_point() or now.is_complex():
        differ &= ~(torch.isnan(now) & torch.isnan(before))
    return int(differ.sum())


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


# ---------------------------------------------------------------- escaped GPU work


def profile_call(fn: Callable, inputs: list, trace_path: Path) -> list[dict[str, Any]]:
    """The trace events of one call of fn under torch.profiler, bracketed by the harness's markers.

    Before the call: a marker kernel on a side stream that the current stream waits on (it shows
    whether the trace records stream waits), then a marker on the current stream. Right after the
    call returns, before any synchronize: a marker on the current stream, where the caller's next
    work (reading the output) would start.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    kwargs: dict[str, Any] = {}
    with contextlib.suppress(AttributeError, TypeError):
        kwargs["experimental_config"] = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
    torch.cuda.synchronize()
    probe = torch.cuda.Stream()
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], **kwargs) as prof:
        with torch.cuda.stream(probe):
            torch.cuda._sleep(_SPIN_CYCLES)
        torch.cuda.current_stream().wait_stream(probe)
        torch.cuda._sleep(_SPIN_CYCLES)
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
    started, or never waited on when the trace records waits) and waits_recorded.
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
    waits = _joined_streams(events, caller, read_at)
    recorded = waits is not None and (waits == "all" or probe.get("args", {}).get("stream") in waits)
    if recorded and waits != "all":
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
