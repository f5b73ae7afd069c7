"""rocprofv3's JSON output (`rocprofv3 --kernel-trace --hip-trace --output-format json`) -> events-table columns.

The file is one object, {"rocprofiler-sdk-tool": [one entry per profiled process]}. Each entry holds
`buffer_records` (kernel_dispatch, memory_copy, hip_api, ...: start and end in ns), the
`kernel_symbols` that a dispatch's kernel_id indexes, the `agents` (CPUs and GPUs), and `strings`,
whose `buffer_records` list, indexed by a record's `kind`, names its kind and its operations (the
HIP API call a record's `operation` is). This module owns that format; trace.reader turns the columns
it returns into the events table every reader gives.

Kernels become `kernel` rows (the demangled name, without the code object's `.kd`; grid in
workgroups, as CUDA counts blocks, and block as the workgroup size), copies `gpu_memcpy` rows
(Memcpy HtoD, DtoH, DtoD, HtoH), HIP API calls `hip_runtime` rows, joined to what they launched by
their internal correlation id, as Kineto joins them.
"""

from __future__ import annotations

from typing import Any

from addressable.core.errors import AddressableError

TOOL_KEY = "rocprofiler-sdk-tool"
_COPIES = {"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH", "DEVICE_TO_DEVICE": "DtoD", "HOST_TO_HOST": "HtoH"}
_API_KINDS = ("HIP_RUNTIME_API", "HIP_RUNTIME_API_EXT")


def read_rocprof_json(doc: Any, where: str) -> tuple[dict[str, list], dict[str, Any]]:
    """Columns of the kernels, copies and HIP API calls of a parsed rocprofv3 JSON document, and its metadata."""
    processes = doc.get(TOOL_KEY) if isinstance(doc, dict) else None
    if not isinstance(processes, list) or not all(isinstance(p, dict) for p in processes):
        raise AddressableError(f"{where}: not rocprofv3 JSON ('{TOOL_KEY}' is not a list of process objects)")
    out: dict[str, list] = {}
    for i, process in enumerate(processes):
        try:
            part = _process_columns(process)
        except (KeyError, TypeError, IndexError, AttributeError, ValueError) as e:
            raise AddressableError(f"{where}: process {i} of the rocprofv3 JSON lacks or misspells a field "
                                   f"({type(e).__name__}: {e})") from None
        for col, values in part.items():
            out.setdefault(col, []).extend(values)
    meta = processes[0].get("metadata", {}) if processes else {}
    return out, {"rocprofv3": {k: meta.get(k) for k in ("pid", "command") if k in meta}}


def _process_columns(p: dict[str, Any]) -> dict[str, list]:
    records = p.get("buffer_records") or {}
    kinds = p["strings"]["buffer_records"]
    pid = p.get("metadata", {}).get("pid")
    gpus = {a["id"]["handle"]: a.get("logical_node_type_id", a.get("node_id")) for a in p.get("agents", [])}
    rows = [*_kernels(p, records.get("kernel_dispatch") or [], pid, gpus),
            *_copies(kinds, records.get("memory_copy") or [], pid, gpus),
            *_api_calls(kinds, records.get("hip_api") or [], pid)]
    cols = ("cat", "name", "ts", "dur", "pid", "tid", "stream", "device", "correlation", "external_id", "grid", "block")
    return {c: [r[i] for r in rows] for i, c in enumerate(cols)}


def _times(r: dict[str, Any]) -> tuple[float, float]:
    start, end = r["start_timestamp"], r["end_timestamp"]
    return start / 1000.0, (end - start) / 1000.0


def _correlation(r: dict[str, Any]) -> tuple[Any, Any]:
    c = r.get("correlation_id") or {}
    return c.get("internal"), c.get("external") or None  # external 0: none


def _kernels(p: dict[str, Any], records: list, pid: Any, gpus: dict) -> list[tuple]:
    names = {}
    for s in p.get("kernel_symbols", []):
        name = s.get("formatted_kernel_name") or s.get("demangled_kernel_name") or s.get("kernel_name") or ""
        names[s["kernel_id"]] = name.removesuffix(".kd")
    out = []
    for r in records:
        d = r["dispatch_info"]
        wg, grid = d["workgroup_size"], d["grid_size"]
        blocks = [-(-grid[a] // max(wg[a], 1)) for a in "xyz"]
        stream = (r.get("stream_id") or {}).get("handle", d["queue_id"]["handle"])
        out.append(("kernel", names.get(d["kernel_id"], f"kernel {d['kernel_id']}"), *_times(r), pid, stream, stream,
                    gpus.get(d["agent_id"]["handle"]), *_correlation(r),
                    f"[{blocks[0]},{blocks[1]},{blocks[2]}]", f"[{wg['x']},{wg['y']},{wg['z']}]"))
    return out


def _copies(kinds: list, records: list, pid: Any, gpus: dict) -> list[tuple]:
    out = []
    for r in records:
        op = kinds[r["kind"]]["operations"][r["operation"]].removeprefix("MEMORY_COPY_")
        device = gpus.get((r.get("dst_agent_id") or {}).get("handle")) if op != "DEVICE_TO_HOST" else \
            gpus.get((r.get("src_agent_id") or {}).get("handle"))
        stream = (r.get("stream_id") or {}).get("handle")
        out.append(("gpu_memcpy", f"Memcpy {_COPIES.get(op, op)}", *_times(r), pid, stream, stream, device,
                    *_correlation(r), None, None))
    return out


def _api_calls(kinds: list, records: list, pid: Any) -> list[tuple]:
    out = []
    for r in records:
        kind = kinds[r["kind"]]
        if kind["kind"] in _API_KINDS:
            out.append(("hip_runtime", kind["operations"][r["operation"]], *_times(r), pid, r.get("thread_id"), None,
                        None, *_correlation(r), None, None))
    return out
