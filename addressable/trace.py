"""Stage 1: a Kineto trace file -> an events table (one row per GPU kernel, annotation, CPU op).

The file is streamed in chunks, so a multi-GB trace never has to be held as Python
objects all at once. Which rows and fields are kept is described in trace_format.yaml.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import yaml

from addressable.errors import AddressableError

CHUNK_BYTES = 32 << 20
_EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_KINDS = ("gpu", "annotation", "cpu_op", "cpu_annotation", "step")


@cache
def trace_format() -> dict[str, Any]:
    """The trace format description shipped with the package."""
    with open(Path(__file__).with_name("trace_format.yaml")) as f:
        return yaml.safe_load(f)


@dataclass
class Trace:
    """A loaded trace: the events table and the trace's top-level metadata."""

    events: pd.DataFrame
    metadata: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    @property
    def gpu(self) -> pd.DataFrame:
        """GPU work rows: kernels, memcpys and memsets."""
        return self.events[self.events["kind"] == "gpu"]

    @property
    def has_gpu_work(self) -> bool:
        return bool((self.events["kind"] == "gpu").any())

    @property
    def n_steps(self) -> int:
        return int((self.events["kind"] == "step").sum())


def _open(path: Path):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise AddressableError(f"invalid JSON: {e}") from None


def iter_event_chunks(path: str | Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[list[dict] | dict]:
    """Yield the trace's events in lists of parsed dicts, then one dict of top-level metadata.

    Splits the event array at `}, {` boundaries and lets the JSON parser confirm each
    split: a boundary inside an event leaves unbalanced braces and is rejected.
    """
    path = Path(path)
    if not path.is_file():
        raise AddressableError(f"no such trace file: {path}")
    key = b'"' + trace_format()["events_key"].encode() + b'"'
    try:
        with _open(path) as f:
            buf, bare = b"", False
            while True:  # read until the start of the event array
                data = f.read(chunk_bytes)
                buf += data
                stripped = buf.lstrip()
                if stripped.startswith(b"["):  # bare Chrome-trace array
                    head, buf, bare = b"{", stripped[1:], True
                    break
                i = buf.find(key)
                if i >= 0:
                    j = buf.find(b"[", i + len(key))
                    if j >= 0:
                        head, buf = buf[:i], buf[j + 1 :]
                        break
                if not data:
                    if not buf.strip():
                        raise AddressableError(f"empty trace file: {path}")
                    _loads(buf)  # raises for invalid JSON
                    raise AddressableError(f"not a trace: no '{key.decode()[1:-1]}' list in {path}")
            metadata = _loads(head.rstrip().rstrip(b",") + b"}") if head.strip(b"{ \n\r\t") else {}
            while True:
                data = f.read(chunk_bytes)
                if not data:
                    break
                buf += data
                buf = yield from _emit_complete(buf)
            tail = _loads(b'{"__events__":[' + buf + (b"}" if bare else b"")) if buf.strip() else None
    except (OSError, EOFError, zlib.error) as e:
        raise AddressableError(f"cannot read {path}: {e}") from None
    if tail is None or not isinstance(tail, dict):
        raise AddressableError(f"truncated or malformed trace: {path}")
    events = tail.pop("__events__")
    if events:
        yield events
    metadata.update(tail)
    yield metadata


def _emit_complete(buf: bytes) -> Iterator[list[dict]]:
    """Yield the complete events at the front of buf; return the unparsed rest."""
    ends = [m.start() for m in _EVENT_BOUNDARY.finditer(buf, max(0, len(buf) - (1 << 20)))]
    if not ends:
        ends = [m.start() for m in _EVENT_BOUNDARY.finditer(buf)]
    for end in reversed(ends[-4:]):
        try:
            events = orjson.loads(b"[" + buf[: end + 1] + b"]")
        except orjson.JSONDecodeError:
            continue
        yield events
        return buf[buf.index(b"{", end + 1) :]
    return buf


def _get(event: dict, key: str) -> Any:
    if key.startswith("args."):
        args = event.get("args")
        return args.get(key[5:]) if args else None
    return event.get(key)


def _chunk_table(events: list[dict], fmt: dict[str, Any]) -> dict[str, list]:
    """Pick the rows and columns the analysis needs from one chunk of parsed events."""
    gpu, ann, cpu, cpu_ann = (set(fmt[k]) for k in ("gpu_work_categories", "annotation_categories",
                                                     "cpu_op_categories", "cpu_annotation_categories"))
    step_cats = set(fmt["step_categories"])
    step_re = re.compile(fmt["step_pattern"])
    x = fmt["complete_phase"]
    rows, kinds = [], []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != x:
            continue
        cat = e.get("cat")
        if cat in gpu:
            kind = "gpu"
        elif cat in ann:
            kind = "annotation"
        elif cat in step_cats and step_re.match(str(e.get("name", ""))):
            kind = "step"
        elif cat in cpu:
            kind = "cpu_op"
        elif cat in cpu_ann:
            kind = "cpu_annotation"
        else:
            continue
        rows.append(e)
        kinds.append(kind)
    table = {col: [_get(e, key) for e in rows] for col, key in fmt["columns"].items()}
    table["kind"] = kinds
    return table


_NUMERIC = {"ts": "float64", "dur": "float64"}
_INTS = ("pid", "tid", "stream", "device", "correlation", "external_id")


def _to_frame(table: dict[str, list]) -> pd.DataFrame:
    df = pd.DataFrame(table)
    for col, dtype in _NUMERIC.items():
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(dtype)
    for col in _INTS:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    df["name"] = df["name"].astype("string").fillna("").astype("category")
    df["cat"] = df["cat"].astype("string").astype("category")
    df["kind"] = pd.Categorical(df["kind"], categories=_KINDS)
    return df


def load_trace(path: str | Path, chunk_bytes: int = CHUNK_BYTES) -> Trace:
    """Load a trace file (.json or .json.gz) into a Trace with a typed events table."""
    fmt = trace_format()
    frames, metadata = [], {}
    for chunk in iter_event_chunks(path, chunk_bytes):
        if isinstance(chunk, dict):
            metadata = chunk
        else:
            frames.append(_to_frame(_chunk_table(chunk, fmt)))
    events = _concat(frames) if frames else _to_frame({c: [] for c in [*fmt["columns"], "kind"]})
    if events.empty:
        raise AddressableError(f"empty trace: no kernels, annotations or CPU ops in {path}")
    events = events.dropna(subset=["ts", "dur"]).sort_values("ts", kind="stable").reset_index(drop=True)
    events["op"] = _launching_op(events)
    events["step"] = _step_of(events, fmt)
    return Trace(events=events, metadata=metadata, path=str(path))


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    for col in ("name", "cat"):
        union = pd.api.types.union_categoricals([f[col] for f in frames])
        for f in frames:
            f[col] = pd.Categorical(f[col], categories=union.categories)
    return pd.concat(frames, ignore_index=True)


def _launching_op(events: pd.DataFrame) -> pd.Series:
    """For GPU rows, the innermost CPU op that launched them (joined on External id)."""
    cpu = events[events["kind"] == "cpu_op"]
    # Innermost op: the one that starts last among ops sharing an External id.
    cpu = cpu.dropna(subset=["external_id"]).drop_duplicates("external_id", keep="last")
    names = pd.Series(cpu["name"].astype(str).values, index=cpu["external_id"].astype("int64").values)
    op = pd.Series(pd.NA, index=events.index, dtype="string")
    gpu = (events["kind"] == "gpu") & events["external_id"].notna()
    op[gpu] = events.loc[gpu, "external_id"].astype("int64").map(names).astype("string")
    return op.astype("category")


def _step_of(events: pd.DataFrame, fmt: dict[str, Any]) -> pd.Series:
    """Step number of each row: GPU rows by their launching op's start, others by their own start."""
    steps = events[events["kind"] == "step"]
    out = pd.Series(pd.NA, index=events.index, dtype="Int64")
    if steps.empty:
        return out
    numbers = steps["name"].astype(str).str.extract(fmt["step_pattern"])[0].astype("int64").to_numpy()
    starts = steps["ts"].to_numpy()
    ends = starts + steps["dur"].to_numpy()
    order = np.argsort(starts)
    starts, ends, numbers = starts[order], ends[order], numbers[order]
    cpu = events[events["kind"] == "cpu_op"].dropna(subset=["external_id"])
    launch_ts = pd.Series(cpu["ts"].values, index=cpu["external_id"].astype("int64").values)
    launch_ts = launch_ts[~launch_ts.index.duplicated()]
    when = events["ts"].astype("float64")
    gpu = (events["kind"] == "gpu") & events["external_id"].notna()
    when[gpu] = events.loc[gpu, "external_id"].astype("int64").map(launch_ts).fillna(when[gpu])
    i = np.searchsorted(starts, when.to_numpy(), side="right") - 1
    inside = (i >= 0) & (when.to_numpy() <= ends[np.clip(i, 0, None)])
    out[inside] = numbers[i[inside]]
    return out
