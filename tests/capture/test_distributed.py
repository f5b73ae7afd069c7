"""Multi-process profiling (--nproc): the rank aggregate, the torchrun launch, DLRM's refusal, a gloo run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from addressable.capture import distributed
from addressable.classify.breakdown import breakdown_from_classified
from addressable.classify.ranks import aggregate_breakdowns, format_ranks
from addressable.classify.taxonomy import load_taxonomy
from addressable.classify.timeline import timeline_accounting
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.runs.folder import load_run

ROOT = Path(__file__).resolve().parents[2]
CLASSES = {"gemm": "library", "communication": "library", "elementwise": "replaceable"}


def _rank_breakdown(rows: list[tuple[str, str, float, float, int]]):
    """A Breakdown (with timeline) of kernels (name, category, ts, dur, stream) on one device, 2 steps."""
    df = pd.DataFrame(rows, columns=["name", "category", "ts", "dur", "stream"]).assign(device=0)
    df["class"] = df["category"].map(CLASSES)
    b = breakdown_from_classified(df, "gpu_kernel_time", load_taxonomy(), n_steps=2, source="synthetic")
    b.timeline = timeline_accounting(df)
    return b


def _two_ranks():
    # rank 0: GEMM 0-10 on stream 7 with NCCL 5-15 on stream 20 under it; elementwise 20-24
    r0 = _rank_breakdown([("gemm_k", "gemm", 0, 10, 7), ("nccl_k", "communication", 5, 10, 20),
                          ("add_k", "elementwise", 20, 4, 7)])
    # rank 1: the same work, but NCCL waits 30 µs longer (it arrived first), all of it exposed
    r1 = _rank_breakdown([("gemm_k", "gemm", 0, 10, 7), ("nccl_k", "communication", 5, 40, 20),
                          ("add_k", "elementwise", 50, 4, 7)])
    keys = [{"step_time_ms": 0.06, "addressable_fraction_wall": 0.1},
            {"step_time_ms": 0.06, "addressable_fraction_wall": 0.05}]
    return [r0, r1], keys


def test_aggregate_breakdowns_synthetic() -> None:
    bs, keys = _two_ranks()
    d = aggregate_breakdowns(bs, keys)
    assert d["world_size"] == 2
    ranks = {r["rank"]: r for r in d["ranks"]}
    assert ranks[0]["communication_us"] == pytest.approx(10)
    assert ranks[1]["communication_us"] == pytest.approx(40)
    # exposed (NCCL alone) vs overlapped (under the GEMM), per rank and per step
    assert ranks[0]["communication_exposed_us"] == pytest.approx(5)
    assert ranks[0]["communication_overlapped_us"] == pytest.approx(5)
    assert ranks[1]["communication_exposed_us"] == pytest.approx(35)
    assert ranks[1]["communication_exposed_per_step_us"] == pytest.approx(17.5)
    assert ranks[0]["addressable_fraction"] == pytest.approx(4 / 24)
    assert ranks[0]["addressable_fraction_exposed"] == pytest.approx(4 / 19)
    assert d["addressable_fraction"]["min"] == pytest.approx(4 / 54)
    assert d["addressable_fraction"]["max"] == pytest.approx(4 / 24)
    assert d["addressable_fraction_wall"] == {"median": pytest.approx(0.075), "min": 0.05, "max": 0.1}
    # the compute basis leaves NCCL out: both ranks do the same compute, so they agree on it exactly
    assert d["addressable_fraction_compute"]["min"] == pytest.approx(4 / 14)
    assert d["addressable_fraction_compute"]["max"] == pytest.approx(4 / 14)
    assert d["addressable_fraction_compute"]["job"] == pytest.approx(8 / 28)
    assert ranks[1]["compute_time_per_step_us"] == pytest.approx(7)
    cats = {c["category"]: c for c in d["categories"]}
    assert cats["communication"]["share_min"] == pytest.approx(10 / 24)
    assert cats["communication"]["share_max"] == pytest.approx(40 / 54)
    assert cats["elementwise"]["exposed_share_max"] == pytest.approx(4 / 19)
    s = d["straggler"]
    assert s["communication_us"] == [pytest.approx(10), pytest.approx(40)]
    assert s["likely_straggler_rank"] == 0
    json.dumps(d)  # JSON-ready as it is

    text = format_ranks({**d, "strategy": "ddp", "backend": "nccl", "top_level": "rank 0"})
    assert "exposed" in text and "overlap" in text and "Straggler signal" in text
    assert "rank 0 waits least" in text


def test_ranks_without_communication_name_no_straggler() -> None:
    """A run whose ranks launch no communication kernel (replicas, gloo on the CPU): no straggler at 0 ms."""
    bs = [_rank_breakdown([("gemm_k", "gemm", 0, 10, 7), ("add_k", "elementwise", 10, 4, 7)]) for _ in range(2)]
    d = aggregate_breakdowns(bs, [{"step_time_ms": 0.02, "addressable_fraction_wall": 0.2}] * 2)
    assert d["straggler"]["likely_straggler_rank"] is None
    text = format_ranks({**d, "strategy": "replicated", "backend": "gloo"})
    assert text.endswith("Straggler signal: none (no communication kernels in any trace)")


def test_aggregate_breakdowns_needs_keys_per_rank() -> None:
    bs, keys = _two_ranks()
    with pytest.raises(AddressableError):
        aggregate_breakdowns(bs, keys[:1])


def test_dlrm_nproc_is_refused_in_one_line() -> None:
    res = CliRunner().invoke(main, ["profile", "dlrm", "--nproc", "2", "--device", "cpu"])
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert err.startswith("error: dlrm with --nproc 2 needs TorchRec's sharded GPU embedding kernels")
    assert "\n" not in err and "Traceback" not in res.output


def test_nproc_relaunches_under_torchrun_with_multicast_off(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def fake_run(cmd: list[str], env: dict[str, str], check: bool) -> subprocess.CompletedProcess:
        seen.update(cmd=cmd, env=env)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(distributed.subprocess, "run", fake_run)
    res = CliRunner().invoke(main, ["profile", "gpt2", "--nproc", "2", "--device", "cpu", "--option", "layers=2",
                                    "--compile", "--steps", "3"])
    assert res.exit_code == 0, res.output
    cmd = seen["cmd"]
    assert cmd[1:7] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m"]
    args = cmd[7:]
    assert args[:3] == ["addressable", "profile", "gpt2"]
    assert "--nproc" not in args and "--compile" in args
    assert args[args.index("--option") + 1] == "layers=2" and args[args.index("--steps") + 1] == "3"
    assert args[args.index("--name") + 1].startswith("gpt2-train-b8-s1024-fp32-cpu-compile-layers2-np2")
    for k, v in distributed.NVLS_OFF_ENV.items():
        assert seen["env"][k] == v


def test_nproc_must_match_torchrun(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "4")
    res = CliRunner().invoke(main, ["profile", "gpt2", "--nproc", "2", "--device", "cpu"])
    assert res.exit_code == 2 and "torchrun started 4 processes" in res.stderr


def test_check_nproc(monkeypatch: pytest.MonkeyPatch) -> None:
    from addressable.capture.workload import get_workload

    spec = get_workload("gpt2")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert distributed.check_nproc(spec, 2) and not distributed.check_nproc(spec, 1, (2, 4))
    with pytest.raises(AddressableError, match="at least 1"):
        distributed.check_nproc(spec, 0)
    with pytest.raises(AddressableError, match="--layers-subset cannot be combined"):
        distributed.check_nproc(spec, 2, (2, 4))
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert not distributed.check_nproc(spec, 2)
    with pytest.raises(AddressableError, match="torchrun started 2 processes"):
        distributed.check_nproc(spec, 4)


@pytest.mark.slow
def test_gpt2_ddp_two_cpu_processes(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("WORLD_SIZE", None)
    cmd = [sys.executable, "-m", "addressable", "profile", "gpt2", "--nproc", "2", "--device", "cpu",
           "--option", "layers=2", "--option", "hidden=64", "--option", "heads=2", "--option", "vocab=1000",
           "--seq-len", "16", "--batch", "2", "--warmup", "1", "--steps", "2", "--profile-steps", "1",
           "--repeats", "2", "--out", str(tmp_path), "--name", "ddp"]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=85)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Ranks: 2 (ddp, gloo)" in res.stdout and "Straggler signal" in res.stdout
    run = tmp_path / "ddp"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddp"]  # no temporary folder left behind
    for k in (0, 1):
        sub = run / f"rank{k}"
        assert {"breakdown.json", "categories.csv", "kernels.csv", "steps.csv", "manifest.json",
                "trace.json.gz"} <= {p.name for p in sub.iterdir()}
        doc = json.loads((sub / "breakdown.json").read_text())
        assert doc["rank"] == k and doc["world_size"] == 2 and doc["strategy"] == "ddp"
        assert doc["source"] == str(sub / "trace.json.gz")  # where the trace lies, not the .partial folder
    # step times are the maximum across ranks, so both ranks record the same ones
    s0, s1 = (pd.read_csv(run / f"rank{k}" / "steps.csv") for k in (0, 1))
    assert s0["time_ms"].tolist() == s1["time_ms"].tolist()
    top = load_run(run)
    assert top.info["workload"] == "gpt2" and top.info["world_size"] == 2
    assert 0 <= top.addressable_fraction <= 1 and top.info["step_time_ms"] > 0
    d = top.info["distributed"]
    assert [r["rank"] for r in d["ranks"]] == [0, 1] and d["top_level"] == "rank 0"
    assert any(c["category"] == "communication" for c in d["categories"])
    assert len(d["straggler"]["communication_us"]) == 2
    assert (run / "ranks.csv").is_file()
