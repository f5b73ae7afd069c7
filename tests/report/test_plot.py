"""Figures (addressable.report.plot), run loading for plots, sweeps (addressable.capture.sweep), and their CLI commands."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.text import Text

from addressable.capture.measure import measurement
from addressable.capture.sweep import format_sweep, parse_list, sweep, sweep_configs, swept_parameter
from addressable.cli import main
from addressable.core.amdahl import amdahl
from addressable.core.atomic import umask
from addressable.core.errors import AddressableError
from addressable.report import plot
from addressable.report.text import short_kernel_name
from addressable.runs.folder import find_runs, load_run, load_runs, runs_summary, runs_table

PLOT_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "plot_runs"
MODULE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "module_runs" / "gpt2-tiny-train-cpu"
ROOT = Path(__file__).resolve().parents[2]
WINS = ROOT / "examples" / "wins.csv"


@pytest.fixture(autouse=True)
def _isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sweeps load workload adapters; keep that from leaking into other test files' registry state."""
    from addressable.capture import workload
    monkeypatch.setattr(workload, "_REGISTRY", dict(workload._REGISTRY))
    monkeypatch.setattr(workload, "_LOADED", set(workload._LOADED))


@pytest.fixture(scope="module")
def runs() -> list:
    return load_runs(PLOT_RUNS)


@pytest.fixture(scope="module")
def figures(runs: list) -> dict[str, Figure]:
    pick = {"top-kernels": [runs[-1]], "roofline": [runs[-1]], "modules": load_runs(MODULE_RUN)}
    figs = {kind: plot.make_figure(kind, pick.get(kind, runs)) for kind in plot.PLOTS}
    figs["amdahl+wins"] = plot.plot_amdahl(runs, WINS)
    return figs


def _draw(fig: Figure):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _visible_texts(fig: Figure) -> list[Text]:
    """Every drawn, non-empty text: tick labels inside the view limits, labels, titles, legends, notes."""
    tick_labels, drawn = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick, loc in zip(axis.get_major_ticks(), axis.get_majorticklocs(), strict=False):
                tick_labels.add(id(tick.label1))
                tick_labels.add(id(tick.label2))
                span = max(hi - lo, 1e-12)
                if tick.label1.get_visible() and tick.label1.get_text() and lo - 1e-9 * span <= loc <= hi + 1e-9 * span:
                    drawn.append(tick.label1)
            for tick in axis.get_minor_ticks():
                tick_labels.add(id(tick.label1))
                tick_labels.add(id(tick.label2))
    for t in fig.findobj(Text):
        if id(t) not in tick_labels and t.get_visible() and t.get_text().strip():
            drawn.append(t)
    return list({id(t): t for t in drawn}.values())


def _boxes(fig: Figure) -> list[tuple[str, object]]:
    renderer = _draw(fig)
    return [(t.get_text(), Text.get_window_extent(t, renderer)) for t in _visible_texts(fig)]


# --------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("kind", list(plot.PLOTS))
def test_each_kind_renders_to_png_and_pdf(tmp_path: Path, figures: dict, kind: str) -> None:
    fig = figures[kind]
    assert fig.get_size_inches()[0] == pytest.approx(plot.WIDTH_IN)
    png = plot.save_figure(fig, tmp_path / f"{kind}.png")
    pdf = plot.save_figure(fig, tmp_path / f"{kind}.pdf")
    svg = plot.save_figure(fig, tmp_path / f"{kind}.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert b"/Type /Font" in pdf.read_bytes() and b"/Subtype /Image" not in pdf.read_bytes()  # vector
    assert "<text" in svg.read_text()  # text kept as text, not paths
    assert not list(tmp_path.glob(".*.tmp"))
    assert png.stat().st_mode & 0o777 == 0o666 & ~umask()  # not mkstemp's 0600


def test_save_figure_rejects_other_formats(tmp_path: Path, figures: dict) -> None:
    with pytest.raises(AddressableError, match=r"\.pdf"):
        plot.save_figure(figures["breakdown"], tmp_path / "fig.jpg")


@pytest.mark.parametrize("kind", ["breakdown", "amdahl", "sweep", "top-kernels", "modules", "amdahl+wins", "roofline"])
def test_no_text_overlaps_and_all_text_inside_figure(figures: dict, kind: str) -> None:
    fig = figures[kind]
    boxes = _boxes(fig)
    assert len(boxes) > 10
    w, h = fig.bbox.width, fig.bbox.height
    for text, b in boxes:
        assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= w + 1 and b.y1 <= h + 1, f"'{text}' leaves the figure"
    for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
        ox = min(a.x1, b.x1) - max(a.x0, b.x0)
        oy = min(a.y1, b.y1) - max(a.y0, b.y0)
        assert not (ox > 1 and oy > 1), f"'{ta}' overlaps '{tb}' in {kind}"


@pytest.mark.parametrize("kind", list(plot.PLOTS))
def test_text_is_at_least_7pt(figures: dict, kind: str) -> None:
    for t in _visible_texts(figures[kind]):
        assert t.get_fontsize() >= 7, t.get_text()


def test_overlap_check_catches_overlaps() -> None:
    fig = Figure(figsize=(3.5, 2))
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, "first label")
    ax.text(0.52, 0.5, "second label")
    (_, a), (_, b) = [(t, bb) for t, bb in _boxes(fig) if "label" in t]
    assert min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1


# --------------------------------------------------------------------------- categories and colours


def _legend_labels(fig: Figure) -> set[str]:
    return {t.get_text() for leg in fig.legends for t in leg.get_texts()}


def test_breakdown_labels_every_category_present(runs: list, figures: dict) -> None:
    present = {c for r in runs for c in r.categories["category"]}
    assert {"gemm", "conv", "embedding", "triton", "unclassified"} <= present
    assert _legend_labels(figures["breakdown"]) == {c.replace("_", " ") for c in present}
    ax = figures["breakdown"].axes[0]
    notes = [t.get_text() for t in ax.texts if t.get_text().endswith("%")]
    assert notes == [f"{r.addressable_fraction:.0%}" for r in runs]  # addressable fraction per bar


def test_top_kernels_labels_every_category_shown(runs: list, figures: dict) -> None:
    shown = set(plot.top_kernels(runs[-1])["category"])
    assert _legend_labels(figures["top-kernels"]) == {c.replace("_", " ") for c in shown}


def _bar_colors(fig: Figure) -> dict[str, set[tuple]]:
    """Legend label -> facecolours of its legend patch."""
    out: dict[str, set[tuple]] = {}
    for leg in fig.legends:
        for patch, text in zip(leg.get_patches(), leg.get_texts(), strict=True):
            out.setdefault(text.get_text(), set()).add(tuple(np.round(patch.get_facecolor(), 4)))
    return out


def test_same_colour_for_a_category_in_every_figure(runs: list, figures: dict) -> None:
    breakdown, top = _bar_colors(figures["breakdown"]), _bar_colors(figures["top-kernels"])
    for label in set(breakdown) & set(top):
        assert breakdown[label] == top[label], label
    for label, colours in breakdown.items():
        assert colours == {tuple(np.round(to_rgba(plot.color_of(label.replace(" ", "_"))), 4))}
    # the bars themselves: each BarContainer of the breakdown is one category
    for container in figures["breakdown"].axes[0].containers:
        want = to_rgba(plot.color_of(container.get_label()))
        assert all(np.allclose(p.get_facecolor(), want) for p in container.patches)
    # top-kernels bars carry their kernel's category colour
    table = plot.top_kernels(runs[-1])
    bars = figures["top-kernels"].axes[0].patches
    assert [tuple(np.round(b.get_facecolor(), 4)) for b in bars] == [
        tuple(np.round(to_rgba(plot.color_of(c)), 4)) for c in table["category"]]


def test_category_palette_is_fixed_and_split_by_class() -> None:
    colours = plot.category_colors()
    assert colours == plot.CATEGORY_COLORS
    assert len(set(colours.values())) == len(colours)  # one colour per category
    assert colours["gemm"] in plot.LIBRARY_COLORS and colours["memory"] in plot.LIBRARY_COLORS
    assert colours["elementwise"] in plot.REPLACEABLE_COLORS and colours["triton"] in plot.REPLACEABLE_COLORS
    assert plot.color_of("my_new_category") == plot.color_of("my_new_category") in plot.EXTRA_COLORS
    order = plot.category_order(["elementwise", "unclassified", "gemm", "conv"],
                                {"elementwise": "replaceable", "gemm": "library", "conv": "library"})
    assert order == ["gemm", "conv", "unclassified", "elementwise"]


# --------------------------------------------------------------------------- figure content


def test_amdahl_curves_ceilings_and_projection(runs: list) -> None:
    fig = plot.plot_amdahl(runs[:3])
    ax = fig.axes[0]
    curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
    assert len(curves) == 3
    for ln, r in zip(curves, runs[:3], strict=True):
        s = r.addressable_fraction
        assert ln.get_ydata()[-1] == pytest.approx(1 / ((1 - s) + s / 200))
    assert ax.get_xscale() == "log" and ax.get_xlim() == (1, 200)
    ceilings = sorted(t.get_text() for t in ax.texts)
    assert ceilings == sorted(f"{1 / (1 - r.addressable_fraction):.3g}×" for r in runs[:3])


def test_amdahl_projection_points_sit_on_their_curves(runs: list) -> None:
    chosen = runs[-3:]
    projected = plot.projected_speedups(chosen, WINS)
    fig = plot.plot_amdahl(chosen, WINS)
    points = [ln for ln in fig.axes[0].get_lines() if ln.get_marker() == "o" and len(ln.get_xdata()) == 1]
    assert len(points) == len(chosen)
    for pt, r, gain in zip(points, chosen, projected["speedup"], strict=True):
        k, y = pt.get_xdata()[0], pt.get_ydata()[0]
        assert y == pytest.approx(gain)
        assert amdahl([r.addressable_fraction], [k], 1.0) == pytest.approx(gain)


def test_effective_k_inverts_amdahl() -> None:
    for s, k in [(0.3, 2.0), (0.68, 1.25), (0.9, 50.0)]:
        assert plot.effective_k(s, amdahl([s], [k], 1.0)) == pytest.approx(k)
    assert plot.effective_k(0.5, 2.0) == np.inf  # at the ceiling


def test_spread_labels_keeps_gap_and_stays_close() -> None:
    pos = np.array([10.0, 11.0, 12.0, 50.0, 30.0, 31.0])
    out = plot.spread_labels(pos, 3.0)
    srt = np.sort(out)
    assert np.all(np.diff(srt) >= 3.0 - 1e-9)
    assert out[3] == 50.0  # far away: untouched
    assert out[:3].mean() == pytest.approx(11.0)  # a cluster stays centred where it was
    assert np.argsort(out).tolist() == np.argsort(pos).tolist()


def test_sweep_groups_found_in_fixtures(runs: list) -> None:
    groups = plot.sweep_groups(runs)
    got = {(key, tuple(r.name for r in members)) for _, key, members in groups}
    assert got == {
        ("batch", ("resnet50-train-b16", "resnet50-train-b32", "resnet50-train-b64")),
        ("seq_len", ("llama3-8b-infer-b4-s512", "llama3-8b-infer-b4-s1024", "llama3-8b-infer-b4-s2048")),
        ("workload", ("gpt2-train-b8-s1024", "llama3-1b-train-b8-s1024", "llama3-8b-train-b8-s1024")),
    }
    assert [key for _, key, _ in plot.sweep_groups(runs, x="batch")] == ["batch"]
    with pytest.raises(AddressableError, match="--x must be one of"):
        plot.sweep_groups(runs, x="lr")
    with pytest.raises(AddressableError, match="no sweep"):
        plot.sweep_groups([runs[0]])


def _variant(root: Path, name: str, base: str = "gpt2-train-b8-s1024", manifest: dict | None = None,
             **keys: object) -> Path:
    """A copy of a fixture run with some run keys changed (None removes a key)."""
    folder = root / name
    shutil.copytree(PLOT_RUNS / base, folder)
    doc = json.loads((folder / "breakdown.json").read_text())
    doc.update(keys)
    doc = {k: v for k, v in doc.items() if v is not None}
    (folder / "breakdown.json").write_text(json.dumps(doc))
    if manifest is not None:
        (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.fixture(scope="module")
def mixed_runs(tmp_path_factory: pytest.TempPathFactory) -> list:
    """Runs like the real H200 set: multi-GPU, layer-subset, extrapolated and two-dtype runs."""
    root = tmp_path_factory.mktemp("mixed")
    for name in ("gpt2-train-b8-s1024", "llama3-1b-train-b8-s1024", "llama3-8b-train-b8-s1024",
                 "resnet50-train-b16", "resnet50-train-b32", "dlrm-train-b2048"):
        shutil.copytree(PLOT_RUNS / name, root / name)
    _variant(root, "gpt2-train-b8-s1024-ddp-np2", world_size=2,
             distributed={"world_size": 2, "strategy": "ddp", "backend": "nccl"})
    _variant(root, "llama3-1b-train-b8-s1024-ddp-np2", base="llama3-1b-train-b8-s1024",
             manifest={"distributed": {"world_size": 2, "strategy": "ddp"}}, world_size=2)
    _variant(root, "llama3-8b-l8-train-b8-s1024-fsdp2-np2", base="llama3-8b-train-b8-s1024", world_size=2,
             options={"layers": 8}, distributed={"world_size": 2, "strategy": "fsdp2"})
    _variant(root, "llama3-8b-train-b8-s1024-layers16", base="llama3-8b-train-b8-s1024", options={"layers": 16})
    _variant(root, "llama3-1b-train-b8-s1024-layers16", base="llama3-1b-train-b8-s1024", options={"layers": 16})
    _variant(root, "llama3-8b-train-b8-s1024-extrap4-8", base="llama3-8b-train-b8-s1024",
             extrapolated={"from_layers": [4, 8], "to_layers": 32}, addressable_fraction=0.5)
    _variant(root, "llama3-70b-train-b8-s1024-extrap4-8", base="llama3-8b-train-b8-s1024", workload="llama3-70b",
             extrapolated={"from_layers": [4, 8], "to_layers": 80}, kernel_time_per_step_us=1e9)
    _variant(root, "resnet50-train-b64-ddp-np2", base="resnet50-train-b64", world_size=2,
             distributed={"world_size": 2, "strategy": "ddp"})
    _variant(root, "dlrm-train-b2048-fp32", base="dlrm-train-b2048", dtype="fp32")
    return load_runs(root)


def _by_name(runs: list) -> dict:
    return {r.name: r for r in runs}


def test_sweeps_keep_apart_runs_that_are_not_comparable(mixed_runs: list) -> None:
    got = {(key, tuple(r.name for r in members)) for _, key, members in plot.sweep_groups(mixed_runs)}
    assert got == {
        # single GPU, full depth: the measured llama3-8b run, not its extrapolated check; 70B extrapolated
        ("workload", ("gpt2-train-b8-s1024", "llama3-1b-train-b8-s1024", "llama3-8b-train-b8-s1024",
                      "llama3-70b-train-b8-s1024-extrap4-8")),
        ("workload", ("gpt2-train-b8-s1024-ddp-np2", "llama3-1b-train-b8-s1024-ddp-np2")),  # DDP×2 only
        ("workload", ("llama3-1b-train-b8-s1024-layers16", "llama3-8b-train-b8-s1024-layers16")),  # 16 layers
        ("batch", ("resnet50-train-b16", "resnet50-train-b32")),  # not the DDP b64 run
    }
    titles = {title for title, _, _ in plot.sweep_groups(mixed_runs)}
    assert {"transformer train b8 s1024 bf16", "transformer train b8 s1024 bf16 DDP×2",
            "transformer train b8 s1024 bf16 (16 layers)", "resnet50 train bf16"} == titles


def test_sweep_of_only_the_extrapolated_check_is_still_a_sweep(mixed_runs: list) -> None:
    runs = _by_name(mixed_runs)
    chosen = [runs["gpt2-train-b8-s1024"], runs["llama3-8b-train-b8-s1024-extrap4-8"]]
    [(_, _, members)] = plot.sweep_groups(chosen)
    assert [r.name for r in members] == ["gpt2-train-b8-s1024", "llama3-8b-train-b8-s1024-extrap4-8"]
    fig = plot.plot_sweep(chosen)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["gpt2", "llama3-8b\n(extrap.)"]
    # same workload and key but mixed strategies or layer options: no sweep
    with pytest.raises(AddressableError, match="no sweep"):
        plot.sweep_groups([runs["gpt2-train-b8-s1024"], runs["llama3-1b-train-b8-s1024-ddp-np2"],
                           runs["llama3-8b-l8-train-b8-s1024-fsdp2-np2"]])


def test_run_keys_for_multi_gpu_and_layer_runs(mixed_runs: list) -> None:
    runs = _by_name(mixed_runs)
    ddp, fsdp = runs["gpt2-train-b8-s1024-ddp-np2"], runs["llama3-8b-l8-train-b8-s1024-fsdp2-np2"]
    assert (ddp.world_size, ddp.strategy) == (2, "ddp")
    assert (runs["llama3-1b-train-b8-s1024-ddp-np2"].strategy) == "ddp"  # from the manifest
    assert (fsdp.world_size, fsdp.strategy, fsdp.options) == (2, "fsdp2", {"layers": 8})
    single = runs["gpt2-train-b8-s1024"]
    assert (single.world_size, single.strategy, single.options, single.extrapolated) == (1, "", {}, None)
    assert runs["llama3-70b-train-b8-s1024-extrap4-8"].extrapolated == {"from_layers": [4, 8], "to_layers": 80}


def test_labels_come_from_the_run_keys(mixed_runs: list) -> None:
    labels = dict(zip([r.name for r in mixed_runs], plot.run_labels(mixed_runs, wrap=None), strict=True))
    assert labels["gpt2-train-b8-s1024"] == "gpt2 train b8 s1024"
    assert labels["gpt2-train-b8-s1024-ddp-np2"] == "gpt2 train b8 s1024 DDP×2"
    assert labels["llama3-8b-l8-train-b8-s1024-fsdp2-np2"] == "llama3-8b train b8 s1024 FSDP2×2 (8 layers)"
    assert labels["llama3-8b-train-b8-s1024-layers16"] == "llama3-8b train b8 s1024 (16 layers)"
    assert labels["llama3-70b-train-b8-s1024-extrap4-8"] == "llama3-70b train b8 s1024 (extrap. 4,8→80 layers)"
    assert labels["resnet50-train-b16"] == "resnet50 train b16"  # one dtype for resnet50: not shown
    # the two DLRM runs differ only in dtype: both show it
    assert labels["dlrm-train-b2048"] == "dlrm train b2048 bf16"
    assert labels["dlrm-train-b2048-fp32"] == "dlrm train b2048 fp32"
    assert len(set(labels.values())) == len(labels)
    assert not any("…" in lab or "-cuda" in lab for lab in labels.values())  # never a folder name
    # long labels put their qualifier on a second line
    wrapped = dict(zip([r.name for r in mixed_runs], plot.run_labels(mixed_runs), strict=True))
    assert wrapped["llama3-8b-l8-train-b8-s1024-fsdp2-np2"] == "llama3-8b train b8 s1024\nFSDP2×2 (8 layers)"
    assert wrapped["gpt2-train-b8-s1024-ddp-np2"] == "gpt2 train b8 s1024 DDP×2"


def test_compile_twins_and_devices_are_told_apart(tmp_path: Path) -> None:
    """An eager and a --compile run, and a CPU run of the same configuration: no "#1"/"#2", the device shown."""
    for name, keys in (("eager", {}), ("compiled", {"compile": True}), ("cpu", {"device": "cpu"})):
        shutil.copytree(PLOT_RUNS / "resnet50-train-b64", tmp_path / name)
        doc = json.loads((tmp_path / name / "breakdown.json").read_text())
        (tmp_path / name / "breakdown.json").write_text(json.dumps({**doc, "device": "cuda", **keys}))
    got = dict(zip(["compiled", "cpu", "eager"], plot.run_labels(load_runs([tmp_path]), wrap=None), strict=True))
    assert got == {"eager": "resnet50 train b64 H200", "compiled": "resnet50 train b64 H200 compile",
                   "cpu": "resnet50 train b64 cpu"}
    on_gpu = load_runs([tmp_path / "eager", tmp_path / "compiled"])
    assert plot.run_labels(on_gpu) == ["resnet50 train b64", "resnet50 train b64 compile"]  # one device: not shown


def test_labels_that_tie_on_every_key_get_numbers(runs: list) -> None:
    twice = [runs[-1], runs[-1]]
    assert plot.run_labels(twice) == ["resnet50 train b64 #1", "resnet50 train b64 #2"]


def _longest_labels(runs: list, n: int = 10) -> list:
    """The n runs with the longest labels (the two-line ones first), in their order."""
    lengths = [len(lab) for lab in plot.run_labels(runs, wrap=None)]
    keep = sorted(sorted(range(len(runs)), key=lambda i: -lengths[i])[:n])
    return [runs[i] for i in keep]


@pytest.mark.parametrize("kind", ["breakdown", "amdahl"])
def test_mixed_runs_figures_have_no_overlaps(mixed_runs: list, kind: str) -> None:
    fig = plot.make_figure(kind, mixed_runs if kind == "breakdown" else _longest_labels(mixed_runs))
    boxes = _boxes(fig)
    w, h = fig.bbox.width, fig.bbox.height
    for text, b in boxes:
        assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= w + 1 and b.y1 <= h + 1, f"'{text}' leaves the figure"
    for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
        ox = min(a.x1, b.x1) - max(a.x0, b.x0)
        oy = min(a.y1, b.y1) - max(a.y0, b.y0)
        assert not (ox > 1 and oy > 1), f"'{ta}' overlaps '{tb}' in {kind}"


def test_amdahl_ceiling_labels_of_many_runs_stay_in_the_figure(runs: list) -> None:
    many = [load_run(r.path) for r in runs]  # 10 runs, as many as amdahl draws
    for i, r in enumerate(many):
        r.info["addressable_fraction"] = 0.80 + 0.004 * i  # crowded near the top
    fig = plot.plot_amdahl(many)
    renderer = _draw(fig)
    boxes = [Text.get_window_extent(t, renderer) for t in fig.axes[0].texts]  # the text, not its arrow
    ys = sorted(b.y0 for b in boxes)
    assert len(ys) == 10
    assert all(b - a >= 0.95 * plot.FONT_PT * 1.3 * fig.dpi / 72 for a, b in itertools.pairwise(ys))
    assert all(b.y0 >= 0 and b.y1 <= fig.bbox.height + 1 for b in boxes)


def test_spread_labels_respects_bounds() -> None:
    out = plot.spread_labels(np.array([95.0, 96.0, 97.0, 10.0]), 5.0, lo=0.0, hi=100.0)
    assert out.max() <= 100.0 and out[3] == 10.0
    assert np.all(np.diff(np.sort(out)) >= 5.0 - 1e-9)
    low = plot.spread_labels(np.array([0.0, 0.0, 1.0]), 5.0, lo=2.0, hi=100.0)
    assert low.min() >= 2.0 and np.all(np.diff(np.sort(low)) >= 5.0 - 1e-9)


def test_top_kernels_is_one_run(runs: list) -> None:
    with pytest.raises(AddressableError, match=r"top-kernels shows the kernels of one run, got 2: pick one with --runs"):
        plot.make_figure("top-kernels", runs[:2])
    fig = plot.make_figure("top-kernels", [runs[-1]])
    assert len(fig.axes) == 1
    assert fig.axes[0].get_title(loc="left") == "resnet50 train b64 bf16"  # dtype shown: a figure on its own
    assert fig.get_size_inches()[1] < 4


def test_sweep_panel_error_bars_span_repeats(runs: list) -> None:
    fig = plot.plot_sweep(runs, x="batch")
    ax = fig.axes[0]
    members = plot.sweep_groups(runs, x="batch")[0][2]
    kernel = next(c for c in ax.containers if "kernel" in c.get_label())
    ys = kernel.lines[0].get_ydata()
    assert list(ys) == pytest.approx([r.addressable_fraction for r in members])
    segments = kernel.lines[2][0].get_segments()
    for seg, r in zip(segments, members, strict=True):
        lo, hi = r.fraction_range()
        assert (seg[0][1], seg[1][1]) == pytest.approx((lo, hi))
    assert {c.get_label() for c in ax.containers} == {"share of GPU kernel time", "share of wall-clock step time"}


def test_top_kernels_merges_variants_and_shortens_names(runs: list) -> None:
    r = runs[-1]  # resnet50 b64
    t = plot.top_kernels(r, n=50)
    repl = r.kernels[r.kernels["class"] == "replaceable"]
    assert t["time_us"].sum() == pytest.approx(repl["time_us"].sum())
    assert not t["kernel"].duplicated().any()
    assert "elementwise: add" in set(t["kernel"])
    assert all("<" not in k and "(" not in k for k in t["kernel"])
    assert plot.top_kernels(r, n=3)["time_us"].is_monotonic_decreasing


@pytest.mark.parametrize(("name", "short"), [
    ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<"
     "float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
     "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::"
     "{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
     "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<float, "
     "float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})", "elementwise: mul"),
    ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<"
     "float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::na",
     "elementwise: mul"),  # cut short
    ("void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous namespace)::silu_kernel("
     "at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >"
     "(int, ...)", "elementwise: silu"),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
     "elementwise: add"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
     "float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, ...>)", "reduce: mean"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
     "TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, "
     "std::plus<float>, float>(...)", "multi_tensor_apply: add"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1"
     "::Params)", "cutlass_80_simt_sgemm_128x32_8x5_nn_align1"),
    ("void at::native::(anonymous namespace)::max_pool_forward_nhwc<c10::BFloat16, int>(c10::BFloat16 const*, int)",
     "max_pool_forward_nhwc"),
    ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0"),
    ("Memset (Device)", "Memset"),
])
def test_short_kernel_name_keeps_the_op(name: str, short: str) -> None:
    assert short_kernel_name(name) == short


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("kind", list(plot.PLOTS))
def test_empty_set_of_runs_is_a_clear_error(kind: str) -> None:
    with pytest.raises(AddressableError, match="no runs to plot"):
        plot.make_figure(kind, [])


def test_unknown_kind_and_misplaced_options_are_errors(runs: list) -> None:
    with pytest.raises(AddressableError, match=r"unknown plot kind 'pie' \(known: breakdown, amdahl, sweep, top-kernels, roofline, modules\)"):
        plot.make_figure("pie", runs)
    with pytest.raises(AddressableError, match="--speedups does not apply to the breakdown plot"):
        plot.make_figure("breakdown", runs, speedups=WINS)


def test_no_replaceable_kernels_is_an_error(runs: list, tmp_path: Path) -> None:
    run = load_run(PLOT_RUNS / "resnet50-train-b16")
    run.kernels = run.kernels[run.kernels["class"] == "library"]
    with pytest.raises(AddressableError, match="no replaceable kernels"):
        plot.plot_top_kernels([run])


# --------------------------------------------------------------------------- loading runs


def test_find_runs_natural_order_skips_hidden_and_nested(tmp_path: Path) -> None:
    for name in ("m-s2048", "m-s512", "m-s1024", ".m-s64.partial", "x/m-b8", "m-s512/layers2"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "breakdown.json").write_text("{}")
    found = [p.relative_to(tmp_path).as_posix() for p in find_runs(tmp_path)]
    assert found == ["m-s512", "m-s1024", "m-s2048", "x/m-b8"]
    assert find_runs(tmp_path / "m-s512/layers2") == [tmp_path / "m-s512/layers2"]


def test_load_runs_errors(tmp_path: Path) -> None:
    with pytest.raises(AddressableError, match="no runs"):
        load_runs(tmp_path)
    with pytest.raises(AddressableError, match="no such run folder"):
        load_runs(tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "breakdown.json").write_text("{not json")
    with pytest.raises(AddressableError, match="not valid JSON"):
        load_runs(bad)


def test_run_without_class_and_share_columns_fills_them(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    (run / "breakdown.json").write_text("{}")
    (run / "categories.csv").write_text("category,time_us\nsoftmax,30\ngemm,10\n")
    (r,) = load_runs(run)
    assert dict(zip(r.categories["category"], r.categories["class"], strict=True)) == {
        "softmax": "replaceable", "gemm": "library"}
    assert r.share_of("softmax") == pytest.approx(0.75)
    assert plot.plot_breakdown([r]) is not None


def test_runs_table_and_summary(runs: list) -> None:
    t = runs_table(runs)
    assert len(t) == len(runs)
    assert (t["kernel_min"] <= t["addressable_kernel"] + 1e-12).all()
    assert (t["addressable_kernel"] <= t["kernel_max"] + 1e-12).all()
    resnet = t[t["run"] == "resnet50-train-b64"].iloc[0]
    assert resnet["gemm_attention_share"] == pytest.approx(runs[-1].share_of("gemm", "attention"))
    s = runs_summary(runs)
    assert list(s.columns) == ["workload", "mode", "batch", "seq_len", "dtype", "gpus", "addressable (kernel)",
                               "addressable (wall)", "addressable (compute)", "GEMM+attention", "run"]
    assert set(s["gpus"]) == {1} and list(s["run"]) == [r.name for r in runs]
    assert s["addressable (kernel)"].str.match(r"\d+\.\d% \[\d+\.\d%-\d+\.\d%\]").all()


# --------------------------------------------------------------------------- CLI: plot


def test_cli_plot_each_kind(tmp_path: Path) -> None:
    runner = CliRunner()
    for kind in plot.PLOTS:
        out = tmp_path / f"{kind}.svg"
        where = {"top-kernels": PLOT_RUNS / "resnet50-train-b64", "roofline": PLOT_RUNS / "resnet50-train-b64",
                 "modules": MODULE_RUN}.get(kind, PLOT_RUNS)
        res = runner.invoke(main, ["plot", kind, "--runs", str(where), "--figure", str(out)])
        assert res.exit_code == 0, res.output
        assert out.is_file() and f"Wrote {out}" in res.output


def test_cli_plot_defaults_to_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(PLOT_RUNS / "resnet50-train-b16", tmp_path / "outputs" / "resnet50-train-b16")
    res = CliRunner().invoke(main, ["plot", "breakdown"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "outputs" / "figures" / "breakdown.pdf").is_file()


def test_cli_plot_amdahl_with_speedups(tmp_path: Path) -> None:
    out = tmp_path / "a.pdf"
    res = CliRunner().invoke(main, ["plot", "amdahl", "--runs", str(PLOT_RUNS / "resnet50-train-b64"),
                                    "--speedups", str(WINS), "--out", str(out)])  # the old spelling of --figure
    assert res.exit_code == 0, res.output
    assert out.is_file()
    assert "warning: --out is deprecated here and goes in the next release; use --figure" in res.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["plot", "pie", "--runs", str(PLOT_RUNS)], "error: unknown plot kind 'pie'"),
    (["plot", "breakdown", "--runs", "EMPTY"], "error: no runs (folders with breakdown.json) found in"),
    (["plot", "breakdown", "--runs", "EMPTY/missing"], "error: no such run folder"),
    (["plot", "sweep", "--runs", str(PLOT_RUNS / "dlrm-train-b2048")], "error: no sweep"),
    (["plot", "breakdown", "--runs", str(PLOT_RUNS), "--figure", "fig.jpg"], "error: figure file must end in"),
    (["plot", "breakdown", "--runs", str(PLOT_RUNS), "--top", "3"], "error: --top does not apply"),
    (["plot", "top-kernels", "--runs", str(PLOT_RUNS)], "error: top-kernels shows the kernels of one run, got 10"),
])
def test_cli_plot_errors_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    args = [a.replace("EMPTY", str(tmp_path)) for a in args]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2
    assert res.output.startswith(message) and res.output.count("\n") == 1, res.output
    assert not list(tmp_path.rglob("*.pdf"))


# --------------------------------------------------------------------------- sweeps


def test_parse_list_and_swept_parameter() -> None:
    assert parse_list("16, 32,64") == [16, 32, 64]
    assert parse_list(None) == []
    with pytest.raises(AddressableError, match="comma-separated"):
        parse_list("16,x", int, "--batch")
    assert swept_parameter("resnet50", [16, 32], [], []) == ("batch", [16, 32])
    assert swept_parameter(None, [8], [1024], ["gpt2", "llama3-1b"]) == ("workload", ["gpt2", "llama3-1b"])
    for args, msg in [(("resnet50", [16], [], []), "exactly one list"),
                      (("resnet50", [16, 32], [128, 256], []), "exactly one list"),
                      (("resnet50", [], [], ["a", "b"]), "either a WORKLOAD or --workloads"),
                      ((None, [16, 32], [], []), "name the WORKLOAD"),
                      (("resnet50", [16, 16], [], []), "repeated value")]:
        with pytest.raises(AddressableError, match=msg):
            swept_parameter(*args)


def _stub_profile(calls: list, fail: set[int] = frozenset(), **keys: object):
    """A stand-in for profile_workload: copies a fixture run into out/<name> with the config's keys."""
    from addressable.capture.profile import run_name
    from addressable.core.errors import AddressableError as Err

    def fn(cfg, m, out, **kw):
        calls.append((cfg, m, kw))
        if cfg.batch in fail:
            raise Err(f"out of memory running {cfg.name} at batch {cfg.batch}")
        folder = Path(out) / run_name(cfg)
        shutil.copytree(PLOT_RUNS / f"resnet50-train-b{cfg.batch}", folder)
        doc = json.loads((folder / "breakdown.json").read_text())
        doc.update(workload=cfg.name, batch=cfg.batch, device=cfg.device, dtype=cfg.dtype, **keys)
        (folder / "breakdown.json").write_text(json.dumps(doc))

        class Result:
            path = folder
        return Result()

    return fn


def test_sweep_is_a_loop_over_profile(tmp_path: Path) -> None:
    calls: list = []
    param, configs = sweep_configs("resnet50", batch=[16, 32, 64], device="cpu")
    m = measurement("cpu", warmup=0, steps=1, repeats=2)
    df = sweep(param, configs, m, tmp_path, profile_fn=_stub_profile(calls))
    assert [c[0].batch for c in calls] == [16, 32, 64]
    assert all(c[0].name == "resnet50" and c[1] is m for c in calls)
    assert list(df["value"]) == [16, 32, 64] and (df["param"] == "batch").all()
    for row in df.itertuples():
        r = load_run(row.run)
        assert row.addressable_fraction == r.addressable_fraction
        assert (row.addressable_min, row.addressable_max) == r.fraction_range()
        assert row.addressable_fraction_wall == r.addressable_fraction_wall
    assert df["error"].isna().all()
    fig = plot.plot_sweep(load_runs(tmp_path))  # the sweep's folders make a sweep figure
    assert fig.axes[0].get_xlabel() == "batch size"
    assert {c.get_label() for c in fig.axes[0].containers} >= {"share of GPU kernel time"}
    assert "16" in format_sweep(df) and "%" in format_sweep(df)


def test_sweep_header_names_the_basis(tmp_path: Path) -> None:
    """issue 26: the header said "kernel time" for CPU runs, whose shares are of CPU-op self time."""
    m = measurement("cpu", warmup=0, steps=1, repeats=1)
    gpu = sweep(*sweep_configs("resnet50", batch=[16, 32], device="cpu"), m, tmp_path / "g",
                profile_fn=_stub_profile([]))
    assert format_sweep(gpu).splitlines()[0].startswith("batch         addressable (kernel time)")
    cpu = sweep(*sweep_configs("resnet50", batch=[16, 32], device="cpu"), m, tmp_path / "c",
                profile_fn=_stub_profile([], basis="cpu_op_time"))
    assert list(cpu["basis"]) == ["cpu_op_time"] * 2
    assert format_sweep(cpu).splitlines()[0].startswith("batch         addressable (CPU-op time)")
    assert "work time" in format_sweep(pd.concat([gpu, cpu]))


def test_sweep_goes_on_past_a_failed_value(tmp_path: Path) -> None:
    calls: list = []
    m = measurement("cpu")
    df = sweep(*sweep_configs("resnet50", batch=[16, 32, 64], device="cpu"), m, tmp_path,
               profile_fn=_stub_profile(calls, {64}))
    assert len(calls) == 3
    assert df["error"].notna().tolist() == [False, False, True]
    assert "out of memory" in df["error"].iloc[2]
    assert "failed: out of memory" in format_sweep(df)
    with pytest.raises(AddressableError, match="every sweep value failed; first: batch=16"):
        sweep(*sweep_configs("resnet50", batch=[16, 32], device="cpu"), m, tmp_path / "b",
              profile_fn=_stub_profile([], {16, 32}))


def test_sweep_configs_checks_every_config_before_running() -> None:
    with pytest.raises(AddressableError, match="unknown workload 'nope'"):
        sweep_configs(None, workloads=["resnet50", "nope"], device="cpu")
    with pytest.raises(AddressableError, match="must be positive"):
        sweep_configs("resnet50", batch=[16, 0], device="cpu")
    param, configs = sweep_configs(None, workloads=["gpt2", "llama3-1b"], seq_len=[64], device="cpu")
    assert param == "workload" and [(c.name, c.seq_len, c.device) for c in configs] == [
        ("gpt2", 64, "cpu"), ("llama3-1b", 64, "cpu")]


def test_cli_sweep_with_stub_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import addressable.capture.profile

    calls: list = []
    monkeypatch.setattr(addressable.capture.profile, "profile_workload", _stub_profile(calls))
    fig = tmp_path / "sweep.pdf"
    res = CliRunner().invoke(main, ["sweep", "resnet50", "--batch", "16,32,64", "--device", "cpu",
                                    "--out", str(tmp_path / "runs"), "--repeats", "2", "--plot", str(fig)])
    assert res.exit_code == 0, res.output
    assert [c[0].batch for c in calls] == [16, 32, 64]
    assert calls[0][1].repeats == 2 and calls[0][1].fixed == ("repeats",)
    assert "resnet50-train-b32-fp32-cpu" in res.output
    assert fig.is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["sweep", "resnet50", "--batch", "16"], "error: give exactly one list"),
    (["sweep", "resnet50", "--batch", "16,a"], "error: --batch takes comma-separated values"),
    (["sweep", "--batch", "16,32"], "error: name the WORKLOAD"),
    (["sweep", "resnet50", "--batch", "16,32", "--device", "cpu", "--steps", "0"],
     "error: --steps, --profile-steps and --repeats must be at least 1"),
])
def test_cli_sweep_errors_are_one_line_exit_2(args: list[str], message: str) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2
    assert res.output.startswith(message) and res.output.count("\n") == 1, res.output


TINY_ADAPTER = '''
import torch
from addressable.capture.phases import phase
from addressable.capture.workload import WorkloadSpec

def build(cfg):
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.LayerNorm(32),
                                torch.nn.Linear(32, 4)).to(cfg.device)
    x = torch.randn(cfg.batch, 16, device=cfg.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step():
        with phase("forward"):
            loss = model(x).square().mean()
        with phase("backward"):
            loss.backward()
        with phase("optimizer"):
            opt.step()
            opt.zero_grad()

    return step

WORKLOADS = [WorkloadSpec(name="tiny_sweep_mlp", family="mlp", description="a tiny MLP for sweep tests",
                          build=build, default_batch=4, dtypes=("fp32",), default_dtype="fp32")]
'''


@pytest.mark.slow
def test_cli_sweep_runs_the_real_profiler_on_a_tiny_workload(tmp_path: Path) -> None:
    adapter = tmp_path / "tiny_sweep_adapter.py"
    adapter.write_text(TINY_ADAPTER)
    out, fig = tmp_path / "runs", tmp_path / "sweep.png"
    res = CliRunner().invoke(main, ["sweep", "tiny_sweep_mlp", "--batch", "2,8", "--adapter", str(adapter),
                                    "--warmup", "0", "--steps", "1", "--profile-steps", "1", "--repeats", "2",
                                    "--out", str(out), "--plot", str(fig)])
    assert res.exit_code == 0, res.output
    runs = load_runs(out)
    assert [r.info["batch"] for r in runs] == [2, 8]
    for r in runs:
        assert len(r.info["repeats"]) == 2 and r.info["family"] == "mlp"
        lo, hi = r.fraction_range()
        assert 0 < lo <= r.addressable_fraction <= hi <= 1
    assert fig.is_file()
    if all(r.info["device"] == "cpu" for r in runs):
        assert "share of CPU-op self time" in {c.get_label() for c in plot.plot_sweep(runs).axes[0].containers}
    table = runs_table(runs)
    assert isinstance(table, pd.DataFrame) and len(table) == 2


# --------------------------------------------------------------------------- issue 26: figures that read


def _curve_colors(fig: Figure) -> list[tuple]:
    return [to_rgba(line.get_color()) for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")]


def test_amdahl_gives_every_run_its_own_colour(runs: list, figures: dict) -> None:
    """issue 26: over results/h200 (31 runs) amdahl reused about eight colours."""
    colours = _curve_colors(figures["amdahl"])
    assert len(colours) == len(runs) == 10 and len(set(colours)) == 10
    labels = {t.get_text() for t in figures["amdahl"].legends[0].get_texts()}
    assert labels == set(plot.run_labels(runs))  # a legend entry per curve


def test_amdahl_refuses_more_runs_than_colours_and_says_what_to_do(tmp_path: Path) -> None:
    for i in range(11):
        shutil.copytree(PLOT_RUNS / "resnet50-train-b16", tmp_path / f"resnet50-train-b16-{i}")
    res = CliRunner().invoke(main, ["plot", "amdahl", "--runs", str(tmp_path), "--figure", str(tmp_path / "a.pdf")])
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert "at most 10 runs; got 11: name the runs to compare (`addressable plot amdahl RUN...`" in res.output
    assert "`plot breakdown`" in res.output and not (tmp_path / "a.pdf").exists()


def test_amdahl_leader_lines_cross_no_label(runs: list) -> None:
    """issue 26: leader lines crossed the ceiling labels; now each runs in the gutter left of the labels."""
    crowded = [load_run(r.path) for r in runs]
    for i, r in enumerate(crowded):
        r.info["addressable_fraction"] = 0.5 + 0.01 * (i % 3) + (0.3 if i > 6 else 0)  # labels pushed far
    fig = plot.plot_amdahl(crowded)
    renderer = _draw(fig)
    ax = fig.axes[0]
    labels = [Text.get_window_extent(t, renderer) for t in ax.texts]
    for ann in ax.texts:
        line = ann.arrow_patch.get_window_extent(renderer)
        assert line.x0 >= ax.bbox.x1 - 1 and line.x1 <= min(b.x0 for b in labels) + 1
    moved = [abs(b.y0 + b.height / 2 - ax.transData.transform((1, a.xy[1]))[1]) for a, b in zip(ax.texts, labels,
                                                                                                strict=True)]
    assert max(moved) > 5  # labels were nudged, so the leader lines are not all flat


def test_amdahl_legend_of_long_labels_stays_in_the_figure(tmp_path: Path) -> None:
    """issue 26: the legend was clipped ("llama3-8b infer b8 s1024 (roofline"); labels too long for two
    columns get one."""
    for where in ("roofline", "modules", "h200"):  # one configuration in three folders: "(roofline)", ...
        for name in ("llama3-8b-infer-b4-s1024", "gpt2-train-b8-s1024", "resnet50-train-b64"):
            shutil.copytree(PLOT_RUNS / name, tmp_path / where / name)
    runs = load_runs(tmp_path)
    assert any(len(lab) > plot.LEGEND_CHARS and "\n" not in lab for lab in plot.run_labels(runs))
    fig = plot.plot_amdahl(runs)
    renderer = _draw(fig)
    box = fig.legends[0].get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y0 >= 0
    for text, b in _boxes(fig):
        assert b.x0 >= -1 and b.x1 <= fig.bbox.width + 1 and b.y0 >= -1 and b.y1 <= fig.bbox.height + 1, text


def _roofline_run(tmp_path: Path, **keys: object):
    folder = tmp_path / "run"
    shutil.copytree(PLOT_RUNS / "resnet50-train-b64", folder)
    doc = json.loads((folder / "breakdown.json").read_text())
    doc.update(keys)
    (folder / "breakdown.json").write_text(json.dumps({k: v for k, v in doc.items() if v is not None}))
    return load_run(folder)


def _roofs(fig: Figure) -> set[str]:
    return {line.get_gid().removeprefix("roof:") for line in fig.axes[0].get_lines()
            if (line.get_gid() or "").startswith("roof:")}


@pytest.mark.parametrize(("dtype", "drawn"), [("bf16", {"bf16"}), ("fp16", {"fp16"}), ("fp32", {"fp32", "tf32"}),
                                               (None, {"bf16", "fp16", "tf32", "fp32"})])
def test_roofline_draws_the_roofs_of_the_runs_dtype(tmp_path: Path, dtype: str | None, drawn: set[str]) -> None:
    """issue 26: a bf16 run showed an fp8 roof, and the bf16 and fp16 labels overlapped."""
    fig = plot.plot_roofline([_roofline_run(tmp_path, dtype=dtype)])
    assert _roofs(fig) == drawn
    renderer = _draw(fig)
    top = fig.axes[0]
    labels = [t for t in top.texts if t.get_gid() == "roof label"]
    named = " ".join(t.get_text() for t in labels)
    assert all(f"{d} " in named for d in drawn) and "fp8" not in named
    boxes = [Text.get_window_extent(t, renderer) for t in labels]
    for a, b in itertools.combinations(boxes, 2):
        assert min(a.y1, b.y1) - max(a.y0, b.y0) <= 0, named  # no two roof labels overlap
    for t, box in zip(labels, boxes, strict=True):
        assert box.y1 <= top.bbox.y1 + 1
        for line in top.get_lines():  # no roof line runs through a label
            if (line.get_gid() or "").startswith("roof:"):
                y = top.transData.transform((1.0, line.get_ydata().max()))[1]
                assert not box.y0 < y < box.y1, (t.get_text(), line.get_gid())


def test_roofline_labels_clear_the_dots_and_library_dots_have_a_legend_entry(tmp_path: Path) -> None:
    run = _roofline_run(tmp_path)
    fig = plot.plot_roofline([run])
    renderer = _draw(fig)
    top = fig.axes[0]
    (entry,) = top.get_legend().get_texts()
    (handle,) = top.get_legend().legend_handles
    k, _ = plot.roofline_points(run)
    library = set(k.loc[(k["flops"] > 0) & (k["class"] == "library"), "category"])
    assert entry.get_text() == "library: " + ", ".join(sorted(library, key=plot.category_order(library).index))
    assert to_rgba(handle.get_markerfacecolor()) == to_rgba(plot.LIBRARY_DOT)
    dots = top.collections[0]
    centres = dots.get_offset_transform().transform(dots.get_offsets())
    radii = np.sqrt(dots.get_sizes()) / 2 * fig.dpi / 72
    for t in (t for t in top.texts if t.get_gid() == "roof label"):
        box = Text.get_window_extent(t, renderer)
        for (x, y), r in zip(centres, radii, strict=True):
            near_x = min(max(x, box.x0), box.x1)
            near_y = min(max(y, box.y0), box.y1)
            assert math.hypot(x - near_x, y - near_y) >= r - 1, t.get_text()  # the label hides no dot


def test_sweep_shows_a_repeated_configuration_instead_of_dropping_it(tmp_path: Path) -> None:
    """issue 26: `plot sweep` dropped NAME-2 (the same configuration profiled again) without a word."""
    for name in ("resnet50-train-b16", "resnet50-train-b32"):
        shutil.copytree(PLOT_RUNS / name, tmp_path / name)
    _variant(tmp_path, "resnet50-train-b16-2", base="resnet50-train-b16", addressable_fraction=0.5,
             addressable_fraction_wall=0.25)
    runs = load_runs(tmp_path)
    [(_, key, members, repeats)] = plot.sweep_repeats(runs)
    assert key == "batch" and [r.name for r in members] == ["resnet50-train-b16", "resnet50-train-b32"]
    assert [r.name for r in repeats] == ["resnet50-train-b16-2"]
    fig = plot.plot_sweep(runs)
    ax = fig.axes[0]
    shown = {tuple(np.round(line.get_xydata()[0], 4)) for line in ax.get_lines() if line.get_gid() == "repeat"}
    wall = round(repeats[0].addressable_fraction_wall, 4)  # recomputed from its times (docs/accounting.md)
    assert wall != 0.5 and shown == {(16.0, 0.5), (16.0, wall)}  # both bases, at its batch size, off the line
    lo, hi = ax.get_ylim()
    assert lo <= min(wall, 0.5) and hi >= max(wall, 0.5)
    assert plot.REPEAT_LABEL in {t.get_text() for t in fig.legends[0].get_texts()}
    plain = plot.plot_sweep([r for r in runs if r.name != "resnet50-train-b16-2"])
    assert plot.REPEAT_LABEL not in {t.get_text() for t in plain.legends[0].get_texts()}


def test_top_kernels_names_that_share_a_long_prefix_stay_apart(tmp_path: Path) -> None:
    """issue 26 (point 11) in the figure: two triton kernels both read `triton_red_fused__log_softmax…`."""
    folder = tmp_path / "run"
    shutil.copytree(PLOT_RUNS / "resnet50-train-b64", folder)
    names = ["triton_red_fused__log_softmax__to_copy_mul_0", "triton_red_fused__log_softmax__to_copy_unsafe_view_1",
             "triton_poi_fused_add_0"]
    pd.DataFrame({"name": names, "category": "triton", "class": "replaceable", "time_us": [30.0, 20.0, 10.0],
                  "count": 1, "share": [0.3, 0.2, 0.1]}).to_csv(folder / "kernels.csv", index=False)
    fig = plot.plot_top_kernels([load_run(folder)])
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(ticks) == 3 and len(set(ticks)) == 3
    assert all(len(t) <= plot.KERNEL_CHARS for t in ticks) and ticks[2] == "triton_poi_fused_add_0"


@pytest.mark.parametrize("make_outputs", [False, True])
def test_plot_without_runs_words_it_as_project_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     make_outputs: bool) -> None:
    """Issue 26: with no outputs/ folder, plot said "no such run folder: outputs"; it now says what project says."""
    monkeypatch.chdir(tmp_path)
    if make_outputs:
        (tmp_path / "outputs").mkdir()
    wins = Path(__file__).resolve().parents[2] / "examples" / "wins.csv"
    said = {cmd[0]: CliRunner().invoke(main, cmd) for cmd in (["plot", "breakdown"], ["project", "--speedups", str(wins)])}
    assert said["plot"].exit_code == said["project"].exit_code == 2
    assert said["plot"].stderr == said["project"].stderr == (
        "error: no runs found under outputs/ (no breakdown.json); profile a workload first or pass --runs RUN_DIR\n")
    assert not (tmp_path / "outputs" / "figures").exists()
