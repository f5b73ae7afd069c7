"""Publication figures from run folders: breakdown, amdahl, sweep, top-kernels, roofline and modules.

Every figure is a matplotlib Figure sized for one paper column (3.5 in wide, 7 pt text, vector
output), laid out with constrained layout and legends outside the data. A category has the same
colour in every figure (CATEGORY_COLORS): library categories in blues and greys, replaceable ones
in warm, colour-blind-safe colours (Okabe-Ito and Paul Tol palettes).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator, PercentFormatter

from addressable.classify.modules import ROOT
from addressable.classify.taxonomy import UNCLASSIFIED, load_taxonomy
from addressable.core.amdahl import amdahl
from addressable.core.atomic import atomic_file
from addressable.core.errors import AddressableError
from addressable.report.text import short_kernel_name
from addressable.roofline.model import roofline_of_trace
from addressable.runs.folder import Run, load_modules, load_runs, run_label_parts
from addressable.trace.kernel_names import fit_distinct

if TYPE_CHECKING:
    from matplotlib.typing import LegendLocType, RcKeyType

WIDTH_IN = 3.5  # one column of a two-column paper
FONT_PT = 7
FORMATS = (".pdf", ".svg", ".png")
STYLE: dict[RcKeyType, Any] = {
    "font.size": FONT_PT, "axes.titlesize": FONT_PT + 1, "axes.labelsize": FONT_PT,
    "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT,
    "legend.title_fontsize": FONT_PT, "figure.titlesize": FONT_PT + 1,
    "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6,
    "xtick.minor.width": 0.4, "ytick.minor.width": 0.4, "lines.linewidth": 1.2, "patch.linewidth": 0.4,
    "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False,
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",  # editable, embedded text
    "savefig.dpi": 300, "figure.dpi": 150,
}

# Library categories (taxonomy order: gemm, conv, attention, communication, memory, rnn, fft, linalg,
# sparse, random): blues, greys.
LIBRARY_COLORS = ("#004488", "#6699CC", "#99DDFF", "#555555", "#999999", "#77AADD", "#114477", "#4477AA",
                  "#88CCEE", "#222255")
# Replaceable categories (elementwise, normalization, softmax, reduction, embedding, data_movement,
# optimizer, pooling, loss, triton, cpu_other, sort_scan): Okabe-Ito and Paul Tol warm colours.
REPLACEABLE_COLORS = ("#E69F00", "#D55E00", "#CC79A7", "#882255", "#AA4499", "#DDCC77", "#CC6677",
                      "#BBCC33", "#F0E442", "#117733", "#44AA99", "#661100")
EXTRA_COLORS = ("#EE7733", "#33BBEE", "#EE3377", "#009988", "#BBBBBB", "#0077BB")
UNCLASSIFIED_COLOR = "#DDDDDD"
# One colour per curve: Okabe-Ito without yellow, then Paul Tol's wine, olive and grey. A figure with one curve
# per run draws at most this many runs, so no two share a colour.
RUN_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#882255", "#999933",
              "#888888")
LEGEND_CHARS = 27  # the longest label line that fits a two-column legend one column wide
BASIS_STYLE = {"kernel": ("#0072B2", "o", "-", "GPU kernel time"),
               "wall": ("#D55E00", "s", "--", "wall-clock step time")}
SWEEP_KEYS = ("batch", "seq_len", "workload")
LABEL_CHARS = 26  # run labels
KERNEL_CHARS = 30  # kernel names


def category_colors(taxonomy_path: str | Path | None = None) -> dict[str, str]:
    """Category -> colour, assigned in taxonomy order within each class's palette."""
    tax = load_taxonomy(taxonomy_path)
    out = {UNCLASSIFIED: UNCLASSIFIED_COLOR}
    palettes = {"library": iter(LIBRARY_COLORS), "replaceable": iter(REPLACEABLE_COLORS)}
    for cat, cls in tax.classes.items():
        out[cat] = next(palettes[cls], None) or _extra_color(cat)
    return out


def _extra_color(category: str) -> str:
    return EXTRA_COLORS[zlib.crc32(category.encode()) % len(EXTRA_COLORS)]


CATEGORY_COLORS = category_colors()


def color_of(category: str) -> str:
    """The fixed colour of a category (categories outside the taxonomy get a stable extra colour)."""
    return CATEGORY_COLORS.get(category) or _extra_color(category)


def category_order(categories: Iterable[str], classes: dict[str, str] | None = None) -> list[str]:
    """Library categories, then unclassified, then replaceable ones; taxonomy order within each."""
    rank = {c: i for i, c in enumerate(CATEGORY_COLORS)}
    classes = classes or {}
    group = {"library": 0, UNCLASSIFIED: 1, "replaceable": 2}

    def key(c: str) -> tuple[int, int, str]:
        return group.get(classes.get(c, ""), 1 if c == UNCLASSIFIED else 2), rank.get(c, len(rank)), c

    return sorted(set(categories), key=key)


@contextmanager
def _style() -> Any:
    with rc_context(STYLE):
        yield


def _figure(height: float, width: float = WIDTH_IN) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _check_runs(runs: list[Run]) -> list[Run]:
    if not runs:
        raise AddressableError("no runs to plot (pass --runs RUN_DIR, or profile into outputs/ first)")
    return list(runs)


def _truncate(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def run_labels(runs: list[Run], wrap: int | None = LABEL_CHARS) -> list[str]:
    """Labels from the run keys (addressable.runs.folder.run_label_parts): "gpt2 train b8 s1024 DDP×2",
    "llama3-70b infer b8 s1024 (extrap. 4,8→80 layers)". A label longer than `wrap` characters puts
    its qualifier (compile, strategy, layers) on a second line.
    """
    return [f"{base}\n{qual}" if qual and wrap and len(base) + 1 + len(qual) > wrap else " ".join(p for p in (base, qual) if p)
            for base, qual in run_label_parts(runs)]


def _classes(runs: list[Run]) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in runs:
        out.update(dict(zip(r.categories["category"].astype(str), r.categories["class"].astype(str), strict=True)))
    return out


def _category_legend(fig: Figure, categories: list[str], classes: dict[str, str]) -> None:
    """Two legends under the axes: library (and unclassified) categories, and replaceable ones."""
    others = [c for c in categories if classes.get(c) != "replaceable"]
    groups = [("library" if UNCLASSIFIED not in others else "library, unclassified", others),
              ("replaceable", [c for c in categories if classes.get(c) == "replaceable"])]
    groups = [(title, cats) for title, cats in groups if cats]
    for i, (title, cats) in enumerate(groups):
        handles = [Patch(facecolor=color_of(c), edgecolor="black", linewidth=0.3, label=c.replace("_", " "))
                   for c in cats]
        loc: LegendLocType = "outside lower left" if i == 0 and len(groups) > 1 else (
            "outside lower right" if len(groups) > 1 else "outside lower center")
        fig.legend(handles=handles, title=title, loc=loc, ncols=1 if title.startswith("library") else 2,
                   alignment="left", handlelength=1.0, handleheight=0.8, columnspacing=0.8,
                   handletextpad=0.4, labelspacing=0.25, borderaxespad=0.2)


def plot_breakdown(runs: list[Run]) -> Figure:
    """One stacked horizontal bar per run: shares of work time by category, addressable share labelled.

    Library categories come first (blues/greys), then unclassified, then the replaceable ones
    (warm colours), so the replaceable block ends each bar and the number right of the bar is
    its length: the run's addressable fraction of GPU kernel (or CPU-op self) time.
    """
    runs = _check_runs(runs)
    classes = _classes(runs)
    shares = pd.DataFrame([r.categories.groupby("category")["share"].sum() for r in runs]).fillna(0.0)
    cats = category_order(shares.columns, classes)
    labels = run_labels(runs)
    row = 0.3 if any("\n" in lab for lab in labels) else 0.22
    with _style():
        fig = _figure(0.9 + row * len(runs) + 0.13 * max(5, math.ceil(len(cats) / 2)))
        ax = fig.add_subplot()
        y = np.arange(len(runs))
        left = np.zeros(len(runs))
        for c in cats:
            ax.barh(y, shares[c].to_numpy(), left=left, height=0.72, color=color_of(c),
                    edgecolor="white", linewidth=0.3, label=c)
            left += shares[c].to_numpy()
        for yi, r in zip(y, runs, strict=True):
            text = f"{r.addressable_fraction:.0%}"
            if r.world_size > 1:  # several GPUs: the compute basis beside it (NCCL waiting left out)
                text += f" ({r.addressable_fraction_compute:.0%} cmp.)"
            ax.text(1.015, float(yi), text, va="center", ha="left", fontsize=FONT_PT,
                    transform=ax.get_yaxis_transform(), clip_on=False)
        ax.text(1.015, 1.0, "addr.", va="bottom", ha="left", fontsize=FONT_PT, transform=ax.transAxes,
                clip_on=False)
        ax.set_yticks(y, labels)
        ax.set_ylim(len(runs) - 0.5, -0.5)  # first run on top
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.tick_params(axis="y", length=0)
        ax.spines["left"].set_visible(False)
        ax.set_xlabel(f"share of {_basis_name(runs)}")
        _category_legend(fig, cats, classes)
    return fig


def _basis_name(runs: list[Run]) -> str:
    bases = {r.info.get("basis", "gpu_kernel_time") for r in runs}
    return "GPU kernel time" if bases == {"gpu_kernel_time"} else (
        "CPU-op self time" if bases == {"cpu_op_time"} else "work time")


def effective_k(share: float, gain: float) -> float:
    """The kernel speedup k that buys `gain` end to end at this share (Amdahl's law solved for k)."""
    rest = 1.0 / gain - (1.0 - share)
    return math.inf if rest <= 0 else share / rest


def plot_amdahl(runs: list[Run], speedups: str | Path | pd.DataFrame | None = None, k_max: float = 200.0) -> Figure:
    """End-to-end gain against kernel speedup k, one curve per run (share s = its addressable fraction).

    gain = 1/((1-s)+s/k); dashed lines mark each ceiling 1/(1-s), labelled at the right. With
    `speedups` (a wins.csv, projected by addressable.projection.project), each run's projected end-to-end
    speedup is a point on its curve at the *effective k*: the one speedup of all replaceable work
    that would buy the same gain, k = s/(1/gain - (1-s)). Vertical bars: the projection's interval.
    """
    runs = _check_runs(runs)
    if len(runs) > len(RUN_COLORS):
        raise AddressableError(
            f"amdahl draws one curve per run, each in its own colour, for at most {len(RUN_COLORS)} runs; got "
            f"{len(runs)}: name the runs to compare (`addressable plot amdahl RUN...`, e.g. one workload's run "
            "folders), or use `plot breakdown`, which shows any number of runs (each ceiling is 1/(1 - its "
            "addressable fraction))")
    shares = np.array([min(r.addressable_fraction, 0.999) for r in runs])
    ceilings = np.array([amdahl([s], [math.inf], 1.0) for s in shares])
    k = np.logspace(0, math.log10(k_max), 200)
    labels = run_labels(runs)
    projected = projected_speedups(runs, speedups) if speedups is not None else None
    ncols = 2 if max(len(line) for lab in labels for line in lab.split("\n")) <= LEGEND_CHARS else 1
    legend_rows = sum(1 + max(lab.count("\n") for lab in labels[i:i + ncols]) for i in range(0, len(labels), ncols))
    legend_rows += projected is not None and len(runs) % ncols == 0
    with _style():
        # the axes hold every ceiling label (1.3 lines apart) with room to spare
        fig = _figure(max(2.2, 0.75 + 0.16 * len(runs)) + 0.125 * legend_rows)
        ax = fig.add_subplot()
        log_y = ceilings.max() > 8
        colors = []
        for s, top, label, color in zip(shares, ceilings, labels, RUN_COLORS, strict=False):
            colors.append(color)
            ax.plot(k, [amdahl([s], [x], 1.0) for x in k], color=color, label=label)
            ax.axhline(top, color=color, linestyle=(0, (2, 2)), linewidth=0.6, alpha=0.8)
        ax.set_xscale("log")
        ax.set_xlim(1, k_max)
        if projected is not None:
            _overlay_projection(ax, shares, projected, colors, k_max)
        if log_y:
            ax.set_yscale("log")
            ax.yaxis.set_minor_locator(NullLocator())
        ax.set_ylim(1, ceilings.max() * (1.15 if log_y else 1.06))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.set_xlabel("kernel speedup k of all replaceable work")
        ax.set_ylabel("end-to-end speedup")
        ax.grid(True, which="major", linewidth=0.3, alpha=0.4)
        fig.legend(loc="outside lower center", ncols=ncols, handlelength=1.6, handletextpad=0.5,
                   columnspacing=1.0, labelspacing=0.25, borderaxespad=0.2)
        fig.draw_without_rendering()  # settle the layout before placing the ceiling labels
        _ceiling_labels(ax, ceilings, colors)
    return fig


def projected_speedups(runs: list[Run], speedups: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Projected end-to-end speedup (kernel basis) of each run, in run order: speedup, lo, hi.

    `speedups` is a wins.csv (or a wins DataFrame) for addressable.projection.project.project.
    """
    from addressable.projection.project import project

    p = project(runs, speedups).runs
    return pd.DataFrame({"speedup": p["speedup_kernel"].to_numpy(float),
                         "lo": p["speedup_kernel_lo"].to_numpy(float), "hi": p["speedup_kernel_hi"].to_numpy(float)})


def _overlay_projection(ax: Axes, shares: np.ndarray, projected: pd.DataFrame, colors: list[str],
                        k_max: float) -> None:
    ax.plot([], [], marker="o", markersize=3.5, color="white", markeredgecolor="black", markeredgewidth=0.5,
            linestyle="none", label="projected (wins)")
    for s, color, row in zip(shares, colors, projected.itertuples(), strict=True):
        if not np.isfinite(row.speedup):
            continue
        kk = min(effective_k(s, row.speedup), k_max)
        err = [[max(row.speedup - row.lo, 0.0)], [max(row.hi - row.speedup, 0.0)]] if np.isfinite(
            [row.lo, row.hi]).all() else None
        ax.errorbar([kk], [row.speedup], yerr=err, marker="o", markersize=3.5, color=color,
                    markeredgecolor="black", markeredgewidth=0.5, linestyle="none", elinewidth=0.7,
                    capsize=1.5, zorder=5, clip_on=False)  # a point at k=1 stays whole in the corner


def spread_labels(positions: np.ndarray, gap: float, lo: float | None = None, hi: float | None = None
                  ) -> np.ndarray:
    """Label positions at least `gap` apart, as close as possible (least squares) to `positions`.

    Sorted, q_i - i*gap must be non-decreasing: an isotonic regression (pool adjacent violators).
    With bounds, labels past `hi` (then below `lo`) are pushed back inside, keeping the gaps.
    """
    positions = np.asarray(positions, float)
    order = np.argsort(positions, kind="stable")
    target = positions[order] - gap * np.arange(len(order))
    blocks: list[list[float]] = []  # [mean, weight]
    for t in target:
        blocks.append([t, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2 = blocks.pop()
            m1, w1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2])
    fitted = np.concatenate([[m] * int(w) for m, w in blocks]) + gap * np.arange(len(order))
    if hi is not None:
        fitted = np.minimum(fitted, hi - gap * np.arange(len(order))[::-1])
    if lo is not None:
        fitted = np.maximum(fitted, lo + gap * np.arange(len(order)))
    out = np.empty_like(fitted)
    out[order] = fitted
    return out


CEILING_GUTTER = 0.05  # axes widths between the axes and the ceiling labels, for their leader lines


def _ceiling_labels(ax: Axes, ceilings: np.ndarray, colors: list[str]) -> None:
    """Label each ceiling right of the axes, nudged apart so no two labels overlap; each leader line runs from
    the ceiling at the axes' edge to the middle of its label's left side, so it crosses no label."""
    px = np.array([ax.transData.transform((1, c))[1] for c in ceilings])
    gap = FONT_PT * 1.3 * ax.figure.dpi / 72
    placed = spread_labels(px, gap, lo=ax.bbox.y0 + gap / 2, hi=ax.figure.bbox.y1 - gap / 2)
    inv = ax.transData.inverted().transform
    for j, yp in enumerate(placed):
        y = inv((0, yp))[1]
        ax.annotate(f"{ceilings[j]:.3g}×", xy=(1.0, ceilings[j]), xycoords=ax.get_yaxis_transform(),
                    xytext=(1 + CEILING_GUTTER, y), textcoords=ax.get_yaxis_transform(), va="center", ha="left",
                    color=colors[j], fontsize=FONT_PT, annotation_clip=False,
                    arrowprops={"arrowstyle": "-", "color": colors[j], "linewidth": 0.4, "shrinkA": 0,
                                "shrinkB": 0, "relpos": (0.0, 0.5)})


def sweep_groups(runs: list[Run], x: str | None = None) -> list[tuple[str, str, list[Run]]]:
    """Sweeps found in a set of runs: (title, swept key, runs ordered along it).

    A sweep is two or more runs that differ in one key (batch, seq_len, or workload for a
    model-size sweep) and agree on all else that changes what is measured: family, mode, dtype,
    device, torch.compile, world size and multi-GPU strategy, and the workload options (a run on
    a subset of layers is compared only with runs on that subset). Where two runs share a point,
    a measured run is kept over one extrapolated from fewer layers (then the first one given);
    sweep_repeats has the others.
    `x` picks the key; by default every key that varies somewhere gives its sweeps.
    """
    return [(title, key, members) for title, key, members, _ in sweep_repeats(runs, x)]


def sweep_repeats(runs: list[Run], x: str | None = None) -> list[tuple[str, str, list[Run], list[Run]]]:
    """sweep_groups with a fourth item: the runs left off each sweep's line because another run holds
    their point (the same configuration profiled twice, NAME and NAME-2, or an extrapolated check)."""
    if x is not None and x not in SWEEP_KEYS:
        raise AddressableError(f"--x must be one of {', '.join(SWEEP_KEYS)}, not '{x}'")
    table = pd.DataFrame([{"i": i, "family": r.family, "mode": r.mode, "dtype": r.info.get("dtype"),
                           "device": r.info.get("device"), "compile": r.info.get("compile"),
                           "world_size": r.world_size, "strategy": r.strategy,
                           "options": json.dumps(r.options, sort_keys=True, default=str),
                           "extrapolated": r.extrapolated is not None, "batch": r.info.get("batch"),
                           "seq_len": r.info.get("seq_len"), "workload": r.workload} for i, r in enumerate(runs)])
    table = table.astype(object).where(table.notna(), "")
    out = []
    for key in [x] if x else SWEEP_KEYS:
        fixed = ["family", "mode", "dtype", "device", "compile", "world_size", "strategy", "options",
                 *(k for k in SWEEP_KEYS if k != key)]
        for _, g in table.groupby(fixed, sort=False):
            g = g.sort_values(["extrapolated", "i"], kind="stable")
            kept, repeats = g.drop_duplicates(key), g[g.duplicated(key)]
            if len(kept) < 2:
                continue
            members = sorted((runs[i] for i in sorted(kept["i"])), key=_sweep_sort_key(key))
            out.append((_sweep_title(members[0], key), key, members, [runs[i] for i in sorted(repeats["i"])]))
    if not out:
        what = f"in '{x}'" if x else "in batch, seq_len or workload"
        raise AddressableError(f"no sweep {what}: need two or more runs of one family and mode that differ "
                               "only there")
    return out


def _sweep_sort_key(key: str) -> Callable[[Run], Any]:
    if key != "workload":
        return lambda r: float(r.info.get(key) or 0)
    # model size: parameter count when recorded, else work time per step as its proxy
    return lambda r: float(r.info.get("params") or r.manifest.get("params")
                           or r.info.get("kernel_time_per_step_us") or 0)


def _sweep_title(r: Run, key: str) -> str:
    """What the runs of a sweep share, e.g. "transformer infer b8 s1024 bf16", "gpt2 train s1024 bf16 DDP×2"."""
    fixed = {"batch": f"b{r.info.get('batch')}", "seq_len": f"s{r.info.get('seq_len')}"}
    parts = [r.family if key == "workload" else r.workload, r.mode]
    parts += [v for k, v in fixed.items() if k != key and r.info.get(k) is not None]
    parts.append(r.dtype)
    if r.world_size > 1:
        parts.append(f"{r.strategy.upper()}×{r.world_size}" if r.strategy else f"{r.world_size} GPUs")
    if r.options.get("layers") is not None:
        parts.append(f"({r.options['layers']} layers)")
    return " ".join(p for p in parts if p)


SWEEP_XLABEL = {"batch": "batch size", "seq_len": "sequence length", "workload": "model"}


def plot_sweep(runs: list[Run], x: str | None = None) -> Figure:
    """Addressable fraction along each sweep found in the runs, kernel and wall bases.

    Points are the runs' addressable fractions; error bars span the min-max across repeats
    (addressable_fraction_range / addressable_fraction_wall_range). Batch and sequence length use a
    log2 axis; a model-size sweep (runs differing in workload) is ordered by parameter count. A run
    whose point another run holds (sweep_repeats) is an open marker at that point, not on the line.
    """
    groups = sweep_repeats(_check_runs(runs), x)
    with _style():
        fig = _figure(0.55 + 1.45 * len(groups))
        axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
        for ax, (title, key, members, repeats) in zip(axes, groups, strict=True):
            _sweep_panel(ax, title, key, members)
            _sweep_repeats(ax, key, members, repeats)
        legend = {lab: h for ax in axes for h, lab in zip(*ax.get_legend_handles_labels(), strict=True)}
        legend = {**{k: v for k, v in legend.items() if k != REPEAT_LABEL},
                  **{k: v for k, v in legend.items() if k == REPEAT_LABEL}}  # the open markers' entry last
        fig.legend(legend.values(), legend.keys(), loc="outside lower center", ncols=2, columnspacing=1.2,
                   borderaxespad=0.2, handlelength=2.2)
    return fig


REPEAT_LABEL = "other run at this point"


def _sweep_repeats(ax: Axes, key: str, members: list[Run], repeats: list[Run]) -> None:
    """Open markers for the runs another run's point stands for, at that point's x."""
    if not repeats:
        return
    position = {r.workload: float(i) for i, r in enumerate(members)}
    xs = [position[r.workload] if key == "workload" else float(r.info[key]) for r in repeats]
    for basis, wall in (("kernel", False), ("wall", True)):
        ys = [r.addressable_fraction_wall if wall else r.addressable_fraction for r in repeats]
        shown = [(xv, yv) for xv, yv in zip(xs, ys, strict=True) if yv is not None]
        if shown:
            color, marker, _, _ = BASIS_STYLE[basis]
            ax.plot(*zip(*shown, strict=True), linestyle="none", marker=marker, markersize=4.5,
                    markerfacecolor="white", markeredgecolor=color, markeredgewidth=0.8, zorder=4,
                    label=REPEAT_LABEL if not wall else "_" + REPEAT_LABEL, gid="repeat")
            lo, hi = ax.get_ylim()
            ys_shown = [yv for _, yv in shown]
            ax.set_ylim(max(0.0, min(lo, min(ys_shown) - 0.03)), min(1.0, max(hi, max(ys_shown) + 0.03)))


def _sweep_panel(ax: Axes, title: str, key: str, members: list[Run]) -> None:
    if key == "workload":
        xs = np.arange(len(members), dtype=float)
        ax.set_xticks(xs, [_truncate(r.workload, 14) + ("\n(extrap.)" if r.extrapolated else "") for r in members])
        ax.set_xlim(-0.4, len(members) - 0.6)
    else:
        xs = np.array([float(r.info[key]) for r in members])
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(xs.tolist()))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlim(xs.min() / 1.25, xs.max() * 1.25)
    values = []
    for basis, wall in (("kernel", False), ("wall", True)):
        ys = np.array([np.nan if (wall and r.addressable_fraction_wall is None) else
                       (r.addressable_fraction_wall if wall else r.addressable_fraction) for r in members], float)
        if np.isnan(ys).all():
            continue
        lo, hi = np.array([r.fraction_range(wall) for r in members], float).T
        err = np.vstack([np.clip(ys - lo, 0, None), np.clip(hi - ys, 0, None)])
        color, marker, line, name = BASIS_STYLE[basis]
        name = _basis_name(members) if basis == "kernel" else name
        ax.errorbar(xs, ys, yerr=np.nan_to_num(err), color=color, marker=marker, markersize=3.5,
                    linestyle=line, linewidth=1.0, capsize=2.0, elinewidth=0.7,
                    label=f"share of {name}")
        values += [*lo, *hi, *ys]
    vals = np.array(values, float)
    vals = vals[np.isfinite(vals)]
    mid, half = (vals.max() + vals.min()) / 2, max((vals.max() - vals.min()) / 2 * 1.3, 0.05)
    ax.set_ylim(max(0.0, mid - half), min(1.0, mid + half))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 5, 10]))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_ylabel("addressable")
    ax.set_xlabel(SWEEP_XLABEL[key])
    ax.set_title(title, loc="left", fontsize=FONT_PT)
    ax.grid(True, axis="y", linewidth=0.3, alpha=0.4)


def top_kernels(run: Run, n: int = 10, cls: str = "replaceable") -> pd.DataFrame:
    """The largest kernels of one class, by readable name (variants of one op summed together)."""
    k = run.kernels[run.kernels["class"] == cls]
    if k.empty:
        return pd.DataFrame(columns=["kernel", "category", "time_us", "share", "variants"])
    named = k.assign(kernel=k["name"].astype(str).map(lambda s: short_kernel_name(s, 200).removesuffix("_kernel")))
    out = (named.groupby(["kernel", "category"], sort=False)
           .agg(time_us=("time_us", "sum"), share=("share", "sum"), variants=("name", "size")).reset_index())
    return out.nlargest(n, "time_us").reset_index(drop=True)


def plot_top_kernels(runs: list[Run], n: int = 10, cls: str = "replaceable") -> Figure:
    """The largest replaceable kernels of one run, bars coloured by category.

    Kernel names are shortened (namespaces, templates and arguments stripped; generic PyTorch
    launchers keep their op, e.g. "elementwise: mul"); kernels that shorten to the same name are
    summed into one bar, with the number of variants in brackets. Several runs are an error:
    one figure per run keeps it one column wide and readable.
    """
    runs = _check_runs(runs)
    if len(runs) > 1:
        raise AddressableError(f"top-kernels shows the kernels of one run, got {len(runs)}: "
                               "pick one with --runs RUN_DIR")
    run = runs[0]
    t = top_kernels(run, n, cls)
    if t.empty:
        raise AddressableError(f"no {cls} kernels in {run.name} (kernels.csv is empty or missing)")
    classes = _classes(runs)
    cats = category_order(set(t["category"]), classes)
    base, qual = run.label_parts(dtype=True)
    with _style():
        fig = _figure(0.75 + 0.16 * len(t) + 0.13 * math.ceil(len(cats) / 2))
        ax = fig.add_subplot()
        y = np.arange(len(t))
        ax.barh(y, t["share"], color=[color_of(c) for c in t["category"]], height=0.7,
                edgecolor="black", linewidth=0.3)
        names = [kname + (f" ({v})" if v > 1 else "")
                 for kname, v in zip(fit_distinct(list(t["kernel"]), KERNEL_CHARS), t["variants"], strict=True)]
        ax.set_yticks(y, names)
        ax.set_ylim(len(t) - 0.5, -0.5)
        top = float(t["share"].max())
        ax.set_xlim(0, top * 1.28)
        for yi, s in zip(y, t["share"], strict=True):
            ax.text(s + top * 0.02, float(yi), f"{s:.1%}", va="center", ha="left", fontsize=FONT_PT)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0 if top >= 0.05 else 1))
        ax.xaxis.set_major_locator(FixedLocator(_nice_ticks(top * 1.28)))
        ax.tick_params(axis="y", length=0)
        ax.set_title(" ".join(p for p in (base, qual) if p), loc="left", fontsize=FONT_PT)
        ax.set_xlabel(f"share of {_basis_name(runs)}")
        _category_legend(fig, cats, classes)
    return fig


def _nice_ticks(top: float) -> list[float]:
    """At most four round ticks from 0 to top."""
    step = 10 ** math.floor(math.log10(top / 3))
    for m in (1, 2, 2.5, 5, 10):
        if top / (m * step) <= 3.5:
            step *= m
            break
    return list(np.arange(0, top + 1e-12, step))


MODULE_CHARS = 34  # module names


def plot_modules(runs: list[Run], n: int = 10, by: str = "class") -> Figure:
    """The modules (classes by default) of one run with the most time, each bar split into library,
    replaceable and unclassified work; the share of the run's work time is written right of the bar.

    Pseudo-scopes (<optimizer>, <loss>, <other>) are shown like modules. A run without module
    scopes is an error that names the fix.
    """
    runs = _check_runs(runs)
    if len(runs) > 1:
        raise AddressableError(f"modules shows the modules of one run, got {len(runs)}: pick one with --runs RUN_DIR")
    run = runs[0]
    mb = load_modules(run.path)
    if not mb.has_scopes:
        raise AddressableError(f"{run.name}: {mb.note}")
    t = mb.by(by)
    t = t[t["time_us"] > 0].head(n)
    total = mb.total_time_us or 1.0
    parts = [("library", t["library_time_us"] / total, LIBRARY_COLORS[0]),
             ("replaceable", t["replaceable_time_us"] / total, REPLACEABLE_COLORS[0]),
             (UNCLASSIFIED, (t["time_us"] - t["library_time_us"] - t["replaceable_time_us"]).clip(lower=0) / total,
              UNCLASSIFIED_COLOR)]
    base, qual = run.label_parts(dtype=True)
    with _style():
        fig = _figure(0.85 + 0.16 * len(t))
        ax = fig.add_subplot()
        y = np.arange(len(t))
        left = np.zeros(len(t))
        handles = []
        for label, share, color in parts:
            share = share.to_numpy(dtype=float)
            if label == UNCLASSIFIED and not (share > 1e-6).any():
                continue
            ax.barh(y, share, left=left, height=0.7, color=color, edgecolor="black", linewidth=0.3)
            handles.append(Patch(facecolor=color, edgecolor="black", linewidth=0.3, label=label))
            left += share
        top = float(left.max()) if len(left) else 1.0
        for yi, s in zip(y, t["share"], strict=True):
            ax.text(s + top * 0.02, float(yi), f"{s:.1%}", va="center", ha="left", fontsize=FONT_PT)
        names = [_truncate(m or ROOT, MODULE_CHARS) for m in t["module"]]
        ax.set_yticks(y, names)
        ax.set_ylim(len(t) - 0.5, -0.5)
        ax.set_xlim(0, top * 1.28)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0 if top >= 0.05 else 1))
        ax.xaxis.set_major_locator(FixedLocator(_nice_ticks(top * 1.28)))
        ax.tick_params(axis="y", length=0)
        ax.set_title(" ".join(p for p in (base, qual) if p), loc="left", fontsize=FONT_PT)
        ax.set_xlabel(f"share of {_basis_name(runs)}, by module {'class' if by == 'class' else 'name'}")
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), handlelength=1.0,
                   handleheight=0.8, columnspacing=0.8, handletextpad=0.4)
    return fig


def roofline_points(run: Run) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The kernels of a run's roofline (breakdown.json's roofline key) with bytes per launch, and its peaks."""
    roof = run.info.get("roofline")
    if roof is None and run.trace is not None:  # a trace file given as the run
        roof = roofline_of_trace(run.trace).to_dict()
    if not isinstance(roof, dict) or not roof.get("kernels"):
        if run.info.get("roofline_note"):
            raise AddressableError(f"{run.name} has no roofline: {run.info['roofline_note']}")
        raise AddressableError(f"{run.name} has no roofline (breakdown.json's roofline key): profile it on a GPU "
                               "with this version, or give plot roofline its trace (recorded with shapes), or "
                               "store one with `addressable classify TRACE --out DIR`")
    k = pd.DataFrame(roof["kernels"])
    for c in ("time_us", "bytes", "flops", "achieved_gbps", "achieved_tflops", "headroom"):
        k[c] = pd.to_numeric(k[c], errors="coerce")
    counts = run.kernels.assign(name=run.kernels["name"].astype(str)).groupby("name")["count"].sum() \
        if "count" in run.kernels.columns else pd.Series(dtype=float)
    k["count"] = k["name"].map(counts).fillna(1.0)
    k["bytes_per_launch"] = k["bytes"] / k["count"]
    k["class"] = k["category"].map(_classes([run])).fillna("replaceable")
    return k[k["bytes"] > 0].reset_index(drop=True), roof.get("peaks") or {}


# The matmul roofs a run's kernels are held to, by the run's dtype: fp32 runs also get TF32, which cuDNN uses
# for fp32 convolutions by default. A run whose dtype is not recorded (a trace) gets every roof but fp8.
MATMUL_ROOFS = {"bf16": ("bf16",), "fp16": ("fp16",), "fp32": ("fp32", "tf32"), "fp8": ("fp8",)}
ANY_DTYPE_ROOFS = ("bf16", "fp16", "tf32", "fp32")
ROOF_COLOR = "#555555"
LIBRARY_DOT = "#AAAAAA"


def matmul_roofs(peaks: dict[str, Any], dtype: str) -> dict[str, float]:
    """dtype -> matmul peak (TFLOP/s) of the roofs drawn for a run of this dtype (MATMUL_ROOFS)."""
    tflops = peaks.get("tflops") or {}
    return {d: float(tflops[d]) for d in MATMUL_ROOFS.get(dtype, ANY_DTYPE_ROOFS) if tflops.get(d)}


def plot_roofline(runs: list[Run]) -> Figure:
    """The roofline of one run: kernels as points sized by their time, coloured by category, under the peaks.

    Top: the classic roofline, achieved TFLOP/s against arithmetic intensity (FLOP per DRAM byte),
    for the kernels with FLOPs (GEMM, convolution, attention: library work, in grey), under the
    memory slope and the matmul roof of the run's dtype (matmul_roofs). Bottom: the replaceable kernels,
    which move bytes but do no matrix math: achieved GB/s against bytes moved per launch, under the
    memory roof; the gap to the roof is their headroom. Peaks are the run's calibrated ones (or the datasheet's).
    """
    runs = _check_runs(runs)
    if len(runs) > 1:
        raise AddressableError(f"roofline shows the kernels of one run, got {len(runs)}: pick one RUN")
    run = runs[0]
    k, peaks = roofline_points(run)
    if k.empty:
        raise AddressableError(f"{run.name}: no kernel of its roofline has a bytes estimate (no shapes recorded?)")
    mem = float(peaks.get("memory_gbps") or np.nan)
    classes = _classes(runs)
    repl = k[k["class"] == "replaceable"]
    cats = category_order(set(repl["category"]), classes)
    total = float(k["time_us"].sum()) or 1.0
    size = lambda t: 4 + 300 * np.sqrt(t / total)  # noqa: E731
    base, qual = run.label_parts(dtype=True)
    with _style():
        fig = _figure(4.6 + 0.13 * math.ceil(len(cats) / 2))
        top, bottom = fig.subplots(2, 1, height_ratios=[1, 1])
        roofs = matmul_roofs(peaks, run.dtype)
        library = _compute_panel(top, k[k["flops"] > 0], roofs, mem, size)
        top.set_title(" ".join(p for p in (base, qual) if p) + f" on {peaks.get('gpu', '?')}", loc="left",
                      fontsize=FONT_PT)
        _memory_panel(bottom, repl, mem, size)
        if library:  # the grey dots, in the panel they are drawn in
            top.legend(handles=[Line2D([], [], linestyle="none", marker="o", markersize=5, markerfacecolor=LIBRARY_DOT,
                                       markeredgecolor="black", markeredgewidth=0.3,
                                       label=f"library: {', '.join(c.replace('_', ' ') for c in library)}")],
                       loc="best", handletextpad=0.3, borderaxespad=0.3)
        _category_legend(fig, cats, classes)
        fig.draw_without_rendering()  # settle the layout before placing the roof labels
        _roof_labels(top, roofs, math.sqrt(float(size(k["time_us"]).max())) / 2 + 1)
    return fig


def _compute_panel(ax: Axes, f: pd.DataFrame, roofs: dict[str, float], mem: float,
                   size: Callable[[pd.Series], np.ndarray]) -> list[str]:
    """The classic roofline of the kernels with FLOPs; returns the library categories drawn (grey dots)."""
    ai = np.logspace(-1, 4, 200)
    if not math.isnan(mem):
        for d, v in roofs.items():
            ax.plot(ai, np.minimum(v, mem * ai / 1e3), color=ROOF_COLOR, linewidth=0.6, gid=f"roof:{d}")
    if not f.empty:
        colors = [color_of(c) if cl == "replaceable" else LIBRARY_DOT for c, cl in zip(f["category"], f["class"],
                                                                                      strict=True)]
        ax.scatter(f["flops"] / f["bytes"], f["achieved_tflops"], s=size(f["time_us"]), c=colors,
                   edgecolors="black", linewidths=0.3, alpha=0.85, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    low = float(f["achieved_tflops"].min()) / 3 if not f.empty else 0.3
    ax.set_ylim(min(0.3, low), max(roofs.values(), default=1.0) * 3)  # _roof_labels may raise the top
    ax.set_xlim(ai[0], ai[-1])
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("achieved TFLOP/s")
    return category_order(set(f.loc[f["class"] != "replaceable", "category"]))


def _roof_labels(ax: Axes, roofs: dict[str, float], lift_pt: float) -> None:
    """Label the matmul roofs at the right, `lift_pt` above their lines (clear of the largest dot on a roof),
    raising the top of the axes to make room; roofs too close for a label between them (bf16 782 and fp16 751
    TFLOP/s) share one, above the highest of them."""
    if not roofs:
        return
    pt = ax.figure.dpi / 72
    lo, _ = np.log10(ax.get_ylim())
    need = (lift_pt + 1.4 * FONT_PT) / (ax.bbox.height / pt)  # the label's share of the axes height
    top = (math.log10(max(roofs.values())) - need * lo) / (1 - need)
    ax.set_ylim(10 ** lo, 10 ** max(top, np.log10(ax.get_ylim()[1])))
    groups: list[list[tuple[str, float, float]]] = []
    for d, v in sorted(roofs.items(), key=lambda kv: -kv[1]):
        y = float(ax.transData.transform((1.0, v))[1])
        if groups and groups[-1][-1][2] - y < (lift_pt + 1.4 * FONT_PT) * pt:
            groups[-1].append((d, v, y))
        else:
            groups.append([(d, v, y)])
    for g in groups:
        ax.annotate(", ".join(f"{d} {v:,.0f}" for d, v, _ in g) + " TFLOP/s", xy=(1.0, g[0][1]),
                    xycoords=ax.get_yaxis_transform(), xytext=(0, lift_pt), textcoords="offset points",
                    va="bottom", ha="right", fontsize=FONT_PT, color=ROOF_COLOR, gid="roof label")


def _memory_panel(ax: Axes, repl: pd.DataFrame, mem: float, size: Callable[[pd.Series], np.ndarray]) -> None:
    """The replaceable kernels: achieved GB/s against bytes moved per launch, under the memory roof."""
    if not repl.empty:
        ax.scatter(repl["bytes_per_launch"], repl["achieved_gbps"], s=size(repl["time_us"]),
                   c=[color_of(c) for c in repl["category"]], edgecolors="black", linewidths=0.3, alpha=0.85, zorder=3)
    if not math.isnan(mem):
        ax.axhline(mem, color=ROOF_COLOR, linewidth=0.6)
        ax.text(0.02, mem * 1.08, f"memory roof {mem:,.0f} GB/s", va="bottom", ha="left", fontsize=FONT_PT,
                color=ROOF_COLOR, transform=ax.get_yaxis_transform())
    ax.set_xscale("log")
    ax.set_yscale("log")
    if not math.isnan(mem):
        ax.set_ylim(min(mem / 30, float(repl["achieved_gbps"].min()) / 2 if not repl.empty else mem), mem * 3)
    ax.set_xlabel("bytes moved per launch (estimated from the launching op)")
    ax.set_ylabel("achieved GB/s")
    ax.set_title("replaceable kernels (size: time)", loc="left", fontsize=FONT_PT)


PLOTS: dict[str, Callable[..., Figure]] = {
    "breakdown": plot_breakdown,
    "amdahl": plot_amdahl,
    "sweep": plot_sweep,
    "top-kernels": plot_top_kernels,
    "roofline": plot_roofline,
    "modules": plot_modules,
}


# The options each kind takes (the CLI's --speedups, --x, --top).
KIND_OPTIONS = {"breakdown": (), "amdahl": ("speedups",), "sweep": ("x",), "top-kernels": ("n",), "roofline": (),
                "modules": ("n",)}
OPTION_FLAGS = {"speedups": "--speedups", "x": "--x", "n": "--top"}


def check_kind(kind: str) -> None:
    if kind not in PLOTS:
        raise AddressableError(f"unknown plot kind '{kind}' (known: {', '.join(PLOTS)})")


def make_figure(kind: str, runs: list[Run], **options: Any) -> Figure:
    """Build the figure of one kind (breakdown, amdahl, sweep, top-kernels, modules); None options are left out."""
    check_kind(kind)
    options = {k: v for k, v in options.items() if v is not None}
    extra = [k for k in options if k not in KIND_OPTIONS[kind]]
    if extra:
        flags = ", ".join(OPTION_FLAGS.get(k, k) for k in extra)
        raise AddressableError(f"{flags} does not apply to the {kind} plot")
    return PLOTS[kind](runs, **options)


def plot_runs(kind: str, run_paths: Iterable[str | Path] = (), out: str | Path | None = None,
              **options: Any) -> Path:
    """Load runs (default: every run under outputs/), draw one figure and save it (default
    outputs/figures/KIND.pdf): `addressable plot`."""
    check_kind(kind)
    out = Path(out) if out else Path("outputs") / "figures" / f"{kind}.pdf"
    if out.suffix.lower() not in FORMATS:
        raise AddressableError(f"figure file must end in {', '.join(FORMATS)}, not '{out.name}'")
    return save_figure(make_figure(kind, load_runs(list(run_paths)), **options), out)


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write a figure to .pdf, .svg or .png (by suffix), atomically."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise AddressableError(f"figure file must end in {', '.join(FORMATS)}, not '{path.name}'")
    with atomic_file(path, "wb") as f, _style():
        fig.savefig(f, format=path.suffix.lower()[1:], metadata=_metadata(path))
    return path


def _metadata(path: Path) -> dict[str, Any]:
    """Reproducible files: no creation date in PDF/SVG."""
    suffix = path.suffix.lower()
    return {".pdf": {"CreationDate": None}, ".svg": {"Date": None}}.get(suffix, {})
