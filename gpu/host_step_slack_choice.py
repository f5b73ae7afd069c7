"""The choice behind replay.HOST_STEP_SLACK (CPU, over gpu/replay_corpus.py's parts; docs/replay.md).

Where the GPU alone replays longer than the step measured without the profiler, the step cannot fix the replay's CPU
scale and the host time does, as far as the unmodified replayed step stays within HOST_STEP_SLACK of that least. The
slack moves only those pairs: `given` is run on every pair at the first and the last candidate, and the pairs whose
projection differs are the ones scanned. For each candidate, `given` is run on them, and the slack with the most
even-part pairs within ±5% (then the lowest median |error|, then the first listed: list the least change first) is
chosen; the odd parts check it.

    python gpu/host_step_slack_choice.py CORPUS [--slacks 0.01,0.03,0.1,100]
        [--out outputs/replay_corpus/host_step_slack_choice]

About 7 min for each of the two full runs on this project's 2-core CPU, then about a minute a slack.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus_validation as cv
from forward_pool_scan import only, run_given, scan, scan_parser

FIT_ON = ",".join(("dev", *cv.DEV[1:], *cv.HELD))


def moved(first: pd.DataFrame, last: pd.DataFrame, rtol: float = 1e-4) -> list[str]:
    """The pairs whose `given` differs between two validation runs."""
    both = first.set_index("pair")["given"].to_frame("first").join(last.set_index("pair")["given"].rename("last"))
    return sorted(both.index[((both["first"] - both["last"]).abs() > rtol * both["first"].abs())])


def main(argv: list[str] | None = None) -> int:
    ap = scan_parser(__doc__, "host_step_slack_choice")
    ap.add_argument("--slacks", default="0.01,0.03,0.1,100")
    args = ap.parse_args(argv)
    try:
        slacks = [float(s) for s in args.slacks.split(",")]
    except ValueError:
        print(f"--slacks: {args.slacks}: not a comma-separated list of numbers", file=sys.stderr)
        return 2
    if len(slacks) < 2:
        print(f"--slacks: {args.slacks}: give at least two", file=sys.stderr)
        return 2
    if not args.corpus.is_dir():
        print(f"{args.corpus} is not a folder", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    names = moved(*(run_given(args.corpus, args.out / f"all_s{slack:g}.csv", FIT_ON, ["--host-step-slack", str(slack)],
                              args.jobs) for slack in (slacks[0], slacks[-1])))
    if not names:
        print(f"no pair under {args.corpus} moves between slack {slacks[0]:g} and {slacks[-1]:g}", file=sys.stderr)
        return 2
    print(f"{len(names)} pairs move with the slack")
    runs = [(slack, f"s{slack:g}", [*only(names), "--host-step-slack", str(slack)]) for slack in slacks]
    slack = scan(args.corpus, args.out, "host_step_slack_choice", "slack", runs, FIT_ON, args.jobs)
    print(f"chosen on the even parts: {slack:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
