"""The `addressable` command line: a thin layer over the library, one command per function."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from addressable.errors import AddressableError


def _user_errors(fn: Callable) -> Callable:
    """Turn expected failures into one line on stderr and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AddressableError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)
        except MemoryError:
            click.echo("error: out of memory", err=True)
            sys.exit(2)

    return wrapper


def _parse_classes(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for v in values:
        category, sep, cls = v.partition("=")
        if not sep:
            raise AddressableError(f"--class takes CATEGORY=library|replaceable, got '{v}'")
        out[category.strip()] = cls.strip()
    return out


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, default=str)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="addressable")
def main() -> None:
    """What fraction of a GPU workload can a new kernel touch, and what does a speedup buy?"""


@main.command()
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--taxonomy", type=click.Path(dir_okay=False, path_type=Path), help="Rule file (default: packaged taxonomy.yaml).")
@click.option("--class", "classes", multiple=True, metavar="CATEGORY=CLASS", help="Flip a category's class, e.g. triton=library.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Also write breakdown.json, categories.csv and kernels.csv here.")
@click.option("--top", default=5, show_default=True, help="Kernels to list per section.")
@click.option("--basis", type=click.Choice(["summed", "exposed"]), default="summed", show_default=True,
              help="exposed: also print overlap-aware times (busy time, split among overlapping kernels).")
@_user_errors
def classify(trace: Path, taxonomy: Path | None, classes: tuple[str, ...], as_json: bool, out: Path | None, top: int,
             basis: str) -> None:
    """Classify every kernel of a profiler TRACE and print the addressable fraction."""
    from addressable.breakdown import classify_trace
    from addressable.report import format_breakdown
    from addressable.runs import write_breakdown
    from addressable.timeline import format_timeline

    b = classify_trace(trace, taxonomy, _parse_classes(classes))
    if out:
        write_breakdown(b, out)
    click.echo(_json(b.to_dict(top)) if as_json else format_breakdown(b, top))
    t = b.timeline
    if not as_json and t is not None and (basis == "exposed" or t.streams_overlap):
        click.echo("\n" + (format_timeline(t) if basis == "exposed" else
                           f"Streams overlap: GPU busy {t.busy_us / 1e3:,.3f} ms of {t.summed_us / 1e3:,.3f} ms summed; "
                           f"addressable fraction {t.addressable_fraction_exposed:.1%} of busy time (--basis exposed)"))
    if out and not as_json:
        click.echo(f"\nWrote {out}/breakdown.json, categories.csv, kernels.csv")


@main.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@_user_errors
def taxonomy(file: Path | None) -> None:
    """Check a taxonomy FILE (default: the packaged one) and list its categories and rules."""
    from addressable.taxonomy import load_taxonomy

    t = load_taxonomy(file)
    click.echo(f"{t.source}: {len(t.classes)} categories, {len(t.kernel_rules)} kernel rules, "
               f"{len(t.cpu_op_rules)} CPU-op rules")
    for cat, cls in t.classes.items():
        click.echo(f"  {cat:<15}{cls:<13}{t.descriptions.get(cat, '')}")


@main.command()
@click.option("--speedups", required=True, type=click.Path(path_type=Path),
              help="wins.csv (target, speedup[, verified, source, notes, speedup_lo, speedup_hi]) "
                   "or a KernelBench-style results JSON.")
@click.option("--runs", "run_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Run folder (or a folder of runs); repeatable. Default: every run under outputs/.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--include-unverified", is_flag=True, help="Also use wins with verified=false.")
@click.option("--combine", type=click.Choice(["best", "median"]), default="best", show_default=True,
              help="Several wins on one kernel group: the best speedup, or the median.")
@click.option("--top", default=5, show_default=True, help="Wins to list per run (table only).")
@_user_errors
def project(speedups: Path, run_dirs: tuple[Path, ...], as_json: bool, include_unverified: bool,
            combine: str, top: int) -> None:
    """Project the end-to-end speedup that measured kernel speedups buy on each profiled run."""
    from addressable.project import format_projection, load_runs
    from addressable.project import project as project_runs

    p = project_runs(load_runs(run_dirs), speedups, combine=combine, include_unverified=include_unverified)
    for w in p.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(_json(p.to_dict()) if as_json else format_projection(p, top))


if __name__ == "__main__":
    main()
