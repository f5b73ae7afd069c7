"""How often `verify` catches the timing-based cheats on this machine's CPU, and how often it wrongly fails
honest candidates, over repeated rounds (the figures of docs/verification.md's "The wall clock").

    python scripts/verify_cpu_detection.py ROUNDS OUT.csv

Each round verifies three honest candidates (ReLU small and large, a 768² matmul) and three cheats (repeated-input
reuse on a 1024² matmul, a forged timing report on a 1536² matmul, the same forged in 60% of batches), contained, 20 timed calls each; one CSV row
per verification with its verdict, its speedup, whether the first set of timed batches failed `clock`, whether `reuse`
failed, and the 1-minute load average; beside it, OUT.wall_clock.jsonl keeps each verification's timed batches
(`wall_clock`), so that a change to the timing checks can be replayed on them (`timing.timing_checks`). Results depend on
the machine's load: give it with the figures.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pandas as pd

from addressable.verification.runner import verify

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "verification" / "zoo"
RELU = ROOT / "examples" / "problems" / "05_relu.py"
CASES = [("honest_relu", "honest_relu", RELU, {"batch_size": 64, "dim": 128}),
         ("honest_relu_512", "honest_relu", RELU, {"batch_size": 512, "dim": 1024}),
         ("honest_matmul", "honest_matmul", ZOO / "matmul.py", {"N": 768}),
         ("cheat_repeat_input", "cheat_repeat_input", ZOO / "matmul.py", {"N": 1024}),
         ("cheat_forged_report", "cheat_forged_report", ZOO / "matmul.py", {"N": 1536}),
         ("cheat_intermittent_forgery", "cheat_intermittent_forgery", ZOO / "matmul.py", {"N": 1536})]


def main() -> None:
    """Run ROUNDS rounds of every case; write OUT.csv and print each row."""
    rounds, out = int(sys.argv[1]), Path(sys.argv[2])
    rows = []
    with out.with_suffix(".wall_clock.jsonl").open("w") as batches:
        for i in range(rounds):
            for case, candidate, problem, overrides in CASES:
                t0 = time.perf_counter()
                r = verify(problem, ZOO / f"{candidate}.py", overrides=overrides, device="cpu", calls=20, timeout=300)
                first = r.wall_clock.get("first_set", {})
                rows.append({"round": i, "case": case, "verdict": r.verdict,
                             "first_clock_failed": "clock" in first, "first_reuse_failed": "reuse" in first,
                             "clock_failed": r.checks.get("clock", {}).get("passed") is False,
                             "reuse_failed": r.checks.get("reuse", {}).get("passed") is False,
                             "speedup": None if r.speedup is None else round(r.speedup, 3),
                             "reason": r.reason[:120], "load": round(os.getloadavg()[0], 2),
                             "seconds": round(time.perf_counter() - t0, 1)})
                print(rows[-1], flush=True)
                batches.write(json.dumps({"round": i, "case": case, "verdict": r.verdict, "wall_clock": r.wall_clock}) + "\n")
                batches.flush()
    pd.DataFrame(rows).to_csv(out, index=False)


if __name__ == "__main__":
    main()
