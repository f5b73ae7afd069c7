"""Plain-text tables for the terminal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from addressable.classify.breakdown import Breakdown
from addressable.classify.coverage import Coverage
from addressable.classify.paths import Classified
from addressable.classify.ranks import format_job, job_json
from addressable.classify.timeline import format_overlap_note, format_timeline
from addressable.core.jsonutil import records
from addressable.trace.kernel_names import collisions, compact, fit_distinct, parse_kernel_name

_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_PARAMS = re.compile(r"\([^()]*\)")
_IDENT = re.compile(r"(std::)?([A-Za-z_]\w*)(::)?")
# Generic PyTorch launchers whose template arguments say what the kernel computes.
_LAUNCHERS = {"elementwise_kernel": "elementwise", "vectorized_elementwise_kernel": "elementwise",
              "unrolled_elementwise_kernel": "elementwise", "elementwise_kernel_with_index": "elementwise",
              "unrolled_elementwise_kernel_for_multi_outputs": "elementwise",
              "vectorized_templated_elementwise_kernel": "elementwise", "index_elementwise_kernel": "index",
              "reduce_kernel": "reduce", "multi_tensor_apply_kernel": "multi_tensor_apply",
              "distribution_elementwise_grid_stride_kernel": "random"}
# CUTLASS-style wrappers whose first template argument is the real kernel's name.
_WRAPPERS = re.compile(r"^(Kernel\d?|device_kernel|kernel)$")
_STD_OPS = {"plus": "add", "minus": "sub", "multiplies": "mul", "divides": "div", "maximum": "max",
            "minimum": "min", "logical_and": "and", "logical_or": "or", "bit_and": "and", "bit_or": "or"}
_OP_FORMS = (
    re.compile(r"^launch_(\w+)$"),
    re.compile(r"^(\w+?)_(?:kernel_cuda|kernel_impl|kernel|cuda_out|cuda|impl|functor)$"),
    re.compile(r"^(?:CUDA)?Functor(?:OnSelf|OnOther)?_(\w+)$"),
    re.compile(r"^(\w+?)(?:CUDA)?(?:Functor|Ops|Kernel|KernelImpl)$"),
)
_NOT_OPS = re.compile(r"gpu_kernel|^(Binary|BUnary|AUnary|Unary|Ternary|Pointwise|Reduce|Welford)"
                      r"\w*(Functor|Op|Ops)$|^(ReduceOp|func_wrapper_t|OffsetCalculator|"
                      r"TrivialOffsetCalculator|TensorListMetadata|OpaqueType|lambda|operator|const|unsigned)$")


def short_kernel_name(name: str, width: int = 60) -> str:
    """A readable kernel name: return type, namespaces, template and call arguments stripped.

    PyTorch's generic launchers keep the op they run: ``elementwise_kernel<...MulFunctor...>``
    becomes "elementwise: mul", ``vectorized_elementwise_kernel<...silu_kernel...>`` becomes
    "elementwise: silu", ``reduce_kernel<...MeanOps...>`` becomes "reduce: mean";
    ``cutlass::Kernel2<cutlass_80_simt_sgemm_...>`` becomes its template argument.
    """
    s = name
    for _ in range(8):  # nested <...> and (...) peel one level per pass
        t = _PARAMS.sub("", _TEMPLATE_ARGS.sub("", s))
        if t == s:
            break
        s = t
    s = s.split("<")[0]  # a truncated name leaves an unclosed "<"
    s = s.replace("(anonymous namespace)::", "")
    s = re.sub(r"^(void|std::enable_if\S*|[\w:]+::type)\s+", "", s.strip())
    s = s.split("::")[-1] if "::" in s else s
    s = s.strip() or name
    inner = name[name.find("<") + 1:] if "<" in name else ""
    if s in _LAUNCHERS and (op := _inner_op(inner)):
        s = f"{_LAUNCHERS[s]}: {op}"
    elif _WRAPPERS.match(s) and (arg := re.match(r"\s*([\w:]+)", inner)):
        s = arg.group(1).split("::")[-1]
    return s if len(s) <= width else s[: width - 1] + "…"


def short_kernel_names(names: list[str], width: int = 60) -> list[str]:
    """short_kernel_name of each kernel, cut to `width`; kernels whose short names coincide ("elementwise: mul"
    twice) get their template arguments after it, cut so that they stay apart (kernel_names.fit_distinct)."""
    short = [short_kernel_name(n, len(n) + 1) for n in names]
    keep = [len(s) for s in short]
    for _, idx in collisions(short, names):
        for i in idx:
            template = compact(parse_kernel_name(names[i]).template)
            short[i] += f" <{template}>" if template else ""
    return fit_distinct(short, width, keep)


def _inner_op(text: str) -> str | None:
    """The first identifier in a launcher's template arguments that names an op, in snake_case."""
    fallback = None
    for m in _IDENT.finditer(text.replace("(anonymous namespace)::", "")):
        std, ident, scope = m.groups()
        if std and ident in _STD_OPS:
            return _STD_OPS[ident]
        if scope or _NOT_OPS.search(ident):
            continue
        for form in _OP_FORMS:
            if op := form.match(ident):
                return _snake(op.group(1))
        if fallback is None and "_" in ident.strip("_") and not ident.startswith(("c10", "at_")):
            fallback = ident
    return fallback


def _snake(ident: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", ident).lower()


def _signal_line(b: Breakdown) -> list[str]:
    """'Classified by kernel name 97.7%, by launching op 2.3% ...' (GPU traces)."""
    if b.signals is None or not b.total_time_us:
        return []
    share = dict(zip(b.signals["signal"], b.signals["share"], strict=True))
    n = 0 if b.disagreements is None else len(b.disagreements)
    return [f"Classified by kernel name {share.get('name', 0):.1%}, by launching op {share.get('launch_op', 0):.1%}; "
            f"{n} kernel(s) whose name and launching op disagree on the class (classify --json: disagreements)"]


def format_breakdown(b: Breakdown, top: int = 5, asked_basis: str = "summed") -> str:
    """The breakdown as a readable table, with the addressable fraction on top (`asked_basis`: classify's --basis)."""
    basis = "GPU kernel time" if b.basis == "gpu_kernel_time" else \
        f"CPU-op self time ({'--basis cpu' if asked_basis == 'cpu' else 'no GPU work in trace'})"
    unit = "kernels" if b.basis == "gpu_kernel_time" else "CPU ops"
    lines = [
        f"Addressable fraction: {b.addressable_fraction:6.1%}  of {basis} "
        f"({b.total_time_us / 1e3:,.2f} ms{f' over {b.n_steps} step' + 's' * (b.n_steps != 1) if b.n_steps else ''})",
        f"Library: {b.library_fraction:6.1%}    Unclassified: {b.unclassified_fraction:6.2%}",
        *_signal_line(b),
        "",
        f"{'category':<15}{'class':<13}{'time ms':>11}{'share':>8}{'count':>8}",
    ]
    cols = b.categories[["category", "class", "time_us", "share", "count"]]
    for cat, cls, t, share, count in cols.itertuples(index=False, name=None):
        lines.append(f"{cat:<15}{cls:<13}{t / 1e3:>11.3f}{share:>8.1%}{count:>8d}")
    unc = b.top_unclassified(top)
    if not unc.empty:
        lines += ["", f"Top unclassified {unit} (extend taxonomy.yaml to cover them):"]
        lines += [f"  {r.time_us / 1e3:9.3f} ms  {name}" + (f"  [launched by {r.op}]" if getattr(r, "op", "") else "")
                  for r, name in zip(unc.itertuples(), fit_distinct(list(unc["name"]), 100), strict=True)]
        if b.suggested_rule:
            lines.append(f"  a kernel_rules line that would claim them: {b.suggested_rule}")
    repl = b.kernels[b.kernels["class"] == "replaceable"].head(top)
    if not repl.empty:
        lines += ["", f"Largest replaceable {unit}:"]
        lines += [f"  {r.time_us / 1e3:9.3f} ms  {r.category:<14} {name}"
                  for r, name in zip(repl.itertuples(), short_kernel_names(list(repl["name"])), strict=True)]
    return "\n".join(lines)


def format_table(df: pd.DataFrame, floatfmt: str = "{:.4g}") -> str:
    """Any small DataFrame as aligned text."""
    return df.to_string(index=False, float_format=lambda v: floatfmt.format(v))


def format_explain(table: pd.DataFrame) -> str:
    """`classify --explain`: for each matching kernel, how it was parsed and which rule decided."""
    blocks = []
    for r in table.to_dict("records"):
        by = "no rule" if r["signal"] == "none" else r["signal"]
        blocks.append("\n".join([
            r["name"],
            f"  parsed:      {r['qualified']}" + (f"  <{r['template']}>" if r["template"] else "")
            + (f"  ({r['params']})" if r["params"] else ""),
            f"  launched by: {r['op'] or 'unknown (no launching op in the trace)'}",
            f"  name rule:   {r['name_rule']}",
            f"  op rule:     {r['op_rule']}",
            *([f"  decided by:  {r['decision']}"] if r.get("decision") else []),
            f"  result:      {r['category']} ({r['class']}), by {by}; {r['time_us'] / 1e3:.3f} ms in {r['count']} calls",
        ]))
    return "\n\n".join(blocks)


def format_classified(c: Classified, top: int = 5, as_json: bool = False, wrote: Path | None = None) -> str:
    """What `classify PATHS` prints: the table (or JSON) of one trace, of a job's ranks, or of --explain;
    with `wrote` (the folder write_classified wrote), a last line naming the files."""
    if c.explained is not None:
        return json.dumps(records(c.explained), indent=2, default=str) if as_json else format_explain(c.explained)
    if c.job is not None:
        if as_json:
            return job_json(c.job)
        return format_job(c.job, top) + (f"\n\nWrote {wrote}/breakdown.json (the job), ranks.csv and rank<k>/ per "
                                         "rank" if wrote else "")
    b = c.breakdown
    if b is None:
        raise ValueError("a Classified holds an explain table, a breakdown or a job")
    if as_json:
        return json.dumps(b.to_dict(top), indent=2, default=str)
    parts, t = [format_breakdown(b, top, c.basis)], b.timeline
    if t is not None and (c.basis == "exposed" or t.streams_overlap):
        parts.append("\n" + (format_timeline(t) if c.basis == "exposed" else format_overlap_note(t)))
    if wrote:
        parts.append(f"\nWrote {wrote}/breakdown.json, categories.csv, kernels.csv")
    return "\n".join(parts)


def format_coverage(c: Coverage, top: int = 10, as_json: bool = False, share: float = 0.01) -> str:
    """What `coverage PATHS` prints: the unclassified share per trace, then the worst unclassified kernels."""
    if as_json:
        return json.dumps(c.to_dict(top), indent=2, default=str)
    ok = c.measured
    lines = [f"{len(ok)} trace(s) read, {len(c.traces) - len(ok)} not; {len(c.above(share))} above {share:.0%} "
             "unclassified (share of work time no name or launching-op rule claims)", ""]
    lines.append(f"{'unclassified':>12} {'by launch op':>12} {'kernels':>9}  trace")
    for r in ok.itertuples():
        kernels = f"{r.kernels:,}" if r.basis == "gpu_kernel_time" else "CPU ops"
        lines.append(f"{r.unclassified_share:12.2%} {r.by_launch_op_share:12.1%} {kernels:>9}  {_short_path(r.trace)}")
    worst = c.unclassified.head(top)
    if not worst.empty:
        lines += ["", "Unclassified kernels (largest share of one trace first):"]
        for r in worst.itertuples():
            lines.append(f"  {r.max_trace_share:6.2%}  {r.time_us / 1e3:9.3f} ms  {r.traces} trace(s)  "
                         f"{short_kernel_name(r.name, 70)}" + (f"  [launched by {r.op}]" if r.op else ""))
            lines.append(f"           rule: {r.suggested_rule}")
    return "\n".join(lines)


def _short_path(path: str, width: int = 70) -> str:
    return path if len(path) <= width else "..." + path[-(width - 3):]
