"""A third clock for `verify`'s speedups (issue 25): the profiler's own GPU timestamps of the same kind of calls.

For every honest pair `gpu/verify_adversary.py` lists (expected verdict pass or review), in one process
with no sandbox (these candidates are ours): the reference and the candidate, with the reference's
weights, each run CALLS calls on fresh inputs under torch.profiler (CUDA activity), each call set up as
`verify` sets one up: a 256 MB L2 flush, then a spin kernel of BACKLOG_MS on the caller's stream so the
host's dispatch of the call is hidden behind queued work, then the call inside a
``record_function`` range, then a device-wide synchronize. The call's GPU activities (kernels, copies,
memsets, on any stream) are those whose launch lies in its range (by correlation id); per call:

  busy: the sum of their durations;
  span: from the first one's start to the last one's end (what `verify`'s events bound when the
        host's dispatch is hidden; a host wait inside the call, such as a pageable copy, is in it).

The speedups are the ratios of the medians (reference over candidate). They share nothing with `verify`'s
timing except the flush and the backlog's idea: no CUDA events, no sketches, no worker processes.

    python gpu/verify_arbiter.py OUT.json [--calls 40] [--only stem,stem] [--pair PROBLEM:CANDIDATE ...]
    python gpu/verify_arbiter.py --compare ARBITER.json ... --verify RESULTS.json ...   # the table, no GPU

`--compare` prints, for every measured pair, the arbiter's speedups beside `verify`'s (the newest of the
given verify_adversary results.json files that has the pair) and the previous harness's committed one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "gpu"))

BACKLOG_MS = 2.0


def _spin_cycles(ms: float) -> int:
    """Cycles of torch.cuda._sleep that take about `ms` on this GPU (measured once)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    torch.cuda.synchronize()
    return int(10_000_000 * ms / start.elapsed_time(end))


def per_call(path: Path) -> dict[str, dict[str, float]]:
    """Range name -> busy and span (us) and count of the GPU activities launched inside it, from a trace
    the project's reader loads (`addressable.trace.reader.load_trace`)."""
    import numpy as np

    from addressable.trace.reader import load_trace

    ev = load_trace(path, runtime=True).events
    ranges = ev[(ev["kind"] == "cpu_annotation") & ev["name"].str.contains("#", regex=False)].sort_values("ts")
    launch = ev.loc[ev["kind"] == "runtime"].dropna(subset=["correlation"]).set_index("correlation")["ts"]
    gpu = ev.loc[ev["kind"] == "gpu"].dropna(subset=["correlation"])
    launched = gpu["correlation"].map(launch).to_numpy(dtype=float)
    starts, ends = ranges["ts"].to_numpy(float), (ranges["ts"] + ranges["dur"]).to_numpy(float)
    i = np.searchsorted(starts, launched, side="right") - 1
    inside = (i >= 0) & (launched <= ends[np.clip(i, 0, None)])
    gpu = gpu[inside].assign(call=ranges["name"].to_numpy()[i[inside]], end=lambda d: d["ts"] + d["dur"])
    by = gpu.groupby("call")
    out = {"busy": by["dur"].sum(), "span": by["end"].max() - by["ts"].min(), "activities": by.size()}
    return {name: {k: float(v[name]) for k, v in out.items()} for name in by.groups}


def measure(problem: Path, candidate: Path, calls: int, cycles: int) -> dict[str, Any]:
    """Both models' per-call busy and span medians (us) and the ratios."""
    import torch
    import torch.profiler as tp

    from addressable.verification.harness import copy_weights, load_module, make_inputs, on_device

    mod, cmod = load_module(problem), load_module(candidate)
    init = mod.get_init_inputs()
    models = {"ref": on_device(mod.Model(*init), "cuda"), "cand": on_device(cmod.ModelNew(*init), "cuda")}
    copy_weights(models["ref"], models["cand"])
    inputs = [make_inputs(mod, 1000 + i, "native", "cuda") for i in range(calls)]
    flush = torch.empty(64 * 1024 * 1024, dtype=torch.float32, device="cuda")
    with torch.no_grad():
        for m in models.values():
            for args in inputs[:3]:
                m(*args)
        torch.cuda.synchronize()
        with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.CUDA]) as prof:
            for i, args in enumerate(inputs):
                for who in ("ref", "cand") if i % 2 == 0 else ("cand", "ref"):
                    flush.zero_()
                    torch.cuda._sleep(cycles)
                    with tp.record_function(f"{who}#{i}"):
                        models[who](*args)
                    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        calls_ = per_call(path)
    row: dict[str, Any] = {}
    for who in ("ref", "cand"):
        mine = [v for k, v in calls_.items() if k.startswith(who + "#")]
        for what in ("busy", "span"):
            row[f"{who}_{what}_us"] = statistics.median(v[what] for v in mine)
        row[f"{who}_activities"] = statistics.median(v["activities"] for v in mine)
        row[f"{who}_calls"] = len(mine)
    row["speedup_busy"] = row["ref_busy_us"] / row["cand_busy_us"]
    row["speedup_span"] = row["ref_span_us"] / row["cand_span_us"]
    return row


def compare(arbiter: list[Path], verify: list[Path]) -> list[str]:
    """Markdown rows: pair, arbiter busy and span speedups, verify's speedup [IQR] and its gap to span, the old one."""
    from verify_adversary import old_speedups

    measured = {}
    for path in verify:  # later files win
        for r in json.loads(path.read_text())["results"]:
            if r.get("result", {}).get("speedup"):
                measured[(Path(r["problem"]).stem, Path(r["candidate"]).name)] = (r["result"], path.parent.name)
    old = old_speedups(ROOT)
    lines = ["| problem ← candidate | arbiter busy | arbiter span | verify [IQR] | verify / span | run | old [IQR] | old / span |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for path in arbiter:
        for row in json.loads(path.read_text())["rows"]:
            if "error" in row:
                continue
            v, run = measured.get((row["problem"], row["candidate"]), ({}, ""))
            o = old.get(row["problem"]) if row["group"] in ("examples", "dlrm") else None
            sp = row["speedup_span"]
            ver = f"{v['speedup']:.2f} [{v['speedup_lo']:.2f}–{v['speedup_hi']:.2f}] | {v['speedup'] / sp:.3f}" if v else " | "
            was = f"{o[0]:.2f} [{o[1]:.2f}–{o[2]:.2f}] | {o[0] / sp:.3f}" if o else " | "
            lines.append(f"| {row['problem']} ← {row['candidate']} | {row['speedup_busy']:.2f} | {sp:.2f} | {ver} | {run} | {was} |")
    return lines


def main() -> None:
    """Measure every honest pair (or --only), print a line each, write OUT.json; or, with --compare, the table."""
    from verify_adversary import pairs

    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path, nargs="?")
    ap.add_argument("--compare", type=Path, nargs="+", default=[], help="arbiter JSON files: print the table")
    ap.add_argument("--verify", type=Path, nargs="+", default=[], help="verify_adversary results.json files, oldest first")
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--only", default="", help="candidate or problem stems, comma-separated")
    ap.add_argument("--pair", action="append", default=[], help="PROBLEM:CANDIDATE, measured too (group 'extra')")
    args = ap.parse_args()
    if args.compare:
        print("\n".join(compare(args.compare, args.verify)))
        return
    if args.out is None:
        ap.error("OUT is required unless --compare is given")
    import torch

    cycles = _spin_cycles(BACKLOG_MS)
    honest = [p for p in pairs(ROOT, ROOT) if p["expect"].split(":")[0] in ("pass", "review")
              and "cheat" not in p["candidate"].name]
    if args.only:
        keep = args.only.split(",")
        honest = [p for p in honest if p["candidate"].stem in keep or p["problem"].stem in keep]
    honest += [{"problem": Path(a), "candidate": Path(b), "group": "extra"} for a, b in (x.split(":") for x in args.pair)]
    rows = []
    for p in honest:
        try:
            row = measure(p["problem"], p["candidate"], args.calls, cycles)
        except Exception as e:  # one broken pair is a row, not the end of the run
            row = {"error": f"{type(e).__name__}: {e}"[:300]}
        row.update(problem=p["problem"].stem, candidate=p["candidate"].name, group=p["group"])
        rows.append(row)
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    args.out.write_text(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
                                    "backlog_ms": BACKLOG_MS, "calls": args.calls, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
