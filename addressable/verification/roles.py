"""The two helper processes of a verification: the reference checker and the candidate's process.

`ReferenceSide` (the checker) never runs candidate code. It builds the reference, draws every input
itself, computes the reference's outputs (and float64 outputs, `precision`) and compares what the
candidate's process sends: each trial's outputs and inputs in full, and the sketches of sampled
timed calls, which it recomputes from their seeds.

`CandidateSide` builds the reference too (for its weights, and to time it against the candidate in
one process), takes its clocks and a tampering snapshot and times the reference before it imports
the candidate (the trusted baseline), then imports the candidate under the guard, runs it on the
trials' inputs with poisoned memory, and times both models. Everything it reports after the
import is a claim that the parent and the checker verify.
"""

from __future__ import annotations

import copy
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from addressable.verification import tamper
from addressable.verification.channel import ChannelError, decode, serve
from addressable.verification.checks import (
    Thresholds,
    check,
    compare_output,
    fresh_check,
    gpu_work,
    invariant_checks,
    n_modified,
    one_thread,
    poisoned_allocations,
    profile_call,
    sketch,
    sketch_error,
    worse,
)
from addressable.verification.fresh import MODES, FreshInputs, problem_draw, problem_draws_unusable
from addressable.verification.harness import (
    as_outputs,
    call,
    clone,
    copy_weights,
    environment,
    load_module,
    make_inputs,
    on_device,
    one_line,
    seed_all,
    tensors,
)
from addressable.verification.precision import as_float64, float64_model, precision_check, rounding_errors
from addressable.verification.sandbox import Guard, apply_limits, limit_reason
from addressable.verification.timing import Timer, take_clocks

_POISON = (0xFF, 0x42)  # byte patterns: 0xFF is NaN in every float dtype, 0x42 a finite value


@dataclass
class Reference:
    """The problem module, its declared invariants, and the reference model built from its init inputs."""

    problem: ModuleType
    invariants: list
    custom: Any  # the problem's check_invariants, or None
    init: list  # get_init_inputs(), drawn under the seed
    model: Any


def load_reference(spec: dict[str, Any]) -> Reference:
    """Load the problem file (with its overrides) and build the reference model under the seed."""
    from addressable.verification.invariants import parse_invariants

    problem = load_module(spec["problem"], spec["overrides"])
    invariants = parse_invariants(getattr(problem, "INVARIANTS", None), f"{Path(spec['problem']).name} INVARIANTS")
    seed_all(spec["seed"])
    init = list(problem.get_init_inputs())
    seed_all(spec["seed"])
    model = on_device(problem.Model(*copy.deepcopy(init)), spec["device"])
    return Reference(problem, invariants, getattr(problem, "check_invariants", None), init, model)


def reference_outputs(ref: Reference, dist: str, seed: int, device: str) -> tuple[list, list, str, str]:
    """A trial's inputs drawn from `dist` and the reference's outputs on them; native inputs instead
    (with a note) when the reference rejects re-drawn ones. Returns (inputs, outputs, dist, note)."""
    try:
        inputs = make_inputs(ref.problem, seed, dist, device)
        return inputs, as_outputs(call(ref.model, clone(inputs), device), "reference"), dist, ""
    except Exception as e:
        if dist == "native":
            raise
        note = f"reference rejected {dist} inputs ({one_line(e)[:120]}); used native"
        inputs = make_inputs(ref.problem, seed, "native", device)
        return inputs, as_outputs(call(ref.model, clone(inputs), device), "reference"), "native", note


class _Side:
    """What both helpers share: the spec, the reference, timed-call inputs by mode, and timed batches."""

    spec: dict[str, Any]
    ref: Reference
    native: list
    timer: Timer | None = None

    def _setup(self, spec: dict[str, Any]) -> None:
        self.spec, self.device, self.key = spec, spec["device"], spec["sketch_key"]
        self.clocks = take_clocks(self.device)
        self.ref = load_reference(spec)
        self.native = make_inputs(self.ref.problem, spec["seed"], "native", self.device)
        self.fresh: dict[str, FreshInputs] = {}
        if spec["calls"] > 0:
            self.timer = Timer(self.clocks, self.device)

    def _problem_draw(self, seed: int) -> list:
        return problem_draw(self.ref.problem, seed, self.device)

    def _draw(self, mode: str, seed: int) -> list:
        if mode not in self.fresh:
            self.fresh[mode] = FreshInputs(self.native, mode, self._problem_draw)
        return self.fresh[mode].draw(seed)

    def _model(self) -> Any:
        return self.ref.model

    def probe(self, mode: str, seed: int) -> list:
        """Sketches of the timed-call inputs drawn for `seed` (both helpers must draw the same)."""
        return [sketch(t, self.key) for t in tensors(self._draw(mode, seed))]

    def warmup(self, mode: str, calls: int) -> dict[str, float]:
        """`calls` untimed calls, through the timed batch's own code (draws and sketches included, so that
        nothing runs for the first time in a timed batch); returns their median host time per call, to the
        dispatch of the output's sketch (what the backlog must outlast)."""
        host = self.batch(mode, list(range(max(calls, 2))))["dispatch"]
        return {"host_ms": statistics.median(host[len(host) // 2:])}

    def batch(self, mode: str, seeds: list[int], repeat: bool = False, backlog_ms: float = 0.0) -> dict[str, Any]:
        """One timed batch of this side's model (`timing.Timer.batch`)."""
        assert self.timer is not None, "setup with calls > 0 comes first"
        return self.timer.batch(self._model(), lambda s: self._draw(mode, s), seeds, self.key, repeat, backlog_ms)

    def _profile(self, model: Any) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="addressable-profile-") as d:
            return gpu_work(profile_call(model, clone(self.native), Path(d) / "trace.json"))

    def profile(self) -> dict[str, Any]:
        """What one profiled call of this side's model did on the GPU (`checks.gpu_work`)."""
        return self._profile(self._model())


class ReferenceSide(_Side):
    """The checker: the reference's outputs on every input, and the comparisons (see the module docstring)."""

    def __init__(self, exchange: Path | None = None) -> None:
        self.exchange = exchange
        self.trials: dict[int, tuple[list, list, list | None]] = {}
        self.prev: list[tuple[Any, Any]] | None = None
        self.errs: dict[str, float] | None = None

    def setup(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Load the problem, build the reference and its float64 copy."""
        if spec.get("isolated"):
            apply_limits(spec["limits"])
        self._setup(spec)
        self.th = Thresholds(**spec["thresholds"])
        self.model64, self.note64 = float64_model(self.ref.model)
        return {"float64": self.model64 is not None, "float64_note": self.note64}

    def choose_mode(self, seed: int) -> dict[str, str]:
        """The first fresh-input mode whose draws the reference accepts ("fixed" when none is)."""
        errors: list[str] = []
        for mode in MODES[:-1]:
            why = problem_draws_unusable(self.native, self._problem_draw, seed) if mode == "problem" else ""
            if why:
                errors.append(f"problem inputs unusable ({why})")
                continue
            try:
                as_outputs(call(self.ref.model, clone(self._draw(mode, seed)), self.device), "reference")
                return {"mode": mode, "note": "; ".join(errors)}
            except Exception as e:
                errors.append(f"reference rejected {mode} timing inputs ({one_line(e)[:100]})")
        return {"mode": "fixed", "note": "; ".join(errors)}

    def same_probe(self, mode: str, seed: int, sketches: list) -> bool:
        """Whether the candidate's process drew the same timed-call inputs for `seed` as this one."""
        import torch

        theirs, mine = decode(sketches, self.exchange), self.probe(mode, seed)
        return len(theirs) == len(mine) and all(torch.equal(a, b) for a, b in zip(theirs, mine, strict=True))

    def _run64(self, inputs: list) -> list | None:
        if self.model64 is None:
            return None
        try:
            return [o.detach() for o in as_outputs(call(self.model64, as_float64(inputs), self.device), "reference")]
        except Exception as e:
            self.model64, self.note64 = None, f"it raised in float64 ({one_line(e)[:100]})"
            return None

    def reference_trial(self, trial: int, seed: int, distribution: str) -> dict[str, str]:
        """Compute and keep trial `trial`'s inputs, reference outputs and float64 outputs."""
        inputs, ref_out, dist, note = reference_outputs(self.ref, distribution, seed, self.device)
        self.trials[trial] = (clone(inputs), ref_out, self._run64(inputs))
        return {"distribution": dist, "note": note}

    def check_trial(self, trial: int, out: list, out_b: list, inputs_after: list) -> dict[str, Any]:
        """The checks of trial `trial`'s candidate outputs (see `runner` for the list)."""
        with one_thread():
            return self._check_trial(trial, out, out_b, inputs_after)

    def _check_trial(self, trial: int, out: list, out_b: list, inputs_after: list) -> dict[str, Any]:
        pristine, ref_out, out64 = self.trials.pop(trial)
        try:
            out, out_b, after = (_tensor_list(decode(x, self.exchange, self.device)) for x in (out, out_b, inputs_after))
        except (ChannelError, OSError, TypeError) as e:
            return {"malformed": one_line(e)}
        tc: dict[str, dict[str, Any]] = {}
        if len(out) != len(ref_out):
            tc["shape"] = check(f"{len(out)} outputs", f"{len(ref_out)} outputs", False)
        errs = []
        for i, (r, c) in enumerate(zip(ref_out, out, strict=False)):
            cb = out_b[i] if len(out_b) == len(out) else c[:0]
            entries, err = compare_output(r, c, cb, self.th, out64[i] if out64 and r.is_floating_point() else None)
            errs += [err] if err else []
            for name, entry in entries.items():
                tc[name] = worse(tc.get(name), entry)
        self._inputs_unchanged(tc, pristine, after)
        self._fresh(tc, ref_out, out)
        inv, skipped = invariant_checks(self.ref.invariants, self.ref.custom, pristine, ref_out, out, self.th)
        tc.update(inv)
        summary = self._precision(tc, errs, pristine, ref_out, out64, out)
        return {"checks": tc, "failed": [k for k, v in tc.items() if v["passed"] is False], "skipped": skipped,
                "precision": summary}

    def _inputs_unchanged(self, tc: dict, pristine: list, after: list) -> None:
        before = tensors(pristine)
        n_in = max(sum(x.numel() for x in before), 1)
        if len(after) != len(before):
            modified = n_in
        else:
            modified = sum(n_modified(a, b) for a, b in zip(after, before, strict=True))
        tc["inputs_unchanged"] = check(modified / n_in, 0, modified == 0)

    def _fresh(self, tc: dict, ref_out: list, out: list) -> None:
        cur = list(zip(ref_out, out, strict=False))
        for before, now in zip(self.prev or [], cur, strict=False):
            entry = fresh_check(before, now, self.th)
            if entry is not None:
                tc["fresh"] = worse(tc.get("fresh"), entry)
        self.prev = cur

    def _precision(self, tc: dict, errs: list, pristine: list, ref_out: list, out64: list | None,
                   out: list) -> dict[str, Any]:
        """The `precision` check of one trial (against the problem's dtype when there is no float64 output)."""
        floats = [r for r in ref_out if r.is_floating_point()]
        if not floats or len(out) != len(ref_out) or any(c.shape != r.shape for r, c in zip(ref_out, out, strict=True)):
            return {}
        dtype = str(floats[0].dtype).removeprefix("torch.")
        if out64 is not None and errs:
            err_c, err_r = max(e[0] for e in errs), max(e[1] for e in errs)
        else:
            err_c, err_r = tc["rel_fro"]["value"], 0.0
        entry, summary = precision_check(err_c, err_r, dtype, self.th.precision_ratio, None, None)
        if entry["value"] > entry["threshold"]:
            self.errs = self.errs or self._rounding_errors(pristine, out64 or [r.double() for r in ref_out])
            entry, summary = precision_check(err_c, err_r, dtype, self.th.precision_ratio, self.errs,
                                             self.spec.get("allow_precision"))
        tc["precision"] = entry
        return {**summary, "dtype": dtype, "float64": out64 is not None, "float64_note": self.note64}

    def _rounding_errors(self, inputs: list, out64: list) -> dict[str, float]:
        """The e_P of `precision.rounding_errors` ({} when the reference cannot run on rounded inputs)."""
        def run(xs: list) -> list:
            if self.model64 is not None:
                return [o.detach() for o in as_outputs(call(self.model64, xs, self.device), "reference")]
            back = [x.to(o.dtype) if hasattr(x, "dtype") and x.is_floating_point() else x
                    for x, o in zip(xs, inputs, strict=True)]
            return [o.double() for o in as_outputs(call(self.ref.model, back, self.device), "reference")]

        try:
            return rounding_errors(run, inputs, out64)
        except Exception:
            return {}

    def check_sketches(self, mode: str, items: list) -> list[float]:
        """For each (seed, sketches) of a timed call: the estimated relative error against the reference there."""
        out = []
        for seed, sketches in items:
            ref_out = as_outputs(call(self.ref.model, self._draw(mode, seed), self.device), "reference")
            cand = [decode(s, self.exchange) for s in sketches]
            out.append(sketch_error(cand, [sketch(r, self.key) for r in ref_out]))
        return out


def _tensor_list(x: Any) -> list:
    """`x` when it is a list of tensors, else TypeError."""
    import torch

    if not isinstance(x, list) or not all(isinstance(t, torch.Tensor) for t in x):
        raise TypeError(f"expected a list of tensors, got {type(x).__name__}")
    return x


class CandidateSide(_Side):
    """The candidate's process (see the module docstring); `guard` is installed before the candidate is imported."""

    def __init__(self, guard: Guard | None = None) -> None:
        self.guard = guard
        self.cand: Any = None

    def setup(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Limits, the guard (not yet installed), the clocks, the reference; the tampering snapshot before the import."""
        if spec.get("isolated"):
            apply_limits(spec["limits"])
            self.guard = Guard([Path(spec["scratch"]), Path(spec["exchange"])], [Path(h) for h in spec["homes"]],
                               spec["limits"]["processes"])
        self._setup(spec)
        return {"snapshot": tamper.snapshot(self.device)}

    def limit_reason(self, e: BaseException) -> str | None:
        """"sandbox: ..." when an exception is a resource limit at work (`sandbox.limit_reason`)."""
        return limit_reason(e, self.spec["limits"]) if hasattr(self, "spec") else None

    def reply_extra(self) -> dict[str, Any]:
        """What every reply carries: the guard's violations so far."""
        return {"violations": list(self.guard.violations)} if self.guard else {}

    def _model(self) -> Any:
        return self.cand

    def load_candidate(self) -> dict[str, Any]:
        """Import the candidate under the guard and build its ModelNew with the reference's weights; the
        reference itself is then dropped (it is timed and checked in the checker)."""
        if self.guard is not None:
            self.guard.install()
        mod = load_module(self.spec["candidate"])
        model_new = getattr(mod, "ModelNew", None)
        if model_new is None:
            raise AttributeError("candidate defines no ModelNew")
        seed_all(self.spec["seed"])
        self.cand = on_device(model_new(*copy.deepcopy(self.ref.init)), self.device)
        copy_weights(self.ref.model, self.cand)
        self.ref.model = None
        return {"snapshot": tamper.snapshot(self.device), "env": environment(self.device)}

    def trial(self, trial: int, seed: int, distribution: str) -> dict[str, Any]:
        """The candidate's outputs with fresh memory poisoned two ways, and its inputs after the first call."""
        inputs = make_inputs(self.ref.problem, seed, distribution, self.device)
        pristine = clone(inputs)
        nbytes = 4 * sum(x.numel() * x.element_size() for x in tensors(inputs))
        with poisoned_allocations(_POISON[0], self.device, nbytes):
            out = [o.detach().clone() for o in as_outputs(call(self.cand, inputs, self.device), "candidate")]
        with poisoned_allocations(_POISON[1], self.device, nbytes):
            out_b = as_outputs(call(self.cand, clone(pristine), self.device), "candidate")
        return {"out": out, "out_b": out_b, "inputs_after": tensors(inputs)}

    def snapshot(self) -> dict[str, str]:
        """The tampering snapshot now (`tamper.snapshot`)."""
        return tamper.snapshot(self.device)


def main() -> None:
    """Helper-process entry: `python -c ... ROLE REQUESTS_FD REPLIES_FD EXCHANGE_DIR`."""
    role, req, rep, exchange = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    obj = ReferenceSide(exchange) if role == "reference" else CandidateSide()
    serve(obj, req, rep, exchange)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: a candidate's atexit hooks or threads cannot hang us
