"""The scripts in gpu/: each is listed in gpu/README.md with what it reproduces, each parses, and every
repository path one names exists (a script that points at a moved folder fails here, not on the GPU)."""

from __future__ import annotations

import importlib.util
import py_compile
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "gpu"
SCRIPTS = sorted(p for p in GPU.iterdir() if p.suffix in (".py", ".sh"))
REPO_PATH = re.compile(r"(?<![\w/$.-])((?:addressable|examples|gpu|scripts|tests|results|docs|benchmarks|workloads)"
                       r"/[\w./*-]*[\w*])")


def _index() -> dict[str, str]:
    """gpu/README.md's table: each script named in a row's first cell -> the row."""
    rows = {}
    for line in (GPU / "README.md").read_text().splitlines():
        if line.startswith("| `"):
            for name in re.findall(r"`([\w.]+\.(?:py|sh))", line.split("|")[1]):
                rows[name] = line
    return rows


def test_every_script_is_in_the_index_and_every_row_is_a_script() -> None:
    index = _index()
    assert sorted(index) == [p.name for p in SCRIPTS]
    assert all(re.search(r"\]\(\.\./(docs|README)", row) or "one device call" in row for row in index.values())


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses_and_its_paths_exist(script: Path, tmp_path: Path) -> None:
    if script.suffix == ".sh":
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    else:
        py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"), doraise=True)
    missing = [p for p in REPO_PATH.findall(script.read_text())
               if not (list(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())]
    assert not missing, missing


def test_verify_adversary_finds_its_problems_and_candidates() -> None:
    spec = importlib.util.spec_from_file_location("verify_adversary", GPU / "verify_adversary.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = mod.pairs(ROOT, ROOT)
    assert {r["group"] for r in rows} == {"zoo", "examples", "dlrm", "old zoo"}
    assert len(rows) >= 50
    missing = [str(f) for r in rows for f in (r["problem"], r["candidate"]) if not Path(f).is_file()]
    assert not missing, missing
