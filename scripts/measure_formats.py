"""Re-measure trace formats on public traces fetched elsewhere (none is committed: see docs/formats.md).

    PYTHONPATH=$PWD python scripts/measure_formats.py PATH...      # files or folders (searched recursively)
    PYTHONPATH=$PWD python scripts/measure_formats.py PATH... --json

For every trace file (.json, .json.gz, .sqlite, .db, .pftrace, .nsys-rep): the format the loader
takes it for, the rows it reads (device rows, CPU ops, steps), the basis of its breakdown, the device
time, the unclassified share, the warnings, or the one-line error. Run it with another checkout's
package first on the path (PYTHONPATH=/path/to/other/checkout) to compare two versions on the same
files; the header says which package it measured.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import addressable
from addressable.classify.breakdown import breakdown_of_trace
from addressable.core.errors import AddressableError
from addressable.trace import reader

SUFFIXES = (".json", ".json.gz", ".sqlite", ".db", ".pftrace", ".perfetto-trace", ".nsys-rep")


def trace_files(paths: list[str]) -> list[Path]:
    """The trace files named, and those under the folders named, sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        found = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        out += [f for f in found if f.name.lower().endswith(SUFFIXES)]
    return out


def measure(path: Path) -> dict[str, Any]:
    """One file's row: format, rows read, basis, device time, unclassified share, warnings or error."""
    row: dict[str, Any] = {"file": str(path)}
    try:
        kind = getattr(reader, "trace_kind", lambda _: "kineto")  # an older checkout has only Kineto JSON
        row["format"] = kind(path)
        trace = reader.load_trace(path)
        counts = trace.events["kind"].value_counts()
        row.update(device_rows=int(counts.get("gpu", 0)), cpu_ops=int(counts.get("cpu_op", 0)), steps=trace.n_steps)
        b = breakdown_of_trace(trace)
        unclassified = b.categories.loc[b.categories["class"] == "unclassified", "time_us"].sum()
        row.update(basis=b.basis, time_ms=round(b.total_time_us / 1000, 3),
                   unclassified=round(float(unclassified / b.total_time_us), 4) if b.total_time_us else 0.0,
                   warnings=list(getattr(b, "warnings", [])))
    except AddressableError as e:
        row["error"] = str(e)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    lines = ["| file | format | device rows | CPU ops | steps | basis | time ms | unclassified | note |",
             "|---|---|---:|---:|---:|---|---:|---:|---|"]
    for r in rows:
        note = r.get("error") or "; ".join(r.get("warnings", []))
        lines.append(f"| {Path(r['file']).name} | {r.get('format', '')} | {r.get('device_rows', '')} | "
                     f"{r.get('cpu_ops', '')} | {r.get('steps', '')} | {r.get('basis', '')} | {r.get('time_ms', '')} | "
                     f"{'' if 'unclassified' not in r else format(r['unclassified'], '.1%')} | {note[:160]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", action="store_true", help="one JSON list of rows instead of the table")
    a = ap.parse_args(argv)
    rows = [measure(f) for f in trace_files(a.paths)]
    print(json.dumps(rows, indent=1) if a.json else f"package: {Path(addressable.__file__).parent}\n\n{table(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
