"""scripts/coverage_corpus.py: the corpus table of docs/classification.md, its halves and its reasons
(the public traces themselves are not in the repository; this checks the script on a trace it builds)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("coverage_corpus", ROOT / "scripts" / "coverage_corpus.py")
cc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cc)


def _mirror(tmp_path: Path) -> Path:
    """A fetched-snapshot layout (MIRROR/owner+name/repo) holding one small trace at one commit."""
    repo = tmp_path / "mirror" / "acme+traces" / "repo"
    work = tmp_path / "work"
    work.mkdir()
    events = [{"ph": "X", "cat": "kernel", "name": "nvjet_sm90_x", "ts": 0, "dur": 90, "pid": 0, "tid": 7},
              {"ph": "X", "cat": "kernel", "name": "odd_kernel", "ts": 100, "dur": 10, "pid": 0, "tid": 7}]
    (work / "t.json.gz").write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "t.json.gz"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "t"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(repo)], check=True)
    return tmp_path / "mirror"


def test_a_fetched_trace_is_measured_and_one_above_1_percent_needs_a_reason(tmp_path: Path) -> None:
    mirror = _mirror(tmp_path)
    commit, files, problem = cc.fetch_source(mirror, tmp_path / "cache", "acme/traces", "t.json.gz")
    assert problem == "" and len(files) == 1 and files[0][0] == f"acme/traces@{commit[:7]}:t.json.gz"
    assert cc.fetch_source(mirror, tmp_path / "cache", "acme/other", "t.json.gz")[2] == "acme/other not fetched"
    assert "not in the snapshot" in cc.fetch_source(mirror, tmp_path / "cache", "acme/traces", "gone.json.gz")[2]
    corpus = pd.DataFrame([{"stack": "s", "source": files[0][0], "file": str(files[0][1]), "problem": "",
                            "half": cc.half_of(files[0][0])}])
    table, names = cc.measure(corpus)
    assert table.iloc[0]["unclassified_share"] == 0.1 and list(names["name"]) == ["odd_kernel"]
    text = cc.markdown(table)
    assert "| s | `acme/traces@" in text and "| 10.00% | (no reason recorded) |" in text


def test_halves_are_fixed_by_the_source_and_split_the_corpus() -> None:
    sources = [f"{repo}:{path}" for _, repo, path in cc.SOURCES]
    halves = [cc.half_of(s) for s in sources]
    assert halves == [cc.half_of(s) for s in sources] and set(halves) == {"write", "measure"}
    assert cc.half_of("gpu/capture_stacks.py:fft_fno_train") == "write"


def test_the_docs_page_holds_the_generated_block() -> None:
    page = (ROOT / "docs" / "classification.md").read_text()
    block = cc.BLOCK.search(page)
    assert block and "| stack | trace | half | kernels | unclassified | reason |" in block.group(0)
    assert "- measure half:" in block.group(0)
