"""Plain-text tables for the terminal."""

from __future__ import annotations

import re

import pandas as pd

from addressable.breakdown import Breakdown

_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_PARAMS = re.compile(r"\([^()]*\)")


def short_kernel_name(name: str, width: int = 60) -> str:
    """A readable kernel name: return type, namespaces, template and call arguments stripped."""
    s = name
    for _ in range(8):  # nested <...> and (...) peel one level per pass
        t = _PARAMS.sub("", _TEMPLATE_ARGS.sub("", s))
        if t == s:
            break
        s = t
    s = s.replace("(anonymous namespace)::", "")
    s = re.sub(r"^(void|std::enable_if\S*|[\w:]+::type)\s+", "", s.strip())
    s = s.split("::")[-1] if "::" in s else s
    s = s.strip() or name
    return s if len(s) <= width else s[: width - 1] + "…"


def format_breakdown(b: Breakdown, top: int = 5) -> str:
    """The breakdown as a readable table, with the addressable fraction on top."""
    basis = "GPU kernel time" if b.basis == "gpu_kernel_time" else "leaf CPU-op time (no GPU work in trace)"
    lines = [
        f"Addressable fraction: {b.addressable_fraction:6.1%}  of {basis} "
        f"({b.total_time_us / 1e3:,.2f} ms{f' over {b.n_steps} steps' if b.n_steps else ''})",
        f"Library: {b.library_fraction:6.1%}    Unclassified: {b.unclassified_fraction:6.2%}",
        "",
        f"{'category':<15}{'class':<13}{'time ms':>11}{'share':>8}{'count':>8}",
    ]
    cols = b.categories[["category", "class", "time_us", "share", "count"]]
    for cat, cls, t, share, count in cols.itertuples(index=False, name=None):
        lines.append(f"{cat:<15}{cls:<13}{t / 1e3:>11.3f}{share:>8.1%}{count:>8d}")
    unc = b.top_unclassified(top)
    if not unc.empty:
        lines += ["", "Top unclassified kernels (extend taxonomy.yaml to cover them):"]
        lines += [f"  {r.time_us / 1e3:9.3f} ms  {r.name[:100]}" for r in unc.itertuples()]
    repl = b.kernels[b.kernels["class"] == "replaceable"].head(top)
    if not repl.empty:
        lines += ["", "Largest replaceable kernels:"]
        lines += [f"  {r.time_us / 1e3:9.3f} ms  {r.category:<14} {short_kernel_name(r.name)}"
                  for r in repl.itertuples()]
    return "\n".join(lines)


def format_table(df: pd.DataFrame, floatfmt: str = "{:.4g}") -> str:
    """Any small DataFrame as aligned text."""
    return df.to_string(index=False, float_format=lambda v: floatfmt.format(v))
