"""Several rank traces of one job: finding them, rank detection, the summary against hand-computed
numbers, waiting at collectives, serial == pool == Dask, bad files, and `classify PATH...`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from addressable.classify.ranks import (
    assemble_job,
    classify_job,
    classify_rank_file,
    collective_waits,
    find_trace_files,
    format_job,
    job_json,
    rank_of,
)
from addressable.classify.taxonomy import load_taxonomy
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.runs.folder import load_runs

GEMM = "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_TNT"  # gemm, library
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"  # communication, library
NCCL2 = "ncclDevKernel_AllGather_RING_LL"
ELEM = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >"  # replaceable
NORM = "void at::native::layer_norm_kernel<float>"  # normalization, replaceable
BASE = 5115133000000.125


def write_rank(path: Path, kernels: list[tuple], rank: int | None = None, world: int | None = None,
               gz: bool = False, gpu: str | None = None, backend: str = "nccl", cat: str = "kernel") -> Path:
    """kernels: (name, start µs, dur µs, stream) on one device -> a Kineto trace, distributedInfo when rank given
    (cat="cpu_op": CPU ops instead, a trace without GPU work)."""
    events = [{"ph": "X", "cat": cat, "name": n, "pid": 0, "tid": s, "ts": BASE + t, "dur": d,
               "args": {"stream": s, "device": 0, "correlation": i + 1}} for i, (n, t, d, s) in enumerate(kernels)]
    doc: dict = {"schemaVersion": 1}
    if gpu is not None:
        doc["deviceProperties"] = [{"id": 0, "name": gpu}]
    if rank is not None:
        doc["distributedInfo"] = {"backend": backend, "rank": rank, "world_size": world}
    doc["traceEvents"] = events
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


# DDP-like: rank 0 computes longer and reaches the all-reduce last (at 10); rank 1 gets there at 6 and waits.
RANK0 = [(GEMM, 0, 10, 7), (NCCL, 10, 2, 20), (ELEM, 12, 2, 7)]
RANK1 = [(GEMM, 0, 6, 7), (NCCL, 6, 6, 20), (ELEM, 12, 2, 7), (NORM, 14, 1, 7)]


def job_folder(tmp_path: Path) -> Path:
    d = tmp_path / "job"
    d.mkdir()
    write_rank(d / "host_123.1.pt.trace.json", RANK1, rank=1, world=2)
    write_rank(d / "host_456.2.pt.trace.json.gz", RANK0, rank=0, world=2, gz=True)
    return d


def test_find_trace_files(tmp_path: Path) -> None:
    d = job_folder(tmp_path)
    (d / "notes.txt").write_text("not a trace")
    (d / ".hidden.json").write_text("{}")
    (d / "breakdown.json").write_text("{}")  # a run folder's own files are no traces
    files = find_trace_files([d])
    assert [f.name for f in files] == ["host_123.1.pt.trace.json", "host_456.2.pt.trace.json.gz"]
    assert find_trace_files([str(d / "*.gz")]) == [files[1]]
    assert find_trace_files([files[0], d]) == files  # a file named twice is classified once
    with pytest.raises(AddressableError, match="no files match"):
        find_trace_files([str(d / "*.nope")])
    with pytest.raises(AddressableError, match="no such trace file or folder"):
        find_trace_files([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(AddressableError, match="no trace files"):
        find_trace_files([tmp_path / "empty"])


def test_rank_of() -> None:
    assert rank_of({"distributedInfo": {"rank": 3, "world_size": 8}}, "rank5.json") == (3, 8, "distributedInfo")
    assert rank_of({}, "/x/rank5.json.gz") == (5, None, "file name")
    assert rank_of({}, "job_rank-12.pt.trace.json") == (12, None, "file name")
    assert rank_of({}, "trace_rank_2.json") == (2, None, "file name")
    assert rank_of({"distributedInfo": {"rank": None}}, "worker.json") == (None, None, "unknown")
    assert rank_of({}, "cranky7.json") == (None, None, "unknown")  # "rank" inside a word is no rank


def test_summary_hand_computed(tmp_path: Path) -> None:
    job = classify_job([job_folder(tmp_path)], engine="serial")
    assert [r.rank for r in job.ranks] == [0, 1] and not job.errors and not job.warnings
    assert [r.rank_source for r in job.ranks] == ["distributedInfo"] * 2
    s = job.summary
    t = s.ranks.set_index("rank")
    assert t.loc[0, "total_kernel_time_us"] == pytest.approx(14)
    assert t.loc[1, "total_kernel_time_us"] == pytest.approx(15)
    assert t.loc[0, "compute_time_us"] == pytest.approx(12)
    assert t.loc[1, "compute_time_us"] == pytest.approx(9)
    assert t.loc[0, "addressable_fraction"] == pytest.approx(2 / 14)
    assert t.loc[1, "addressable_fraction"] == pytest.approx(3 / 15)
    assert t.loc[0, "addressable_fraction_compute"] == pytest.approx(2 / 12)
    assert t.loc[1, "addressable_fraction_compute"] == pytest.approx(3 / 9)
    assert t.loc[1, "addressable_fraction_exposed"] == pytest.approx(3 / 15)  # nothing overlaps
    assert t.loc[1, "communication_exposed_us"] == pytest.approx(6)
    assert t.loc[1, "communication_overlapped_us"] == 0
    # rank 1 reaches the collective at 6, rank 0 at 10: rank 1 waits 4 of its 6 µs, for rank 0
    assert t["communication_waiting_us"].tolist() == pytest.approx([0, 4])
    assert t["waited_for_us"].tolist() == pytest.approx([4, 0])
    assert s.straggler.last_arrival_rank == 0 and s.straggler.likely_straggler_rank == 0
    assert s.straggler.communication_us == pytest.approx([2, 6])
    assert s.fraction("summed") == pytest.approx({"job": 5 / 29, "median": (2 / 14 + 3 / 15) / 2,
                                                  "min": 2 / 14, "max": 3 / 15})
    assert s.fraction("compute")["job"] == pytest.approx(5 / 21)
    assert s.fraction("exposed")["job"] == pytest.approx(5 / 29)
    cats = s.categories.set_index("category")
    assert cats.loc["gemm", "share_median"] == pytest.approx((10 / 14 + 6 / 15) / 2)
    assert cats.loc["normalization", ["share_min", "share_max"]].tolist() == pytest.approx([0, 1 / 15])
    doc = job.to_dict()
    json.dumps(doc)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    assert {"rank", "file", "addressable_fraction", "addressable_fraction_exposed", "addressable_fraction_compute",
            "total_kernel_time_us", "busy_time_us", "communication_exposed_us",
            "communication_overlapped_us"} <= set(doc["ranks"][0])
    assert doc["aggregate"]["addressable_fraction_compute"]["job"] == pytest.approx(5 / 21)
    assert doc["aggregate"]["total_kernel_time_us"] == pytest.approx(29)


def test_collective_waits_matches_by_name_and_order() -> None:
    def coll(rows: list[tuple]) -> pd.DataFrame:
        return pd.DataFrame(rows, columns=["name", "ts", "dur"])

    a = coll([(NCCL, 0, 5), (NCCL2, 10, 3), (NCCL, 20, 2)])
    b = coll([(NCCL, 2, 3), (NCCL2, 8, 5), (NCCL, 25, 1)])
    w = collective_waits([a, b])
    # NCCL #0: last arrival 2 -> a waits 2; NCCL2: last 10 -> b waits 2; NCCL #1: last 25 -> a waits min(5, 2)
    assert w["communication_waiting_us"].tolist() == pytest.approx([4, 2])
    assert w["waited_for_us"].tolist() == pytest.approx([2, 4])
    assert w["last_arrivals"].tolist() == [1, 2] and w["n_matched"].tolist() == [3, 3]
    # a name with different counts on the ranks is not matched
    c = coll([(NCCL, 2, 3), (NCCL2, 8, 5)])
    assert collective_waits([a, c])["n_matched"].tolist() == [1, 1]
    assert collective_waits([a])["communication_waiting_us"].tolist() == [0]


def test_ranks_from_file_names_and_warnings(tmp_path: Path) -> None:
    d = tmp_path / "named"
    d.mkdir()
    write_rank(d / "rank1.json", RANK1)
    write_rank(d / "rank0.json", RANK0)
    job = classify_job([d], engine="serial")
    assert [(r.rank, r.rank_source) for r in job.ranks] == [(0, "file name"), (1, "file name")]
    write_rank(d / "again_rank1.json", RANK1)
    write_rank(d / "other.json", RANK0, rank=0, world=4)
    job = classify_job([d], engine="serial")
    text = " ".join(job.warnings)
    assert "rank 0 appears 2 times" in text and "rank 1 appears 2 times" in text
    assert "world size 4 but 4 trace(s)" not in text
    write_rank(d / "x.json", RANK0, rank=2, world=8)
    assert "mixed world sizes: 4, 8" in " ".join(classify_job([d], engine="serial").warnings)


def test_unranked_traces_numbered_by_file_order(tmp_path: Path) -> None:
    d = tmp_path / "plain"
    d.mkdir()
    write_rank(d / "a.json", RANK1)
    write_rank(d / "b.json", RANK0)
    job = classify_job([d], engine="serial")
    assert [(Path(r.file).name, r.rank, r.rank_source) for r in job.ranks] == [("a.json", 0, "file order"),
                                                                             ("b.json", 1, "file order")]
    assert job.warnings == ["none of the 2 traces carries distributedInfo (Kineto records it for each rank of a "
                            "process group), so nothing shows they are ranks of one job"]


def test_one_job_has_no_such_warning(tmp_path: Path) -> None:
    job = classify_job([job_folder(tmp_path)], engine="serial")
    assert job.warnings == [] and job.summary.straggler.likely_straggler_rank == 0


def test_unrelated_traces_are_not_taken_silently_for_one_job(tmp_path: Path) -> None:
    """Issue 26: a CPU trace and two GPU traces of other runs were pooled into one "job" with no word."""
    cpu = write_rank(tmp_path / "cpu.json", [("aten::mm", 0, 50, 1), ("aten::add", 50, 10, 1)], cat="cpu_op")
    h200 = write_rank(tmp_path / "h200.json", RANK0, rank=0, world=2, gpu="NVIDIA H200")
    a100 = write_rank(tmp_path / "a100.json", RANK1, rank=1, world=2, gpu="NVIDIA A100", backend="gloo")
    text = "\n".join(classify_job([cpu, h200, a100], engine="serial").warnings)
    assert "different bases (GPU kernel time ×2, CPU-op self time ×1)" in text
    assert "different devices (" in text and "NVIDIA A100 ×1" in text and "CPU ×1" in text
    assert "1 of the 3 traces carry no distributedInfo" in text
    assert "mixed process-group backends (" in text
    assert "different devices" not in " ".join(classify_job([h200, write_rank(
        tmp_path / "h200b.json", RANK1, rank=1, world=2, gpu="NVIDIA H200")], engine="serial").warnings)


def test_a_file_named_twice_and_a_pool_not_used_are_said(tmp_path: Path) -> None:
    d = job_folder(tmp_path)
    one = d / "host_123.1.pt.trace.json"
    job = classify_job([one, d], engine="serial")
    assert "host_123.1.pt.trace.json is named 2 times: classified once" in job.warnings and len(job.ranks) == 2
    job = classify_job([one], jobs=2)
    assert job.engine == "serial"
    assert "classified serially, not in a process pool: one trace file (-j 2 needs several)" in job.warnings
    assert "-j 1" in " ".join(classify_job([d], engine="process", jobs=1).warnings)
    assert not any("serially" in w for w in classify_job([d], jobs=1).warnings)  # -j 1 asks for serial


def test_no_straggler_is_named_without_communication(tmp_path: Path) -> None:
    a = write_rank(tmp_path / "a.json", [(GEMM, 0, 10, 7), (ELEM, 10, 2, 7)], rank=0, world=2)
    b = write_rank(tmp_path / "b.json", [(GEMM, 0, 8, 7), (ELEM, 8, 2, 7)], rank=1, world=2)
    job = classify_job([a, b], engine="serial")
    assert job.summary.straggler.likely_straggler_rank is None
    text = format_job(job)
    assert "Straggler signal: none (no communication kernels in any trace)" in text and "waits least" not in text
    assert json.loads(job_json(job))["aggregate"]["straggler"]["likely_straggler_rank"] is None


def test_bad_files_reported_rest_classified(tmp_path: Path) -> None:
    d = job_folder(tmp_path)
    good = gzip.compress(json.dumps({"traceEvents": []}).encode())
    (d / "truncated.json.gz").write_bytes(good[: len(good) // 2])
    (d / "notatrace.json").write_text('{"hello": 1}')
    (d / "garbage.json").write_text("this is not json")
    job = classify_job([d], engine="serial")
    assert [r.rank for r in job.ranks] == [0, 1]
    bad = {Path(e.file).name: e.error for e in job.errors}
    assert set(bad) == {"truncated.json.gz", "notatrace.json", "garbage.json"}
    assert "truncated" in bad["truncated.json.gz"] and "not a trace" in bad["notatrace.json"]
    assert all("\n" not in e for e in bad.values())
    assert "world size 2 but 5 trace(s)" in " ".join(job.warnings)


def _comparable(job) -> dict:
    doc = job.to_dict()
    return {"ranks": doc["ranks"], "aggregate": doc["aggregate"], "errors": doc["errors"]}


def test_serial_pool_dask_identical(tmp_path: Path) -> None:
    d = job_folder(tmp_path)
    write_rank(d / "rank2.json", [(GEMM, 0, 8, 7), (NCCL, 8, 4, 20), (ELEM, 12, 3, 7)])
    (d / "broken.json").write_text('{"traceEvents": [{"ph": "X",')
    serial = classify_job([d], engine="serial")
    pool = classify_job([d], engine="process", jobs=2)
    assert pool.engine == "process" and serial.engine == "serial"
    assert _comparable(pool) == _comparable(serial)
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        dask = classify_job([d], scheduler=cluster.scheduler_address)
    assert dask.engine == "dask"
    assert _comparable(dask) == _comparable(serial)
    assert len(serial.errors) == 1 and [r.rank for r in serial.ranks] == [0, 1, 2]


def test_engine_errors(tmp_path: Path) -> None:
    d = job_folder(tmp_path)
    with pytest.raises(AddressableError, match="unknown engine"):
        classify_job([d], engine="spark")
    with pytest.raises(AddressableError, match="needs the dask engine"):
        classify_job([d], engine="process", scheduler="tcp://127.0.0.1:1")


def test_assemble_job_all_bad(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("[]")
    res = classify_rank_file(tmp_path / "bad.json", load_taxonomy())
    job = assemble_job([res])
    assert job.summary is None and len(job.errors) == 1 and job.to_dict()["ranks"] == []


# --------------------------------------------------------------------------- the command


def run(*args) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_cli_folder_table_json_out(tmp_path: Path) -> None:
    d = job_folder(tmp_path)
    r = run("classify", d, "-j", "1")
    assert r.exit_code == 0, r.output
    assert "compute basis" in r.output and "Straggler signal" in r.output and "host_123.1.pt.trace.json" in r.output
    assert "wait 0.004 ms in all for rank 0, the last to arrive" in r.output
    r = run("classify", d, "--json", "-j", "2")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [x["rank"] for x in doc["ranks"]] == [0, 1]
    assert doc["aggregate"]["addressable_fraction_compute"]["job"] == pytest.approx(5 / 21)
    out = tmp_path / "out"
    r = run("classify", str(d / "*.json*"), "--out", out, "-j", "1")
    assert r.exit_code == 0, r.output
    assert {p.name for p in out.iterdir()} >= {"breakdown.json", "categories.csv", "kernels.csv", "ranks.csv",
                                               "rank0", "rank1"}
    assert json.loads((out / "rank1" / "breakdown.json").read_text())["rank"] == 1
    runs = load_runs([out])
    assert len(runs) == 1 and runs[0].world_size == 2
    assert runs[0].addressable_fraction == pytest.approx(5 / 29)
    assert runs[0].addressable_fraction_compute == pytest.approx(5 / 21)


def test_cli_bad_file_in_folder(tmp_path: Path) -> None:
    d = job_folder(tmp_path)
    (d / "broken.json.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    r = run("classify", d, "--json", "-j", "1")
    assert r.exit_code == 2
    lines = [ln for ln in r.stderr.splitlines() if "broken.json.gz" in ln]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    doc = json.loads(r.stdout)
    assert [x["rank"] for x in doc["ranks"]] == [0, 1] and len(doc["errors"]) == 1
    out = tmp_path / "out"
    r = run("classify", d, "--out", out, "-j", "1")
    assert r.exit_code == 2 and (out / "rank0" / "breakdown.json").is_file()


def test_cli_single_file_and_errors(tmp_path: Path) -> None:
    f = write_rank(tmp_path / "one.json", RANK1)
    r = run("classify", f, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["addressable_fraction_compute"] == pytest.approx(3 / 9)
    r = run("classify", tmp_path / "nothing*.json")
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "no files match" in r.output
    r = run("classify", f, f.parent, "--scheduler", "tcp://127.0.0.1:9", "--engine", "process")
    assert r.exit_code == 2 and "needs the dask engine" in r.output
