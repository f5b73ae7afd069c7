"""The scan behind replay.SPILLOVER_CONV and BACKWARD_POOL_CONV with and without the consumer-cast term (CPU; the
rule registered before held-out 38, docs/replay.md).

Every candidate is scored on every read pair of the corpus (parts 1-42). The two constants touch only a CNN's
measured backward, so each candidate's CNN training pairs (`--corpus-regime cnn --pairs=-train-`) are run on their
own; the other pairs' errors come from one run of all pairs with the term on (all_term.csv) and one of `given` as it
stood before the scan (all_stands.csv: no term, SPILLOVER_CONV 0.1, BACKWARD_POOL_CONV 0.5), every run naming its
constants. Writes those, OUT/cnn_{on,off}_S_W.csv and the choice table OUT/cnn_constants_choice.csv (most pairs within
±5%, then the lowest median |error|, first).

    python gpu/cnn_constants_scan.py results/h200/replay_corpus OUT [--jobs 2]   # about an hour on 2 cores
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd

FIT_ON = ",".join(["dev", "heldout", *(f"heldout{i}" for i in range(2, 38)), "dev2", "dev3", "dev4", "dev5"])
SPILLS = (0.0, 0.05, 0.1, 0.15)
POOLS = (0.0, 0.25, 0.5)
AS_IT_STANDS = (False, 0.1, 0.5)  # no term, replay.SPILLOVER_CONV, replay.BACKWARD_POOL_CONV
VALIDATION = Path(__file__).with_name("replay_corpus_validation.py")


def validate(corpus: Path, out: Path, jobs: int, *flags: str) -> None:
    """One run of the validation, its log beside `out`."""
    cmd = [sys.executable, str(VALIDATION), str(corpus), "--truth", "rounds", "--fit-on", FIT_ON, "--jobs", str(jobs),
           "--out", str(out), *flags]
    with out.with_suffix(".log").open("w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True)


def cnn_run(out_dir: Path, term: bool, spill: float, pool: float) -> Path:
    return out_dir / f"cnn_{'on' if term else 'off'}_{spill:g}_{pool:g}.csv"


def flags(term: bool, spill: float, pool: float) -> list[str]:
    return ["--consumer-casts" if term else "--no-consumer-casts", "--spillover-conv", str(spill),
            "--backward-pool-conv", str(pool)]


def choice_table(out_dir: Path) -> pd.DataFrame:
    """Each candidate's within ±5%, median and max |error| over the pairs of all_stands.csv."""
    off = pd.read_csv(out_dir / "all_stands.csv")[["pair", "given_error"]]
    on = pd.read_csv(out_dir / "all_term.csv")[["pair", "given_error"]]
    rows = [dict(consumer_casts=False, spillover_conv=AS_IT_STANDS[1], backward_pool_conv=AS_IT_STANDS[2],
                 errors=off.given_error, cnn=None)]
    for term in (False, True):
        for s in SPILLS:
            for w in POOLS:
                if (term, s, w) == AS_IT_STANDS:
                    continue
                cnn = pd.read_csv(cnn_run(out_dir, term, s, w))[["pair", "given_error"]]
                base = on if term else off
                errors = pd.concat([base[~base.pair.isin(cnn.pair)], cnn]).given_error
                rows.append(dict(consumer_casts=term, spillover_conv=s, backward_pool_conv=w, errors=errors,
                                 cnn=cnn.given_error))
    table = pd.DataFrame([{
        "consumer_casts": r["consumer_casts"], "spillover_conv": r["spillover_conv"],
        "backward_pool_conv": r["backward_pool_conv"], "within_5pct": int((r["errors"].abs() <= 0.05).sum()),
        "pairs": len(r["errors"]), "median_abs_error_pct": round(float(r["errors"].abs().median()) * 100, 2),
        "max_abs_error_pct": round(float(r["errors"].abs().max()) * 100, 1),
        "cnn_training_within_5pct": "" if r["cnn"] is None else int((r["cnn"].abs() <= 0.05).sum()),
        "cnn_training_pairs": "" if r["cnn"] is None else len(r["cnn"])} for r in rows])
    return table.sort_values(["within_5pct", "median_abs_error_pct"], ascending=[False, True], kind="stable")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if not (args.corpus / "swap_dtypes.csv").is_file():
        print(f"{args.corpus}: no swap_dtypes.csv (a validation corpus has one: gpu/swap_dtypes.py)", file=sys.stderr)
        return 2
    args.out_dir.mkdir(parents=True, exist_ok=True)
    runs = [(args.out_dir / name, flags(term, *AS_IT_STANDS[1:]))
            for name, term in (("all_stands.csv", False), ("all_term.csv", True))]
    runs += [(cnn_run(args.out_dir, term, s, w), [*flags(term, s, w), "--corpus-regime", "cnn", "--pairs=-train-"])
             for term in (False, True) for s in SPILLS for w in POOLS if (term, s, w) != AS_IT_STANDS]
    for out, run_flags in runs:
        if not out.is_file():
            try:
                validate(args.corpus, out, args.jobs, *run_flags)
            except subprocess.CalledProcessError:
                print(f"the validation failed for {out.name}: {out.with_suffix('.log')}", file=sys.stderr)
                return 2
    table = choice_table(args.out_dir)
    table.to_csv(args.out_dir / "cnn_constants_choice.csv", index=False)
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
