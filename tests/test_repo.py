"""The repository is self-contained: tests read only files inside it and skip only for a missing GPU
or an optional package; the committed reference results stay apart from user runs."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
# a skip is allowed only when its reason names a missing GPU or a missing optional package
ALLOWED_SKIP = ("cuda", "gpu", "triton", "torchrec", "installed", "without")


def _test_files() -> list[Path]:
    return sorted([TESTS / "conftest.py", *TESTS.rglob("test_*.py")])


def _skip_calls() -> list[tuple[str, int, str]]:
    """(file, line, reason) of every pytest.skip / skipif / importorskip in the test files."""
    found = []
    for path in _test_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            name = node.func.attr
            if name == "importorskip":
                reason = [ast.unparse(k.value) for k in node.keywords if k.arg == "reason"]
                found.append((path.name, node.lineno, " ".join(["package " + ast.unparse(node.args[0]), *reason])))
            elif name in ("skip", "skipif"):
                reason = [k.value for k in node.keywords if k.arg == "reason"] + node.args[-1:]
                found.append((path.name, node.lineno, " ".join(ast.unparse(r) for r in reason)))
    return found


def test_no_test_skips_for_missing_data() -> None:
    calls = _skip_calls()
    assert calls, "the scan found no skips at all (conftest's GPU skip should be one)"
    bad = [c for c in calls if not any(w in c[2].lower() for w in ALLOWED_SKIP)]
    assert not bad, f"skips that are not about a GPU or an optional package: {bad}"


def test_tests_read_no_files_outside_the_repository() -> None:
    for path in _test_files():
        text = path.read_text()
        for outside in ("../shared", "/work/"):
            assert outside not in text or path.name == "test_repo.py", f"{path.name} reads {outside}"
        depth = len(path.relative_to(ROOT).parts) - 1  # parents[depth] is the repository root
        for k in re.findall(r"parents\[(\d+)\]", text):
            assert int(k) <= depth, f"{path.name}: parents[{k}] is outside the repository"


def test_real_traces_are_committed(h200_traces: dict[str, Path]) -> None:
    assert {"resnet50_train", "llama8b4l_infer"} <= set(h200_traces)
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "tests/data"], capture_output=True,
                             text=True, check=True).stdout.split()
    assert {f"tests/data/{n}.json.gz" for n in ("resnet50_train", "llama8b4l_infer")} <= set(tracked)


def test_user_runs_and_reference_results_are_apart() -> None:
    ignore = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "outputs/x/breakdown.json"])
    assert ignore.returncode == 0, "outputs/ must be git-ignored"
    kept = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "results/h200/x/breakdown.json"])
    assert kept.returncode == 1, "results/h200 run files must not be ignored"
    script = (ROOT / "results" / "h200" / "figures" / "make_figures.sh").read_text()
    assert "F=results/h200/figures" in script  # the reference figures are written there only by path
