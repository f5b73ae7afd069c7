"""Nsight Systems SQLite exports (`nsys export --type sqlite`) -> events-table columns.

The export's schema (NVIDIA's "SQLite Export Schema Reference"): one table per activity kind, times
in ns, text as ids into StringIds(id, value). Read here:
- CUPTI_ACTIVITY_KIND_KERNEL: start, end, deviceId, streamId, correlationId, globalPid, grid and
  block sizes, demangledName (shortName in exports that lack it) -> `kernel` rows;
- CUPTI_ACTIVITY_KIND_MEMCPY (copyKind: CUPTI's memcpy kind) and CUPTI_ACTIVITY_KIND_MEMSET ->
  `gpu_memcpy` and `gpu_memset` rows;
- CUPTI_ACTIVITY_KIND_RUNTIME: start, end, globalTid, correlationId, nameId -> `cuda_runtime` rows,
  named without the `_v7000` version suffix (joined to their kernels by correlationId, as Kineto's);
- NVTX_EVENTS push/pop and start/end ranges (eventType 59, 60) -> `user_annotation` rows.
globalPid and globalTid pack the process id above bit 24 and the thread id below it. Tables are
created lazily, so each is optional but the kernel table. This module owns the format; trace.reader
turns the columns into the events table every reader gives.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from addressable.core.errors import AddressableError

KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"
_COPY_KINDS = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH",
               10: "PtoP"}  # CUpti_ActivityMemcpyKind
_NVTX_RANGES = (59, 60)  # NvtxPushPopRange, NvtxStartEndRange
_LOW24 = 0xFFFFFF


def read_nsys_sqlite(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Columns of the kernels, copies, memsets, runtime calls and NVTX ranges of an Nsight Systems export."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise AddressableError(f"cannot read {path}: {e}") from None
    try:
        return _read(con, Path(path))
    except sqlite3.DatabaseError as e:
        raise AddressableError(f"cannot read {path} as an Nsight Systems SQLite export: {e}") from None
    finally:
        con.close()


def _read(con: sqlite3.Connection, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if any(t.startswith("rocpd_") for t in tables):
        raise AddressableError(f"{path} is a rocprofv3 rocpd database, which is not read: profile with "
                               "rocprofv3 --output-format json")
    if KERNELS not in tables:
        what = "an Nsight Systems export without CUDA kernel activity (was CUDA traced: nsys profile " \
               "--trace=cuda?)" if "StringIds" in tables else "not an Nsight Systems SQLite export"
        raise AddressableError(f"{path}: {what}: no {KERNELS} table")
    parts = [_kernels(con, _columns(con, KERNELS))]
    for table, part in (("CUPTI_ACTIVITY_KIND_MEMCPY", _memcpys), ("CUPTI_ACTIVITY_KIND_MEMSET", _memsets),
                        ("CUPTI_ACTIVITY_KIND_RUNTIME", _runtime), ("NVTX_EVENTS", _nvtx)):
        if table in tables:
            parts.append(part(con, _columns(con, table)))
    frame = pd.concat(parts, ignore_index=True)
    return {c: _plain(frame[c]) for c in frame.columns}, {"nsys_sqlite": str(path)}


def _plain(col: pd.Series) -> np.ndarray:
    """A column as numpy: numbers as float64 (NaN where missing), text as objects (None where missing)."""
    if pd.api.types.is_numeric_dtype(col):
        return col.astype("float64").to_numpy()
    return col.astype(object).where(col.notna(), None).to_numpy()


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _need(have: set[str], table: str, *names: str) -> None:
    if missing := [n for n in names if n not in have]:
        raise AddressableError(f"{table} has no column {', '.join(missing)}: not the Nsight Systems export schema")


def _query(con: sqlite3.Connection, sql: str) -> pd.DataFrame:
    return pd.read_sql_query(sql, con)


def _timed(df: pd.DataFrame, cat: str) -> pd.DataFrame:
    """start/end in ns -> ts/dur in µs, and the category."""
    start = df.pop("start").to_numpy(np.float64)
    end = df.pop("end").to_numpy(np.float64)
    df["ts"], df["dur"], df["cat"] = start / 1000.0, (end - start) / 1000.0, cat
    return df


def _pid_of(global_id: pd.Series) -> pd.Series:
    return (global_id.astype("Int64") // (1 << 24)) & _LOW24


def _triple(df: pd.DataFrame, prefix: str) -> pd.Series:
    """'[x,y,z]' of three integer columns, as Kineto writes grid and block."""
    x, y, z = (df.pop(f"{prefix}{a}").astype("Int64").astype(str) for a in "XYZ")
    return "[" + x + "," + y + "," + z + "]"


def _kernels(con: sqlite3.Connection, have: set[str]) -> pd.DataFrame:
    name = "demangledName" if "demangledName" in have else "shortName"
    _need(have, KERNELS, "start", "end", name)
    opt = {c: f"k.{c}" if c in have else "NULL" for c in ("deviceId", "streamId", "correlationId", "globalPid",
                                                           "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")}
    df = _query(con, f"SELECT k.start, k.end, s.value AS name, {', '.join(f'{v} AS {c}' for c, v in opt.items())} "
                     f"FROM {KERNELS} AS k LEFT JOIN StringIds AS s ON s.id = k.{name}")
    df = _timed(df, "kernel")
    df["grid"], df["block"] = _triple(df, "grid"), _triple(df, "block")
    return _device_rows(df)


def _device_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Device rows as Kineto has them: pid the process (from globalPid), tid and stream the stream."""
    df["pid"] = _pid_of(df.pop("globalPid"))
    df["stream"] = df["tid"] = df.pop("streamId")
    df["device"], df["correlation"] = df.pop("deviceId"), df.pop("correlationId")
    return df


def _device_query(con: sqlite3.Connection, have: set[str], table: str, extra: str) -> pd.DataFrame:
    _need(have, table, "start", "end")
    opt = {c: c if c in have else "NULL" for c in ("deviceId", "streamId", "correlationId", "globalPid")}
    return _query(con, f"SELECT start, end, {extra}, {', '.join(f'{v} AS {c}' for c, v in opt.items())} FROM {table}")


def _memcpys(con: sqlite3.Connection, have: set[str]) -> pd.DataFrame:
    df = _device_query(con, have, "CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind" if "copyKind" in have else "0 AS copyKind")
    kinds = df.pop("copyKind").map(_COPY_KINDS).fillna("")
    df["name"] = ("Memcpy " + kinds).str.rstrip()
    return _device_rows(_timed(df, "gpu_memcpy"))


def _memsets(con: sqlite3.Connection, have: set[str]) -> pd.DataFrame:
    df = _device_query(con, have, "CUPTI_ACTIVITY_KIND_MEMSET", "'Memset (Device)' AS name")
    return _device_rows(_timed(df, "gpu_memset"))


def _host_rows(df: pd.DataFrame, cat: str) -> pd.DataFrame:
    tid = df.pop("globalTid").astype("Int64")
    df["pid"], df["tid"] = _pid_of(tid), tid & _LOW24
    return _timed(df, cat)


def _runtime(con: sqlite3.Connection, have: set[str]) -> pd.DataFrame:
    table = "CUPTI_ACTIVITY_KIND_RUNTIME"
    _need(have, table, "start", "end", "nameId", "correlationId", "globalTid")
    df = _query(con, f"SELECT r.start, r.end, r.globalTid, r.correlationId AS correlation, s.value AS name "
                     f"FROM {table} AS r LEFT JOIN StringIds AS s ON s.id = r.nameId")
    df["name"] = df["name"].astype("string").str.replace(r"_v\d+$", "", regex=True)
    return _host_rows(df, "cuda_runtime")


def _nvtx(con: sqlite3.Connection, have: set[str]) -> pd.DataFrame:
    _need(have, "NVTX_EVENTS", "start", "end", "eventType", "globalTid")
    text = "COALESCE(n.text, s.value)" if "textId" in have and "text" in have else "n.text" if "text" in have else "NULL"
    join = "LEFT JOIN StringIds AS s ON s.id = n.textId" if "textId" in have else ""
    df = _query(con, f"SELECT n.start, n.end, n.globalTid, {text} AS name FROM NVTX_EVENTS AS n {join} "
                     f"WHERE n.eventType IN {_NVTX_RANGES} AND n.end > n.start")
    return _host_rows(df, "user_annotation")
