"""Every adversarial and every honest candidate through `verify` on one GPU (issue 25); see verify_adversary.sh.

The list comes from --list-root (this checkout): tests/verification/zoo/pairs_zoo.csv (each zoo candidate,
its problem and the verdict it must get), examples/candidates/pairs.csv and the DLRM-Bench pairs of
gpu/dlrm_bench_candidates.sh. The code that verifies comes from --root, which may be an older checkout (one with the subpackage layout, f4ec935 or later): its
`verify` is called with the arguments every version has, and a pair whose files it lacks is listed as
missing. The old H200 speedups (results/h200/verify/wins.csv, results/h200/dlrm_bench/verify/*.json) are shown
beside the new ones, with whether the new speedup lies within the old IQR.
Writes WORK/results.json (every result) and WORK/table.md; exit 1 when a pair did not get its expected verdict.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DLRM = [("01_embedding_bag_sum_uniform", "01_embedding_bag_sum_uniform"), ("05_jagged_to_padded_dense",) * 2,
        ("06_dot_interaction",) * 2, ("09_concat_interaction_input",) * 2, ("10_sigmoid_bce_loss",) * 2,
        ("11_hash_sparse_ids",) * 2, ("12_dense_adagrad_step",) * 2,
        ("02_embedding_bag_sum_zipf", "01_embedding_bag_sum_uniform")]
SETTINGS = {"zoo": {"calls": 30, "warmup": 3}, "examples": {"calls": 100, "warmup": 10},
            "dlrm": {"calls": 50, "warmup": 5}, "old zoo": {"calls": 30, "warmup": 3}}
SMALL = {"matmul": {"N": 256}, "05_relu": {"batch_size": 256, "dim": 512}, "01_softmax_long_rows": {"batch_size": 2, "dim": 9000},
         "02_rmsnorm": {"tokens": 5, "hidden": 1000}, "03_layernorm": {"tokens": 5, "hidden": 1000},
         "04_frobenius_norm": {"batch_size": 1, "features": 2, "dim1": 100, "dim2": 70}}  # --small: a CPU dry run


def small_sizes(problem: Path) -> dict[str, Any]:
    """--small overrides of one problem (a DLRM-Bench problem's own SMALL)."""
    import ast

    if problem.stem in SMALL:
        return SMALL[problem.stem]
    for node in ast.parse(problem.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SMALL" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def _import_verify(root: Path) -> Any:
    sys.path.insert(0, str(root))
    from addressable.verification.runner import verify

    return verify


def pairs(root: Path, list_root: Path) -> list[dict[str, Any]]:
    """Every pair to run, in order: the zoo (matmul, ReLU, embedding bag), the examples, DLRM-Bench, the softmax zoo."""
    zoo, old = [], []
    with open(list_root / "tests/verification/zoo/pairs_zoo.csv") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            group = "old zoo" if "softmax_long" in row["problem"] else "zoo"
            (old if group == "old zoo" else zoo).append({
                "group": group, "problem": root / row["problem"],
                "candidate": root / "tests/verification/zoo" / row["candidate"], "expect": row["expect"],
                "notes": row["notes"], "timeout": float(row["timeout"] or 150), "overrides": {}})
    examples = []
    with open(list_root / "examples/candidates/pairs.csv") as f:
        for row in csv.DictReader(f):
            examples.append({"group": "examples", "problem": (root / "examples/candidates" / row["problem"]).resolve(),
                             "candidate": root / "examples/candidates" / row["candidate"], "expect": "pass",
                             "notes": row["notes"], "timeout": 150.0, "overrides": {}})
    bench = root / "addressable" / "dlrm_bench"
    dlrm = [{"group": "dlrm", "problem": bench / "problems" / f"{p}.py", "candidate": bench / "candidates" / f"{c}.py",
             "expect": "pass", "notes": f"DLRM-Bench {p}", "timeout": 240.0, "overrides": {}} for p, c in DLRM]
    return zoo + examples + dlrm + old


def old_speedups(list_root: Path) -> dict[str, tuple[float, float, float]]:
    """Problem stem -> (speedup, lo, hi) of the committed H200 runs of the previous harness."""
    out = {}
    wins = list_root / "results/h200/verify"
    for j in sorted(wins.glob("verify_*.json")) + sorted((list_root / "results/h200/dlrm_bench/verify").glob("*.json")):
        d = json.loads(j.read_text())
        if d.get("speedup"):
            out[Path(d["problem"]).stem] = (d["speedup"], d.get("speedup_lo") or 0.0, d.get("speedup_hi") or 0.0)
    return out


def expected(expect: str, verdict: str, reason: str, failed: list[str]) -> bool:
    """Whether a verdict is the one a pair must get ("fail:clock": a fail whose reason or checks name clock)."""
    want, _, why = expect.partition(":")
    return verdict == want and (not why or why in reason or why in failed)


def run_one(verify: Any, p: dict[str, Any], device: str, left: float) -> dict[str, Any]:
    """One verification (bad input and harness errors become an "error" row)."""
    t0 = time.monotonic()
    row = {k: (str(v) if isinstance(v, Path) else v) for k, v in p.items()}
    try:
        r = verify(p["problem"], p["candidate"], device=device, overrides=p["overrides"],
                   timeout=max(20.0, min(p["timeout"], left + 30)), **SETTINGS[p["group"]])
        d = r.to_dict()
        failed = sorted(k for k, v in (d.get("checks") or {}).items() if v.get("passed") is False)
        row.update(verdict=d["verdict"], reason=d.get("reason", ""), failed_checks=failed, result=d)
    except Exception as e:
        row.update(verdict="error", reason=f"{type(e).__name__}: {e}"[:300], failed_checks=[], result={})
    row["wall_s"] = time.monotonic() - t0
    row["as_expected"] = expected(p["expect"], row["verdict"], row["reason"], row["failed_checks"])
    return row


def _x(v: float | None) -> str:
    return f"{v:.2f}" if v else ""


def table(rows: list[dict[str, Any]], old: dict[str, tuple[float, float, float]]) -> list[str]:
    """The markdown table: candidate, verdict, reason, speedup [IQR], the old one, wall seconds, as expected."""
    lines = ["| group | problem ← candidate | expect | verdict | ok | speedup [IQR] | old [IQR] | in old IQR | wall s | reason |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        d, stem = r["result"], Path(r["problem"]).stem
        sp = f"{_x(d.get('speedup'))} [{_x(d.get('speedup_lo'))}–{_x(d.get('speedup_hi'))}]" if d.get("speedup") else ""
        o = old.get(stem) if r["group"] in ("examples", "dlrm") else None
        was = f"{o[0]:.2f} [{o[1]:.2f}–{o[2]:.2f}]" if o else ""
        within = ("yes" if o[1] <= d["speedup"] <= o[2] else "NO") if o and d.get("speedup") else ""
        lines.append(f"| {r['group']} | {stem} ← {Path(r['candidate']).name} | {r['expect']} | {r['verdict']} | "
                     f"{'yes' if r['as_expected'] else 'NO'} | {sp} | {was} | {within} | {r['wall_s']:.0f} | "
                     f"{r['reason'][:110].replace('|', '/')} |")
    return lines


def main() -> None:
    """Run the list (budgeted), print the table, write results.json and table.md."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, required=True, help="the checkout whose verify runs")
    ap.add_argument("--list-root", type=Path, required=True, help="the checkout with the lists (this one)")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--budget", type=float, default=430.0)
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of this script (with --small)")
    ap.add_argument("--only", default="", help="candidate file stems, comma-separated: run these alone, in this order")
    ap.add_argument("--small", action="store_true", help="small problem sizes (a CPU dry run; TRITON_INTERPRET=1)")
    args = ap.parse_args()
    verify = _import_verify(args.root)
    todo = pairs(args.root, args.list_root)
    if args.only:
        order = {stem: i for i, stem in enumerate(args.only.split(","))}
        todo = sorted((p for p in todo if Path(p["candidate"]).stem in order), key=lambda p: order[Path(p["candidate"]).stem])
    if args.small:
        todo = [{**p, "overrides": small_sizes(Path(p["problem"]))} if Path(p["problem"]).exists() else p for p in todo]
    missing = [f"{p['problem']} <- {p['candidate']}" for p in todo if not (Path(p["problem"]).exists()
                                                                            and Path(p["candidate"]).exists())]
    todo = [p for p in todo if Path(p["problem"]).exists() and Path(p["candidate"]).exists()]
    old, rows, skipped, start = old_speedups(args.list_root), [], [], time.monotonic()
    for p in todo:
        left = args.budget - (time.monotonic() - start)
        if left < 15:
            skipped.append(f"{Path(p['problem']).stem} <- {Path(p['candidate']).name}")
            continue
        rows.append(run_one(verify, p, args.device, left))
        r = rows[-1]
        print(f"[{time.monotonic() - start:4.0f} s] {r['group']:<9}{Path(r['problem']).stem} <- {Path(r['candidate']).name}: "
              f"{r['verdict']} {'' if r['as_expected'] else 'UNEXPECTED '}"
              f"{_x(r['result'].get('speedup'))}{'x ' if r['result'].get('speedup') else ''}{r['reason'][:140]}", flush=True)
    git = subprocess.run(["git", "-C", str(args.root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = table(rows, old)
    (args.work / "table.md").write_text("\n".join(lines) + "\n")
    (args.work / "results.json").write_text(json.dumps({"root": str(args.root), "git": git, "device": args.device,
                                                        "results": rows, "skipped": skipped, "missing": missing},
                                                       indent=1, default=str) + "\n")
    print("\n".join(lines))
    bad = [r for r in rows if not r["as_expected"]]
    print(f"{len(rows)} verified in {time.monotonic() - start:.0f} s, {len(bad)} not as expected; "
          f"skipped (budget): {skipped or 'none'}; missing in {args.root}: {len(missing)}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
