"""Every set of timed batches one verification took, with the candidate's batches that told a lie marked: what
decides whether a candidate that forges its timing report in some batches only (`zoo/cheat_intermittent_forgery.py`)
gets through, and what speedup it gets through with.

    python scripts/verify_forgery_sets.py OUT.jsonl RUNS CASE [CASE ...]

CASE is one of the names below. Each verification (contained, on this machine's CPU, 20 timed calls) is one JSON
line: the verdict, the reported speedup, and for each set of timed batches `timing_checks` judged (one, or two when
`clock` or `reuse` failed the first; after a failed `clock` the second judgement holds the first set's timed batches
too, `timed_set` 0, beside the new ones) the check results and, per candidate batch, its overhead less the checker's
median overhead of that set ("excess", ms per call) and its mean reported call over the checker's median call
("ratio"); `forged` counts the batches whose excess is over half the checker's median call (a forged report says
25% of the true time, so its excess is 75% of a call; an honest batch's is about zero). The batches themselves
are kept (`sets[i].batches`) so that another rule can be evaluated on the same ones. Load changes the figures:
each line has the 1-minute load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from addressable.verification import session
from addressable.verification.runner import verify
from addressable.verification.timing import BatchRecord

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "verification" / "zoo"
RELU = ROOT / "examples" / "problems" / "05_relu.py"
CASES: dict[str, tuple[str, Path, dict[str, int]]] = {
    "cheat_intermittent_forgery": ("cheat_intermittent_forgery", ZOO / "matmul.py", {"N": 1536}),
    "cheat_forged_report": ("cheat_forged_report", ZOO / "matmul.py", {"N": 1536}),
    "honest_matmul": ("honest_matmul", ZOO / "matmul.py", {"N": 768}),
    "honest_matmul_1536": ("honest_matmul", ZOO / "matmul.py", {"N": 1536}),
    "honest_relu": ("honest_relu", RELU, {"batch_size": 64, "dim": 128}),
    "honest_relu_512": ("honest_relu", RELU, {"batch_size": 512, "dim": 1024}),
}


def describe(batches: list[BatchRecord], result: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """One set of timed batches: its checks and each candidate batch's excess overhead and time ratio."""
    ref = [b for b in batches if b.model == "ref" and b.phase == "timed"]
    cand = [b for b in batches if b.model == "cand" and b.phase == "timed"]
    o_ref = statistics.median(b.overhead for b in ref)
    t_ref = statistics.median(t for b in ref for t in b.times)
    excess = [b.overhead - o_ref for b in cand]
    checks, figures = result
    return {"checks": dict(checks), "excess_med": figures.get("overhead_excess_median_ms"),
            "ref_ms": t_ref, "excess": [round(e, 3) for e in excess],
            "ratio": [round(statistics.fmean(b.times) / t_ref, 3) for b in cand],
            "forged": sum(e > 0.5 * t_ref for e in excess), "batches": [asdict(b) for b in batches]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="JSON lines, appended to")
    ap.add_argument("runs", type=int)
    ap.add_argument("cases", nargs="+", choices=sorted(CASES))
    args = ap.parse_args(argv)
    out, runs, cases = args.out, args.runs, args.cases
    judged: list[tuple[list[BatchRecord], Any]] = []
    original = session.timing_checks

    def recording(batches: list[BatchRecord], tol: float, device: str) -> Any:
        result = original(batches, tol, device)
        judged.append((list(batches), result))
        return result

    session.timing_checks = recording
    with out.open("a") as f:
        for i in range(runs):
            for case in cases:
                name, problem, overrides = CASES[case]
                judged.clear()
                t0 = time.perf_counter()
                r = verify(problem, ZOO / f"{name}.py", overrides=overrides, device="cpu", calls=20, timeout=300)
                sets = [describe(b, res) for b, res in judged]
                row = {"run": i, "case": case, "verdict": r.verdict, "speedup": r.speedup,
                       "clock_failed": r.checks.get("clock", {}).get("passed") is False, "reason": r.reason[:160],
                       "load": round(os.getloadavg()[0], 2), "seconds": round(time.perf_counter() - t0, 1),
                       "sets": sets}
                f.write(json.dumps(row) + "\n")
                f.flush()
                brief = [(s["forged"], s["checks"].get("clock", {}).get("passed"), s["excess"]) for s in sets]
                print(case, r.verdict, r.speedup and round(r.speedup, 2), row["load"], brief, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
