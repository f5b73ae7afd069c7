"""Regenerate the result tables of README.md and docs/*.md from the committed H200 results (results/h200/).

Each generated table sits between `<!-- table: NAME -->` and `<!-- /table -->` in a page; this script
rewrites what is between them and nothing else. tests/test_results_tables.py checks that the committed
pages equal what it generates.

    python scripts/results_tables.py            # rewrite the pages whose tables are stale
    python scripts/results_tables.py --check    # change nothing; exit 1, naming the stale tables
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from addressable.core.atomic import write_text

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
RESULTS = ROOT / "results" / "h200"
BLOCK = re.compile(r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)
PHASES = ("forward", "backward", "optimizer", "prefill", "decode")

SEVEN = {  # run folder: row label (the study's seven workloads)
    "resnet50-train-b64-bf16-cuda": "resnet50 train b64, bf16 autocast, channels_last",
    "resnet50-infer-b64-bf16-cuda": "resnet50 infer b64",
    "gpt2-train-b8-s1024-bf16-cuda": "gpt2 (124M) train b8 × 1024",
    "llama3-8b-infer-b8-s1024-bf16-cuda": "llama3-8b infer: prefill b8 × 1024 + 16 decode tokens",
    "llama3-70b-infer-b8-s1024-bf16-cuda-extrap4-8":
        "llama3-70b infer, same (profiled at 4 and 8 layers, extrapolated to 80)",
    "dlrm-train-b8192-bf16-cuda": "dlrm (DCNv2, TorchRec) train b8192, bf16 autocast MLPs",
    "dlrm-infer-b8192-bf16-cuda": "dlrm (DCNv2, TorchRec) infer b8192, bf16 autocast MLPs",
}
MORE = {  # run folder: row label ({triton}: the run's Triton share of kernel time)
    "dlrm-train-b8192-fp32-cuda": "dlrm train b8192, fp32 (no TF32)",
    "dlrm-infer-b8192-fp32-cuda": "dlrm infer b8192, fp32 (no TF32)",
    "gpt2-infer-b8-s1024-bf16-cuda": "gpt2 infer b8 × 1024 + 16 decode",
    "llama3-1b-infer-b8-s1024-bf16-cuda": "llama3-1b infer b8 × 1024 + 16 decode",
    "llama3-1b-train-b8-s1024-bf16-cuda": "llama3-1b train b8 × 1024",
    "llama3-8b-train-b2-s1024-bf16-cuda-layers16": "llama3-8b train b2 × 1024 (16 of 32 layers)",
    "resnet50-train-b16-bf16-cuda": "resnet50 train b16",
    "resnet50-train-b32-bf16-cuda": "resnet50 train b32",
    "resnet50-train-b128-bf16-cuda": "resnet50 train b128",
    "gpt2-train-b8-s1024-bf16-cuda-compile": "gpt2 train b8 × 1024, `--compile` (Triton {triton})",
    "resnet50-train-b64-bf16-cuda-compile": "resnet50 train b64, `--compile` (Triton {triton})",
}
MULTI_GPU = {
    "gpt2-train-b8-s1024-ddp-np2": "gpt2 train b8 × 1024, DDP × 2",
    "llama3-8b-l8-train-b8-s1024-fsdp2-np2": "llama3-8b (8 layers) train b8 × 1024, FSDP2 × 2",
}
RANK_TRACES = {"gpt2_ddp": "gpt2 train b8 × 1024, DDP × 2", "resnet50_ddp": "resnet50 train b64, DDP × 2"}
DLRM_BENCH = {  # verify JSON stem: row label
    "01_embedding_bag_sum_uniform": "01 EmbeddingBag sum, uniform ids",
    "02_embedding_bag_sum_zipf": "02 EmbeddingBag sum, Zipf ids (01's kernel)",
    "05_jagged_to_padded_dense": "05 jagged → padded dense",
    "06_dot_interaction": "06 dot interaction",
    "09_concat_interaction_input": "09 concat interaction input",
    "10_sigmoid_bce_loss": "10 sigmoid + BCE",
    "11_hash_sparse_ids": "11 hash sparse ids",
    "12_dense_adagrad_step": "12 dense Adagrad step",
}
TRITON = {  # verify JSON stem: (candidate, problem)
    "01_softmax_long_rows": ("split-row online softmax", "softmax over 64 × 393,216"),
    "02_rmsnorm": ("one-row-per-program RMSNorm", "8192 × 4096"),
    "03_layernorm": ("one-row-per-program LayerNorm", "8192 × 4096"),
    "04_frobenius_norm": ("two-kernel Frobenius normalisation", "8 × 64 × 256 × 256"),
}


def markdown(header: list[str], rows: list[list[str]], align: str = "---") -> str:
    """A GitHub table: the header, the rule, one line per row."""
    lines = [header, [align] * len(header), *rows]
    return "".join("| " + " | ".join(cells) + " |\n" for cells in lines)


def _breakdown(run: Path) -> dict:
    return json.loads((run / "breakdown.json").read_text())


def _shares(b: dict) -> dict[str, float]:
    return {c["category"]: c["share"] for c in b["categories"]}


def _with_range(value: float, lo_hi: list[float] | None, bold: bool = False) -> str:
    text = f"**{value:.1%}**" if bold else f"{value:.1%}"
    return f"{text} ({lo_hi[0]:.1%}–{lo_hi[1]:.1%})" if lo_hi else text


def _gemm_attention(b: dict) -> str:
    s = _shares(b)
    text = f"{s.get('gemm', 0) + s.get('attention', 0):.1%}"
    return f"{text} (+ conv {s['conv']:.0%})" if s.get("conv") else text


def _phases(b: dict) -> str:
    total, phases = b["total_kernel_time_us"], b.get("phases") or {}
    return ", ".join(f"{p} {phases[p]['time_us'] / total:.0%} ({phases[p]['addressable_fraction']:.0%})"
                     for p in PHASES if p in phases)


def _run_row(b: dict, label: str, bold: bool) -> list[str]:
    label = label.format(triton=f"{_shares(b).get('triton', 0):.1%}")
    return [label, _with_range(b["addressable_fraction"], b.get("addressable_fraction_range"), bold),
            _with_range(b["addressable_fraction_wall"], b.get("addressable_fraction_wall_range")),
            _gemm_attention(b), f"{b['step_time_ms']:.1f}"]


def seven_workloads(results: Path) -> str:
    """The study's seven workloads: fractions with their range over repeats, step time, phases."""
    rows = [[*_run_row(b, label, True), _phases(b)]
            for run, label in SEVEN.items() for b in [_breakdown(results / run)]]
    return markdown(["workload", "addressable, GPU kernel time", "addressable, wall clock", "GEMM + attention",
                     "step ms", "phases (share of kernel time, addressable)"], rows)


def headline(results: Path) -> str:
    """The README's table: the seven workloads' fractions (medians over repeats) and GEMM + attention."""
    rows = [[label, f"**{b['addressable_fraction']:.1%}**", f"{b['addressable_fraction_wall']:.1%}",
             _gemm_attention(b)] for run, label in SEVEN.items() for b in [_breakdown(results / run)]]
    return markdown(["workload (one H200, bf16)", "addressable, GPU kernel time", "addressable, wall clock",
                     "GEMM + attention"], rows)


def more_runs(results: Path) -> str:
    """Other dtypes, batch sizes, depths and `--compile`, same columns less the phases."""
    rows = [_run_row(_breakdown(results / run), label, False) for run, label in MORE.items()]
    return markdown(["workload", "addressable, GPU kernel time", "addressable, wall clock", "GEMM + attention",
                     "step ms"], rows)


def extrapolation(results: Path) -> str:
    """llama3-8b at 4 and 8 layers extrapolated to 32, against the full-depth run."""
    df = pd.read_csv(results / "extrapolation.csv")
    rows = []
    for r in df.itertuples():
        if r.metric.endswith(("_us", "_ms")):
            scale = 1e-3 if r.metric.endswith("_us") else 1.0
            cells = [f"{r.extrapolated * scale:,.1f} ms", f"{r.full * scale:,.1f} ms", f"{r.rel_error:+.1%}"]
        else:
            cells = [f"{r.extrapolated:.2%}", f"{r.full:.2%}", f"{r.error * 100:+.2f} points"]
        rows.append([f"`{r.metric}`", *cells])
    return markdown(["metric", "extrapolated from 4 and 8 layers", "measured at 32 layers", "error"], rows)


def _rank_cells(b: dict) -> list[str]:
    n, comm = b["n_steps"], sum(c["time_us"] for c in b["categories"] if c["category"] == "communication")
    replaceable = b["addressable_fraction"] * b["total_kernel_time_us"]
    ms = [b["total_kernel_time_us"], b["busy_time_us"], comm, b["communication_exposed_us"],
          b["communication_overlapped_us"]]
    return [f"{b['step_time_ms']:.1f}", *(f"{v / n / 1000:.1f}" for v in ms),
            f"{b['addressable_fraction']:.1%}", f"{b['addressable_fraction_exposed']:.1%}",
            f"**{replaceable / (b['total_kernel_time_us'] - comm):.1%}**"]


def multi_gpu(results: Path) -> str:
    """`profile --nproc 2` on 2 × H200: per rank, per profiled step, the three bases."""
    rows = [[label if k == 0 else "", str(k), *_rank_cells(_breakdown(results / run / f"rank{k}"))]
            for run, label in MULTI_GPU.items() for k in (0, 1)]
    return markdown(["run (per profiled step)", "rank", "step ms", "kernel sum ms", "busy ms", "NCCL ms",
                     "NCCL exposed", "NCCL hidden", "addressable, summed", "addressable, exposed",
                     "addressable, compute"], rows)


def rank_traces(results: Path) -> str:
    """Rank traces classified as one job (`classify rank0 rank1 -j 2`), ms over the profiled steps."""
    rows = []
    for stem, label in RANK_TRACES.items():
        job = json.loads((results / "rank_traces" / f"{stem}.classify.json").read_text())
        for r in job["ranks"]:
            rows.append([label if r["rank"] == 0 else "", str(r["rank"]),
                         *(f"{r[k] / 1000:.1f}" for k in ("total_kernel_time_us", "communication_us",
                                                          "communication_waiting_us")),
                         f"{r['addressable_fraction']:.1%}", f"{r['addressable_fraction_exposed']:.1%}",
                         f"**{r['addressable_fraction_compute']:.1%}**"])
    return markdown(["job", "rank", "kernels", "comm", "waiting", "summed", "exposed", "compute"], rows)


def _verify(path: Path) -> dict:
    return json.loads(path.read_text())


def dlrm_bench(results: Path) -> str:
    """DLRM-Bench's hand-written Triton candidates through `addressable verify` on the H200."""
    rows = [[label, f"{v['ref_ms']:.3f}", f"{v['candidate_ms']:.3f}", f"{v['speedup']:.2f}×"]
            for stem, label in DLRM_BENCH.items()
            for v in [_verify(results / "dlrm_bench" / "verify" / f"{stem}.json")]]
    return markdown(["problem", "eager ms", "Triton ms", "speedup"], rows)


def triton_candidates(results: Path) -> str:
    """examples/candidates through `verify` on the H200 (gpu/verify_triton.sh)."""
    rows = [[cand, prob, v["verdict"], f"{v['speedup']:.2f}× ({v['speedup_lo']:.2f}–{v['speedup_hi']:.2f})"]
            for stem, (cand, prob) in TRITON.items()
            for v in [_verify(results / "verify" / f"verify_{stem}.json")]]
    return markdown(["Triton candidate (`examples/candidates/`)", "problem", "verdict", "speedup (IQR)"], rows)


def projection_check(results: Path) -> str:
    """Real kernel swaps against the Amdahl projection (gpu/validate_projection.py)."""
    rows = []
    for r in json.loads((results / "validation" / "validation.json").read_text())["results"]:
        basis = [[f"{r[f'share_{b}']:.1%}", f"{r[f'projected_{b}']:.3f}×", f"{r[f'measured_{b}']:.3f}×",
                  f"{r[f'error_{b}']:+.1%}"] for b in ("kernel", "wall")]
        rows.append([r["experiment"], f"{r['group_speedup_k']:.2f}×", *basis[0], *basis[1]])
    return markdown(["swap", "k (group)", "s kernel", "projected", "measured", "error", "s wall", "projected",
                     "measured", "error"], rows)


TABLES: dict[str, Callable[[Path], str]] = {f.__name__.replace("_", "-"): f for f in (
    headline, seven_workloads, more_runs, extrapolation, multi_gpu, rank_traces, dlrm_bench, triton_candidates,
    projection_check)}


def render(text: str, results: Path = RESULTS) -> str:
    """`text` with every table block regenerated; an unknown table name is an error."""

    def fill(m: re.Match) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise KeyError(f"unknown table '{name}' (known: {', '.join(TABLES)})")
        return m.group(1) + TABLES[name](results) + m.group(4)

    return BLOCK.sub(fill, text)


def stale_tables(text: str, results: Path = RESULTS) -> list[str]:
    """Names of the tables in `text` that differ from what the results give."""
    fresh = {m.group("name"): m.group("body") for m in BLOCK.finditer(render(text, results))}
    return [m.group("name") for m in BLOCK.finditer(text) if fresh[m.group("name")] != m.group("body")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="Change nothing; exit 1 if a table is stale.")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()
    stale = {page: names for page in PAGES if (names := stale_tables(page.read_text(), args.results))}
    for page, names in stale.items():
        print(f"{page.relative_to(ROOT)}: {'stale' if args.check else 'rewrote'} {', '.join(names)}")
        if not args.check:
            write_text(page, render(page.read_text(), args.results))
    sys.exit(1 if stale and args.check else 0)


if __name__ == "__main__":
    main()
