"""gpu/replay_corpus.py (the replay validation corpus, issue 27): its pair table, the dev/heldout split
committed before any data, and a smoke run of a few pairs on the CPU (tiny sizes) through the real code."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "gpu" / "replay_corpus.py"


def _module():
    spec = importlib.util.spec_from_file_location("replay_corpus", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["replay_corpus"] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


def test_corpus_covers_the_regimes_and_swap_sizes() -> None:
    rc = _module()
    names = [p.name for p in rc.PAIRS]
    assert len(set(names)) == len(names) >= 24
    assert len({p.regime for p in rc.PAIRS}) >= 8
    assert {"tiny", "mlp", "block"} <= {p.swap for p in rc.PAIRS}
    for part in (1, 2):  # each device call holds every regime, and its estimate fits the default budget
        ps = [p for p in rc.PAIRS if p.part == part]
        assert {p.regime for p in ps} == {p.regime for p in rc.PAIRS}
        assert sum(p.est_s for p in ps) + 30 < 450


def test_split_is_committed_follows_its_rule_and_is_balanced() -> None:
    rc = _module()
    with open(ROOT / "results/h200/replay_corpus/split.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    committed = {r["pair"]: r["split"] for r in rows}
    assert committed == rc.split_of(rc.PAIRS)
    halves = Counter(committed.values())
    assert abs(halves["dev"] - halves["heldout"]) <= 1
    for regime in {p.regime for p in rc.PAIRS}:
        assert {committed[p.name] for p in rc.PAIRS if p.regime == regime} == {"dev", "heldout"}, regime


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict[str, bytes]]:
    res = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out"), "--smoke", *args],
                         capture_output=True, text=True, timeout=600)
    files: dict[str, bytes] = {}
    for tar in sorted((tmp_path / "out").glob("replay_corpus_part*.tar")):
        with tarfile.open(tar) as t:
            for m in t.getmembers():
                files[m.name] = t.extractfile(m).read()
    return res, files


@pytest.mark.slow
def test_smoke_run_writes_pairs_the_validation_can_read(tmp_path: Path) -> None:
    pairs = ["two-stream-layernorm", "compiled-region-b1-layernorm", "bert-train-b4-layernorm"]
    res, files = _run(tmp_path, "--pairs", ",".join(pairs))
    assert res.returncode == 0, res.stderr[-2000:]
    assert "3 of 3 pairs captured" in res.stdout
    over = json.loads(files["part-x/profiler_overhead.json"])
    assert set(over["kinds"]) == {"add", "view", "linear", "record_function"}
    assert over["kinds"]["view"]["events_per_op"]["cpu_op"] == pytest.approx(1.0, abs=0.1)
    for name in pairs:
        meta = json.loads(files[f"part-x/{name}.json"])
        n = len(meta["round"])
        assert n > 0 and all(len(meta[k][v]) == n for k in ("step_ms", "cpu_ms", "swap_cpu_ms") for v in "AB")
        assert meta["split"] in ("dev", "heldout") and meta["swap_calls_per_step"]["A"] > 0
        assert meta["module_cpu"]["A"]["modules"] or name.startswith("two-stream")
        for trace in meta["traces"]["A"] + meta["traces"]["B"]:
            assert f"part-x/{trace}" in files
    # the swapped group is marked in the trace; the swap's own CPU time is smaller in B
    assert b"swap_group" in __import__("gzip").decompress(files["part-x/bert-train-b4-layernorm.A.json.gz"])
    bert = json.loads(files["part-x/bert-train-b4-layernorm.json"])
    assert sum(bert["swap_cpu_ms"]["B"]) < sum(bert["swap_cpu_ms"]["A"])


@pytest.mark.slow
def test_a_pair_past_the_budget_is_skipped_and_logged(tmp_path: Path) -> None:
    res, files = _run(tmp_path, "--pairs", "two-stream-layernorm,two-stream-gelu", "--budget-s", "20")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "SKIPPED (budget" in res.stdout and "two-stream-gelu" in res.stdout.split("SKIPPED")[1]
    assert "0 of 2 pairs captured" in res.stdout
    assert "part-x/profiler_overhead.json" in files and "part-x/capture.log" in files
