"""Rebuild corpus.csv and h200_workloads.csv from the project's own real kernel names plus external.csv.

    python tests/data/kernel_names/build_corpus.py [CAPTURE_DIR ...]

Sources, each row citing its own:
- results/h200/*/kernels.csv: every kernel of the committed H200 reference runs, with the category
  recorded at capture time (`EXPECTED_FIXES` lists the names issue 12 re-classified, and why);
- tests/data/*.json.gz and tests/data/workloads/*.json.gz, and any CAPTURE_DIR/*.json.gz given (e.g. the
  traces of gpu/capture_stacks.py, tables named stacks_*): every kernel of those real H200 traces (their
  per-trace time tables, with the launching op, go to h200_workloads.csv; a name whose category the
  launching op decides is pinned there only);
- external.csv: names copied verbatim from public traces pasted in GitHub threads and from
  `__global__` declarations in public source, each with its URL or repository and path.
Expected categories for trace names come from the reviewed taxonomy (the regression pin);
every row's category was read by a person at least once when it was added.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from addressable.classify.breakdown import work_rows  # noqa: E402
from addressable.classify.taxonomy import load_taxonomy  # noqa: E402
from addressable.trace.reader import load_trace  # noqa: E402

# Categories recorded by the capture-time rules that issue 12 corrected.
EXPECTED_FIXES = {
    "UnaryOpFunctor<c10::BFloat16, 2, 1, 1>, at::native::Copy<": "data_movement",  # _foreach_copy_ (FSDP2 copy-in)
    "indexFuncLargeIndex<float, long, unsigned int, 2, 2, -2, true, at::native::(anonymous namespace)::ReduceAdd>": "data_movement",
    "indexFuncSmallIndex<float, long, unsigned int, 2, 2, -2, at::native::(anonymous namespace)::ReduceAdd>": "data_movement",
}

# Issue 28: sort, top-k and scans (CUB's device-wide algorithms, aten's sorts and scans) are a category of
# their own, sort_scan (replaceable, as reduction was); a CUB transform is a parallel map, elementwise.
EXPECTED_FIXES.update({k: "sort_scan" for k in (
    "bitonicSortKVInPlace", "radixSortKVInPlace", "sbtopk::gatherTopK", "tensor_kernel_scan", "cub::detail::merge_sort",
    "cub::detail::radix_sort", "cub::detail::scan::", "cub::detail::select::", "cub::detail::unique_by_key")})
EXPECTED_FIXES["cub::detail::transform::transform_kernel"] = "elementwise"

STACKS = [  # first match names the stack
    (r"nccl", "NCCL"), (r"\brccl", "RCCL"), (r"^triton_", "Inductor (Triton)"),
    (r"fbgemm", "FBGEMM"),
    (r"LSTM_|GRU_|RNN_|GENERIC_elementWise|elemWiseRNN|cudnn|_c1_k1_|xmma_(fprop|dgrad|wgrad)|nchwToNhwc|nhwcToNchw|"
     r"nhwcAddPadding|bn_fw|bn_bw|fusion::", "cuDNN"),
    (r"flash|fmha|pytorch_flash", "FlashAttention / mem-efficient attention"),
    (r"nvjet|cublas|gemv|gemm|splitKreduce|cutlass|ampere_|sm\d+_xmma", "cuBLAS/cuBLASLt/CUTLASS"),
    (r"^Memcpy|^Memset|\[CUDA mem", "CUDA runtime"),
]


def stack_of(name: str) -> str:
    return next((s for p, s in STACKS if re.search(p, name, re.I)), "PyTorch ATen")


def from_results() -> list[dict]:
    rows = []
    for path in sorted(ROOT.glob("results/h200/**/kernels.csv")):
        for r in pd.read_csv(path).itertuples():
            cat = next((c for k, c in EXPECTED_FIXES.items() if k in r.name), r.category)
            rows.append({"name": r.name, "category": cat, "stack": stack_of(r.name),
                         "source": f"addressable {path.relative_to(ROOT)}"})
    return rows


def from_traces(paths: list[Path]) -> tuple[list[dict], pd.DataFrame]:
    tax = load_taxonomy()
    rows, tables = [], []
    for path in paths:
        gpu, _ = work_rows(load_trace(path))
        table = (gpu.assign(op=gpu["op"].astype(object).fillna(""))
                 .groupby(["name", "op"], observed=True)["dur"].agg(time_us="sum", count="size").reset_index())
        table.insert(0, "trace", path.name.removesuffix(".json.gz"))
        tables.append(table)
        cats = tax.classify_kernels(table["name"].astype(str).reset_index(drop=True),
                                    table["op"].astype(str).reset_index(drop=True))
        src = (f"addressable {path.relative_to(ROOT)}" if path.is_relative_to(ROOT)
               else f"H200 capture {path.name} (kernel table in tests/data/kernel_names/h200_workloads.csv)")
        by_name = tax.classify(table["name"].astype(str).reset_index(drop=True)).astype(str)
        for name, op, cat, alone in zip(table["name"].astype(str), table["op"], cats["category"].astype(str), by_name,
                                        strict=True):
            if cat != alone:  # decided by the launching op: pinned with its op in h200_workloads.csv, not here
                continue
            rows.append({"name": name, "category": cat, "stack": stack_of(name), "source": src,
                         "op": op})
    return rows, pd.concat(tables, ignore_index=True)


def main() -> None:
    traces = sorted(ROOT.glob("tests/data/*.json.gz")) + sorted(ROOT.glob("tests/data/workloads/*.json.gz"))
    for d in sys.argv[1:]:
        traces += [p for p in sorted(Path(d).glob("*.json.gz"))
                   if not (ROOT / "tests/data/workloads" / p.name).exists()]
    trace_rows, table = from_traces(traces)
    table.to_csv(HERE / "h200_workloads.csv", index=False)
    external = pd.read_csv(HERE / "external.csv").to_dict("records")
    corpus = pd.DataFrame(from_results() + [{k: r[k] for k in ("name", "category", "stack", "source")}
                                            for r in trace_rows] + external)
    corpus = corpus.drop_duplicates("name", keep="first").sort_values(["stack", "name"])
    corpus.to_csv(HERE / "corpus.csv", index=False, quoting=csv.QUOTE_MINIMAL)
    print(f"{len(corpus)} names, {corpus['stack'].nunique()} stacks:\n{corpus['stack'].value_counts()}")


if __name__ == "__main__":
    main()
