"""The choice behind replay_corpus_validation.BACKWARD_SOURCE (CPU, over gpu/replay_corpus.py's parts 40-49;
docs/replay.md).

A training pair's measured backward is read from hooked steps: the interleaved pass after the timing ("pass"), the
steps after every timing round ("spread", part 40 on), or both pooled ("both"). `given` is run with each on every
pair that has the spread steps, and the source with the most even-part pairs within ±5% (then the lowest median
|error|) is chosen; the odd parts check it.

    python gpu/backward_source_choice.py CORPUS [--sources pass,spread,both]
        [--out outputs/replay_corpus/backward_source_choice]

About 2 min a source on this project's 2-core CPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus_validation as cv
from forward_pool_scan import only, scan, scan_parser

FIT_ON = ",".join(("dev", *cv.DEV[1:], *cv.HELD))


def with_spread(corpus: Path) -> list[str]:
    """The captured pairs that read their backward in steps after every timing round too."""
    return sorted(f.stem for f in corpus.glob("part-*/*.json")
                  if "." not in f.stem and json.loads(f.read_text()).get("backward_spread"))


def main(argv: list[str] | None = None) -> int:
    ap = scan_parser(__doc__, "backward_source_choice")
    ap.add_argument("--sources", default="pass,spread,both")
    args = ap.parse_args(argv)
    sources = args.sources.split(",")
    if not set(sources) <= {"pass", "spread", "both"}:
        print(f"--sources: {args.sources}: each must be pass, spread or both", file=sys.stderr)
        return 2
    names = with_spread(args.corpus)
    if not names:
        print(f"no pair under {args.corpus} has backward_spread", file=sys.stderr)
        return 2
    runs = [(source, source, [*only(names), "--backward-source", source]) for source in sources]
    source = scan(args.corpus, args.out, "backward_source_choice", "source", runs, FIT_ON, args.jobs)
    print(f"chosen on the even parts: {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
