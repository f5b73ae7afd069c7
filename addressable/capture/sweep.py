"""Sweeps: profile one workload at several batch sizes or sequence lengths, or several model sizes.

A thin loop over addressable.capture.profile.profile_workload: one run folder per value (named as
`addressable profile` names it, e.g. resnet50-train-b32-bf16-cuda), then one table row per value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from addressable.capture.workload import WorkloadConfig
from addressable.core.errors import AddressableError
from addressable.runs.folder import load_run, pct_range, runs_table

if TYPE_CHECKING:
    from addressable.capture.measure import Measurement

SWEEP_COLUMNS = ["param", "value", "run", "workload", "batch", "seq_len", "addressable_fraction",
                 "addressable_min", "addressable_max", "addressable_fraction_wall", "wall_min", "wall_max",
                 "step_time_ms", "kernel_time_per_step_us", "basis", "error"]


def parse_list(text: str | None, cast: Callable[[str], Any] = int, what: str = "list") -> list[Any]:
    """'16,32,64' -> [16, 32, 64]; None or '' -> []."""
    if not text:
        return []
    try:
        return [cast(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        raise AddressableError(f"{what} takes comma-separated values, e.g. 16,32,64; got '{text}'") from None


def swept_parameter(workload: str | None, batch: Sequence[int], seq_len: Sequence[int],
                    workloads: Sequence[str]) -> tuple[str, list[Any]]:
    """Which parameter varies and its values; every other list may hold one fixed value at most."""
    lists: dict[str, list[Any]] = {"batch": list(batch), "seq_len": list(seq_len),
                                   "workload": list(workloads)}
    varying = [k for k, v in lists.items() if len(v) > 1]
    if len(varying) != 1:
        raise AddressableError("give exactly one list of two or more values to sweep: --batch, --seq-len or "
                               f"--workloads (got {', '.join(varying) or 'none'})")
    param = varying[0]
    if param == "workload" and workload:
        raise AddressableError("give either a WORKLOAD or --workloads, not both")
    if param != "workload" and not (workload or lists["workload"]):
        raise AddressableError("name the WORKLOAD to sweep")
    values = lists[param]
    if len(set(values)) != len(values):
        raise AddressableError(f"repeated value in the {param} list: {values}")
    return param, values


def sweep_configs(workload: str | None = None, *, batch: Sequence[int] = (), seq_len: Sequence[int] = (),
                  workloads: Sequence[str] = (), mode: str | None = None, dtype: str | None = None,
                  device: str = "auto", compile: bool = False, options: dict[str, Any] | None = None,
                  adapters: tuple[str, ...] = ()) -> tuple[str, list[WorkloadConfig]]:
    """The swept parameter and one checked WorkloadConfig per value (see swept_parameter).

    Exactly one of `batch`, `seq_len`, `workloads` holds two or more values; the others may fix one
    value. Every configuration is checked here, before anything runs.
    """
    from addressable.capture.profile import resolve_config

    param, values = swept_parameter(workload, batch, seq_len, workloads)
    fixed = {"workload": workload or (workloads[0] if workloads else None),
             "batch": batch[0] if batch else None, "seq_len": seq_len[0] if seq_len else None}
    configs = []
    for v in values:
        p = {**fixed, param: v}
        configs.append(resolve_config(p["workload"], mode, p["batch"], p["seq_len"], dtype, device, compile,
                                      options, adapters))
    return param, configs


def sweep(param: str, configs: Sequence[WorkloadConfig], measurement: Measurement, out: str | Path = "outputs", *,
          layers_subset: tuple[int, int] | None = None, adapters: tuple[str, ...] = (),
          argv: list[str] | None = None, progress: Callable[[str], None] | None = None,
          profile_fn: Callable[..., Any] | None = None, force: bool = False) -> pd.DataFrame:
    """Profile each configuration of a sweep (from sweep_configs) and return one row per value (SWEEP_COLUMNS).

    Every configuration is measured alike (`measurement`). A value that fails while running (e.g.
    out of memory at the largest batch) gets its `error` and the sweep goes on; if every value
    fails, the first error is raised. `profile_fn` stands in for profile_workload in tests.
    """
    from addressable.capture import profile as prof
    profile_fn = profile_fn or prof.profile_workload
    progress = progress or (lambda _: None)
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    for cfg in configs:
        v = cfg.name if param == "workload" else getattr(cfg, param)
        progress(f"sweep {param}={v} ({len(rows) + 1}/{len(configs)})")
        try:
            res = profile_fn(cfg, measurement, out, layers_subset=layers_subset, adapters=adapters, argv=argv,
                             progress=progress, force=force)
        except AddressableError as e:
            errors.append(f"{param}={v}: {e}")
            progress(f"sweep {param}={v} failed: {e}")
            rows.append({"param": param, "value": v, "workload": cfg.name, "batch": cfg.batch,
                         "seq_len": cfg.seq_len, "error": str(e)})
            continue
        rows.append({"param": param, "value": v, **_row(Path(res.path))})
    if len(errors) == len(configs):
        raise AddressableError(f"every sweep value failed; first: {errors[0]}")
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def _row(path: Path) -> dict[str, Any]:
    """One sweep row's run columns, from addressable.runs.folder.runs_table."""
    r = load_run(path)
    t = runs_table([r]).to_dict(orient="records")[0]
    return {"run": str(path), "workload": t["workload"], "batch": t["batch"], "seq_len": t["seq_len"],
            "addressable_fraction": t["addressable_kernel"], "addressable_min": t["kernel_min"],
            "addressable_max": t["kernel_max"], "addressable_fraction_wall": t["addressable_wall"],
            "wall_min": t["wall_min"], "wall_max": t["wall_max"], "step_time_ms": t["step_time_ms"],
            "kernel_time_per_step_us": r.info.get("kernel_time_per_step_us"),
            "basis": r.info.get("basis", "gpu_kernel_time"), "error": None}


def format_sweep(df: pd.DataFrame) -> str:
    """The sweep as a readable table: addressable fraction (of kernel time, CPU-op time on the CPU, and of the wall
    clock) with its repeat range."""
    pct = pct_range
    param = df["param"].iloc[0] if len(df) else "value"
    bases = set(df["basis"].dropna()) if "basis" in df else set()
    work = "CPU-op time" if bases == {"cpu_op_time"} else "kernel time" if bases <= {"gpu_kernel_time"} else "work time"
    lines = [f"{param:<14}{f'addressable ({work})':<28}{'addressable (wall)':<28}{'step ms':>10}  run"]
    for r in df.itertuples(index=False):
        if r.error:
            lines.append(f"{r.value!s:<14}failed: {r.error}")
            continue
        step = "-" if r.step_time_ms is None or pd.isna(r.step_time_ms) else f"{r.step_time_ms:,.2f}"
        lines.append(f"{r.value!s:<14}{pct(r.addressable_fraction, r.addressable_min, r.addressable_max):<28}"
                     f"{pct(r.addressable_fraction_wall, r.wall_min, r.wall_max):<28}{step:>10}  {r.run}")
    return "\n".join(lines)
