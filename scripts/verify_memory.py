"""Peak memory and wall time of one `verify` on the CPU: the summed RSS of its whole process tree.

    python scripts/verify_memory.py ROOT N [OUT.jsonl]

ROOT is the checkout whose `verify` runs (this one, or an older one, e.g. a worktree at f49e624, the
harness before issue 25): it goes first on sys.path. The pair is the zoo's N x N fp32 matmul with
`honest_matmul`, 20 timed calls, contained. The process tree (this process and every descendant:
the verifying parent, the reference checker, the candidate's process and their helpers) is sampled
every 20 ms; the peak of the summed RSS is reported (spawned processes share no pages, so the sum does
not double count much). One JSON line per run, appended to OUT.jsonl when given.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import psutil


def tree_rss(me: psutil.Process) -> tuple[int, int]:
    """(summed RSS in bytes, processes) of `me` and its descendants now."""
    total, procs = 0, [me, *me.children(recursive=True)]
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total, len(procs)


def main() -> None:
    root, n = Path(sys.argv[1]).resolve(), int(sys.argv[2])
    sys.path.insert(0, str(root))
    from addressable.verification.runner import verify

    zoo = Path(__file__).resolve().parents[1] / "tests" / "verification" / "zoo"
    me, peak, done = psutil.Process(), [0, 0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[:] = max(peak, list(tree_rss(me)))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    r = verify(zoo / "matmul.py", zoo / "honest_matmul.py", overrides={"N": n}, device="cpu", calls=20, timeout=600)
    done.set()
    sampler.join()
    row = {"root": str(root), "N": n, "verdict": r.verdict, "peak_tree_rss_mb": round(peak[0] / 2**20),
           "processes_at_peak": peak[1], "wall_s": round(time.perf_counter() - t0, 1)}
    print(json.dumps(row))
    if len(sys.argv) > 3:
        with open(sys.argv[3], "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
