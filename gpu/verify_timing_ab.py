"""What moves the honest speedups `verify` reports (issue 25, point 6): the timing's parts, one at a time.

For each honest pair (the shipped Triton examples and the DLRM-Bench candidates), the reference and
the candidate are built in this one process and timed with the harness's own `Timer` under the
configurations of --configs (default: old, fresh, batch, batch_fresh), each with and without the
backlog (`+bl`: the GPU spin `verify` now puts before each timed call, `timing.backlog_for` of the two
models' warm-up host times), each repeated REPS times, interleaved within each repetition (so that
drift hits all of them alike):

  old       native inputs every call, reference and candidate alternating call by call (the harness
            before issue 25, f49e624 `time_calls`);
  fresh     verify's fresh inputs (its mode: redraw, else permute), call by call;
  permute   fresh inputs by permuting the native draw (the native distribution kept), call by call;
  batch     native inputs, batches of 5 calls alternating ABBA, each output sketched (verify's order);
  batch_fresh  verify's fresh inputs, batches of 5, sketched: verify's timed path, in one process;
  batch_perm   permuted inputs, batches of 5, sketched.

Then `verify` itself (two processes, sandboxed) once per pair, with the settings of
gpu/verify_adversary.py. Every figure is the median ratio (reference median / candidate median) with
its quartile bounds, as verify reports it. The spread of `old` over its repetitions is the old
harness's own run-to-run noise, which the old IQR (one run's quartiles) does not show.

    python3 gpu/verify_timing_ab.py OUT [--reps 5] [--calls 60] [--only stem,...] [--configs ...] [--no-verify]
    TRITON_INTERPRET=1 python gpu/verify_timing_ab.py OUT --device cpu --small --reps 1 --calls 4  # a dry run
Writes OUT/timing_ab.csv (one row per pair, configuration and repetition) and OUT/verify.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import verify_adversary as va  # noqa: E402  (gpu/ is on sys.path when run as a script)

from addressable.verification.fresh import FreshInputs  # noqa: E402
from addressable.verification.harness import (  # noqa: E402
    as_outputs,
    call,
    copy_weights,
    load_module,
    make_inputs,
    on_device,
    quartiles,
    seed_all,
)
from addressable.verification.roles import load_reference  # noqa: E402
from addressable.verification.timing import Timer, backlog_for, take_clocks  # noqa: E402

CONFIGS = ("old", "fresh", "batch", "batch_fresh")  # the default of --configs; each also with "+bl"
BATCH = 5
DEV = "cuda"  # --device cpu: a dry run (with TRITON_INTERPRET=1 and small sizes)


def honest_pairs() -> list[dict[str, Any]]:
    """The examples' and DLRM-Bench's honest pairs of gpu/verify_adversary.py, in its order."""
    return [p for p in va.pairs(ROOT, ROOT) if p["group"] in ("examples", "dlrm")
            and not p["notes"].endswith("02_embedding_bag_sum_zipf")]


def build(p: dict[str, Any]) -> tuple[Any, Any, list]:
    """(reference, candidate with the reference's weights, native inputs) on the device, as verify builds them."""
    ref = load_reference({"problem": p["problem"], "overrides": p["overrides"], "seed": 42, "device": DEV})
    seed_all(42)
    cand = on_device(load_module(p["candidate"]).ModelNew(*copy.deepcopy(ref.init)), DEV)
    copy_weights(ref.model, cand)
    return ref.model, cand, make_inputs(ref.problem, 42, "native", DEV)


def verify_mode(ref: Any, native: list) -> str:
    """The fresh-input mode verify would choose (`ReferenceSide.choose_mode`)."""
    for mode in ("redraw", "permute"):
        try:
            as_outputs(call(ref, FreshInputs(native, mode).draw(1), DEV), "reference")
            return mode
        except Exception:
            continue
    return "fixed"


def draws(native: list, mode: str) -> Any:
    if mode == "fixed":
        return lambda s: native
    fresh = FreshInputs(native, mode)
    return fresh.draw


def per_call(timer: Timer, models: dict[str, Any], draw: Any, calls: int, bl: float) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in models}
    for i in range(calls):
        for k in (list(models) if i % 2 == 0 else list(models)[::-1]):
            t = timer.call(models[k], draw(secrets.randbits(62)), 0, bl)
            times[k].append(t.net_ms)
            times[k + "_host"] = [*times.get(k + "_host", []), t.host_ms]
    return times


def batched(timer: Timer, models: dict[str, Any], draw: Any, calls: int, key: int, bl: float) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in models}
    for rnd in range(-(-calls // BATCH)):
        for k in (list(models) if rnd % 2 == 0 else list(models)[::-1]):
            seeds = [secrets.randbits(62) for _ in range(BATCH)]
            r = timer.batch(models[k], draw, seeds, key, backlog_ms=bl)
            times[k] += [max(t - s, 1e-6) for t, s in zip(r["times"], r["sketch_ms"], strict=True)]
            times[k + "_host"] = [*times.get(k + "_host", []), *r["host"]]
    return times


def row(stem: str, cfg: str, rep: int, t: dict[str, list[float]]) -> dict[str, Any]:
    (r25, rmed, r75), (c25, cmed, c75) = quartiles(t["ref"]), quartiles(t["cand"])
    return {"pair": stem, "config": cfg, "rep": rep, "ref_ms": rmed, "cand_ms": cmed,
            "ref_host_ms": statistics.median(t["ref_host"]), "cand_host_ms": statistics.median(t["cand_host"]),
            "ref_rel_iqr": (r75 - r25) / rmed, "cand_rel_iqr": (c75 - c25) / cmed,
            "speedup": rmed / cmed, "lo": r25 / c75, "hi": r75 / c25}


def time_pair(p: dict[str, Any], reps: int, calls: int, configs: tuple[str, ...] = CONFIGS) -> list[dict[str, Any]]:
    """Every configuration, `reps` times, interleaved."""
    import torch

    ref, cand, native = build(p)
    timer, key, stem = Timer(take_clocks(DEV), DEV), secrets.randbits(62), Path(p["problem"]).stem
    mode = verify_mode(ref, native)
    src = {"old": "fixed", "fresh": mode, "permute": "permute", "batch": "fixed", "batch_fresh": mode,
           "batch_perm": "permute"}
    src = {k: v for k, v in src.items() if k in configs}
    fns = {}
    for cfg, m in src.items():
        try:
            fns[cfg] = draws(native, m)
            as_outputs(call(ref, fns[cfg](7), DEV), "reference")
        except Exception as e:
            print(f"  {stem}: {cfg} ({m}) rejected: {e}"[:200], flush=True)
            fns.pop(cfg)
    models = {"ref": ref, "cand": cand}
    with torch.no_grad():
        w = per_call(timer, models, fns["old"], 10, 0.0)
    bl = backlog_for([statistics.median(w["ref_host"]), statistics.median(w["cand_host"])], DEV)
    print(f"  backlog {bl:.3f} ms (host ms: ref {statistics.median(w['ref_host']):.3f}, "
          f"cand {statistics.median(w['cand_host']):.3f})", flush=True)
    out = []
    for rep in range(reps):
        for cfg, draw in fns.items():
            for b in dict.fromkeys((0.0, bl)):
                with torch.no_grad():
                    t = (batched(timer, models, draw, calls, key, b) if cfg.startswith("batch")
                         else per_call(timer, models, draw, calls, b))
                out.append({**row(stem, cfg + ("+bl" if b else ""), rep, t), "backlog_ms": b,
                            "mode": src[cfg] if src[cfg] != "fixed" else "native"})
    for cfg in dict.fromkeys(r["config"] for r in out):
        sp = [r["speedup"] for r in out if r["config"] == cfg]
        print(f"  {stem:34s} {cfg:12s} median {statistics.median(sp):.3f}  reps {min(sp):.3f}-{max(sp):.3f}",
              flush=True)
    del ref, cand, native
    torch.cuda.empty_cache()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--budget", type=float, default=500.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="of old, fresh, permute, batch, batch_fresh, batch_perm (comma-separated)")
    ap.add_argument("--small", action="store_true", help="small sizes: a CPU dry run (TRITON_INTERPRET=1)")
    args = ap.parse_args()
    global DEV
    DEV = args.device
    import pandas as pd

    args.out.mkdir(parents=True, exist_ok=True)
    pairs = honest_pairs()
    if args.only:
        pairs = [p for p in pairs if Path(p["problem"]).stem in args.only.split(",")]
    if args.small:
        pairs = [{**p, "overrides": va.small_sizes(Path(p["problem"]))} for p in pairs]
    t0, rows, verified = time.monotonic(), [], []
    for p in pairs:
        print(f"{Path(p['problem']).stem}", flush=True)
        rows += time_pair(p, args.reps, args.calls, tuple(args.configs.split(",")))
        pd.DataFrame(rows).to_csv(args.out / "timing_ab.csv", index=False)
    print(f"single-process configurations: {time.monotonic() - t0:.0f} s", flush=True)
    if not args.no_verify:
        verify = va._import_verify(ROOT)
        for p in pairs:
            left = args.budget - (time.monotonic() - t0)
            if left < 30:
                print("budget spent: verify skipped for the rest", flush=True)
                break
            r = va.run_one(verify, p, DEV, left)
            d = r["result"]
            print(f"  verify {Path(p['problem']).stem:34s} {r['verdict']:6s} {d.get('speedup', 0):.3f} "
                  f"[{d.get('speedup_lo') or 0:.3f}-{d.get('speedup_hi') or 0:.3f}] {r['wall_s']:.0f} s", flush=True)
            verified.append({"pair": Path(p["problem"]).stem, "verdict": r["verdict"], "reason": r["reason"],
                             **{k: d.get(k) for k in ("speedup", "speedup_lo", "speedup_hi", "ref_ms", "candidate_ms",
                                                      "ref_ms_iqr", "candidate_ms_iqr", "timed_inputs")},
                             "wall_s": r["wall_s"]})
            (args.out / "verify.json").write_text(json.dumps(verified, indent=1))
    print(f"done in {time.monotonic() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
