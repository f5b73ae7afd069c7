"""The architecture of addressable (docs/CONVENTIONS.md): the import-linter contracts of pyproject.toml
hold (stages are layers, adapters see no analysis, no cycles inside a stage), they catch a
violation, every stage is placed in them, and no module imports another module's private names.

The private-name rule reads every import with `ast` (top level, inside functions, under
TYPE_CHECKING), so a new import is checked the moment it is written.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("addressable", "workloads")

# Private names borrowed across modules: none.
ALLOWED_PRIVATE: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class Import:
    importer: str
    module: str  # the imported module
    name: str | None  # the name taken from it (from M import name; M.name for a module alias)
    line: int


def module_files() -> dict[str, Path]:
    """Module name -> source file, for every module of the packages."""
    out = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            rel = f.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out[".".join(parts)] = f
    return out


def imports_of(name: str, path: Path, modules: set[str]) -> list[Import]:
    """Every import of a module of the packages in one file, with the names taken."""
    tree = ast.parse(path.read_text(), str(path))
    out, aliases = [], {}
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    out.append(Import(name, a.name, None, node.lineno))
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] not in PACKAGES:
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in modules:  # from addressable import distributed: the submodule
                    out.append(Import(name, sub, None, node.lineno))
                    aliases[a.asname or a.name] = sub
                else:
                    out.append(Import(name, base, a.name, node.lineno))
    for node in ast.walk(tree):  # prof._name on a module alias
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_")):
            out.append(Import(name, aliases[node.value.id], node.attr, node.lineno))
    return out


LINT = ("from importlinter import configuration\nconfiguration.configure()\n"
        "from importlinter.application.use_cases import lint_imports\n"
        "raise SystemExit(0 if lint_imports('pyproject.toml', cache_dir=None, no_logo=True) else 1)")


def lint(root: Path) -> subprocess.CompletedProcess:
    """import-linter's verdict on the contracts of root/pyproject.toml, over the packages under root."""
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_contracts_hold() -> None:
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken" in r.stdout


def test_every_stage_is_a_layer() -> None:
    layers = next(c for c in contracts() if c["type"] == "layers")["layers"]
    placed = {m.strip() for layer in layers for m in layer.split("|")}
    stages = {f"addressable.{p.name}" for p in (ROOT / "addressable").iterdir() if (p / "__init__.py").is_file()}
    stages |= {f"addressable.{p.stem}" for p in (ROOT / "addressable").glob("*.py") if not p.name.startswith("_")}
    assert placed == stages, f"place these in the layers contract: {sorted(stages - placed)}; gone: {sorted(placed - stages)}"


def _copy(tmp_path: Path) -> Path:
    for name in ("addressable", "workloads"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


@pytest.mark.parametrize("file, line, broken", [
    ("addressable/core/device.py", "from addressable.capture.profile import run_name", "stages are layers"),
    ("addressable/classify/timeline.py", "from addressable.classify import ranks", "without cycles"),
    ("workloads/resnet.py", "from addressable.classify.breakdown import classify_trace", "Adapters"),
    ("addressable/dlrm_bench/problems/06_dot_interaction.py", "from addressable.report import plot",
     "stages are layers"),
    ("addressable/capture/workload.py", "import workloads.resnet", "reaches an adapter"),
    ("addressable/roofline/ncu_check.py", "def f():\n    import torch", "never import torch"),
    ("addressable/classify/timeline.py", "from addressable.core.device import resolve_device", "never import torch"),
])
def test_the_contracts_catch_a_violation(tmp_path: Path, file: str, line: str, broken: str) -> None:
    root = _copy(tmp_path)
    with (root / file).open("a") as f:
        f.write(f"\n{line}  # noqa\n")
    r = lint(root)
    assert r.returncode == 1, r.stdout
    assert next(ln for ln in r.stdout.splitlines() if broken in ln).endswith("BROKEN"), r.stdout


def test_the_analysis_commands_load_without_torch() -> None:
    """classify, modules, roofline, project and plot import no torch: the contract above keeps the lower stages
    free of it even inside functions; projection and report reach it only inside functions (DLRM-Bench's
    timing, the verification runner), never when imported."""
    code = ("import sys\nimport addressable.cli, addressable.projection.project, addressable.projection.wins, "
            "addressable.report.plot, addressable.roofline.ncu_check\nraise SystemExit(sorted({'torch', 'triton'} & "
            "set(sys.modules)) or 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stdout + r.stderr


def module_graph() -> tuple[dict[str, Path], list[Import]]:
    files = module_files()
    found = []
    for name, path in files.items():
        found += [i for i in imports_of(name, path, set(files)) if i.module != i.importer]
    return files, found


def test_no_private_names_imported_across_modules() -> None:
    _, found = module_graph()
    private = {(i.importer, i.module, i.name) for i in found if i.name and i.name.startswith("_")}
    new = sorted(private - ALLOWED_PRIVATE)
    stale = sorted(ALLOWED_PRIVATE - private)
    assert not new, f"private names imported across modules: {new}"
    assert not stale, f"these private imports are gone; delete them from ALLOWED_PRIVATE: {stale}"


def test_imports_of_sees_function_level_type_checking_and_private_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from addressable.x import T\n"
                 "def g():\n    from addressable import y\n    return y._hidden\n"
                 "from addressable.x import _private\n")
    got = {(i.module, i.name) for i in imports_of("addressable.m", f, {"addressable.x", "addressable.y"})}
    assert got == {("addressable.x", "T"), ("addressable.y", None), ("addressable.y", "_hidden"),
                   ("addressable.x", "_private")}


def test_problem_and_candidate_files_import_nothing_of_ours() -> None:
    """KernelBench-format files (the DLRM-Bench problems and candidates, the examples, the zoo) run as
    loaded files, in the sandbox: they may use torch and triton, never addressable or an adapter."""
    files = [f for d in ("addressable/dlrm_bench/problems", "addressable/dlrm_bench/candidates", "examples",
                         "tests/verification/zoo") for f in sorted((ROOT / d).rglob("*.py")) if f.name != "__init__.py"]
    assert len(files) > 30
    bad = [f"{f.relative_to(ROOT)}:{i.line} imports {i.module}" for f in files
           for i in imports_of("problem", f, set())]
    assert not bad, bad
