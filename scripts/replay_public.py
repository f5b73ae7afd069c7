"""Check the replay's invariants on public traces (the coverage corpus's sources); write a table of what held.

The public traces are not committed: fetch their repositories first (the session's fetch tool puts git snapshots
under MIRROR/<owner>+<name>/repo), then

    python scripts/replay_public.py --mirror /work/.mirror --out results/public/replay_public.csv

Each trace (scripts/coverage_corpus.py's SOURCES, taken from its snapshot with `git show`) is loaded with its
runtime calls and, where `replayable`, built into a graph and replayed. Per trace, what must hold on any trace:

- the unmodified graph replays to the profile (`residual`, relative to the span, below 1e-9);
- a what-if that changes nothing (every op, k = 1) leaves the span as it was;
- for each taxonomy category's ops: k = 2 never lengthens the span, k = 100 never lengthens it beyond k = 2's,
  k = 0.5 never shortens it, and k = 2 with one kernel per call (`kernels_after` 1) never lengthens it;
- a slower CPU never shortens the span (CPU scales 0.25, 0.5, 1, 2, 4).

A violation (relative to the span, beyond 1e-9) is a bug in the replay, not a modelling error. The table also
counts each trace's sync records (`cuda_sync` rows) and the waits the graph took from them.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from addressable.classify.taxonomy import load_taxonomy
from addressable.core.atomic import write_text
from addressable.projection.replay import Change, Graph, build_graph, original, replay, replayable, residual
from addressable.trace.reader import load_trace

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-9  # of the span: float round-off, not model error
_spec = importlib.util.spec_from_file_location("coverage_corpus", ROOT / "scripts" / "coverage_corpus.py")
assert _spec is not None and _spec.loader is not None
coverage_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage_corpus)


def invariants(g: Graph) -> dict[str, object]:
    """The worst violation of each what-if invariant over the trace's categories (0: held), relative to the span."""
    span = original(g).span
    cats = load_taxonomy().classify(list(g.gpu_name)).to_numpy()
    worst = {"noop": abs(replay(g, [Change(np.ones(len(g.gpu_ts), bool))]).span - span) / span}
    by_scale = [replay(g, [], cpu_scale=s).span for s in (0.25, 0.5, 1.0, 2.0, 4.0)]
    worst["cpu_scale"] = max(float(-np.diff(by_scale).min()) / span, 0.0)
    worst.update(faster=0.0, much_faster=0.0, slower=0.0, one_kernel=0.0)
    checked = []
    for cat in pd.unique(cats):
        mask = cats == cat
        s2 = replay(g, [Change(mask, k=2.0)]).span
        s100 = replay(g, [Change(mask, k=100.0)]).span
        s05 = replay(g, [Change(mask, k=0.5)]).span
        s1k = replay(g, [Change(mask, k=2.0, kernels_after=1.0)]).span
        worst["faster"] = max(worst["faster"], (s2 - span) / span)
        worst["much_faster"] = max(worst["much_faster"], (s100 - s2) / span)
        worst["slower"] = max(worst["slower"], (span - s05) / span)
        worst["one_kernel"] = max(worst["one_kernel"], (s1k - span) / span)
        checked.append(str(cat))
    return {**worst, "categories": len(checked)}


def check(file: str) -> dict[str, object]:
    """One trace's row: why it cannot be replayed, or its residual, invariants and sync records."""
    t0 = time.perf_counter()
    trace = load_trace(file, runtime=True)
    ev = trace.events
    sync = ev[(ev["kind"] == "sync").to_numpy()]
    row: dict[str, object] = {"gpu_ops": int((ev["kind"] == "gpu").sum()), "sync_records": len(sync)}
    why = replayable(trace)
    if why:
        return {**row, "not_replayable": why, "seconds": time.perf_counter() - t0}
    g = build_graph(trace)
    span = original(g).span
    row.update(span_us=span, residual=abs(residual(g)) / span if span else 0.0,
               cross_stream_waits=g.typical["n_cross_stream_waits"], waiting_calls=g.typical["n_waiting_calls"])
    row.update(invariants(g))
    return {**row, "not_replayable": "", "seconds": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--cache", type=Path, default=Path("/work/data/corpus"))
    ap.add_argument("--out", type=Path, required=True, help="the table (CSV)")
    args = ap.parse_args(argv)
    corpus = coverage_corpus.gather(args.mirror, args.cache, None)
    rows = []
    for r in corpus.itertuples():
        if not r.file:
            rows.append({"stack": r.stack, "source": r.source, "not_replayable": r.problem})
            continue
        try:
            res = check(r.file)
        except Exception as e:  # a trace that breaks the loader or the replay is what this looks for
            res = {"error": f"{type(e).__name__}: {e}"}
        rows.append({"stack": r.stack, "source": r.source, **res})
        print(f"{r.source}: {res}", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    write_text(args.out, table.to_csv(index=False, float_format="%.3g"))
    done = table[table.get("residual", pd.Series(dtype=float)).notna()]
    cols = ["residual", "noop", "cpu_scale", "faster", "much_faster", "slower", "one_kernel"]
    broken = done[(done[cols] > TOL).any(axis=1)]
    print(f"{len(table)} traces, {len(done)} replayed, {len(broken)} with an invariant broken; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
