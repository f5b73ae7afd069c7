"""One verification as the parent runs it: what the checker and the candidate's process do, in order.

1. setup: both helpers load the problem and build the reference, in parallel; the checker picks the
   mode of the timed calls' fresh inputs (`fresh`), and both draw the same probe inputs (their
   sketches must agree, or the timed checks cannot decide);
2. baseline (when timing): before the candidate is imported, the candidate's process times the
   reference in two batches, each also timed by this process's wall clock (`timing`);
3. the candidate is imported, under the guard;
4. trials: the checker computes trial t+1's reference outputs while the candidate runs trial t,
   then compares trial t's outputs, which it receives in full;
5. on a GPU, one profiled call of the candidate: the stream checks;
6. timing, when every check passed: batches of the reference and the candidate alternate (ABBA)
   until `calls` calls of each or the time budget, then two rounds of repeated inputs (ABBA). When
   `clock` fails, a second set of timed batches is taken, and `clock`'s medians and the speedup are
   taken over both sets (its lows over the second); when `reuse` fails, its rounds are taken again and
   the second set alone decides (`timing.py`; the first set's failed checks are kept in
   `wall_clock.first_set`);
7. sampled checks: `SAMPLED` of the candidate's timed calls, picked here after they ran, are
   recomputed by the checker from their seeds and compared with the sketches the candidate's
   process sent before it could know which ones would be checked;
8. tampering: the snapshots after the import, the trials and the timing, against the one before.

Seeds of timed calls come from `secrets`. The verdict is computed here: with `isolate`, in a
process where candidate code never ran.
"""

from __future__ import annotations

import contextlib
import secrets
import statistics
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from addressable.verification.channel import ChannelError, TimedOut
from addressable.verification.checks import Thresholds, check, stream_checks, worse
from addressable.verification.harness import DISTRIBUTIONS, quartiles
from addressable.verification.sandbox import signal_reason
from addressable.verification.tamper import changed
from addressable.verification.timing import (
    BATCH,
    PARENT_CLOCK,
    BatchRecord,
    backlog_for,
    times_of,
    timing_checks,
    with_sketch_cost,
)

SAMPLED = 8  # timed calls of the candidate checked against the reference
BATCH_S = {"cuda": 0.05}  # a GPU batch's length, from the baseline: longer batches resolve smaller clock
# discrepancies; on the CPU, batches keep BATCH calls: alternating often matters more there (bursty load)


_RETIMED = {"clock": "timed", "reuse": "repeat"}  # a check that is timed again when it fails once, and its batches
_POOLED = {"clock"}  # retimed checks whose first set's batches stay (`timing.timing_checks` pools the medians)


class Stop(Exception):
    """The verification ends early: the candidate failed (the reason), or the problem is bad (`harness`)."""

    def __init__(self, reason: str, harness: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.harness = reason, harness


def _fields(x: Any, *keys: str) -> dict[str, Any]:
    """`x` when it is a dict with `keys`, else Stop (the candidate's process sent something malformed)."""
    if not isinstance(x, dict) or any(k not in x for k in keys):
        raise Stop("the candidate's process sent a malformed reply")
    return x


def _floats(xs: Any, n: int) -> list[float]:
    """`xs` as n positive finite floats, else Stop (the candidate's process sent something malformed)."""
    try:
        out = [float(x) for x in xs]
    except (TypeError, ValueError):
        out = []
    if len(out) != n or not all(0 <= x < float("inf") for x in out):
        raise Stop("the candidate's process sent a malformed timing reply")
    return out


class Session:
    """The protocol of one verification (see the module docstring); `run()` returns VerifyResult fields."""

    def __init__(self, spec: dict[str, Any], checker: Any, worker: Any,
                 progress: Callable[[str], None] = lambda s: None) -> None:
        self.spec, self.checker, self.worker, self.progress = spec, checker, worker, progress
        self.th = Thresholds(**spec["thresholds"])
        self.name = Path(spec["problem"]).name
        self.checks: dict[str, dict[str, Any]] = {}
        self.trials: list[dict[str, Any]] = []
        self.batches: list[BatchRecord] = []
        self.snapshots: list[dict[str, str]] = []
        self.timed: list[tuple[int, Any]] = []  # (seed, sketches) of the candidate's timed calls
        self.precision: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}
        self.violations: list[str] = []
        self.stage, self.mode, self.worker_alive = "starting", "problem", True
        self.backlog = 0.0  # ms of GPU spin before each timed call (`timing.backlog_for`)
        self.timed_set = 0  # 1 once `clock` failed and its batches are timed again (`timing.BatchRecord`)
        self.k = max(1, min(BATCH, -(-spec["calls"] // 2)))  # at least two batches of each model

    # ---------------------------------------------------------------- replies

    def _at(self, stage: str) -> None:
        self.stage = stage
        self.progress(stage)

    def _worker_reply(self, rid: int) -> dict[str, Any]:
        try:
            r = self.worker.receive(rid)
        except TimedOut:
            self.worker_alive = False
            raise Stop(f"timed out after {self.spec['timeout']:g} s ({self.stage})") from None
        except ChannelError as e:
            self.worker_alive = False
            raise Stop(self._crash(self.worker, e)) from None
        self.violations = r.get("violations", self.violations)
        return r

    def _from_worker(self, rid: int, what: str) -> Any:
        r = self._worker_reply(rid)
        if "error" in r:
            raise Stop(r.get("limit") or f"{what}: {r['error']}")
        return r["ok"]

    def _worker(self, method: str, what: str, **kwargs: Any) -> Any:
        return self._from_worker(self.worker.send(method, **kwargs), what)

    def _from_checker(self, rid: int, what: str) -> Any:
        try:
            r = self.checker.receive(rid)
        except TimedOut:
            raise Stop(f"timed out after {self.spec['timeout']:g} s ({self.stage})") from None
        except ChannelError as e:
            raise Stop("the reference checker " + self._crash(self.checker, e), harness=True) from None
        if "error" in r:
            raise Stop(f"{what}: {r['error']}", harness=True)
        return r["ok"]

    def _crash(self, helper: Any, e: ChannelError) -> str:
        if not hasattr(helper, "exit_status"):
            return f"failed ({self.stage}): {e}"
        status, tail = helper.exit_status(), helper.stderr_tail()
        rc = helper.proc.returncode
        why = signal_reason(rc, self.spec["limits"]) if rc is not None else None
        return why or f"crashed with {status} ({self.stage})" + (f": {tail}" if tail else "")

    # ---------------------------------------------------------------- the phases

    def run(self) -> dict[str, Any]:
        """Every phase in order; a failure ends it with the reason (tampering is still looked at)."""
        try:
            self._setup()
            if self.spec["calls"] > 0:
                self._baseline()
            self._at("importing the candidate")
            loaded = _fields(self._worker("load_candidate", "candidate failed to build"), "snapshot", "env")
            self.snapshots.append(_fields(loaded["snapshot"]))
            self.extra["env"] = loaded["env"]
            self._trials()
            if self.spec["device"] == "cuda" and not self._failed():
                self._profile()
            if self.spec["calls"] > 0 and not self._failed():
                self._timing()
                self._sampled()
        except Stop as e:
            if e.harness:
                return {"harness_error": e.reason}
            self._tampering()
            return self._result("fail", e.reason)
        self._tampering()
        return self._verdict()

    def _setup(self) -> None:
        self._at("loading the reference")
        cid, wid = self.checker.send("setup", spec=self.spec), self.worker.send("setup", spec=self.spec)
        self._from_checker(cid, f"reference {self.name} failed to build")
        r = self._worker_reply(wid)
        if "error" in r:
            raise Stop(f"reference {self.name} failed to build: {r['error']}", harness=True)
        self.snapshots.append(r["ok"]["snapshot"])
        if self.spec["calls"] <= 0:
            return
        chosen = self._from_checker(self.checker.send("choose_mode", seed=secrets.randbits(62)), "timing inputs")
        self.mode = chosen["mode"]
        seed = secrets.randbits(62)
        mine = self._worker("probe", "drawing timing inputs", mode=self.mode, seed=seed)
        same = self._from_checker(self.checker.send("same_probe", mode=self.mode, seed=seed, sketches=mine), "probe")
        self.extra.update(timed_inputs=self.mode, timed_inputs_note=chosen["note"], reproducible=same)

    def _baseline(self) -> None:
        self._at("timing the reference before the candidate loads")
        warm = self._from_checker(self.checker.send("warmup", mode=self.mode, calls=self.spec["warmup"]),
                                  "reference warm-up")
        self.backlog = backlog_for(_floats([warm.get("host_ms")] if isinstance(warm, dict) else None, 1),
                                   self.spec["device"])
        for _ in range(2):
            self._batch("ref", "baseline")
        per_call = sum(b.wall_ms for b in self.batches) / sum(len(b.times) for b in self.batches) / 1e3
        most = max(self.k, -(-self.spec["calls"] // 2))
        self.k = max(self.k, min(most, int(BATCH_S.get(self.spec["device"], 0.0) / max(per_call, 1e-6))))

    def _batch(self, model: str, phase: str, n: int | None = None) -> None:
        """One timed batch: the reference's in the checker, the candidate's in its process, the other one
        frozen meanwhile (nothing it left running, a spinning thread included, competes); this process's
        wall clock times each from request to reply."""
        seeds = [secrets.randbits(62) for _ in range(n or self.k)]
        kw = {"mode": self.mode, "seeds": seeds, "repeat": phase == "repeat", "backlog_ms": self.backlog}
        idle = self.worker if model == "ref" else self.checker
        idle.freeze()
        try:
            t0 = PARENT_CLOCK()
            if model == "ref":
                data = self._from_checker(self.checker.send("batch", **kw), f"reference {self.name} failed while timed")
            else:
                data = self._worker("batch", "candidate raised while timed", **kw)
            wall = (PARENT_CLOCK() - t0) * 1e3
        finally:
            idle.thaw()
        times = _floats(data.get("times") if isinstance(data, dict) else None, len(seeds))
        host = _floats(data.get("host"), len(seeds))
        sketch_ms = _floats(data.get("sketch_ms"), len(seeds))
        sketches = data.get("sketches")
        if not isinstance(sketches, list) or len(sketches) != len(seeds):
            raise Stop("the candidate's process sent a malformed timing reply")
        spin_ms, dispatch = _floats(data.get("spin_ms"), len(seeds)), _floats(data.get("dispatch"), len(seeds))
        late = data.get("late")
        late = [bool(x) for x in late] if isinstance(late, list) and len(late) == len(seeds) else None
        self.batches.append(BatchRecord(model, phase, wall, times, self.backlog, host, sketch_ms, spin_ms, dispatch,
                                        late, _floats(data.get("left_ms"), len(seeds)), timed_set=self.timed_set))
        if model == "cand" and phase == "timed":
            self.timed += list(zip(seeds, sketches, strict=True))

    def _trials(self) -> None:
        seed, n = self.spec["seed"], self.spec["trials"]
        pending = self.checker.send("reference_trial", trial=0, seed=seed, distribution=DISTRIBUTIONS[0])
        for t in range(n):
            self._at(f"reference, trial {t}")
            ref = self._from_checker(pending, f"reference {self.name} failed on trial {t}")
            if t + 1 < n:
                pending = self.checker.send("reference_trial", trial=t + 1, seed=seed + t + 1,
                                            distribution=DISTRIBUTIONS[(t + 1) % len(DISTRIBUTIONS)])
            self._at(f"candidate, trial {t}")
            out = _fields(self._worker("trial", f"candidate raised on trial {t}", trial=t, seed=seed + t,
                                       distribution=ref["distribution"]), "out", "out_b", "inputs_after")
            res = self._from_checker(self.checker.send("check_trial", trial=t, **out),
                                     f"invariants of {self.name} fail on the reference output")
            if "malformed" in res:
                raise Stop(f"the candidate's process sent malformed outputs on trial {t}: {res['malformed']}")
            for name, entry in res["checks"].items():
                self.checks[name] = worse(self.checks.get(name), entry)
            if res["precision"].get("candidate_error", -1.0) > self.precision.get("candidate_error", -1.0):
                self.precision = {**res["precision"], **self._tl_dot()}
            self.trials.append({"trial": t, "seed": seed + t, "distribution": ref["distribution"],
                                "failed": res["failed"], "skipped_invariants": res["skipped"],
                                **({"note": ref["note"]} if ref["note"] else {})})
            if res["failed"]:
                return

    def _tl_dot(self) -> dict[str, str]:
        if not self.spec.get("tl_dot_tf32"):
            return {}
        return {"note": "; the candidate calls Triton's tl.dot without input_precision=\"ieee\", which rounds "
                        "fp32 inputs to TF32"}

    def _profile(self) -> None:
        self._at("profiling one call of each model")
        try:
            ref = self._from_checker(self.checker.send("profile"), "profiling the reference")
        except Stop as e:
            self.checks.update(stream_checks(None, None, e.reason))
            return
        try:
            gpu = _fields(self._worker("profile", "profiling"), "kernels", "escaped")
            self.checks.update(stream_checks(ref, gpu))
        except Stop as e:
            if not self.worker_alive:
                raise
            self.checks.update(stream_checks(None, None, e.reason))

    def _timing(self) -> None:
        self._at("timing")
        warm = max(self.spec["warmup"], self.k)  # at least a batch's worth: the process settles (allocator, threads)
        cand = self._worker("warmup", "candidate raised while timed", mode=self.mode, calls=warm)
        ref = self._from_checker(self.checker.send("warmup", mode=self.mode, calls=self.k), "reference warm-up")
        hosts = [r.get("host_ms") if isinstance(r, dict) else None for r in (ref, cand)]
        self.backlog = backlog_for(_floats(hosts, 2), self.spec["device"])
        self.extra["backlog_ms"] = self.backlog
        self._timed_rounds()
        self._repeat_rounds()
        checks, figures = timing_checks(self.batches, self.th.clock_tol, self.spec["device"])
        again = [name for name in _RETIMED if checks.get(name, {}).get("passed") is False]
        if again:  # load hits some batches: a second set is taken. `clock`'s medians are judged on both sets
            # pooled (a lie told in some batches of each stays in the pooled median, and a load step inside one
            # set widens the checker's spread, the allowance, less), its lows and `reuse` on the second set alone
            first = {name: checks[name] for name in again}
            self._at(f"timing again ({', '.join(again)} failed once)")
            dropped = {_RETIMED[name] for name in again if name not in _POOLED}
            self.batches = [b for b in self.batches if b.phase not in dropped]
            if "clock" in again:
                self.timed_set = 1
                self._timed_rounds()
            if "reuse" in again:
                self._repeat_rounds()
            checks, figures = timing_checks(self.batches, self.th.clock_tol, self.spec["device"])
            figures["first_set"] = first
        self.checks.update(checks)
        self.extra["wall_clock"] = {**figures, "batches": [asdict(b) for b in self.batches]}

    def _repeat_rounds(self) -> None:
        """The repeat probe: two rounds of a reference and a candidate batch, fresh and repeated calls alternating."""
        for m in ("ref", "cand", "cand", "ref"):
            self._batch(m, "repeat", max(4, self.k + self.k % 2))

    def _timed_rounds(self) -> None:
        """`calls` timed calls of each model, in batches alternating ABBA (within the timing budget)."""
        start, done, rnd = PARENT_CLOCK(), {"ref": 0, "cand": 0}, 0
        while min(done.values()) < self.spec["calls"]:
            for m in ("ref", "cand") if rnd % 2 == 0 else ("cand", "ref"):
                n = min(self.k, self.spec["calls"] - done[m]) or self.k
                self._batch(m, "timed", n)
                done[m] += n
            rnd += 1
            if rnd >= 2 and PARENT_CLOCK() - start > self.spec["timing_budget_s"]:
                break

    def _sampled(self) -> None:
        self._at("checking sampled timed calls")
        picks = secrets.SystemRandom().sample(self.timed, min(SAMPLED, len(self.timed)))
        errs = self._from_checker(self.checker.send("check_sketches", mode=self.mode, items=picks),
                                  f"reference {self.name} failed on timing inputs")
        worst = max(float(e) for e in errs)
        trial = float(self.checks["rel_fro"]["value"]) if "rel_fro" in self.checks else 0.0
        limit = min(self.th.rel_fro, max(10 * trial, 1e-4))
        self.checks["timed_outputs"] = check(worst, limit, worst <= limit if self.extra["reproducible"] else None)
        self.extra["sampled_calls"] = len(picks)
        if self.mode == "fixed":
            self.checks["fresh_timed_inputs"] = check("inputs repeat", "fresh inputs", None)

    def _tampering(self) -> None:
        if self.worker_alive and len(self.snapshots) >= 2:
            with contextlib.suppress(Stop):
                self.snapshots.append(_fields(self._worker("snapshot", "snapshot")))
        names = sorted({n for s in self.snapshots[1:] for n in changed(self.snapshots[0], s)})
        if names:
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            self.checks["tampered"] = check(shown, "nothing changed", False)
        elif len(self.snapshots) >= 2:
            self.checks["tampered"] = check("nothing", "nothing changed", True)

    # ---------------------------------------------------------------- the verdict

    def _failed(self) -> bool:
        return any(v["passed"] is False for v in self.checks.values())

    def _result(self, verdict: str, reason: str, **timing: Any) -> dict[str, Any]:
        if self.violations:
            verdict, reason, timing = "fail", "sandbox: " + "; ".join(self.violations), {}
            self.checks["sandbox"] = check("; ".join(self.violations), "nothing outside scratch", False)
        return {"verdict": verdict, "reason": reason, "checks": self.checks, "trials": self.trials,
                "precision": self.precision, **self.extra, **timing}

    def _verdict(self) -> dict[str, Any]:
        if self._failed():
            return self._result("fail", fail_reason(self.checks, self.trials))
        timing = _summary(self.batches) if self.batches else {}
        flags = review_flags(self.checks, timing, self.th, self.precision)
        return self._result("review" if flags else "pass", "; ".join(flags), **timing)


def _summary(batches: list[BatchRecord]) -> dict[str, Any]:
    """Medians, IQRs and speedups (median ratio; lo/hi from the quartiles) of the timed calls, less the sketch."""
    batches = with_sketch_cost(batches)
    ref, cand = times_of(batches, "ref", "timed"), times_of(batches, "cand", "timed")
    (r25, rmed, r75), (c25, cmed, c75) = quartiles(ref), quartiles(cand)
    host = {m: [h for b in batches if b.model == m and b.phase == "timed" for h in b.host or []] for m in ("ref", "cand")}
    late = {m: [x for b in batches if b.model == m and b.phase == "timed" for x in b.late or []] for m in ("ref", "cand")}
    return {"ref_ms": rmed, "candidate_ms": cmed, "ref_ms_iqr": [r25, r75], "candidate_ms_iqr": [c25, c75],
            "ref_host_ms": statistics.median(host["ref"]) if host["ref"] else None,
            "candidate_host_ms": statistics.median(host["cand"]) if host["cand"] else None,
            "ref_late": statistics.fmean(late["ref"]) if late["ref"] else None,
            "candidate_late": statistics.fmean(late["cand"]) if late["cand"] else None,
            "speedup": rmed / cmed if cmed > 0 else float("inf"),
            "speedup_lo": r25 / c75 if c75 > 0 else None, "speedup_hi": r75 / c25 if c25 > 0 else None,
            "timing_runs": len(cand)}


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


_WHY = {
    "tampered": lambda v: f"tampered: {v['value']}",
    "clock": lambda v: (f"clock: by the parent's wall clock each timed call of the candidate took {_fmt(v['value'])} ms "
                        f"more than it reported (allowed {_fmt(v['threshold'])} ms)"),
    "reuse": lambda v: (f"reuse: repeated inputs made the candidate {_fmt(v['value'])}x faster than they made the "
                        f"reference (allowed {_fmt(v['threshold'])}x): it reuses work across calls"),
    "timed_outputs": lambda v: (f"timed_outputs: a sampled timed call's output differs from the reference's "
                                f"(relative error {_fmt(v['value'])}, allowed {_fmt(v['threshold'])})"),
}


def fail_reason(checks: dict[str, dict[str, Any]], trials: list[dict[str, Any]]) -> str:
    """One line naming every failed check, with the first trial it failed on."""
    parts, special = [], []
    for k, v in checks.items():
        if v["passed"] is not False:
            continue
        if k in _WHY:
            special.append(_WHY[k](v))
            continue
        first = next((tr["trial"] for tr in trials if k in tr["failed"]), None)
        where = f"trial {first}: " if first is not None else ""
        parts.append(f"{k} ({where}{_fmt(v['value'])} vs {_fmt(v['threshold'])})")
    return "; ".join(([("failed " + ", ".join(parts))] if parts else []) + special)


def review_flags(checks: dict[str, dict[str, Any]], timing: dict[str, Any], th: Thresholds,
                 precision: dict[str, Any] | None = None) -> list[str]:
    """Why a result whose checks all passed still needs a person's look (empty: it doesn't)."""
    flags = []
    for k, v in checks.items():
        if v["passed"] is not None:
            continue
        if k == "precision" and precision:
            flags.append(f"lower precision than the reference (error vs float64 {_fmt(v['value'])}, the "
                         f"reference's {_fmt(precision.get('reference_error', 0.0))}; consistent with "
                         f"{precision.get('consistent_with') or '?'}){precision.get('note', '')}")
        elif k == "reference_timing":
            flags.append(f"the reference ran {_fmt(v['value'])}x slower with the candidate loaded than before it "
                         f"was imported (allowed {_fmt(v['threshold'])}x): check the timing by hand")
        else:
            flags.append(f"{k} undecided ({_fmt(v['value'])})")
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
