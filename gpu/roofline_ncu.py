"""Check the roofline's bytes estimates against Nsight Compute's DRAM bytes, kernel by kernel (one H200).

Three steps per workload (gpu/roofline_ncu.sh runs them):
  trace WORKLOAD OUT   build the workload, warm it up, profile one step with record_shapes through
                       addressable.measure.profiled; write OUT/<w>.trace.json.gz
  step WORKLOAD        the same build and warm-up, then one step inside the NVTX range
                       "roofline_step" (run under ncu --nvtx --nvtx-include roofline_step/)
  compare WORKLOAD OUT match the trace's kernels to ncu's by order and name; write
                       OUT/roofline_ncu_<w>.csv (top 20 replaceable kernels by time: estimated vs
                       measured DRAM bytes) and append to OUT/summary.txt
cuDNN autotuning is off in both processes so that they launch the same kernels.
"""

from __future__ import annotations

import difflib
import io
import math
import re
import sys
from pathlib import Path

import pandas as pd
import torch

from addressable.breakdown import classify_events, work_rows
from addressable.measure import profiled, timed
from addressable.profile import resolve_config
from addressable.roofline import Peaks, kernel_costs, resolve_peaks
from addressable.taxonomy import load_taxonomy
from addressable.trace import load_trace
from addressable.workload import get_workload

WORKLOADS = {  # name -> (workload, mode, batch, seq_len, options)
    "resnet50-train": ("resnet50", "train", 64, None, {}),
    "gpt2-train": ("gpt2", "train", 8, 1024, {}),
    "llama3-8b-infer": ("llama3-8b", "infer", 8, 1024, {"layers": 2, "decode_tokens": 4}),
}
TOLERANCE = 0.20
OVER_PEAK = 1.05
TOP = 20


def _step(name: str):
    workload, mode, batch, seq, options = WORKLOADS[name]
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)
    cfg = resolve_config(workload, mode, batch, seq, None, "cuda", False, options)
    step = get_workload(workload).build(cfg)
    timed(step, 3, True)  # warm-up
    return step


def trace(name: str, out: Path) -> None:
    profiled(_step(name), 1, True, out / f"{name}.trace.json.gz")


def ncu_step(name: str) -> None:
    step = _step(name)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("roofline_step")
    step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def base_name(kernel: str) -> str:
    """A kernel name without its return type, namespaces, template arguments and parameters."""
    s = re.sub(r"\(.*$", "", kernel.strip().replace("(anonymous namespace)", "anon"))
    depth, out = 0, []
    for ch in s:
        depth += ch == "<"
        if depth == 0:
            out.append(ch)
        depth -= ch == ">"
    s = "".join(out).split()[-1] if "".join(out).split() else s
    return s.split("::")[-1]


def read_ncu(path: Path) -> pd.DataFrame:
    """ncu --csv (details page): one row per kernel launch, in launch order: kernel, dram_bytes, time_ns."""
    text = path.read_text()
    start = text.find('"ID"')
    df = pd.read_csv(io.StringIO(text[start:]))
    df["Metric Value"] = pd.to_numeric(df["Metric Value"].astype(str).str.replace(",", ""), errors="coerce")
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9,
             "nsecond": 1, "usecond": 1e3, "msecond": 1e6, "ns": 1, "us": 1e3, "ms": 1e6}
    df["value"] = df["Metric Value"] * df["Metric Unit"].map(scale).fillna(1)
    wide = df.pivot_table(index=["ID", "Kernel Name"], columns="Metric Name", values="value").reset_index()
    wide = wide.sort_values("ID")
    return pd.DataFrame({"kernel": wide["Kernel Name"],
                         "dram_bytes": wide["dram__bytes_read.sum"] + wide["dram__bytes_write.sum"],
                         "time_ns": wide["gpu__time_duration.sum"]}).reset_index(drop=True)


def compare(name: str, out: Path, peaks: Peaks) -> list[str]:
    t = load_trace(out / f"{name}.trace.json.gz")
    rows, basis = work_rows(t)
    rows = kernel_costs(t, classify_events(rows, load_taxonomy(), basis))
    rows = rows[rows["cat"].astype(str) == "kernel"].sort_values("ts").reset_index(drop=True)
    ncu = read_ncu(out / f"{name}.ncu.csv")
    a = [base_name(n) for n in rows["name"].astype(str)]
    b = [base_name(n) for n in ncu["kernel"].astype(str)]
    rows["dram_bytes"], rows["ncu_time_ns"] = math.nan, math.nan
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for i, j, n in sm.get_matching_blocks():
        rows.loc[i:i + n - 1, "dram_bytes"] = ncu["dram_bytes"].iloc[j:j + n].to_numpy()
        rows.loc[i:i + n - 1, "ncu_time_ns"] = ncu["time_ns"].iloc[j:j + n].to_numpy()
    matched = rows["dram_bytes"].notna()
    lines = [f"== {name} (memory roof {peaks.memory_gbps:,.0f} GB/s, {peaks.source}): {len(rows)} kernels in the trace step, {len(ncu)} under ncu, {int(matched.sum())} matched"]
    repl = rows[(rows["class"] == "replaceable") & matched]
    repl = repl.assign(name=repl["name"].astype(str), category=repl["category"].astype(str))
    g = repl.groupby("name").agg(category=("category", "first"), launch_op=("launch_op", "first"),
                                 launches=("dur", "size"), time_us=("dur", "sum"), est_bytes=("bytes", "sum"),
                                 dram_bytes=("dram_bytes", "sum"), modelled=("modelled", "all"))
    g = g.sort_values("time_us", ascending=False).head(TOP).reset_index()
    g["ratio"] = (g["est_bytes"] / g["dram_bytes"]).where(g["modelled"])
    g["within_20pct"] = (g["ratio"] - 1).abs() <= TOLERANCE
    g["kernel"] = g["name"].map(base_name)
    g[["kernel", "category", "launch_op", "launches", "time_us", "est_bytes", "dram_bytes", "ratio",
       "within_20pct", "modelled", "name"]].to_csv(out / f"roofline_ncu_{name}.csv", index=False)
    ok = int(g["within_20pct"].sum())
    lines.append(f"top {len(g)} replaceable kernels by time: {ok} within ±20% of ncu DRAM bytes")
    for r in g[~g["within_20pct"]].itertuples():
        est = f"est/ncu {r.ratio:6.2f}  ({r.est_bytes / 1e6:,.1f} vs" if r.modelled else "unmodelled    (ncu"
        lines.append(f"  MISS {r.kernel[:50]:<50} {r.launch_op:<34} {est} {r.dram_bytes / 1e6:,.1f} MB)")
    bw = rows["dram_bytes"] / rows["ncu_time_ns"]  # bytes per ns = GB/s
    over = rows[bw > OVER_PEAK * peaks.memory_gbps]
    lines.append(f"kernels whose measured DRAM bandwidth exceeds the calibrated {peaks.memory_gbps:,.0f} GB/s by "
                 f">5%: {len(over)}")
    lines += [f"  OVER {base_name(r.name)[:50]:<50} {b_:,.0f} GB/s" for r, b_ in
              zip(over.itertuples(), bw[over.index], strict=True)][:10]
    return lines


def main() -> None:
    what, name = sys.argv[1], sys.argv[2]
    if what == "trace":
        trace(name, Path(sys.argv[3]))
    elif what == "step":
        ncu_step(name)
    elif what == "compare":
        out = Path(sys.argv[3])
        peaks = resolve_peaks(peaks=out / "peaks.json") if (out / "peaks.json").is_file() else \
            resolve_peaks(gpu=torch.cuda.get_device_name())
        lines = compare(name, out, peaks)
        print("\n".join(lines), flush=True)
        with open(out / "summary.txt", "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
