"""The wall-clock check's two criteria on the same batches: the lows alone (before) and lows and medians (now).

    python scripts/verify_clock_criteria.py OUT.csv [ROUNDS]

Each round verifies, contained, on this machine's CPU: the small and the large ReLU example and a 768²
matmul (honest), and `zoo/cheat_intermittent_forgery.py` (a timing report forged in 60% of batches),
20 timed calls each. From each result's recorded batches (`wall_clock.batches`: the final set, the
retimed one where the first failed) both criteria are evaluated: `new_pass` is `timing_checks`'
`clock`; `old_pass` the lows alone (the candidate's lowest per-batch overhead against the checker's,
allowed max(0.1 x its median call, 4 sigma pooled, 5 ms / k)). Results depend on load: run it beside
other work (e.g. `python -c "while True: pass" &`) to see a loaded machine; the load is in each row.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import pandas as pd

from addressable.verification.runner import verify
from addressable.verification.timing import BatchRecord, timing_checks

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "verification" / "zoo"
RELU = ROOT / "examples" / "problems" / "05_relu.py"
CASES = [("honest_relu", RELU, {"batch_size": 64, "dim": 128}), ("honest_relu", RELU, {"batch_size": 512, "dim": 1024}),
         ("honest_matmul", ZOO / "matmul.py", {"N": 768}), ("cheat_intermittent_forgery", ZOO / "matmul.py", {"N": 1536})]


def lows_only(batches: list[BatchRecord]) -> bool:
    """Whether the lows alone pass (the check before the medians were added)."""
    _, f = timing_checks(batches, 0.1, "cpu")
    cand = [b for b in batches if b.model == "cand" and b.phase == "timed"]
    tc = statistics.median(t for b in cand for t in b.times)
    allow = max(0.1 * tc, 4 * f["overhead_spread_ms"], 5.0 / max(len(b.times) for b in cand))
    return f["overhead_ms_candidate"] - f["overhead_ms_reference"] <= allow


def main() -> None:
    """Run the rounds; write OUT.csv, a row per verification."""
    out, rounds = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rows = []
    for _ in range(rounds):
        for name, problem, overrides in CASES:
            r = verify(problem, ZOO / f"{name}.py", overrides=overrides, device="cpu", calls=20, timeout=300)
            batches = [BatchRecord(**b) for b in r.wall_clock["batches"]]
            rows.append({"case": f"{name} {overrides}", "verdict": r.verdict, "retimed": "first_set" in r.wall_clock,
                         "new_pass": timing_checks(batches, 0.1, "cpu")[0]["clock"]["passed"],
                         "old_pass": lows_only(batches), "load": round(os.getloadavg()[0], 2)})
            print(rows[-1], flush=True)
    pd.DataFrame(rows).to_csv(out, index=False)


if __name__ == "__main__":
    main()
