"""Columnar JSON readers against the trace loader on one synthetic Kineto trace (CPU seconds).

    python -m benchmarks.json_readers              # --events 1e6; readers that are not installed are skipped
    pip install polars pyarrow duckdb              # the native readers it compares (not dependencies)

Every reader gets the same input, already in memory, and reads the columns the loader keeps
(name, cat, ph, ts, dur, pid, tid and args' stream, device, correlation, External id, Sequence
number, Fwd thread id) from the trace's event list, cut into 16 MB blocks of whole events the way
the loader cuts its blocks (pid and tid as text: Kineto writes strings there for some events, and
the native readers refuse a column of mixed types). The figure is the best CPU time (process_time:
every thread, user + system) of `--repeat` runs, one reader after the other in this process:

  floor            orjson.loads of the whole decompressed trace
  msgspec          msgspec structs of the same fields (as the loader's decoder) over the blocks
  load_trace       the whole loader on the plain file: read, scan/decode, columns, table, joins; with its
                   C scanner (addressable/trace/_kineto.c) where built, and without it (msgspec blocks)
  polars           polars.read_json of each block as a JSON array, with an explicit schema
  pyarrow          pyarrow.json.read_json of each block (events one after another, multi-line)
  duckdb           duckdb read_json of each block (format='array', explicit columns, one thread)
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import io
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import orjson

import addressable.trace.reader as trace_module
from addressable.trace.reader import load_trace
from benchmarks.synth import ensure_trace

BLOCK = 16 << 20
_SEP = b"},\n  {"  # Kineto's separator between two events


def blocks_of(data: bytes) -> list[bytes]:
    """The event list of a Kineto-layout trace in blocks of whole events (without the brackets)."""
    start = data.index(b"[", data.index(b'"traceEvents"')) + 1
    body = data[start : data.rindex(b"]")]
    out, i = [], 0
    while i < len(body):
        j = body.find(_SEP, i + BLOCK)
        out.append(body[i:] if j < 0 else body[i : j + 1])
        i = len(body) if j < 0 else j + 2
    return out


def readers(data: bytes, path: Path) -> dict[str, Callable[[], object]]:
    """The readers that are installed, each a call that reads the whole trace."""
    blocks = blocks_of(data)
    arrays = [b"[" + b + b"]" for b in blocks]
    ints = ["stream", "device", "correlation", "External id", "Sequence number", "Fwd thread id"]
    args_type = msgspec.defstruct("Args", [(f"a{i}", object, msgspec.field(default=None, name=k))
                                           for i, k in enumerate(ints)], gc=False)
    event = msgspec.defstruct("Event", [*((k, object, None) for k in ("ph", "cat", "name", "ts", "dur", "pid", "tid")),
                                        ("args", args_type | None, None)], gc=False)
    decoder = msgspec.json.Decoder(list[event])
    out: dict[str, Callable[[], object]] = {
        "floor (orjson.loads, whole)": lambda: orjson.loads(data),
        "msgspec structs (blocks)": lambda: [decoder.decode(a) for a in arrays],
        "load_trace, msgspec blocks (plain file)": lambda: load_trace(path, native=False),
    }
    if trace_module._kineto is not None:
        out["load_trace, C scanner (plain file)"] = lambda: load_trace(path)
    if importlib.util.find_spec("polars"):
        import polars as pl

        schema = {"ph": pl.String, "cat": pl.String, "name": pl.String, "ts": pl.Float64, "dur": pl.Float64,
                  "pid": pl.String, "tid": pl.String, "args": pl.Struct(dict.fromkeys(ints, pl.Int64))}
        out["polars read_json"] = lambda: [pl.read_json(io.BytesIO(a), schema=schema) for a in arrays]
    if importlib.util.find_spec("pyarrow"):
        import pyarrow as pa
        from pyarrow import json as pj

        fields = [("ph", pa.string()), ("cat", pa.string()), ("name", pa.string()), ("ts", pa.float64()),
                  ("dur", pa.float64()), ("args", pa.struct([(k, pa.int64()) for k in ints]))]
        parse = pj.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore",
                                newlines_in_values=True)
        read = pj.ReadOptions(use_threads=False, block_size=2 * BLOCK)
        objects = [b.replace(_SEP, b"}\n  {") for b in blocks]  # a sequence of objects, not an array
        out["pyarrow read_json (no pid/tid)"] = lambda: [pj.read_json(io.BytesIO(o), read_options=read,
                                                                      parse_options=parse) for o in objects]
    if importlib.util.find_spec("duckdb"):
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads=1")
        args = ", ".join(f'"{k}" BIGINT' for k in ints)
        columns = {"ph": "VARCHAR", "cat": "VARCHAR", "name": "VARCHAR", "ts": "DOUBLE", "dur": "DOUBLE",
                   "pid": "VARCHAR", "tid": "VARCHAR", "args": f"STRUCT({args})"}
        out["duckdb read_json"] = lambda: [con.read_json(io.BytesIO(a), format="array", columns=columns).arrow()
                                           .read_all() for a in arrays]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--events", type=float, default=1e6)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/addressable_json_readers"))
    a = ap.parse_args()
    a.workdir.mkdir(parents=True, exist_ok=True)
    info = ensure_trace(a.workdir / f"trace_{int(a.events)}.json", int(a.events))
    data = info.path.read_bytes()
    print(f"{info.n_events:,} events, {len(data) / 1e6:,.0f} MB of JSON")
    gc.disable()
    floor = None
    for name, read in readers(data, info.path).items():
        best = float("inf")
        for _ in range(a.repeat):
            t = time.process_time()
            result = read()
            best = min(best, time.process_time() - t)
            del result
        floor = floor or best
        print(f"| {name} | {best:.2f} | {best / floor:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
