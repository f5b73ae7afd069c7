"""Stage 5: overlap-aware (timeline) accounting of classified work rows.

Kernels on different streams of one device run at the same time (NCCL on a side stream
under compute, copy engines, Hopper programmatic dependent launch). Summed durations then
count the same wall time more than once. This module sweeps the kernel intervals of each
device and reports busy/idle time and, per category, summed, active, exclusive, overlapped
and exposed time. Definitions: docs/accounting.md.

Times are snapped to whole nanoseconds (the resolution of Kineto timestamps), relative to
each device's first kernel, so the sweep is exact integer arithmetic: when nothing overlaps,
exposed time equals summed time exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

COMMUNICATION = "communication"
REPLACEABLE = "replaceable"
_NS = 1000.0  # ns per µs


@dataclass
class TimelineResult:
    """Busy/idle time per device and summed/exclusive/overlapped/exposed time per category."""

    devices: pd.DataFrame  # device, n_kernels, n_streams, span_us, busy_us, idle_us, summed_us,
    #                        cross_stream_overlap_us, addressable_fraction_summed, addressable_fraction_exposed
    categories: pd.DataFrame  # category, class, summed_us, active_us, exclusive_us, overlapped_us,
    #                           exposed_us, exposed_share
    busy_us: float
    idle_us: float
    span_us: float
    summed_us: float
    cross_stream_overlap_us: float
    streams_overlap: bool
    addressable_fraction_exposed: float
    addressable_fraction_summed: float
    communication_exposed_us: float
    communication_overlapped_us: float

    def to_dict(self) -> dict[str, Any]:
        """The timeline keys of breakdown.json / `classify --json`."""
        return {
            "busy_time_us": self.busy_us,
            "idle_time_us": self.idle_us,
            "span_time_us": self.span_us,
            "streams_overlap": self.streams_overlap,
            "cross_stream_overlap_us": self.cross_stream_overlap_us,
            "addressable_fraction_exposed": self.addressable_fraction_exposed,
            "exposed_category_time_us": dict(zip(self.categories["category"].astype(str),
                                                 self.categories["exposed_us"].astype(float), strict=True)),
            "communication_exposed_us": self.communication_exposed_us,
            "communication_overlapped_us": self.communication_overlapped_us,
        }


@dataclass
class _Sweep:
    """Interval endpoints sorted by (group, time, starts before ends), with running counts."""

    group: np.ndarray  # group of each sorted event
    time: np.ndarray  # ns
    count: np.ndarray  # intervals of the group active right after the event
    seg: np.ndarray  # length of the segment from this event to the next one of the same group
    pos_start: np.ndarray  # sorted position of each interval's start event
    pos_end: np.ndarray  # sorted position of each interval's end event


def _sweep(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> _Sweep:
    """Sweep intervals [start, end) (int64 ns, end > start) within each group, all groups at once.

    Each group's +1/-1 events net to zero, so one global cumulative sum over the events
    sorted by group gives every group's own running count.
    """
    n = len(start)
    g = np.concatenate([group, group])
    t = np.concatenate([start, end])
    d = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
    order = np.lexsort((-d, t, g))  # ties: starts first, so counts never dip below zero
    g, t, d = g[order], t[order], d[order]
    count = np.cumsum(d)
    seg = np.zeros(2 * n, np.int64)
    if n:
        same = g[1:] == g[:-1]
        seg[:-1] = np.where(same, t[1:] - t[:-1], 0)
    pos = np.empty(2 * n, np.int64)
    pos[order] = np.arange(2 * n)
    return _Sweep(g, t, count, seg, pos[:n], pos[n:])


def _before(values: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum: out[k] = sum(values[:k])."""
    out = np.zeros(len(values) + 1, dtype=values.dtype)
    np.cumsum(values, out=out[1:])
    return out[:-1]


def _runs(s: _Sweep) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal intervals where a group has at least one interval active: (group, start, end)."""
    prev = np.concatenate([[0], s.count[:-1]])  # a group's first event follows a zero: groups net to 0
    opens = (prev == 0) & (s.count > 0)
    closes = s.count == 0
    return s.group[opens], s.time[opens], s.time[closes]


def _overlap_of_runs(n_groups: int, n_devices: int, run_group: np.ndarray, run_device: np.ndarray,
                     run_start: np.ndarray, run_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sweep runs (each group's merged intervals) per device.

    Returns per group the time its runs share with a run of another group of the same
    device, and per device the time when at least two groups are active.
    """
    s = _sweep(run_device, run_start, run_end)
    many = np.where(s.count >= 2, s.seg, 0)
    before = _before(many)
    shared = before[s.pos_end] - before[s.pos_start]
    per_group = np.bincount(run_group, weights=shared, minlength=n_groups).astype(np.int64)
    per_device = np.bincount(s.group, weights=many, minlength=n_devices)
    return per_group, per_device.astype(np.int64)


def _device_keys(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Device of each row (args.device, else pid, else -1) and stream (args.stream, else tid)."""
    def pick(a: str, b: str) -> np.ndarray:
        col = rows[a] if a in rows else pd.Series(pd.NA, index=rows.index, dtype="Int64")
        if b in rows:
            col = col.fillna(rows[b])
        return pd.to_numeric(col, errors="coerce").fillna(-1).to_numpy(np.int64)

    return pick("device", "pid"), pick("stream", "tid")


def timeline_accounting(classified_rows: pd.DataFrame) -> TimelineResult:
    """Sweep classified work rows (ts, dur, category, class; device/stream) per device."""
    rows = classified_rows
    dev_id, stream_id = _device_keys(rows)
    dev_codes, devices = pd.factorize(dev_id, sort=True)
    cat_codes, cats = pd.factorize(rows["category"].astype(str).to_numpy(), sort=False)
    n_dev, n_cat = len(devices), len(cats)
    classes = (pd.Series(rows["class"].astype(str).to_numpy()).groupby(cat_codes).first()
               if n_cat else pd.Series(dtype=str))

    start, dur = _snap_to_ns(rows, dev_codes, n_dev)
    end = start + dur
    span = _device_spans(dev_codes, start, end, n_dev)
    summed_dc = np.bincount(dev_codes * n_cat + cat_codes, weights=dur, minlength=n_dev * n_cat).astype(np.int64)
    summed_dev = summed_dc.reshape(n_dev, n_cat).sum(axis=1) if n_cat else np.zeros(n_dev, np.int64)

    pos = dur > 0  # zero-length kernels occupy no time
    dcode, ccode, s_, e_ = dev_codes[pos], cat_codes[pos], start[pos], end[pos]
    repeated_dev, hidden_dc = _overcount(dcode, ccode, s_, e_, n_dev, n_cat)
    busy_dev = summed_dev - repeated_dev
    exposed_dc = summed_dc - hidden_dc
    active_dc, overlapped_dc = _category_overlap(dcode, ccode, s_, e_, n_dev, n_cat)
    cross_dev = _cross_stream_overlap(dcode, stream_id[pos], s_, e_, n_dev)

    repl_summed, repl_exposed = _replaceable_per_device(classes, summed_dc, exposed_dc, n_dev, n_cat)
    dev_df = pd.DataFrame({
        "device": devices.astype(np.int64),
        "n_kernels": np.bincount(dev_codes, minlength=n_dev),
        "n_streams": _streams_per_device(stream_id, dev_codes, n_dev),
        "span_us": span / _NS,
        "busy_us": busy_dev / _NS,
        "idle_us": (span - busy_dev) / _NS,
        "summed_us": summed_dev / _NS,
        "cross_stream_overlap_us": cross_dev / _NS,
        "addressable_fraction_summed": _ratio(repl_summed, summed_dev),
        "addressable_fraction_exposed": _ratio(repl_exposed, busy_dev),
    })
    busy_ns = int(busy_dev.sum())
    cat_df = _category_table(cats, classes, n_dev, busy_ns, summed_dc, active_dc, overlapped_dc, exposed_dc)

    comm = cat_df[cat_df["category"] == COMMUNICATION]
    cross = float(cross_dev.sum())
    return TimelineResult(
        devices=dev_df,
        categories=cat_df,
        busy_us=busy_ns / _NS,
        idle_us=float((span - busy_dev).sum()) / _NS,
        span_us=float(span.sum()) / _NS,
        summed_us=float(summed_dev.sum()) / _NS,
        cross_stream_overlap_us=cross / _NS,
        streams_overlap=cross > 0,
        addressable_fraction_exposed=float(repl_exposed.sum() / busy_ns) if busy_ns else 0.0,
        addressable_fraction_summed=float(repl_summed.sum() / summed_dev.sum()) if summed_dev.sum() else 0.0,
        communication_exposed_us=float(comm["exclusive_us"].sum()),
        communication_overlapped_us=float(comm["overlapped_us"].sum()),
    )


def _snap_to_ns(rows: pd.DataFrame, dev_codes: np.ndarray, n_dev: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's start (from its device's first row) and duration (negative: 0), in whole ns."""
    ts = rows["ts"].to_numpy(np.float64)
    t0 = np.full(n_dev, np.inf)
    np.minimum.at(t0, dev_codes, ts)
    start = np.rint((ts - t0[dev_codes]) * _NS).astype(np.int64) if len(ts) else np.zeros(0, np.int64)
    dur = np.rint(np.clip(rows["dur"].to_numpy(np.float64), 0, None) * _NS).astype(np.int64)
    return start, dur


def _device_spans(dev_codes: np.ndarray, start: np.ndarray, end: np.ndarray, n_dev: int) -> np.ndarray:
    """Per device: first start to last end (ns)."""
    span = np.zeros(n_dev, np.int64)
    if len(start):
        first, last = np.full(n_dev, np.iinfo(np.int64).max), np.zeros(n_dev, np.int64)
        np.minimum.at(first, dev_codes, start)
        np.maximum.at(last, dev_codes, end)
        span = last - first
    return span


def _overcount(dcode: np.ndarray, ccode: np.ndarray, start: np.ndarray, end: np.ndarray, n_dev: int,
               n_cat: int) -> tuple[np.ndarray, np.ndarray]:
    """Sweep all kernels of each device (intervals of positive length).

    Returns per device the time summed more than once (summed - busy), and per (device, category)
    the part of its kernels not exposed (each segment is shared equally by the kernels active in it).
    """
    k = _sweep(dcode, start, end)
    extra = np.where(k.count >= 1, k.seg * (k.count - 1), 0)  # time counted more than once
    loss = np.where(k.count >= 1, k.seg * (1.0 - 1.0 / np.maximum(k.count, 1)), 0.0)
    before = _before(loss)
    hidden = before[k.pos_end] - before[k.pos_start]  # part of each kernel not exposed
    return (np.bincount(k.group, weights=extra, minlength=n_dev).astype(np.int64),
            np.bincount(dcode * n_cat + ccode, weights=hidden, minlength=n_dev * n_cat))


def _category_overlap(dcode: np.ndarray, ccode: np.ndarray, start: np.ndarray, end: np.ndarray, n_dev: int,
                      n_cat: int) -> tuple[np.ndarray, np.ndarray]:
    """Per (device, category): active time (union of its kernels), and the part shared with another category."""
    grp = dcode * n_cat + ccode
    run_g, run_s, run_e = _runs(_sweep(grp, start, end))
    active = np.bincount(run_g, weights=run_e - run_s, minlength=n_dev * n_cat).astype(np.int64)
    overlapped, _ = _overlap_of_runs(n_dev * n_cat, n_dev, run_g, run_g // max(n_cat, 1), run_s, run_e)
    return active, overlapped


def _cross_stream_overlap(dcode: np.ndarray, stream_id: np.ndarray, start: np.ndarray, end: np.ndarray,
                          n_dev: int) -> np.ndarray:
    """Per device: time when two or more of its streams are active (ns)."""
    s_codes, _ = pd.factorize(stream_id, sort=True)
    n_str = max(int(s_codes.max(initial=-1)) + 1, 1)
    run_g, run_s, run_e = _runs(_sweep(dcode * n_str + s_codes, start, end))
    _, cross = _overlap_of_runs(n_dev * n_str, n_dev, run_g, run_g // n_str, run_s, run_e)
    return cross


def _streams_per_device(stream_id: np.ndarray, dev_codes: np.ndarray, n_dev: int) -> np.ndarray:
    """Number of distinct streams of each device (all rows, zero-length ones too)."""
    return (pd.Series(stream_id).groupby(dev_codes).nunique().reindex(range(n_dev), fill_value=0)
            .to_numpy() if n_dev else np.zeros(0, np.int64))


def _replaceable_per_device(classes: pd.Series, summed_dc: np.ndarray, exposed_dc: np.ndarray, n_dev: int,
                            n_cat: int) -> tuple[np.ndarray, np.ndarray]:
    """Per device: summed and exposed time of the replaceable categories."""
    if not n_cat:
        return np.zeros(n_dev), np.zeros(n_dev)
    is_repl = classes.reindex(range(n_cat)).to_numpy() == REPLACEABLE
    return (summed_dc.reshape(n_dev, n_cat)[:, is_repl].sum(axis=1),
            exposed_dc.reshape(n_dev, n_cat)[:, is_repl].sum(axis=1))


def _category_table(cats: np.ndarray, classes: pd.Series, n_dev: int, busy_ns: int, summed_dc: np.ndarray,
                    active_dc: np.ndarray, overlapped_dc: np.ndarray, exposed_dc: np.ndarray) -> pd.DataFrame:
    """One row per category, its (device, category) times summed over devices; by class, then exposed time."""
    n_cat = len(cats)

    def per_cat(a: np.ndarray) -> np.ndarray:
        return a.reshape(n_dev, n_cat).sum(axis=0) if n_dev else np.zeros(n_cat)

    cat_df = pd.DataFrame({
        "category": pd.Series(cats, dtype=object).astype(str),
        "class": classes.reindex(range(n_cat)).to_numpy(dtype=object) if n_cat else [],
        "summed_us": per_cat(summed_dc) / _NS,
        "active_us": per_cat(active_dc) / _NS,
        "exclusive_us": per_cat(active_dc - overlapped_dc) / _NS,
        "overlapped_us": per_cat(overlapped_dc) / _NS,
        "exposed_us": per_cat(exposed_dc) / _NS,
    })
    cat_df["exposed_share"] = cat_df["exposed_us"] / (busy_ns / _NS) if busy_ns else 0.0
    return cat_df.sort_values(["class", "exposed_us"], ascending=[True, False]).reset_index(drop=True)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def format_timeline(t: TimelineResult) -> str:
    """The overlap-aware numbers as a short table."""
    lines = [
        f"Overlap-aware (exposed basis): addressable fraction {t.addressable_fraction_exposed:6.1%} of busy time "
        f"(summed basis {t.addressable_fraction_summed:6.1%})",
        f"Busy {t.busy_us / 1e3:,.3f} ms of {t.span_us / 1e3:,.3f} ms span (idle {t.idle_us / 1e3:,.3f} ms); "
        f"kernels sum to {t.summed_us / 1e3:,.3f} ms; cross-stream overlap {t.cross_stream_overlap_us / 1e3:,.3f} ms",
        f"Communication: exposed {t.communication_exposed_us / 1e3:,.3f} ms, "
        f"overlapped (hidden behind other kernels) {t.communication_overlapped_us / 1e3:,.3f} ms",
        "",
        f"{'category':<15}{'class':<13}{'summed ms':>11}{'exclusive':>11}{'overlapped':>11}{'exposed':>11}{'share':>8}",
    ]
    for r in t.categories.itertuples(index=False):
        lines.append(f"{r.category:<15}{r[1]:<13}{r.summed_us / 1e3:>11.3f}{r.exclusive_us / 1e3:>11.3f}"
                     f"{r.overlapped_us / 1e3:>11.3f}{r.exposed_us / 1e3:>11.3f}{r.exposed_share:>8.1%}")
    return "\n".join(lines)


def format_overlap_note(t: TimelineResult) -> str:
    """One line for the summed-basis report when streams overlap: busy time and the exposed-basis fraction."""
    return (f"Streams overlap: GPU busy {t.busy_us / 1e3:,.3f} ms of {t.summed_us / 1e3:,.3f} ms summed; "
            f"addressable fraction {t.addressable_fraction_exposed:.1%} of busy time (--basis exposed)")
