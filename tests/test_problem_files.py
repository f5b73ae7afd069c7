"""KernelBench-format files (problems: `Model` + `get_inputs`; candidates: `ModelNew`) live only in the three
folders docs/verification.md names, and every file that names one (wins sources, pairs) names one that exists."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {  # folder: what lives there
    "addressable/dlrm_bench/problems": "problems",
    "addressable/dlrm_bench/candidates": "candidates",
    "examples/problems": "problems",
    "examples/candidates": "candidates",
    "tests/verification/zoo": "both",
}


def _kind(path: Path) -> str | None:
    """'problem', 'candidate' or None, from the file's top-level definitions."""
    names = {n.name for n in ast.parse(path.read_text(), str(path)).body
             if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    if "ModelNew" in names:
        return "candidate"
    return "problem" if {"Model", "get_inputs"} <= names else None


def _tracked_python() -> list[Path]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "*.py"],
                         capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in out if (ROOT / f).is_file()]


def test_kernelbench_files_live_in_the_documented_folders() -> None:
    found = {p.relative_to(ROOT): k for p in _tracked_python() if (k := _kind(p))}
    assert len(found) > 40  # the scan sees the shipped problems, the examples and the zoo
    stray = [str(p) for p in found if str(p.parent) not in FOLDERS]
    assert not stray, f"KernelBench-format files outside {sorted(FOLDERS)}: {stray}"
    for p, kind in found.items():
        role = FOLDERS[str(p.parent)]
        assert role == "both" or role == f"{kind}s", f"{p} is a {kind} in a folder of {role}"


def test_the_folders_are_documented() -> None:
    doc = (ROOT / "docs" / "verification.md").read_text()
    section = doc.split("## Where the KernelBench-format files live", 1)[1]
    for folder in FOLDERS:
        assert f"`{folder}/`" in section, folder


def test_every_named_candidate_and_problem_exists() -> None:
    wins = [ROOT / "examples" / "wins.csv", *sorted((ROOT / "results" / "h200" / "dlrm_bench").glob("*wins*.csv"))]
    for f in wins:
        for source in pd.read_csv(f)["source"].dropna():
            assert (ROOT / source).is_file(), f"{f.name}: {source}"
    pairs = ROOT / "examples" / "candidates" / "pairs.csv"
    for row in pd.read_csv(pairs).itertuples():
        assert (pairs.parent / row.problem).is_file() and (pairs.parent / row.candidate).is_file(), row
        assert (ROOT / row.source).is_file(), row.source
