"""The measurement and check behind replay.CONCURRENT_WORK (CPU, over gpu/replay_corpus.py's parts; docs/replay.md).

Two streams' kernels that run at once need not lose their overlap between them: a GEMM beside a bandwidth-bound
kernel uses other parts of the GPU. Where every kernel of a cluster of overlapping kernels (on two or more streams)
also ran alone in its trace (the same work: name, grid and block), the cluster shows how much work two streams did
at once: R = 1 + (sum of its kernels' solo times - its span) / its overlapped time (half its kernels' overlaps with
other streams summed), each solo time the median alone duration of its work, at most the kernel's own duration.
The scan reads R from every pair's trace A; the candidate is the median over the even parts' clusters (two decimals),
and the odd parts' median is printed beside it. R enters only where a cluster also has kernels without a solo sample,
so those pairs are the ones that move: `given` is run on them with R = 1 (work-conserving) and the measured R, and
scored on the even and odd parts. The measured R replaces 1 only where it does better on both.

    python gpu/concurrent_work_choice.py CORPUS [--out outputs/replay_corpus/concurrent_work_choice] [--jobs 2]

Writes OUT/clusters.csv (one row per measured cluster), OUT/concurrent_work_choice.csv (the check) and the two
runs' CSVs. About 8 min to read the traces on this project's 2-core CPU, then about 2 min a run.
"""

from __future__ import annotations

import concurrent.futures
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay_corpus_validation as cv
import replay_validation as rv
from forward_pool_scan import only, parts, scan, scan_parser

from addressable.projection.replay import SHARE_TOL_US, _overlap, _work, solo_of_work
from addressable.projection.replay import clusters as replay_clusters

FIT_ON = ",".join(("dev", *cv.DEV[1:], *cv.HELD))


def clusters(start: np.ndarray, end: np.ndarray, stream: np.ndarray, device: np.ndarray, kernel: np.ndarray,
             work: np.ndarray) -> tuple[pd.DataFrame, bool]:
    """The measured clusters of one trace's GPU ops (kernels, `work` as replay._work numbers them): each one's R,
    overlapped time and kernels; and whether any overlapping kernel has no solo sample (R moves its replay)."""
    dur = end - start
    over = _overlap(start, end, stream, device, kernel)
    live = kernel & (dur > 0)
    shared = kernel & (over > SHARE_TOL_US)
    ref = solo_of_work(dur, work, live & ~shared)
    found = []
    for d in np.unique(device[live]):
        o, cl, first = replay_clusters(start, end, np.flatnonzero(live & (device == d)))
        n = len(first)
        overlapped = np.bincount(cl, weights=over[o], minlength=n) / 2
        solo = np.bincount(cl, weights=np.nan_to_num(np.minimum(ref[o], dur[o])), minlength=n)
        span = np.maximum.reduceat(end[o], first) - start[o][first]
        measured = ((np.bincount(cl, weights=shared[o], minlength=n) > 0) & (overlapped > SHARE_TOL_US)
                    & (np.bincount(cl, weights=np.isnan(ref[o]), minlength=n) == 0))
        found.append(pd.DataFrame({"kernels": np.bincount(cl, minlength=n), "overlapped_us": overlapped,
                                   "r": 1 + (solo - span) / np.where(measured, overlapped, 1.0)})[measured])
    table = pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=["kernels", "overlapped_us", "r"])
    return table, bool((shared & np.isnan(ref)).any())


def read_pair(a: Path) -> tuple[str, pd.DataFrame, bool]:
    """One pair's measured clusters (trace A) and whether R moves it."""
    trace, g, _, _ = rv.load(a)
    work = _work(trace.events.iloc[g.gpu_row], np.arange(len(g.gpu_row)))
    found, moves = clusters(g.gpu_ts, g.gpu_ts + g.gpu_dur, g.gpu_stream, g.gpu_device, g.gpu_kernel, work)
    return a.name.removesuffix(".A.json.gz"), found, moves


def better_on_both(before: pd.Series, after: pd.Series) -> bool:
    """Whether a scan row does better than another on the even and on the odd parts: more pairs within ±5%, or as
    many at a lower median |error|."""
    return all((after[f"{h}_within"], -after[f"{h}_median"]) > (before[f"{h}_within"], -before[f"{h}_median"])
               for h in ("even", "odd"))


def main(argv: list[str] | None = None) -> int:
    ap = scan_parser(__doc__, "concurrent_work_choice")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"{args.corpus} is not a folder", file=sys.stderr)
        return 2
    part = parts(args.corpus)
    traces = sorted(args.corpus.glob("part-*/*.A.json.gz"))
    found, movers = [], []
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        for name, table, moves in pool.map(read_pair, traces):
            found.append(table.assign(pair=name, part=part[name]))
            if moves:
                movers.append(name)
    measured = pd.concat(found, ignore_index=True)
    if measured.empty or not movers:
        print(f"no trace under {args.corpus} has clusters to measure and pairs to move", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    measured.to_csv(args.out / "clusters.csv", index=False)
    even = measured["part"] % 2 == 0
    for half, m in (("even", even), ("odd", ~even)):
        print(f"{half} parts: {int(m.sum())} clusters in {measured.loc[m, 'pair'].nunique()} pairs, median R "
              f"{measured.loc[m, 'r'].median():.3f}")
    r = round(float(measured.loc[even, "r"].median()), 2)
    print(f"measured on the even parts: R {r:g}; {len(movers)} pairs move")
    runs = [(value, f"r{value:g}", [*only(sorted(movers)), "--concurrent-work", str(value)]) for value in (1.0, r)]
    scan(args.corpus, args.out, "concurrent_work_choice", "r", runs, FIT_ON, args.jobs)
    table = pd.read_csv(args.out / "concurrent_work_choice.csv").set_index("r")
    print(f"R {r:g} {'replaces' if better_on_both(table.loc[1.0], table.loc[r]) else 'does not replace'} 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
