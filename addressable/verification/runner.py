"""Verify a candidate kernel against a KernelBench-format reference, in a way the candidate cannot game.

KernelBench's `torch.allclose(out, ref, atol=1e-2, rtol=1e-2)` is passed by an all-zeros output
whenever the reference output is small (softmax over 393,216-wide rows, a Frobenius-normalised
tensor; see `addressable audit`). Every check here is relative to the reference's own scale, and
each one is reported by name with its value and threshold.

Three processes take part (`session` has the order of work): this one (the parent: it computes the
verdict), the reference checker (`roles.ReferenceSide`: it never runs candidate code; it draws the
inputs, runs the reference and compares), and the candidate's process (`roles.CandidateSide`, in its
sandbox). Per trial, on inputs both draw from the trial's seed:

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
- ``precision``: the candidate's error against a float64 reference, beside the reference's own
  error at the problem's dtype; far above it (100x by default) is ``review``, "lower precision than
  the reference (consistent with TF32 or fp16 / bf16)", unless `allow_precision` accepts it
  (`addressable.verification.precision`).

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

Timing (only after every check passed; `addressable.verification.timing`): every timed call sees
fresh inputs (`addressable.verification.fresh`) and is timed with clocks taken before the candidate
loaded (CUDA events around a 256 MB L2 flush, the call and a device-wide synchronize;
`time.perf_counter` on the CPU), in batches that this process also times with its own wall clock:
- ``clock``, ``reference_clock``, ``reference_timing``, ``reuse``: the reported times agree with the
  wall clock, the reference runs as fast as it did before the candidate was imported, and repeated
  inputs do not speed the candidate up more than the reference;
- ``timed_outputs``: sampled timed calls, picked after they ran, agree with the reference as well as
  the trials did (from sketches that bind every output element);
- ``tampered``: nothing the harness relies on changed once the candidate was imported (`tamper`).
Speedup = reference median / candidate median; speedup_lo/hi = reference p25/p75 over
candidate p75/p25.

Three verdicts: ``pass``; ``fail`` (a check failed, the candidate raised, crashed, hung, or tried
to leave its sandbox); ``review`` (every check passed, but a speedup above ``review_speedup``, an
IQR wider than the median, lower precision, or a check that could not decide needs a person's look).
By default each verification runs its two helpers as contained subprocesses
(`addressable.verification.sandbox`); `isolate=False` runs all three roles in this process, uncontained.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from addressable.core.device import resolve_device
from addressable.core.errors import AddressableError
from addressable.core.files import read_csv
from addressable.core.jsonutil import to_jsonable
from addressable.verification.channel import Local, Remote
from addressable.verification.checks import Thresholds
from addressable.verification.harness import (
    check_candidate_file,
    check_problem_file,
    parse_overrides,
    readable,
    top_level_names,
    uses_triton,
)
from addressable.verification.precision import ALLOWED, tl_dot_tf32
from addressable.verification.sandbox import (
    PACKAGE_ROOT,
    Limits,
    Sandbox,
    bwrap_command,
    choose,
    real_homes,
    resolved_limits,
    scratch_reason,
    scrubbed_env,
)
from addressable.verification.session import Session

EXIT_CODES = {"pass": 0, "fail": 1, "review": 3}
WINS_COLUMNS = ["target", "speedup", "verified", "source", "notes", "speedup_lo", "speedup_hi"]
SHORT_CALL_MS = 0.1  # on a GPU, below this two processes timing one kernel read up to 6% apart (docs/verification.md)
LATE_SHARE = 0.1  # above this share of late timed calls, a speedup holds launch waits (timing.Timed.late)
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
    ref_host_ms: float | None = None  # median host time a timed call took, from the call to its return
    candidate_host_ms: float | None = None
    backlog_ms: float = 0.0  # the GPU spin before each timed call (timing.backlog_for)
    ref_late: float | None = None  # share of timed calls the GPU reached before the host had queued their sketch
    candidate_late: float | None = None
    timing_runs: int = 0
    device: str = ""
    sandbox: str = ""
    trials: list[dict[str, Any]] = field(default_factory=list)
    precision: dict[str, Any] = field(default_factory=dict)
    timed_inputs: str = ""  # the fresh-input mode of the timed calls (`fresh.MODES`)
    timed_inputs_note: str = ""  # why the modes before it were not used
    sampled_calls: int = 0
    wall_clock: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def review(self) -> bool:
        return self.verdict == "review"

    @property
    def caution(self) -> str:
        """What to doubt in the speedup beyond its interval, on a GPU: calls under SHORT_CALL_MS, where two
        processes timing the same kernel read 0.94-1.04x on the H200 (`gpu/timing_noise.py`); and a model
        whose GPU reached over LATE_SHARE of its timed calls before they were queued (a synchronize inside
        the call, or dispatch longer than the backlog), whose time then holds the GPU's wait for launches."""
        if self.device != "cuda" or self.speedup is None:
            return ""
        out = []
        if min(self.ref_ms or 0.0, self.candidate_ms or 0.0) < SHORT_CALL_MS:
            out.append(f"calls under {SHORT_CALL_MS:g} ms: two processes timing one kernel there read up to 6% apart "
                       "on the H200")
        for who, late, host in (("reference", self.ref_late, self.ref_host_ms),
                                ("candidate", self.candidate_late, self.candidate_host_ms)):
            if late is not None and late > LATE_SHARE:
                out.append(f"the GPU reached {late:.0%} of the {who}'s timed calls before the host had queued them "
                           f"(host time {host or 0.0:.3g} ms a call against a {self.backlog_ms:.3g} ms backlog: a "
                           "synchronize inside the call, or slow dispatch), so its time holds the wait for its launches")
        return "; ".join(out)

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
        why = "; ".join(x for x in (("REVIEW: " + self.reason) if self.review else self.reason, self.caution) if x)
        if self.speedup is None:
            why = "; ".join(x for x in (why, "not timed: speedup set to 1") if x)
        return {"target": self.target, "speedup": self.speedup or 1.0, "verified": self.passed,
                "source": source or self.candidate, "notes": "; ".join(x for x in (notes, why) if x),
                "speedup_lo": self.speedup_lo, "speedup_hi": self.speedup_hi}


# ---------------------------------------------------------------- the helpers: two processes, or this one


def _helper_command(role: str, scratch: Path, exchange: Path, writable: list[Path], box: Sandbox,
                    inputs: list[Path]) -> Callable[[int, int], list[str]]:
    """The command line of one helper process, given its two pipe ends (inside bubblewrap when there is one)."""
    def cmd(req: int, rep: int) -> list[str]:
        py = [sys.executable, "-c", "from addressable.verification.roles import main; main()", role, str(req), str(rep),
              str(exchange)]
        if not box.sandboxed:
            return py
        ro = [exchange] if exchange not in writable else []
        return bwrap_command(scratch, writable, inputs, readonly=ro) + py

    return cmd


def helper_env(scratch: Path, device: str) -> dict[str, str]:
    """A helper's scrubbed environment; on the CPU, one intra-op thread (OMP_NUM_THREADS=1), so that the
    reference and the candidate time their work rather than a fight with other processes for the cores."""
    env = scrubbed_env(scratch, [PACKAGE_ROOT])
    if device == "cpu":
        env["OMP_NUM_THREADS"] = "1"
    return env


def _run_isolated(spec: dict[str, Any], timeout: float, box: Sandbox,
                  progress: Callable[[str], None]) -> dict[str, Any]:
    """The session with the checker and the candidate's process as contained subprocesses."""
    with tempfile.TemporaryDirectory(prefix="addressable-verify-") as d:
        root = Path(d)
        dirs = {k: root / k for k in ("scratch", "exchange", "checker")}
        for p in dirs.values():
            p.mkdir()
        spec = {**spec, "isolated": True, "scratch": str(dirs["scratch"]), "exchange": str(dirs["exchange"]),
                "homes": [str(h) for h in real_homes()]}
        inputs = [Path(spec["problem"]), Path(spec["candidate"])]
        deadline = time.monotonic() + timeout
        checker = Remote(_helper_command("reference", dirs["checker"], dirs["exchange"], [dirs["checker"]], box, inputs),
                         helper_env(dirs["checker"], spec["device"]), dirs["checker"], root / "checker.err", deadline)
        worker = None
        try:
            worker = Remote(_helper_command("candidate", dirs["scratch"], dirs["exchange"],
                                            [dirs["scratch"], dirs["exchange"]], box, inputs),
                            helper_env(dirs["scratch"], spec["device"]), dirs["scratch"], root / "candidate.err", deadline)
            result = Session(spec, checker, worker, progress).run()
        finally:
            for helper in (worker, checker):
                if helper is not None:
                    helper.close()
        filled = scratch_reason(dirs["scratch"], spec["limits"])
        if filled and "harness_error" not in result:
            result.update(verdict="fail", reason=filled, speedup=None, speedup_lo=None, speedup_hi=None)
        return result


def _run_here(spec: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """The session with both helpers in this process (uncontained; for tests and notebooks)."""
    from addressable.verification.roles import CandidateSide, ReferenceSide

    return Session(spec, Local(ReferenceSide()), Local(CandidateSide()), progress).run()


def verify(reference_path: str | Path, candidate_path: str | Path, *, device: str = "auto", trials: int = 4,
           seed: int = 42, timeout: float = 300.0, calls: int = 50, warmup: int = 5, timing_budget_s: float = 10.0,
           thresholds: Thresholds | None = None, overrides: dict[str, Any] | None = None,
           isolate: bool = True, sandbox: str = "auto", limits: Limits | None = None,
           allow_precision: str | None = None, progress: Callable[[str], None] | None = None) -> VerifyResult:
    """Verify CANDIDATE's ModelNew against REFERENCE's Model; see the module docstring for the checks.

    `isolate` runs the checker and the candidate in contained subprocesses killed after `timeout`
    seconds (the robust choice; `sandbox` is auto, required or off, see `addressable.verification.sandbox`);
    without it everything runs in this process, uncontained, and `timeout` is not enforced.
    `allow_precision` (tf32, fp16 or bf16) accepts a candidate that precise; `progress(stage)` hears each stage.
    """
    overrides = overrides or {}
    problem = check_problem_file(reference_path, overrides)
    if trials < 2:
        raise AddressableError("--trials must be at least 2 (the fresh-output check compares two trials)")
    if timeout <= 0:
        raise AddressableError("--timeout must be positive")
    if calls < 0 or warmup < 0:
        raise AddressableError("--calls and --warmup must not be negative")
    if allow_precision not in (None, *ALLOWED):
        raise AddressableError(f"--allow-precision must be one of {', '.join(ALLOWED)}, got '{allow_precision}'")
    compile_error = check_candidate_file(candidate_path)
    dev = resolve_device(device)
    box = choose(sandbox) if isolate else Sandbox("none", "in-process (isolate=False)")
    th = thresholds or Thresholds()
    spec = {"problem": str(problem.resolve()), "candidate": str(Path(candidate_path).resolve()),
            "target": problem.stem, "device": dev, "trials": trials, "seed": seed, "calls": calls,
            "warmup": warmup, "timing_budget_s": timing_budget_s, "thresholds": asdict(th), "timeout": timeout,
            "overrides": overrides, "limits": resolved_limits(limits or Limits(), dev, timeout),
            "sketch_key": secrets.randbits(62), "allow_precision": allow_precision,
            "tl_dot_tf32": tl_dot_tf32(candidate_path)}
    t0 = time.perf_counter()
    if compile_error:
        raw = {"verdict": "fail", "reason": compile_error}
    elif dev == "cpu" and os.environ.get("TRITON_INTERPRET") != "1" and uses_triton(candidate_path):
        raw = {"verdict": "fail", "reason": _TRITON_CPU}
    elif isolate:
        raw = _run_isolated(spec, timeout, box, progress or (lambda s: None))
    else:
        raw = _run_here(spec, progress or (lambda s: None))
    if "harness_error" in raw:
        raise AddressableError(raw["harness_error"])
    fields: dict[str, Any] = {k: spec[k] for k in ("problem", "candidate", "target")} | {"device": dev} | raw
    fields["sandbox"] = box.kind if box.sandboxed else f"none: {box.note}"
    return VerifyResult(**{k: v for k, v in fields.items() if k in VerifyResult.__dataclass_fields__},
                        wall_s=time.perf_counter() - t0)


# ---------------------------------------------------------------- many pairs


def check_outputs(files: Sequence[Path | None], folders: Sequence[Path | None] = ()) -> None:
    """AddressableError now, before anything is verified, for an output that could not be written later."""
    for path, folder in [(f, f.parent) for f in files if f] + [(d, d) for d in folders if d]:
        if path.is_dir() and path is not folder:
            raise AddressableError(f"{path} is a folder, not a file")
        existing = next(p for p in [folder, *folder.parents] if p.exists())
        if not existing.is_dir():
            raise AddressableError(f"cannot create output folder {folder}: {existing} is not a folder")
        try:  # a probe file, gone at once: permissions alone do not say (root, read-only mounts)
            fd, probe = tempfile.mkstemp(prefix=".addressable-probe-", dir=existing)
            os.close(fd)
            os.unlink(probe)
        except OSError:
            raise AddressableError(f"output folder {existing} is not writable") from None


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
            check_candidate_file(candidate)
        except AddressableError as e:
            raise AddressableError(f"{pairs_csv} row {i}: {e}") from None
        jobs.append((p, problem, candidate, row_over))
    stems = [problem.stem for _, problem, _, _ in jobs]
    rows, seen = [], set()
    shown = kwargs.pop("progress", None)
    for i, (p, problem, candidate, row_over) in enumerate(jobs, 1):
        label = f"{i}/{len(jobs)} {problem.stem} <- {candidate.name}"
        progress = (lambda stage, label=label: shown(f"{label}: {stage}")) if shown else None
        r = verify(problem, candidate, overrides=row_over, progress=progress, **kwargs)
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
    """A table of the checks, the precision, then the timing or the reason for the verdict."""
    lines = [f"{r.target}: {Path(r.candidate).name} on {r.device}: {r.verdict.upper()}"]
    if r.checks:
        width = max(14, *(len(_fmt(c[k])) + 2 for c in r.checks.values() for k in ("value", "threshold")))
        width = min(width, 40)
        name_w = max(20, *(len(k) + 2 for k in r.checks))
        lines.append(f"  {'check':<{name_w}}{'value':>{width}}{'threshold':>{width}}  passed")
        for name, c in r.checks.items():
            mark = {True: "yes", False: "NO", None: "review"}[c["passed"]]
            value = _fmt(c["value"])
            value = value if len(value) < width else value[:width - 4] + "..."
            lines.append(f"  {name:<{name_w}}{value:>{width}}{_fmt(c['threshold']):>{width}}  {mark}")
    p = r.precision
    if p:
        ref = "float64" if p.get("float64") else f"{p.get('dtype')} (no float64 reference: {p.get('float64_note')})"
        lines.append(f"precision: error {p['candidate_error']:.3g} against the {ref} reference; the reference's own "
                     f"{p['reference_error']:.3g} at {p.get('dtype')}"
                     + (f"; consistent with {p['consistent_with']}" if p.get("consistent_with") else "")
                     + (f" (allowed: {p['allowed']})" if p.get("allowed") and p.get("consistent_with") else ""))
    if r.speedup is not None:
        lo = f" [{r.speedup_lo:.2f}-{r.speedup_hi:.2f}]" if r.speedup_lo and r.speedup_hi else ""
        lines.append(f"speedup {r.speedup:.2f}x{lo}: reference {r.ref_ms:.4g} ms, candidate "
                     f"{r.candidate_ms:.4g} ms (median of {r.timing_runs}; inputs {r.timed_inputs}, "
                     f"{r.sampled_calls} timed calls checked)")
        if r.timed_inputs_note:
            lines.append(f"timed inputs {r.timed_inputs}: {r.timed_inputs_note}")
        if r.ref_host_ms is not None and r.candidate_host_ms is not None and r.device == "cuda":
            lines.append(f"host time a call: reference {r.ref_host_ms:.4g} ms, candidate {r.candidate_host_ms:.4g} ms "
                         f"(dispatch, kept out of the GPU times by a {r.backlog_ms:.3g} ms backlog)")
    if r.caution:
        lines.append("caution: " + r.caution)
    if r.reason:
        lines.append({"review": "REVIEW: ", "fail": "reason: "}.get(r.verdict, "") + r.reason)
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def format_batch_row(r: VerifyResult) -> str:
    """verify-batch's line for one pair, labelled by problem file and candidate file."""
    label = f"{Path(r.problem).stem} <- {Path(r.candidate).name}"
    speed = f"{r.speedup:.2f}x  " if r.speedup else ""
    return f"{label:<56}{r.verdict:<8}{speed}{r.reason}"
