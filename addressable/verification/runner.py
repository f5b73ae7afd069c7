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
  `addressable.verification.invariants` for the problem-file format, INVARIANTS and check_invariants).

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

On a GPU, one more untimed call of each model runs under torch.profiler (`addressable.verification.checks`):
- ``stream_escape``: work the candidate left on a stream other than the caller's that was still
  running when the caller's next work started (the output would be read unfinished), or that the
  caller's stream never waited on (when the trace records stream waits) fails;
- ``no_gpu_work``: no kernel at all where the reference launches some is flagged for review.

Timing (only after every check passed) alternates reference and candidate on the trial-0 inputs after
a warm-up (`addressable.verification.harness.time_calls`: CUDA events, a 256 MB L2 flush before each call, the end
event recorded after a device-wide synchronize so work on any stream counts; `time.perf_counter` on
the CPU). Speedup = reference median / candidate median; speedup_lo/hi = reference p25/p75 over
candidate p75/p25.

Three verdicts: ``pass``; ``fail`` (a check failed, the candidate raised, crashed, hung, or tried
to leave its sandbox); ``review`` (every check passed, but a speedup above ``review_speedup``, an
IQR wider than the median, or a check that could not decide needs a person's look). By default
each verification runs in its own contained subprocess (`addressable.verification.sandbox`).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from addressable.core.device import resolve_device
from addressable.core.errors import AddressableError
from addressable.core.files import read_csv
from addressable.core.jsonutil import to_jsonable
from addressable.verification.checks import (
    Thresholds,
    check,
    compare_output,
    fresh_check,
    gpu_work,
    invariant_checks,
    n_modified,
    poisoned_allocations,
    profile_call,
    stream_checks,
    worse,
)
from addressable.verification.harness import (
    DISTRIBUTIONS,
    as_outputs,
    call,
    check_candidate_file,
    check_problem_file,
    clone,
    copy_weights,
    environment,
    load_module,
    make_inputs,
    on_device,
    one_line,
    parse_overrides,
    quartiles,
    readable,
    seed_all,
    tensors,
    time_calls,
    to_f64,
    top_level_names,
    uses_triton,
)
from addressable.verification.sandbox import (
    Guard,
    Limits,
    Sandbox,
    apply_limits,
    bwrap_command,
    choose,
    limit_reason,
    real_home,
    resolved_limits,
    scratch_reason,
    scrubbed_env,
    signal_reason,
)

EXIT_CODES = {"pass": 0, "fail": 1, "review": 3}
WINS_COLUMNS = ["target", "speedup", "verified", "source", "notes", "speedup_lo", "speedup_hi"]
_POISON = (0xFF, 0x42)  # byte patterns: 0xFF is NaN in every float dtype, 0x42 a finite value
_PKG_ROOT = str(Path(__file__).resolve().parents[2])
_TRITON_CPU = ("candidate uses Triton, which needs a GPU: run it on a GPU, or set TRITON_INTERPRET=1 "
               "to run it (slowly) in Triton's interpreter on the CPU")


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
    device: str = ""
    sandbox: str = ""
    trials: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def review(self) -> bool:
        return self.verdict == "review"

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, 3 review."""
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (NaN/Inf values become the strings "nan"/"inf"/"-inf")."""
        return to_jsonable(asdict(self), nan_as="nan", inf_as="inf")

    def wins_row(self, source: str | None = None, notes: str = "") -> dict[str, Any]:
        """One row of wins.csv, the file `addressable project` reads (speedup 1 when not timed).

        Only a pass is verified; a review row carries "REVIEW: <why>" in its notes."""
        why = ("REVIEW: " + self.reason) if self.review else self.reason
        if self.speedup is None:
            why = "; ".join(x for x in (why, "not timed: speedup set to 1") if x)
        return {"target": self.target, "speedup": self.speedup or 1.0, "verified": self.passed,
                "source": source or self.candidate, "notes": "; ".join(x for x in (notes, why) if x),
                "speedup_lo": self.speedup_lo, "speedup_hi": self.speedup_hi}


# ---------------------------------------------------------------- the verification itself


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _fail_reason(checks: dict[str, dict[str, Any]], trials: list[dict[str, Any]]) -> str:
    parts = []
    for k, v in checks.items():
        if v["passed"] is False:
            first = next((tr["trial"] for tr in trials if k in tr["failed"]), None)
            where = f"trial {first}: " if first is not None else ""
            parts.append(f"{k} ({where}{_fmt(v['value'])} vs {_fmt(v['threshold'])})")
    return "failed " + ", ".join(parts)


def _stream_checks(ref_model: Any, cand_model: Any, inputs: list) -> dict[str, dict[str, Any]]:
    """stream_escape and no_gpu_work from one profiled call of each model (GPU only)."""
    try:
        with tempfile.TemporaryDirectory(prefix="addressable-profile-") as d:
            ref = gpu_work(profile_call(ref_model, clone(inputs), Path(d) / "reference.json"))
            cand = gpu_work(profile_call(cand_model, clone(inputs), Path(d) / "candidate.json"))
    except Exception as e:
        return stream_checks(None, None, one_line(e))
    return stream_checks(ref, cand)


def review_flags(checks: dict[str, dict[str, Any]], timing: dict[str, Any], th: Thresholds) -> list[str]:
    """Why a result whose checks all passed still needs a person's look (empty: it doesn't)."""
    flags = [f"{k} undecided ({_fmt(v['value'])})" for k, v in checks.items() if v["passed"] is None]
    if not timing:
        return flags
    speedup = timing["speedup"]
    if speedup > th.review_speedup:
        flags.append(f"speedup {speedup:.1f}x > {th.review_speedup:g}x: check the timing by hand")
    for who, (lo, hi), med in (("reference", timing["ref_ms_iqr"], timing["ref_ms"]),
                               ("candidate", timing["candidate_ms_iqr"], timing["candidate_ms"])):
        if hi - lo > med:
            flags.append(f"{who} timing is noisy (IQR {hi - lo:.3g} ms > median {med:.3g} ms)")
    return flags


def run_verification(spec: dict[str, Any], progress: Callable[[str], None] = lambda s: None,
                     guard: Guard | None = None) -> dict[str, Any]:
    """Verify in this process. Returns VerifyResult fields, or {"harness_error": msg} for bad problems.

    `guard` is installed after the reference is built, before the candidate is imported."""
    th = Thresholds(**spec["thresholds"])
    device, seed = spec["device"], spec["seed"]
    limits = spec.get("limits") or {}
    base = {"problem": spec["problem"], "candidate": spec["candidate"], "target": spec["target"],
            "device": device, "env": environment(device)}

    def fail(reason: str, **extra: Any) -> dict[str, Any]:
        return {**base, "verdict": "fail", "reason": reason, **extra}

    progress("loading the reference")
    try:
        ref = _load_reference(spec)
    except AddressableError as e:
        return {"harness_error": str(e)}
    except Exception as e:
        return {"harness_error": f"reference {Path(spec['problem']).name} failed to build: {one_line(e)}"}

    if guard is not None:
        guard.install()
    progress("importing the candidate")
    try:
        cand_mod = load_module(spec["candidate"])
        model_new = getattr(cand_mod, "ModelNew", None)
        if model_new is None:
            return fail("candidate defines no ModelNew")
        progress("building the candidate")
        seed_all(seed)
        cand_model = on_device(model_new(*copy.deepcopy(ref.init)), device)
        copy_weights(ref.model, cand_model)
    except Exception as e:
        return fail(_raised_reason("candidate failed to build", e, limits))

    run = _run_trials(spec, ref, cand_model, th, progress)
    if run.harness_error is not None:
        return {"harness_error": run.harness_error}
    checks, trials = run.checks, run.trials
    if run.failure is not None:
        return fail(run.failure, checks=checks, trials=trials)
    if device == "cuda":
        progress("profiling one call of each model")
        checks.update(_stream_checks(ref.model, cand_model, run.first_inputs))
    if any(v["passed"] is False for v in checks.values()):
        return fail(_fail_reason(checks, trials), checks=checks, trials=trials)

    result = {**base, "verdict": "pass", "reason": "", "checks": checks, "trials": trials}
    timing: dict[str, Any] = {}
    if spec["calls"] > 0:
        progress("timing")
        try:
            times = time_calls({"ref": ref.model, "cand": cand_model}, run.first_inputs, device, spec["calls"],
                               spec["warmup"], spec["timing_budget_s"])
        except Exception as e:
            return fail(_raised_reason("candidate raised while timed", e, limits), checks=checks, trials=trials)
        timing = _timing(times)
        result.update(timing)
    flags = review_flags(checks, timing, th)
    if flags:
        result.update(verdict="review", reason="; ".join(flags))
    return result


def _raised_reason(what: str, e: BaseException, limits: dict[str, Any]) -> str:
    """The fail reason for an exception the candidate raised: a sandbox limit reached, else what failed and how."""
    return limit_reason(e, limits) or f"{what}: {one_line(e)}"


@dataclass
class _Reference:
    """The problem module, its declared invariants, and the reference model built from its init inputs."""

    problem: ModuleType
    invariants: list
    custom: Callable | None  # the problem's check_invariants
    init: list  # get_init_inputs(), drawn under the seed
    model: Any


def _load_reference(spec: dict[str, Any]) -> _Reference:
    """Load the problem file (with its overrides) and build the reference model under the seed."""
    from addressable.verification.invariants import parse_invariants

    problem = load_module(spec["problem"], spec["overrides"])
    invariants = parse_invariants(getattr(problem, "INVARIANTS", None), f"{Path(spec['problem']).name} INVARIANTS")
    custom = getattr(problem, "check_invariants", None)
    seed_all(spec["seed"])
    init = list(problem.get_init_inputs())
    seed_all(spec["seed"])
    model = on_device(problem.Model(*copy.deepcopy(init)), spec["device"])
    return _Reference(problem, invariants, custom, init, model)


@dataclass
class _Trials:
    """The trials run so far: each check's worst entry, one record per trial, and why they stopped early."""

    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    trials: list[dict[str, Any]] = field(default_factory=list)
    first_inputs: list = field(default_factory=list)  # trial 0's inputs, for profiling and timing
    harness_error: str | None = None  # the reference (or its invariants) failed
    failure: str | None = None  # the candidate raised: the fail reason


def _run_trials(spec: dict[str, Any], ref: _Reference, cand_model: Any, th: Thresholds,
                progress: Callable[[str], None]) -> _Trials:
    """Run reference and candidate on each trial's inputs and check the candidate's outputs.

    Stops at the first trial where the reference (or its invariants) fails or the candidate raises."""
    device, problem_name, limits = spec["device"], Path(spec["problem"]).name, spec.get("limits") or {}
    run = _Trials()
    prev: list | None = None
    for t in range(spec["trials"]):
        tseed = spec["seed"] + t
        progress(f"reference, trial {t}")
        try:
            inputs, ref_out, dist, note = _reference_outputs(ref, DISTRIBUTIONS[t % len(DISTRIBUTIONS)], tseed,
                                                             device)
        except Exception as e:
            run.harness_error = f"reference {problem_name} failed on trial {t}: {one_line(e)}"
            return run
        pristine = clone(inputs)
        nbytes = 4 * sum(x.numel() * x.element_size() for x in tensors(inputs) + ref_out)
        progress(f"candidate, trial {t}")
        try:
            out, out_b, modified = _candidate_outputs(cand_model, inputs, pristine, device, nbytes)
        except Exception as e:
            run.failure = _raised_reason(f"candidate raised on trial {t}", e, limits)
            return run
        tc, prev = _output_checks(ref_out, out, out_b, modified, pristine, prev, th)
        try:
            inv_checks, skipped = invariant_checks(ref.invariants, ref.custom, pristine, ref_out, out, th)
        except Exception as e:
            run.harness_error = f"invariants of {problem_name} fail on the reference output: {one_line(e)}"
            return run
        tc.update(inv_checks)
        for name, entry in tc.items():
            run.checks[name] = worse(run.checks.get(name), entry)
        failed = [k for k, v in tc.items() if v["passed"] is False]
        run.trials.append({"trial": t, "seed": tseed, "distribution": dist, "failed": failed,
                           "skipped_invariants": skipped, **({"note": note} if note else {})})
        if t == 0:
            run.first_inputs = pristine
        del inputs, ref_out, out, out_b
    return run


def _reference_outputs(ref: _Reference, dist: str, seed: int, device: str) -> tuple[list, list, str, str]:
    """A trial's inputs drawn from `dist` and the reference's outputs on them; native inputs instead
    (with a note) when the reference rejects re-drawn ones. Returns (inputs, outputs, dist, note)."""
    try:
        inputs = make_inputs(ref.problem, seed, dist, device)
        ref_out = as_outputs(call(ref.model, clone(inputs), device), "reference")
    except Exception as e:
        if dist == "native":
            raise
        # the problem's domain excludes re-drawn inputs (inconsistent offsets, ...)
        note = f"reference rejected {dist} inputs ({one_line(e)[:120]}); used native"
        inputs = make_inputs(ref.problem, seed, "native", device)
        ref_out = as_outputs(call(ref.model, clone(inputs), device), "reference")
        return inputs, ref_out, "native", note
    return inputs, ref_out, dist, ""


def _candidate_outputs(cand_model: Any, inputs: list, pristine: list, device: str, nbytes: int
                       ) -> tuple[list, list, int]:
    """The candidate's outputs with fresh memory poisoned two ways: the first call on `inputs`, the second on
    a clone of `pristine` (their copy before the first call); and how many input elements the first call changed."""
    with poisoned_allocations(_POISON[0], device, nbytes):
        out = as_outputs(call(cand_model, inputs, device), "candidate")
        out = [o.detach().clone() for o in out]  # a reused output buffer must not change it later
    modified = sum(n_modified(a, b) for a, b in zip(tensors(inputs), tensors(pristine), strict=True))
    with poisoned_allocations(_POISON[1], device, nbytes):
        out_b = as_outputs(call(cand_model, clone(pristine), device), "candidate")
    return out, out_b, modified


def _output_checks(ref_out: list, out: list, out_b: list, modified: int, pristine: list, prev: list | None,
                   th: Thresholds) -> tuple[dict[str, dict[str, Any]], list]:
    """One trial's checks of the candidate's outputs and inputs, `fresh` against the previous trial's
    (reference, candidate) outputs `prev`; returns the checks and this trial's outputs for the next."""
    n_in = max(sum(x.numel() for x in tensors(pristine)), 1)
    tc: dict[str, dict[str, Any]] = {}
    if len(out) != len(ref_out):
        tc["shape"] = check(f"{len(out)} outputs", f"{len(ref_out)} outputs", False)
    for r, c, cb in zip(ref_out, out, out_b, strict=False):
        for name, entry in compare_output(r, c, cb if len(out_b) == len(out) else c[:0], th).items():
            tc[name] = worse(tc.get(name), entry)
    tc["inputs_unchanged"] = check(modified / n_in, 0, modified == 0)
    cur = [(to_f64(r, r.device), to_f64(c, r.device)) for r, c in zip(ref_out, out, strict=False)]
    if prev is not None:
        for p, q in zip(prev, cur, strict=False):
            entry = fresh_check(p, q, th)
            if entry is not None:
                tc["fresh"] = worse(tc.get("fresh"), entry)
    return tc, cur


def _timing(times: dict[str, list[float]]) -> dict[str, Any]:
    """Medians, IQRs and speedups (median ratio; lo/hi from the quartiles) of timed reference and candidate calls."""
    (r25, rmed, r75), (c25, cmed, c75) = quartiles(times["ref"]), quartiles(times["cand"])
    return {"ref_ms": rmed, "candidate_ms": cmed, "ref_ms_iqr": [r25, r75], "candidate_ms_iqr": [c25, c75],
            "speedup": rmed / cmed if cmed > 0 else float("inf"),
            "speedup_lo": r25 / c75 if c75 > 0 else None, "speedup_hi": r75 / c25 if c25 > 0 else None,
            "timing_runs": len(times["cand"])}


# ---------------------------------------------------------------- one contained subprocess per candidate


def worker_main() -> None:
    """Subprocess entry: apply the limits, verify under the guard, write the result (progress to a side file)."""
    spec_path, result_path, progress_path = sys.argv[1:4]
    spec = json.loads(Path(spec_path).read_text())
    apply_limits(spec["limits"])
    guard = Guard([Path(spec["scratch"]), Path(spec_path).parent], Path(spec["home"]), spec["limits"]["processes"])

    def progress(stage: str) -> None:
        Path(progress_path).write_text(stage)

    try:
        result = run_verification(spec, progress, guard)
    except Exception as e:
        traceback.print_exc()
        result = {"harness_error": f"verifier failed: {one_line(e)}"}
    if guard.violations and "harness_error" not in result:
        result.update(verdict="fail", reason="sandbox: " + "; ".join(guard.violations), speedup=None,
                      speedup_lo=None, speedup_hi=None)
        result.setdefault("checks", {})["sandbox"] = check("; ".join(guard.violations), "nothing outside scratch",
                                                           False)
    Path(result_path).write_text(json.dumps(to_jsonable(result, nan_as="nan", inf_as="inf")))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: a candidate's atexit hooks or threads cannot hang us


def _stage(path: Path) -> str:
    return path.read_text() if path.exists() else "starting"


def _run_isolated(spec: dict[str, Any], timeout: float, box: Sandbox) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="addressable-verify-") as d:
        scratch, control = Path(d) / "scratch", Path(d) / "control"
        scratch.mkdir()
        control.mkdir()
        paths = {k: control / k for k in ("spec.json", "result.json", "progress", "stderr")}
        spec = {**spec, "scratch": str(scratch), "home": str(real_home())}
        paths["spec.json"].write_text(json.dumps(spec))
        env = scrubbed_env(scratch, [_PKG_ROOT])
        cmd = [sys.executable, "-c", "from addressable.verification.runner import worker_main; worker_main()",
               str(paths["spec.json"]), str(paths["result.json"]), str(paths["progress"])]
        if box.sandboxed:
            cmd = bwrap_command(scratch, control, [Path(spec["problem"]), Path(spec["candidate"])]) + cmd
        with open(paths["stderr"], "w") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    env=env, cwd=scratch, start_new_session=True)
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return {"verdict": "fail", "reason": f"timed out after {timeout:g} s ({_stage(paths['progress'])})"}
            with contextlib.suppress(ProcessLookupError):  # nothing the candidate started outlives it
                os.killpg(proc.pid, signal.SIGKILL)
        filled = scratch_reason(scratch, spec["limits"])
        if paths["result.json"].exists():
            result = json.loads(paths["result.json"].read_text())
            if filled and "harness_error" not in result:
                result.update(verdict="fail", reason=filled, speedup=None, speedup_lo=None, speedup_hi=None)
            return result
        lines = [ln for ln in paths["stderr"].read_text(errors="replace").splitlines() if ln.strip()]
        tail = f": {lines[-1].strip()[:300]}" if lines else ""
        how = f"signal {-rc}" if rc < 0 else f"exit code {rc}"
        why = signal_reason(rc, spec["limits"]) or filled
        return {"verdict": "fail", "reason": why or f"crashed with {how} ({_stage(paths['progress'])}){tail}"}


def verify(reference_path: str | Path, candidate_path: str | Path, *, device: str = "auto", trials: int = 4,
           seed: int = 42, timeout: float = 300.0, calls: int = 50, warmup: int = 5, timing_budget_s: float = 10.0,
           thresholds: Thresholds | None = None, overrides: dict[str, Any] | None = None,
           isolate: bool = True, sandbox: str = "auto", limits: Limits | None = None) -> VerifyResult:
    """Verify CANDIDATE's ModelNew against REFERENCE's Model; see the module docstring for the checks.

    `isolate` runs the verification in a contained subprocess killed after `timeout` seconds (the
    robust choice; `sandbox` is auto, required or off, see `addressable.verification.sandbox`); without it the
    candidate runs in this process, uncontained, and `timeout` is not enforced.
    """
    overrides = overrides or {}
    problem = check_problem_file(reference_path, overrides)
    if trials < 2:
        raise AddressableError("--trials must be at least 2 (the fresh-output check compares two trials)")
    if timeout <= 0:
        raise AddressableError("--timeout must be positive")
    if calls < 0 or warmup < 0:
        raise AddressableError("--calls and --warmup must not be negative")
    dev = resolve_device(device)
    box = choose(sandbox) if isolate else Sandbox("none", "in-process (isolate=False)")
    th = thresholds or Thresholds()
    spec = {"problem": str(problem.resolve()), "candidate": str(Path(candidate_path).resolve()),
            "target": problem.stem, "device": dev, "trials": trials, "seed": seed, "calls": calls,
            "warmup": warmup, "timing_budget_s": timing_budget_s, "thresholds": asdict(th),
            "overrides": overrides, "limits": resolved_limits(limits or Limits(), dev, timeout)}
    t0 = time.perf_counter()
    compile_error = check_candidate_file(candidate_path)
    if compile_error:
        raw = {"verdict": "fail", "reason": compile_error}
    elif dev == "cpu" and os.environ.get("TRITON_INTERPRET") != "1" and uses_triton(candidate_path):
        raw = {"verdict": "fail", "reason": _TRITON_CPU}
    elif isolate:
        raw = _run_isolated(spec, timeout, box)
    else:
        raw = run_verification(spec)
    if "harness_error" in raw:
        raise AddressableError(raw["harness_error"])
    fields = {k: spec[k] for k in ("problem", "candidate", "target")} | {"device": dev} | raw
    fields["sandbox"] = box.kind if box.sandboxed else f"none: {box.note}"
    return VerifyResult(**{k: v for k, v in fields.items() if k in VerifyResult.__dataclass_fields__},
                        wall_s=time.perf_counter() - t0)


# ---------------------------------------------------------------- many pairs


def _resolve_near(base: Path, p: str) -> Path:
    q = Path(p).expanduser()
    return q if q.is_absolute() or not (base / q).exists() else base / q


def verify_batch(pairs_csv: str | Path, json_dir: str | Path | None = None, overrides: dict[str, Any] | None = None,
                 on_result: Callable[[VerifyResult], None] | None = None, **kwargs: Any) -> pd.DataFrame:
    """Verify every row of PAIRS.csv (problem, candidate[, target, source, notes, set]).

    Returns one row per pair: the wins.csv columns (WINS_COLUMNS; verified is true for a pass only)
    plus problem (the problem file's stem), candidate (the candidate file's name) and verdict.
    Relative paths are looked up next to the CSV first. `set` holds per-row NAME=VALUE overrides;
    `overrides` apply to the problems that define those names.
    With `json_dir`, each result is also written to json_dir/verify_<problem stem>.json
    (verify_<problem stem>__<candidate stem>.json when several rows share a problem).
    """
    from addressable.core.atomic import write_text

    pairs_csv = Path(pairs_csv)
    if not pairs_csv.is_file():
        raise AddressableError(f"pairs file not found: {pairs_csv}")
    pairs = read_csv(pairs_csv, dtype=str, comment="#", skipinitialspace=True).fillna("")
    missing = {"problem", "candidate"} - set(pairs.columns)
    if missing or pairs.empty:
        raise AddressableError(f"{pairs_csv} needs columns problem,candidate and at least one row")
    base = pairs_csv.parent
    jobs = []
    for i, p in enumerate(pairs.to_dict(orient="records"), 1):
        problem, candidate = _resolve_near(base, p["problem"]), _resolve_near(base, p["candidate"])
        try:  # every row is checked before the first verification starts
            names = top_level_names(readable(problem, "reference")) if overrides else set()
            row_over = {**{k: v for k, v in (overrides or {}).items() if k in names},
                        **parse_overrides(p.get("set", ""))}
            check_problem_file(problem, row_over)
            readable(candidate, "candidate")
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
        rows.append({**r.wins_row(p.get("source") or str(p["candidate"]), p.get("notes", "")),
                     "problem": problem.stem, "candidate": candidate.name, "verdict": r.verdict})
    return pd.DataFrame(rows, columns=[*WINS_COLUMNS, "problem", "candidate", "verdict"])


def batch_exit_code(verdicts: list[str]) -> int:
    """0 when every pair passed, 1 when any failed, else 3 (some need review)."""
    if all(v == "pass" for v in verdicts):
        return 0
    return 1 if "fail" in verdicts else 3


# ---------------------------------------------------------------- text output


def format_result(r: VerifyResult) -> str:
    """A table of the checks, then the timing or the reason for the verdict."""
    lines = [f"{r.target}: {Path(r.candidate).name} on {r.device}: {r.verdict.upper()}"]
    if r.checks:
        width = max(14, *(len(_fmt(c[k])) + 2 for c in r.checks.values() for k in ("value", "threshold")))
        name_w = max(20, *(len(k) + 2 for k in r.checks))
        lines.append(f"  {'check':<{name_w}}{'value':>{width}}{'threshold':>{width}}  passed")
        for name, c in r.checks.items():
            mark = {True: "yes", False: "NO", None: "review"}[c["passed"]]
            lines.append(f"  {name:<{name_w}}{_fmt(c['value']):>{width}}{_fmt(c['threshold']):>{width}}  {mark}")
    if r.speedup is not None:
        lo = f" [{r.speedup_lo:.2f}-{r.speedup_hi:.2f}]" if r.speedup_lo and r.speedup_hi else ""
        lines.append(f"speedup {r.speedup:.2f}x{lo}: reference {r.ref_ms:.4g} ms, candidate "
                     f"{r.candidate_ms:.4g} ms (median of {r.timing_runs})")
    if r.reason:
        lines.append({"review": "REVIEW: ", "fail": "reason: "}.get(r.verdict, "") + r.reason)
    return "\n".join(lines)


def format_batch_row(r: VerifyResult) -> str:
    """verify-batch's line for one pair, labelled by problem file and candidate file."""
    label = f"{Path(r.problem).stem} <- {Path(r.candidate).name}"
    speed = f"{r.speedup:.2f}x  " if r.speedup else ""
    return f"{label:<56}{r.verdict:<8}{speed}{r.reason}"
