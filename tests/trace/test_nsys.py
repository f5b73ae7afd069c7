"""Nsight Systems SQLite exports (`nsys export --type sqlite`), on a file built here from NVIDIA's
documented export schema (nsys is on no machine of this project): the events table, the steps and
runtime calls, classification, and bad input (one line, exit 2)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from addressable.classify.breakdown import BASIS_GPU, classify_trace
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.trace.detect import trace_kind
from addressable.trace.reader import load_trace

# The tables as `.schema` shows them in an export (the SQLite Export Schema Reference; NOT NULL as exported)
SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL REFERENCES StringIds(id), shortName INTEGER NOT NULL REFERENCES StringIds(id),
  mangledName INTEGER REFERENCES StringIds(id), launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id),
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
  textId INTEGER REFERENCES StringIds(id), domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
  doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
"""
PID, TID = 4242, 4250
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, FillFunctor<float>)"
STRINGS = [GEMM, FILL, "cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "ProfilerStep#3", "sm90_xmma_gemm",
           "elementwise", "cudaMemsetAsync_v3020"]
KERNEL_COLS = ("start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName, "
               "registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, "
               "dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId")


def build(path: Path, *, tables: str = SCHEMA) -> Path:
    """An export of one step: a memcpy, a GEMM, a fill kernel and a memset, their launches, an NVTX step range."""
    gpid, gtid = PID << 24, (PID << 24) | TID
    con = sqlite3.connect(path)
    con.executescript(tables)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(STRINGS, 1)))
    con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL ({KERNEL_COLS}) VALUES "
                    "(?, ?, 0, 1, 7, ?, ?, ?, ?, 128, ?, 1, 1, ?, 1, 1, 0, 0, 0, 0, ?)",
                    [(2_000_000, 2_050_000, 11, gpid, 1, 6, 132, 384, 1), (2_060_000, 2_070_000, 12, gpid, 2, 7, 64, 128, 2)])
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, "
                    "returnValue) VALUES (?, ?, 1, ?, ?, ?, 0)",
                    [(1_990_000, 1_995_000, gtid, 11, 3), (1_996_000, 1_998_000, gtid, 12, 3),
                     (1_980_000, 1_989_000, gtid, 13, 4), (2_069_000, 2_070_500, gtid, 14, 8)])
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, "
                "globalPid, bytes, copyKind) VALUES (1985000, 1999000, 0, 1, 7, 13, ?, 4096, 1)", (gpid,))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, "
                "globalPid, value, bytes) VALUES (2071000, 2072000, 0, 1, 7, 14, ?, 0, 64)", (gpid,))
    con.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId, text) VALUES (?, ?, ?, ?, ?, ?)",
                    [(1_970_000, 2_100_000, 59, gtid, 5, None), (1_971_000, None, 34, gtid, None, "a mark"),
                     (1_972_000, 1_973_000, 59, gtid, None, "inline text")])
    con.commit()
    con.close()
    return path


@pytest.fixture
def export(tmp_path: Path) -> Path:
    return build(tmp_path / "report1.sqlite")


def test_detected_by_content_whatever_its_name(export: Path, tmp_path: Path) -> None:
    other = tmp_path / "profile.db"
    other.write_bytes(export.read_bytes())
    assert trace_kind(export) == trace_kind(other) == "nsys"


def test_the_events_table(export: Path) -> None:
    ev = load_trace(export).events
    assert ev[["name", "cat", "kind"]].astype(str).values.tolist() == [
        ["ProfilerStep#3", "user_annotation", "step"], ["inline text", "user_annotation", "cpu_annotation"],
        ["Memcpy HtoD", "gpu_memcpy", "gpu"], [GEMM, "kernel", "gpu"], [FILL, "kernel", "gpu"],
        ["Memset (Device)", "gpu_memset", "gpu"]]
    gpu = ev[ev["kind"] == "gpu"]
    assert gpu["ts"].tolist() == [1985.0, 2000.0, 2060.0, 2071.0] and gpu["dur"].tolist() == [14.0, 50.0, 10.0, 1.0]
    assert set(ev["pid"]) == {PID} and set(gpu["tid"]) == set(gpu["stream"]) == {7}
    assert ev.loc[ev["kind"] != "gpu", "tid"].tolist() == [TID, TID]
    assert gpu["grid"].astype(str).tolist()[1:3] == ["[132,1,1]", "[64,1,1]"]
    assert gpu["block"].astype(str).tolist()[1:3] == ["[384,1,1]", "[128,1,1]"]
    assert gpu["correlation"].tolist() == [13, 11, 12, 14] and list(ev["step"]) == [3] * 6


def test_the_table_has_the_kineto_readers_columns_and_dtypes(export: Path, assert_kineto_schema) -> None:
    assert_kineto_schema(load_trace(export).events)


def test_runtime_calls_lose_their_version_suffix_and_join_by_correlation(export: Path) -> None:
    ev = load_trace(export, runtime=True).events
    rt = ev[ev["kind"] == "runtime"]
    assert rt["name"].astype(str).tolist() == ["cudaMemcpyAsync", "cudaLaunchKernel", "cudaLaunchKernel",
                                               "cudaMemsetAsync"]
    assert set(rt["correlation"]) == {11, 12, 13, 14} and set(rt["cat"].astype(str)) == {"cuda_runtime"}


def test_classified_on_gpu_time_per_step(export: Path) -> None:
    b = classify_trace(export)
    assert b.basis == BASIS_GPU and b.n_steps == 1 and b.total_time_us == pytest.approx(14 + 50 + 10 + 1)
    cats = dict(zip(b.kernels["name"], b.kernels["category"], strict=True))
    assert cats[GEMM] == "gemm" and cats[FILL] == "elementwise"


def test_an_older_export_without_demangled_names_reads_short_names(tmp_path: Path) -> None:
    old = SCHEMA.replace("demangledName INTEGER NOT NULL REFERENCES StringIds(id), ", "")
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript(old)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(STRINGS, 1)))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, shortName, "
                "registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, "
                "dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) "
                "VALUES (0, 5000, 0, 1, 7, 6, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1)")
    con.commit()
    con.close()
    ev = load_trace(path).events
    assert ev["name"].astype(str).tolist() == ["sm90_xmma_gemm"] and ev["pid"].isna().all()


def sqlite_with(path: Path, script: str) -> Path:
    con = sqlite3.connect(path)
    con.executescript(script)
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("make,expect", [
    (lambda p: sqlite_with(p, "CREATE TABLE StringIds (id INTEGER, value TEXT);"),
     "without CUDA kernel activity"),
    (lambda p: sqlite_with(p, "CREATE TABLE t (x INTEGER);"), "not an Nsight Systems SQLite export"),
    (lambda p: sqlite_with(p, "CREATE TABLE rocpd_kernel_dispatch (id INTEGER);"), "rocpd database, which is not read"),
    (lambda p: sqlite_with(p, "CREATE TABLE StringIds (id INTEGER, value TEXT); "
                              "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, demangledName INTEGER);"),
     "has no column end"),
    (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x07" * 200), "cannot read"),
    (lambda p: sqlite_with(p, SCHEMA), "empty trace"),
])
def test_bad_exports_are_one_line_errors(tmp_path: Path, make, expect: str) -> None:
    path = tmp_path / "bad.sqlite"
    make(path)
    with pytest.raises(AddressableError, match=expect):
        load_trace(path)
    r = CliRunner().invoke(main, ["classify", str(path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "error:" in r.output, r.output


def test_a_truncated_export_is_one_line_error(export: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(export.read_bytes()[:6000])
    with pytest.raises(AddressableError):
        load_trace(cut)


def test_the_replay_reads_it(export: Path, replay_with_gemm_halved) -> None:
    """What `project --model replay` needs: every GPU op joined to its launch, the step replayed as profiled."""
    _, base, faster, gemm = replay_with_gemm_halved(export, GEMM)
    assert base.busy == pytest.approx(14 + 50 + 10 + 1)
    assert faster.busy == pytest.approx(14 + 25 + 10 + 1)
    assert faster.gpu_end[gemm] == pytest.approx(base.gpu_end[gemm] - 25)  # the step's NVTX range bounds the span


def test_a_folder_of_rank_exports_is_one_job(tmp_path: Path) -> None:
    """`classify DIR` finds *.sqlite files as it finds *.json ones; the rank comes from the file name."""
    from addressable.classify.ranks import classify_job

    (tmp_path / "job").mkdir()
    for rank in (0, 1):
        build(tmp_path / "job" / f"report_rank{rank}.sqlite")
    job = classify_job([str(tmp_path / "job")])
    assert not job.errors and [r.rank for r in job.ranks] == [0, 1]
    assert all(r.breakdown.basis == BASIS_GPU for r in job.ranks)
