"""Adversarial and honest candidates through `addressable verify` on one GPU, and old vs new timing.

Reproduces docs/verification.md's adversarial-kernel table (results/h200/verify_adversarial/).

1. verify (contained subprocess each) of the stream-escape cheats (Python side stream, C++ extension on
   its own non-blocking stream), our versions of KernelBench's zero_out and result_reuse, and honest
   matmuls (caller's stream; a side stream the caller waits on), on a 4096² fp32 matmul;
2. the same-run timing comparison: for each pair, the old timing (end event on the current stream)
   and the new one (end event after a device-wide synchronize), alternated in one process (the
   Python side-stream cheat, the honest matmul, the four Triton pairs, three DLRM-Bench pairs);
3. verify of the shipped Triton candidates (examples/candidates) and the DLRM-Bench candidates.

Writes $OUT/adversarial.md (the table of docs/verification.md), $OUT/timing.csv, $OUT/verify.json (every result) and
prints progress. Stops starting new work after --budget seconds (default 200).
Run from the repository root: python gpu/verify_adversarial.py --out $OUT
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from addressable.verification.harness import (  # noqa: E402
    load_module,
    make_inputs,
    on_device,
    quartiles,
    seed_all,
    time_calls,
)
from addressable.verification.runner import EXIT_CODES, verify  # noqa: E402
from addressable.verification.sandbox import sandbox_available  # noqa: E402

ZOO = ROOT / "tests" / "verification" / "zoo"
EX = ROOT / "examples"
BENCH = ROOT / "addressable" / "dlrm_bench"
MATMUL = ZOO / "matmul.py"
ADVERSARIAL = [  # candidate, what it is, the check it must fail (None: must pass)
    ("cheat_side_stream", "Python side stream, no wait_stream", "stream_escape"),
    ("cheat_stream_ext", "C++ extension, own cudaStreamNonBlocking stream", "stream_escape"),
    ("cheat_zero_out", "zero_out (KernelBench idea)", "rel_fro"),
    ("cheat_result_reuse", "result_reuse (KernelBench idea)", "sentinel"),
    ("honest_matmul", "honest torch.mm", None),
    ("honest_side_stream", "honest side stream the caller waits on", None),
]
TRITON = [(EX / "problems" / f"{s}.py", EX / "candidates" / f"{s}_triton.py", {}) for s in
          ("01_softmax_long_rows", "02_rmsnorm", "03_layernorm", "04_frobenius_norm")]
DLRM = [(BENCH / "problems" / f"{p}.py", BENCH / "candidates" / f"{c}.py", o) for p, c, o in (
    ("05_jagged_to_padded_dense", "05_jagged_to_padded_dense", {}),
    ("11_hash_sparse_ids", "11_hash_sparse_ids", {}),
    ("12_dense_adagrad_step", "12_dense_adagrad_step", {}),
    ("09_concat_interaction_input", "09_concat_interaction_input", {}),
    ("06_dot_interaction", "06_dot_interaction", {}),
    ("01_embedding_bag_sum_uniform", "01_embedding_bag_sum_uniform", {"ROW_CAP": 100_000}),
)]


def compare_timing(problem: Path, candidate: Path, overrides: dict, calls: int, device: str) -> dict:
    """Old and new timing of one pair in this process, alternated: medians, IQRs and speedups."""
    import torch

    mod = load_module(problem, overrides)
    seed_all(0)
    init = list(mod.get_init_inputs())
    ref = on_device(mod.Model(*copy.deepcopy(init)), device)
    cand = on_device(load_module(candidate).ModelNew(*copy.deepcopy(init)), device)
    inputs = make_inputs(mod, 0, "native", device)
    row = {"problem": problem.stem, "candidate": candidate.stem}
    for label, sync in (("old", False), ("new", True), ("old2", False), ("new2", True)):
        t = time_calls({"ref": ref, "cand": cand}, inputs, device, calls, 3, 4.0, device_sync=sync)
        key = label.rstrip("2")
        for who in ("ref", "cand"):
            row.setdefault(f"{key}_{who}", []).extend(t[who])
    out = {**row}
    for key in ("old", "new"):
        (r25, rm, r75), (c25, cm, c75) = quartiles(row[f"{key}_ref"]), quartiles(row[f"{key}_cand"])
        out.update({f"{key}_ref_ms": rm, f"{key}_cand_ms": cm, f"{key}_cand_iqr": [c25, c75],
                    f"{key}_speedup": rm / cm, f"{key}_lo": r25 / c75, f"{key}_hi": r75 / c25})
        del out[f"{key}_ref"], out[f"{key}_cand"]
    del ref, cand, inputs
    if device == "cuda":
        torch.cuda.empty_cache()
    return out


def write_outputs(out: Path, sandbox: str, results: list, timing: list, skipped: list) -> list[str]:
    """verify.json, adversarial.md and timing.csv from what has run so far; returns the markdown lines."""
    (out / "verify.json").write_text(json.dumps({"sandbox": sandbox, "results": results, "timing": timing,
                                                      "skipped": skipped}, indent=1) + "\n")
    lines = ["| candidate (4096² fp32 matmul unless named) | verdict | failed check | old timing | new timing |",
             "| --- | --- | --- | --- | --- |"]
    tmap = {(t["problem"], t["candidate"]): t for t in timing}
    for r in results:
        t = tmap.get((Path(r["problem"]).stem, Path(r["candidate"]).stem))
        old = f"{t['old_speedup']:.2f}× [{t['old_lo']:.2f}–{t['old_hi']:.2f}]" if t else ""
        new = f"{t['new_speedup']:.2f}× [{t['new_lo']:.2f}–{t['new_hi']:.2f}]" if t else ""
        name = r["what"] or f"{Path(r['problem']).stem} ← {Path(r['candidate']).name}"
        lines.append(f"| {name} | {r['verdict']} (exit {EXIT_CODES[r['verdict']]}) "
                     f"| {', '.join(r['failed_checks']) or '–'} | {old} | {new} |")
    lines += ["", "| problem ← candidate | old speedup [IQR] | new speedup [IQR] | new within old IQR |",
              "| --- | --- | --- | --- |"]
    for t in timing:
        within = t["old_lo"] <= t["new_speedup"] <= t["old_hi"]
        lines.append(f"| {t['problem']} ← {t['candidate']} | {t['old_speedup']:.2f}× [{t['old_lo']:.2f}–{t['old_hi']:.2f}] "
                     f"| {t['new_speedup']:.2f}× [{t['new_lo']:.2f}–{t['new_hi']:.2f}] | {'yes' if within else 'NO'} |")
    (out / "adversarial.md").write_text("\n".join(lines) + "\n")
    with open(out / "timing.csv", "w") as f:
        cols = [k for k in timing[0] if not isinstance(timing[0][k], list)] if timing else []
        f.write(",".join(cols) + "\n")
        f.writelines(",".join(str(t[c]) for c in cols) + "\n" for t in timing)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget", type=float, default=200.0)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of this script (no stream checks)")
    ap.add_argument("--matmul-n", type=int, default=4096, help="N of the matmul problem")
    args = ap.parse_args()
    mm = {"N": args.matmul_n} if args.matmul_n != 4096 else {}
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    left = lambda: args.budget - (time.monotonic() - start)  # noqa: E731
    box = sandbox_available()
    print(f"sandbox: {box.kind} {box.note}", flush=True)
    results, timing, skipped = [], [], []

    def run(problem: Path, candidate: Path, overrides: dict, group: str, what: str = "", expect: str | None = None) -> None:
        if left() < 10:
            skipped.append(f"{problem.stem} <- {candidate.name}")
            return
        r = verify(problem, candidate, device=args.device, overrides=overrides, calls=args.calls, warmup=3,
                   timing_budget_s=4.0, timeout=min(150.0, max(left(), 10.0)))
        failed = sorted(k for k, v in r.checks.items() if v["passed"] is False)
        ok = (r.verdict == "fail" and (expect in failed or expect in r.reason)) if expect else r.verdict == "pass"
        results.append({"group": group, "what": what, "expect": expect or "pass", "as_expected": ok,
                        "failed_checks": failed, **r.to_dict()})
        print(f"[{time.monotonic() - start:5.0f} s] {group:<12}{problem.stem} <- {candidate.name}: {r.verdict} "
              f"exit {r.exit_code} {'' if ok else 'UNEXPECTED '}{r.reason[:160]}"
              + (f" speedup {r.speedup:.2f}x" if r.speedup else ""), flush=True)
        write_outputs(args.out, box.kind, results, timing, skipped)

    for stem, what, expect in ADVERSARIAL:
        run(MATMUL, ZOO / f"{stem}.py", mm, "adversarial", what, expect)
    # the C++ cheat is left out here: a second build of it would cost ~30 s (verify built it once)
    for problem, candidate, over in [(MATMUL, ZOO / "cheat_side_stream.py", mm), (MATMUL, ZOO / "honest_matmul.py", mm),
                                     *TRITON, *DLRM[:3]]:
        if left() < 20:
            skipped.append(f"timing {problem.stem} <- {candidate.name}")
            continue
        try:
            timing.append(compare_timing(problem, candidate, over, args.calls, args.device))
            t = timing[-1]
            print(f"[{time.monotonic() - start:5.0f} s] timing {problem.stem} <- {candidate.name}: old "
                  f"{t['old_speedup']:.2f}x [{t['old_lo']:.2f}-{t['old_hi']:.2f}] new {t['new_speedup']:.2f}x "
                  f"[{t['new_lo']:.2f}-{t['new_hi']:.2f}]", flush=True)
            write_outputs(args.out, box.kind, results, timing, skipped)
        except Exception as e:  # report and go on: the table shows what ran
            print(f"timing {problem.stem} <- {candidate.name} failed: {type(e).__name__}: {e}", flush=True)
    for problem, candidate, over in TRITON:
        run(problem, candidate, over, "triton")
    for problem, candidate, over in DLRM:
        run(problem, candidate, over, "dlrm-bench")

    lines = write_outputs(args.out, box.kind, results, timing, skipped)
    print("\n".join(lines))
    bad = [r for r in results if not r["as_expected"]]
    print(f"done in {time.monotonic() - start:.0f} s: {len(results)} verified, {len(bad)} not as expected, "
          f"{len(timing)} timing comparisons, skipped: {skipped or 'none'}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
