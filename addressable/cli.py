"""The `addressable` command line: a thin layer over the library, one command per function."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from addressable.core import interrupt
from addressable.core.errors import AddressableError


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
        except KeyboardInterrupt:  # Ctrl-C: core.interrupt's exit code, not click's "Aborted!" and 1
            interrupt.announce(lambda line: click.echo(line, err=True))
            sys.exit(interrupt.EXIT_CODE)

    return wrapper


def _renamed(old: str, new: str, dest: str, type: Any = None) -> Callable:
    """Keep `old`, the previous spelling of option `new`, for one release: hidden, and using it warns."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(f"renamed_{dest}")
            if value is not None:
                click.echo(f"warning: {old} is deprecated here and goes in the next release; use {new}", err=True)
                kwargs[dest] = value
            return fn(*args, **kwargs)

        return click.option(old, f"renamed_{dest}", type=type, hidden=True, default=None)(wrapper)

    return decorate


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


class _Main(click.Group):
    """The command line as a program (not as CliRunner calls it): Ctrl-C stops it within about a second."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        interrupt.install()
        return super().__call__(*args, **kwargs)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="addressable")
def main() -> None:
    """What fraction of a GPU workload can a new kernel touch, and what does a speedup buy?"""


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--taxonomy", type=click.Path(dir_okay=False, path_type=Path), help="Rule file (default: packaged taxonomy.yaml).")
@click.option("--class", "classes", multiple=True, metavar="CATEGORY=CLASS", help="Flip a category's class, e.g. triton=library.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Also write breakdown.json (with the roofline of a GPU trace recorded with shapes, for `plot "
                   "roofline`), categories.csv and kernels.csv here (several traces: rank<k>/ per rank, the job's "
                   "total and ranks.csv).")
@click.option("--top", default=5, show_default=True, help="Kernels to list per section.")
@click.option("--basis", type=click.Choice(["summed", "exposed", "cpu"]), default="summed", show_default=True,
              help="exposed: also print overlap-aware times (busy time, split among overlapping kernels); "
                   "cpu: the CPU-op self-time breakdown (e.g. a GPU trace without kernel events).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Traces classified at once (default: the number of cores).")
@click.option("--engine", type=click.Choice(["process", "serial", "dask"]),
              help="Several traces: a process pool (default), one at a time, or Dask.")
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="Run on this Dask scheduler (implies --engine dask).")
@click.option("--explain", metavar="PATTERN",
              help="For each kernel whose name matches this regex: its parsed name, launching op, the rule that "
                   "matched (file, index, pattern), category and class.")
@_user_errors
def classify(paths: tuple[str, ...], taxonomy: Path | None, classes: tuple[str, ...], as_json: bool,
             out: Path | None, top: int, basis: str, jobs: int | None, engine: str | None,
             scheduler: str | None, explain: str | None) -> None:
    """Classify every kernel of profiler traces and print the addressable fraction.

    PATHS: one trace file, or several files, folders and globs holding one trace per rank of a job
    (per-rank table, aggregate, straggler signal).
    """
    from addressable.classify.paths import classify_paths
    from addressable.report.text import format_classified
    from addressable.runs.folder import write_classified

    c = classify_paths(paths, taxonomy, _parse_classes(classes), basis=basis, jobs=jobs, engine=engine,
                       scheduler=scheduler, explain_pattern=explain)
    for line in c.messages():
        click.echo(line, err=True)
    extra = None
    if out and c.breakdown is not None:  # a GPU trace's roofline, for `plot roofline OUT`
        from addressable.roofline.model import roofline_keys

        extra = roofline_keys(paths[0], taxonomy, _parse_classes(classes), c.breakdown.basis)
    wrote = write_classified(c, out, extra) if out else None
    click.echo(format_classified(c, top, as_json, wrote))
    if c.failed:
        sys.exit(2)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--taxonomy", type=click.Path(dir_okay=False, path_type=Path), help="Rule file (default: packaged taxonomy.yaml).")
@click.option("--top", default=10, show_default=True, help="Unclassified kernels to list.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@_user_errors
def coverage(paths: tuple[str, ...], taxonomy: Path | None, top: int, as_json: bool) -> None:
    """How much of each trace the rules classify, before you trust the numbers on a new stack.

    PATHS: trace files, globs and folders (searched recursively). Per trace, the share of work time
    no kernel-name or launching-op rule claims; across them, the unclassified kernels with their
    launching op and a rule that would claim them. Traces that cannot be read are named on stderr.
    """
    from addressable.classify.coverage import coverage as measure
    from addressable.report.text import format_coverage

    c = measure(paths, taxonomy)
    for r in c.traces[c.traces["error"] != ""].itertuples():
        click.echo(f"warning: {r.error if Path(r.trace).name in r.error else f'{r.trace}: {r.error}'}", err=True)
    click.echo(format_coverage(c, top, as_json))


@main.command()
@click.argument("source", type=click.Path(exists=False, path_type=Path))
@click.option("--by", type=click.Choice(["name", "class"]), default="name", show_default=True,
              help="One row per module (qualified name) or per module class.")
@click.option("--top", default=15, show_default=True, help="Rows to list.")
@click.option("--json", "as_json", is_flag=True, help="Print the `modules` object of breakdown.json instead.")
@_user_errors
def modules(source: Path, by: str, top: int, as_json: bool) -> None:
    """Which nn.Module owns the time of a run folder or trace SOURCE, and the top fusion candidates (with their
    fusion headroom where the run's roofline has it)."""
    from addressable.classify.modules import format_modules
    from addressable.roofline.model import format_fusion, stored_fusion
    from addressable.runs.folder import load_modules, load_run

    if not source.exists():
        raise AddressableError(f"no such run folder or trace: {source}")
    mb = load_modules(source)
    if not mb.has_scopes:
        raise AddressableError(f"{source}: {mb.note}")
    if as_json:
        click.echo(_json(mb.to_dict(top)))
        return
    fusion, note = stored_fusion(load_run(source).info) if source.is_dir() else (None, "")
    click.echo(format_modules(mb, by, top) + ("\n\n" + "\n".join(format_fusion(fusion, note, top))
                                              if fusion is not None or note else ""))


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--gpu", help="Use this GPU's peaks from the table (H200, H100, A100, B200, MI300X). "
              "Default: the run's calibrated peaks, else the GPU named in the trace.")
@click.option("--peaks", "peaks_file", type=click.Path(dir_okay=False, path_type=Path),
              help="A peaks JSON written by `addressable calibrate --peaks`.")
@click.option("--datasheet", is_flag=True, help="Datasheet peaks even where calibrated ones exist.")
@click.option("--taxonomy", type=click.Path(dir_okay=False, path_type=Path), help="Rule file (default: packaged taxonomy.yaml).")
@click.option("--json", "as_json", is_flag=True, help="Print the roofline JSON (breakdown.json's roofline key).")
@click.option("--top", default=15, show_default=True, help="Kernels to list.")
@click.option("--module-io", "module_io", type=click.Path(dir_okay=False, path_type=Path),
              help="A module_io.json (addressable.capture.scopes.module_io) for the fusion headroom of a trace's modules "
              "(default: the run folder's).")
@_user_errors
def roofline(source: Path, gpu: str | None, peaks_file: Path | None, datasheet: bool, taxonomy: Path | None,
             as_json: bool, top: int, module_io: Path | None) -> None:
    """Headroom of every kernel of a TRACE or run folder against the roofline, the roofline ceiling, and the
    fusion headroom of each fusion candidate."""
    from addressable.roofline.model import format_roofline, roofline_of_path
    from addressable.roofline.ncu_check import check_of_run, format_check

    r = roofline_of_path(source, taxonomy, gpu=gpu, peaks=peaks_file, datasheet_only=datasheet, module_io=module_io)
    check = check_of_run(source, taxonomy) if source.is_dir() else None  # a run profiled with --ncu
    if as_json:
        click.echo(_json({**r.to_dict(top), **({"ncu": check.to_dict()} if check else {})}))
    else:
        click.echo(format_roofline(r, top) + ("\n\n" + format_check(check) if check else ""))


@main.command()
@click.option("--peaks", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the peaks JSON to this file (read by `roofline --peaks`).")
@click.option("--json", "as_json", is_flag=True, help="Print the peaks as JSON.")
@_renamed("--out", "--peaks", "out", click.Path(dir_okay=False, path_type=Path))
@_user_errors
def calibrate(out: Path | None, as_json: bool) -> None:
    """Measure this GPU's copy and read-only bandwidth and dense matmul TFLOP/s (needs a CUDA GPU).

    `addressable profile` stores the same measurement in each GPU run's manifest.json.
    """
    from addressable.roofline.calibrate import measure_peaks
    from addressable.roofline.model import format_peaks, write_peaks

    p = measure_peaks()
    if out:
        write_peaks(out, p)
    click.echo(_json(p.to_dict()) if as_json else format_peaks(p))
    if out and not as_json:
        click.echo(f"Wrote {out}")


@main.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@_user_errors
def taxonomy(file: Path | None) -> None:
    """Check a taxonomy FILE (default: the packaged one) and list its categories and rules."""
    from addressable.classify.taxonomy import load_taxonomy

    t = load_taxonomy(file)
    click.echo(f"{t.source}: {len(t.classes)} categories, {len(t.kernel_rules)} kernel rules, "
               f"{len(t.launch_op_rules)} launch-op rules, {len(t.cpu_op_rules)} CPU-op rules, "
               f"{len(t.disagreements)} disagreement decisions")
    for cat, cls in t.classes.items():
        click.echo(f"  {cat:<15}{cls:<13}{t.descriptions.get(cat, '')}")


@main.command()
@click.option("--speedups", required=True, type=click.Path(path_type=Path),
              help="wins.csv (target, speedup[, verified, source, notes, speedup_lo, speedup_hi, kernels_after, cpu_us_after, backward_cpu_us_after, "
                   "cpu_ratio_after, backward_cpu_ratio_after, output_dtype]) "
                   "or a JSON of speedups ({problem: {speedup, correct}} or a list of such records).")
@click.option("--runs", "run_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Run folder (or a folder of runs), or a Kineto trace file; repeatable. "
                   "Default: every run under outputs/.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--include-unverified", is_flag=True, help="Also use wins with verified=false.")
@click.option("--combine", type=click.Choice(["best", "median"]), default="best", show_default=True,
              help="Several wins on one kernel group: the best speedup, or the median.")
@click.option("--top", default=5, show_default=True, help="Wins to list per run (table only).")
@click.option("--model", type=click.Choice(["replay", "amdahl"]), default="replay", show_default=True,
              help="replay: replay the trace's timeline with the wins (Amdahl where there is no replayable "
                   "trace); amdahl: Amdahl's law over the breakdown.")
@click.option("--step-ms", type=float, help="Measured unprofiled step time (ms) for the wall basis of a trace "
                                            "file, e.g. the lower quartile of your steps (default: its "
                                            "profiled ProfilerStep spans).")
@click.option("--host-ms", type=float, help="With --step-ms: the time a step's CPU takes from its call to its return "
                                            "(ms), each step started on an idle GPU; fixes the replay's CPU scale "
                                            "where the GPU alone holds the step (a run folder records it).")
@_user_errors
def project(speedups: Path, run_dirs: tuple[Path, ...], as_json: bool, include_unverified: bool,
            combine: str, top: int, model: str, step_ms: float | None, host_ms: float | None) -> None:
    """Project the end-to-end speedup that measured kernel speedups buy on each profiled run."""
    from addressable.projection.project import format_projection
    from addressable.projection.project import project as project_runs
    from addressable.runs.folder import load_runs

    p = project_runs(load_runs(run_dirs, step_ms, host_ms), speedups, combine=combine, include_unverified=include_unverified,
                     model=model)
    for w in p.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(_json(p.to_dict()) if as_json else format_projection(p, top))


@main.command()
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option("--step-ms-a", multiple=True, type=float, metavar="MS",
              help="Unprofiled step time(s) of trace A in ms; repeat for several (default: its ProfilerStep spans).")
@click.option("--step-ms-b", multiple=True, type=float, metavar="MS", help="The same for trace B.")
@click.option("--step-stat", type=click.Choice(["median", "q25"]), default="median", show_default=True,
              help="The step time taken from each run's steps: the median, or the lower quartile.")
@click.option("--speedups", type=click.Path(path_type=Path),
              help="wins.csv or JSON of measured speedups: project A with them, beside what B measured.")
@click.option("--model", type=click.Choice(["replay", "amdahl"]), default="replay", show_default=True,
              help="replay: both models where A's trace is kept; amdahl: Amdahl's law only.")
@click.option("--combine", type=click.Choice(["best", "median"]), default="best", show_default=True,
              help="How several wins on one group combine.")
@click.option("--include-unverified", is_flag=True, help="Also use wins with verified=false.")
@click.option("--top", default=10, show_default=True, help="Categories and modules to list (table only).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--csv", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write every table to this CSV file (a `section` column tells them apart).")
@_user_errors
def compare(run_a: Path, run_b: Path, step_ms_a: tuple[float, ...], step_ms_b: tuple[float, ...], step_stat: str,
            speedups: Path | None, model: str, combine: str, include_unverified: bool, top: int, as_json: bool,
            out: Path | None) -> None:
    """Two runs side by side (run folders or trace files); with --speedups, the projection from A beside B."""
    from addressable.core.atomic import write_text
    from addressable.projection.compare import compare as compare_runs
    from addressable.projection.compare import format_comparison

    c = compare_runs(run_a, run_b, step_ms_a=step_ms_a, step_ms_b=step_ms_b, step_stat=step_stat,
                     speedups=speedups, model=model, combine=combine, include_unverified=include_unverified)
    for w in c.warnings:
        click.echo(f"warning: {w}", err=True)
    if out is not None:
        write_text(out, c.to_frame().to_csv(index=False))
    click.echo(_json(c.to_dict()) if as_json else format_comparison(c, top))


@main.command()
@click.option("--adapter", "adapters", multiple=True, metavar="FILE_OR_MODULE", help="Also load this adapter (a .py file or a module); repeatable.")
@_user_errors
def workloads(adapters: tuple[str, ...]) -> None:
    """List the known workloads with their defaults."""
    from addressable.capture.workload import format_workloads, workload_table

    click.echo(format_workloads(workload_table(adapters)))


def _workload_options(fn: Callable) -> Callable:
    """Options shared by profile and sweep: how to run the workload and how many steps to measure."""
    for opt in reversed([
        click.option("--mode", type=click.Choice(["train", "infer"]), help="Default: the workload's."),
        click.option("--dtype", type=click.Choice(["bf16", "fp16", "fp32"]),
                     help="Default: the workload's on the GPU, fp32 on the CPU."),
        click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
                     help="auto: the GPU when there is one, else the CPU."),
        click.option("--warmup", type=int, help="Warm-up steps (autotune, compile). Default: 10 on the GPU, 1 on the CPU."),
        click.option("--steps", type=int, help="Timed (unprofiled) steps per repeat. Default: 20 on the GPU, 1 on the CPU."),
        click.option("--profile-steps", type=int, help="Profiled steps per repeat. Default: 5 on the GPU, 1 on the CPU."),
        click.option("--repeats", type=int,
                     help="Repeats (each: timed steps, then profiled steps). Default: 3 on the GPU, 2 on the CPU."),
        click.option("--compile", "compile_", is_flag=True, help="torch.compile the model (compiled during warm-up)."),
        click.option("--adapter", "adapters", multiple=True, metavar="FILE_OR_MODULE",
                     help="Also load this adapter (a .py file or a module); repeatable."),
        click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
                     help="Adapter option, e.g. image_size=128; repeatable."),
        click.option("--layers-subset", metavar="L1,L2",
                     help="Profile at L1 and L2 layers and extrapolate linearly to the full depth."),
    ]):
        fn = opt(fn)
    return fn


@main.command()
@click.argument("workload")
@click.option("--batch", type=int, help="Batch size. Default: the workload's.")
@click.option("--seq-len", type=int, help="Sequence length (sequence models). Default: the workload's.")
@_workload_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("outputs"), show_default=True, help="Folder the run folder goes in.")
@click.option("--name", help="Run folder name. Default: e.g. resnet50-train-b64-bf16-cuda.")
@click.option("--nproc", type=int, help="Run in N processes under torchrun (DDP / FSDP2, one GPU each); "
              "writes rank<k>/ per rank and the aggregate.")
@click.option("--force", is_flag=True, help="Replace a run folder of the same name (default: write NAME-2, NAME-3, ...).")
@click.option("--budget", type=float, metavar="SECONDS",
              help="About how long the repeats may take (default 60; inf: no limit): step counts not given "
                   "are lowered to fit, from the warm-up step's time.")
@click.option("--ncu", "ncu_top", type=click.IntRange(min=1), is_flag=False, flag_value=20, default=None,
              metavar="[N]", help="GPU only: then measure the DRAM bytes and FLOPs of the top N (20) replaceable "
              "kernels of one step with Nsight Compute, beside the roofline's estimates (ncu.csv).")
@click.option("--ncu-flops/--ncu-bytes-only", default=True, show_default=True,
              help="With --ncu: also count FLOPs (SASS instrumentation: slower), or measure bytes only.")
@_user_errors
def profile(compile_: bool, **kw: Any) -> None:
    """Run WORKLOAD, profile it, and write a run folder with its addressable fraction."""
    from addressable.capture.profile import profile_command

    relaunch = _command_argv(click.get_current_context(), skip=("nproc", "name", "force"))
    sys.exit(profile_command(**kw, compile=compile_, relaunch=relaunch, argv=sys.argv, echo=click.echo,
                             progress=_progress))


def _progress(line: str) -> None:
    click.echo(line, err=True)


def _command_argv(ctx: click.Context, skip: tuple[str, ...] = ()) -> list[str]:
    """The arguments that repeat a command as parsed: its name, then its arguments and options (but skip)."""
    assert ctx.info_name is not None  # a command invoked has its name
    args = [ctx.info_name]
    for p in ctx.command.params:
        value = ctx.params.get(p.name)
        if p.name in skip:
            continue
        if isinstance(p, click.Argument):
            args.append(str(value))
        elif isinstance(p, click.Option) and p.is_flag:
            args += [p.opts[0]] if value else []
        elif p.multiple:
            args += [x for v in value or () for x in (p.opts[0], str(v))]
        elif value is not None:
            args += [p.opts[0], str(value)]
    return args


@main.command()
@click.argument("kind")
@click.argument("run_args", nargs=-1, type=click.Path(path_type=Path), metavar="[RUN]...")
@click.option("--runs", "run_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Run folder (or a folder of runs), or a Kineto trace file; repeatable. "
                   "Default: every run under outputs/.")
@click.option("--speedups", type=click.Path(path_type=Path), help="amdahl: overlay the projection of this wins.csv.")
@click.option("--x", "x", metavar="KEY", help="sweep: the swept key (batch, seq_len or workload). Default: each that varies.")
@click.option("--top", type=int, help="top-kernels, modules: kernels or module classes shown (default 10).")
@click.option("--figure", type=click.Path(dir_okay=False, path_type=Path),
              help="Figure file, .pdf/.svg/.png. Default: outputs/figures/KIND.pdf.")
@_renamed("--out", "--figure", "figure", click.Path(dir_okay=False, path_type=Path))
@_user_errors
def plot(kind: str, run_args: tuple[Path, ...], run_dirs: tuple[Path, ...], speedups: Path | None, x: str | None,
         top: int | None, figure: Path | None) -> None:
    """Draw a figure from run folders (RUN arguments or --runs): KIND is breakdown, amdahl, sweep, top-kernels,
    roofline or modules."""
    from addressable.report.plot import plot_runs

    path = plot_runs(kind, (*run_args, *run_dirs), figure, speedups=speedups, x=x, n=top)
    click.echo(f"Wrote {path}")


@main.command()
@click.argument("workload", required=False)
@click.option("--batch", help="Batch sizes to sweep, e.g. 16,32,64,128 (or one fixed value).")
@click.option("--seq-len", help="Sequence lengths to sweep, e.g. 512,1024,2048 (or one fixed value).")
@click.option("--workloads", help="Model-size sweep over workloads, e.g. gpt2,llama3-1b,llama3-8b.")
@_workload_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("outputs"), show_default=True, help="Folder the run folders go in.")
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False, path_type=Path), help="Also draw the sweep figure to this .pdf/.svg/.png.")
@click.option("--force", is_flag=True, help="Replace run folders of the same names (default: write NAME-2, ...).")
@click.option("--budget", type=float, metavar="SECONDS",
              help="About how long each value's repeats may take (default 60; see profile).")
@_user_errors
def sweep(workload: str | None, batch: str | None, seq_len: str | None, workloads: str | None, mode: str | None,
          dtype: str | None, device: str, warmup: int | None, steps: int | None, profile_steps: int | None,
          repeats: int | None, out: Path, compile_: bool, adapters: tuple[str, ...], options: tuple[str, ...],
          layers_subset: str | None, plot_out: Path | None, force: bool, budget: float | None) -> None:
    """Profile WORKLOAD at each --batch or --seq-len value (or each of --workloads): one run folder per value."""
    from addressable.capture import profile as prof
    from addressable.capture import sweep as sw
    from addressable.capture.measure import measurement

    subset = prof.parse_layers_subset(layers_subset) if layers_subset else None
    param, configs = sw.sweep_configs(
        workload, batch=sw.parse_list(batch, int, "--batch"), seq_len=sw.parse_list(seq_len, int, "--seq-len"),
        workloads=sw.parse_list(workloads, str, "--workloads"), mode=mode, dtype=dtype, device=device,
        compile=compile_, options=prof.parse_options(options), adapters=adapters)
    m = measurement(configs[0].device, warmup, steps, profile_steps, repeats, budget)
    df = sw.sweep(param, configs, m, out, layers_subset=subset, adapters=adapters, argv=sys.argv,
                  progress=_progress, force=force)
    click.echo(sw.format_sweep(df))
    done = df.loc[df["error"].isna(), "run"].tolist()
    if plot_out and len(done) > 1:
        from addressable.report.plot import plot_runs

        click.echo(f"Wrote {plot_runs('sweep', done, plot_out)}")


@main.group("dlrm-bench")
def dlrm_bench() -> None:
    """DLRM-Bench: recommender kernel problems in KernelBench format (addressable/dlrm_bench/problems)."""


@dlrm_bench.command("list")
@click.option("--small", is_flag=True, help="Show the reduced (SMALL) sizes used by CPU tests.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON records instead of a table.")
@_user_errors
def bench_list(small: bool, as_json: bool) -> None:
    """List the problems: name, category, sizes, the DLRM kernel each stands for."""
    from addressable.dlrm_bench import format_problem_table, problem_table

    df = problem_table(small=small)
    click.echo(_json(df.to_dict(orient="records")) if as_json else format_problem_table(df))


@dlrm_bench.command("shares")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON records instead of a table.")
@click.option("--csv", "out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the table to this CSV file.")
@_renamed("--out", "--csv", "out", click.Path(dir_okay=False, path_type=Path))
@_user_errors
def bench_shares(run_dir: Path, as_json: bool, out: Path | None) -> None:
    """Each problem's share of a DLRM run folder's kernel time and step time (from DLRM_KERNEL)."""
    from addressable.core.atomic import write_text
    from addressable.dlrm_bench import problem_shares
    from addressable.report.text import format_table

    df = problem_shares(run_dir)
    if out:
        write_text(out, df.to_csv(index=False))
    if as_json:
        click.echo(_json(df.to_dict(orient="records")))
    else:
        click.echo(format_table(df.drop(columns=["top_kernel"]), "{:.4f}"))


@dlrm_bench.command("time")
@click.argument("problems", nargs=-1)
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@click.option("--small", is_flag=True, help="Use the reduced (SMALL) sizes.")
@click.option("--warmup", default=5, show_default=True, help="Untimed calls first.")
@click.option("--calls", "repeats", default=50, show_default=True, help="Timed calls at most; the median is reported.")
@click.option("--budget", default=10.0, show_default=True, help="Seconds of timing per problem at most.")
@click.option("--csv", "out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the table to this CSV file.")
@_renamed("--repeats", "--calls", "repeats", int)
@_renamed("--out", "--csv", "out", click.Path(dir_okay=False, path_type=Path))
@_user_errors
def bench_time(problems: tuple[str, ...], device: str, small: bool, warmup: int, repeats: int, budget: float,
               out: Path | None) -> None:
    """Time the eager PyTorch reference (Model) of PROBLEMS (default: all), as `verify` times it."""
    from addressable.core.atomic import write_text
    from addressable.dlrm_bench import baseline_times
    from addressable.report.text import format_table

    df = baseline_times(list(problems) or None, device=device, small=small, warmup=warmup, repeats=repeats,
                        budget_s=budget)
    if out:
        write_text(out, df.to_csv(index=False))
    click.echo(format_table(df, "{:.4f}"))


def _renamed_group(group: click.Group, old: str) -> click.Group:
    """Keep `old`, the previous name of `group`, for one release: the same subcommands, hidden, and using it warns."""

    def warn() -> None:
        click.echo(f"warning: '{old}' is deprecated and goes in the next release; use '{group.name}'", err=True)

    return click.Group(old, commands=group.commands, callback=warn, hidden=True, help=f"Deprecated: use {group.name}.")


main.add_command(_renamed_group(dlrm_bench, "bench"))


def _verify_options(fn: Callable) -> Callable:
    """Options shared by verify and verify-batch (harness settings, containment and check thresholds)."""
    fn = _renamed("--runs", "--calls", "calls", int)(fn)
    for opt in reversed([
        click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True),
        click.option("--trials", default=4, show_default=True, help="Trials with fresh inputs (at least 2)."),
        click.option("--seed", default=42, show_default=True, help="Seed of trial 0 (trial t uses seed + t)."),
        click.option("--timeout", default=300.0, show_default=True, help="Seconds before a verification is killed."),
        click.option("--calls", default=50, show_default=True, help="Timed calls of each model at most (0: no timing)."),
        click.option("--warmup", default=5, show_default=True, help="Untimed calls of each model first."),
        click.option("--sandbox", type=click.Choice(["auto", "required", "off"]), default="auto", show_default=True,
                     help="Run candidates in bubblewrap: when available (auto), or refuse without it (required)."),
        click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE", help="Override a size constant of the problem; repeatable."),
        click.option("--rel-fro", default=2e-2, show_default=True, help="Max ‖out-ref‖/‖ref‖."),
        click.option("--max-err", default=5e-2, show_default=True, help="Max max|out-ref|/max|ref|."),
        click.option("--written-tol", default=1e-2, show_default=True, help="Max gap in nonzero-finite fraction."),
        click.option("--invariant-tol", default=1e-3, show_default=True, help="Max violation of a custom float invariant."),
        click.option("--review-speedup", default=10.0, show_default=True, help="Speedups above this get the verdict review."),
        click.option("--precision-ratio", default=100.0, show_default=True,
                     help="Review a candidate whose error against float64 exceeds the reference's this many times."),
        click.option("--allow-precision", type=click.Choice(["tf32", "bf16", "fp16"]),
                     help="Accept a candidate as precise as this (still reported)."),
    ]):
        fn = opt(fn)
    return fn


def _verify_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    from addressable.verification.runner import Thresholds, parse_overrides
    from addressable.verification.sandbox import choose, unsandboxed_warning

    box = choose(kw["sandbox"])  # say once, before anything runs, when candidates run unsandboxed
    if not box.sandboxed:
        click.echo(unsandboxed_warning(box), err=True)
    th = Thresholds(rel_fro=kw.pop("rel_fro"), max_err=kw.pop("max_err"), written_tol=kw.pop("written_tol"),
                    invariant_tol=kw.pop("invariant_tol"), review_speedup=kw.pop("review_speedup"),
                    precision_ratio=kw.pop("precision_ratio"))
    return {**kw, "thresholds": th, "overrides": parse_overrides(kw.pop("overrides"))}


def _stage_line(label: str) -> tuple[Callable[[str], None], Callable[[], None]]:
    """A live "label: stage" line on a terminal's stderr (as `profile` has), and the function that removes it."""
    import time

    from addressable.core.progress import Progress

    bar = Progress(1, label, unit="verification")
    start = time.monotonic()

    def show(stage: str) -> None:
        bar.label = f"{label}: {stage} ({time.monotonic() - start:.0f} s)"
        bar.advance(0)

    return show, bar.close


def _show_row(close_line: Callable[[], None], row: str) -> None:
    """Remove the stage line, then print one result row (the next stage redraws the line below it)."""
    close_line()
    click.echo(row)


@main.command()
@click.argument("reference", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("candidate", type=click.Path(dir_okay=False, path_type=Path))
@_verify_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@_user_errors
def verify(reference: Path, candidate: Path, as_json: bool, **kw: Any) -> None:
    """Check CANDIDATE's ModelNew against REFERENCE's Model, then time both (exit 0 pass, 1 fail, 3 review)."""
    from addressable.verification.runner import format_result
    from addressable.verification.runner import verify as run_verify

    show, close = _stage_line(f"verify {candidate.name}")
    try:
        r = run_verify(reference, candidate, progress=show, **_verify_kwargs(kw))
    finally:
        close()
    click.echo(_json(r.to_dict()) if as_json else format_result(r))
    sys.exit(r.exit_code)


@main.command("verify-batch")
@click.argument("pairs", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--wins-out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="wins.csv to write (read by `project`): passes only.")
@click.option("--reviews-out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the review rows here (verified=false; `project --include-unverified` uses them).")
@click.option("--json-dir", type=click.Path(file_okay=False, path_type=Path), help="Also write verify_<problem>.json here.")
@_verify_options
@_user_errors
def verify_batch(pairs: Path, wins_out: Path, reviews_out: Path | None, json_dir: Path | None, **kw: Any) -> None:
    """Verify every problem,candidate row of PAIRS (CSV); write the passes to wins.csv.

    Exit 0 when every pair passed, 1 when any failed, 3 when the rest passed but some need review."""
    from addressable.projection.wins import write_wins
    from addressable.verification.runner import batch_exit_code, check_outputs, format_batch_row
    from addressable.verification.runner import verify_batch as run_batch

    check_outputs([wins_out, reviews_out], [json_dir])  # before anything is verified
    show, close = _stage_line("verify-batch")
    try:
        df = run_batch(pairs, json_dir=json_dir, on_result=lambda r: _show_row(close, format_batch_row(r)),
                       progress=show, **_verify_kwargs(kw))
    finally:
        close()
    write_wins(wins_out, df[df["verdict"] == "pass"])
    reviews = df[df["verdict"] == "review"]
    if reviews_out:
        write_wins(reviews_out, reviews)
    counts = df["verdict"].value_counts()
    click.echo(f"{counts.get('pass', 0)} passed, {counts.get('review', 0)} to review, {counts.get('fail', 0)} failed "
               f"of {len(df)}; wrote the passes to {wins_out}" + (f", the reviews to {reviews_out}" if reviews_out else ""))
    for r in reviews.itertuples():
        click.echo(f"review: {r.problem} <- {r.candidate}: {r.notes}")
    sys.exit(batch_exit_code(df["verdict"].tolist()))


@main.command()
@click.argument("problems_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--atol", default=1e-2, show_default=True)
@click.option("--rtol", default=1e-2, show_default=True)
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="auto: the GPU when there is one, else the CPU.")
@click.option("--set", "overrides", multiple=True, metavar="[PROBLEM:]NAME=VALUE",
              help="Override a size constant where a problem defines it, or only in PROBLEM (a file stem or "
                   "its number, e.g. 23:dim=4096); repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@_user_errors
def audit(problems_dir: Path, atol: float, rtol: float, device: str, overrides: tuple[str, ...], as_json: bool) -> None:
    """Would an all-zeros or constant output pass allclose(atol, rtol) for each problem in PROBLEMS_DIR?"""
    from addressable.core.progress import Progress
    from addressable.verification.audit import audit as run_audit
    from addressable.verification.audit import audit_to_dict, format_audit
    from addressable.verification.harness import parse_scoped_overrides

    bar: Progress | None = None

    def show(done: int, total: int, stem: str) -> None:
        nonlocal bar
        bar = bar or Progress(total, "audit", unit="problems")
        if done:
            bar.advance()

    try:
        df = run_audit(problems_dir, atol, rtol, device, parse_scoped_overrides(overrides), on_problem=show)
    finally:
        if bar:
            bar.close()
    click.echo(_json(audit_to_dict(df, atol, rtol)) if as_json else format_audit(df, atol, rtol))


if __name__ == "__main__":
    main()
