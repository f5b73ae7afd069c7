"""The reuse cheat (tests/verification/zoo/cheat_repeat_input.py) verified K times on the CPU at matmul size N: each
run's verdict, seconds, and the `reuse` check's value (its least round's gain) and threshold. Run beside a busy
process, with and without OMP_NUM_THREADS=1 (the verifier's helpers inherit it), it shows what the helpers' intra-op
threads do to the check on a loaded 2-core machine (docs/verification.md).

    python -c "while True: pass" & OMP_NUM_THREADS=1 python scripts/verify_reuse_threads.py 1024 3; kill %1
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from addressable.verification.runner import verify

ZOO = Path(__file__).resolve().parents[1] / "tests" / "verification" / "zoo"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not all(a.isdigit() and int(a) > 0 for a in argv):
        print("usage: verify_reuse_threads.py N K (the matmul size and the number of runs)", file=sys.stderr)
        return 2
    n, k = (int(a) for a in argv)
    for _ in range(k):
        start = time.perf_counter()
        r = verify(ZOO / "matmul.py", ZOO / "cheat_repeat_input.py", overrides={"N": n}, device="cpu", calls=20,
                   timeout=300)
        reuse = r.checks.get("reuse", {})
        print(f"N {n}: {r.verdict} in {time.perf_counter() - start:.1f} s, reuse {reuse.get('value') or 0:.2f} "
              f"(threshold {reuse.get('threshold') or 0:.2f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
