"""The import layers of addressable (docs/CONVENTIONS.md): lower stages never import higher ones,
there are no import cycles, and no module imports another module's private (_name) names.

The module graph is read from the source with `ast` (every import: top level, inside functions,
and under TYPE_CHECKING), so a new import is checked the moment it is written.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("addressable", "workloads")

# Low to high. A module may import modules of lower layers only (not of its own layer). Every module
# of the packages must be listed: a new module is placed here, where docs/CONVENTIONS.md shows it.
LAYERS: list[tuple[str, ...]] = [
    ("addressable.errors",),
    ("addressable.atomic", "addressable.jsonutil", "addressable.phases", "addressable.device", "addressable.quiet",
     "addressable.progress", "addressable.op_models", "addressable.kernel_names", "addressable.sandbox",
     "addressable.schema"),
    ("addressable.taxonomy", "addressable.trace", "addressable.workload", "addressable.invariants",
     "addressable.scopes", "addressable.harness"),
    ("addressable.timeline", "addressable.replay", "addressable.modules", "addressable.checks"),
    ("addressable.breakdown",),
    ("addressable.report", "addressable.runs", "addressable.verify"),
    ("addressable.roofline", "addressable.ranks", "addressable.project", "addressable.audit", "addressable.bench"),
    ("addressable.distributed", "addressable.calibrate"),
    ("addressable.measure", "workloads", "workloads.dlrm", "workloads.resnet", "workloads.transformer"),
    ("addressable.profile", "addressable.plot", "addressable.ncu"),
    ("addressable.sweep",),
    ("addressable.cli",),
    ("addressable.__main__", "addressable"),  # the entry point and the package's public names
]

# Private names borrowed across modules: none (verify.py's split into a public harness removed the last).
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
            if "problems" in parts or "candidates" in parts:  # data: KernelBench problem files
                continue
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


def module_graph() -> tuple[dict[str, Path], list[Import]]:
    files = module_files()
    found = []
    for name, path in files.items():
        found += [i for i in imports_of(name, path, set(files)) if i.module != i.importer]
    return files, found


def layer_of() -> dict[str, int]:
    return {m: i for i, layer in enumerate(LAYERS) for m in layer}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph (as a path that returns to its start), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                return [*path[path.index(n):], n]
            if n not in state and (c := visit(n)):
                return c
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_every_module_has_a_layer() -> None:
    files, _ = module_graph()
    missing = sorted(set(files) - set(layer_of()))
    gone = sorted(set(layer_of()) - set(files))
    assert not missing, f"place these modules in LAYERS (and docs/CONVENTIONS.md): {missing}"
    assert not gone, f"LAYERS lists modules that no longer exist: {gone}"


def test_no_import_cycles() -> None:
    _, found = module_graph()
    edges: dict[str, set[str]] = {}
    for i in found:
        edges.setdefault(i.importer, set()).add(i.module)
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_lower_layers_never_import_higher_ones() -> None:
    _, found = module_graph()
    layer = layer_of()
    bad = sorted({f"{i.importer}:{i.line} imports {i.module} (layer {layer[i.module]} >= {layer[i.importer]})"
                  for i in found if i.module in layer and i.importer in layer and layer[i.module] >= layer[i.importer]})
    assert not bad, "upward or same-layer imports:\n" + "\n".join(bad)


def test_no_private_names_imported_across_modules() -> None:
    _, found = module_graph()
    private = {(i.importer, i.module, i.name) for i in found if i.name and i.name.startswith("_")}
    new = sorted(private - ALLOWED_PRIVATE)
    stale = sorted(ALLOWED_PRIVATE - private)
    assert not new, f"private names imported across modules: {new}"
    assert not stale, f"these private imports are gone; delete them from ALLOWED_PRIVATE: {stale}"


@pytest.mark.parametrize("src, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
])
def test_find_cycle(src: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(src) == cycle


def test_imports_of_sees_function_level_type_checking_and_private_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from addressable.x import T\n"
                 "def g():\n    from addressable import y\n    return y._hidden\n"
                 "from addressable.x import _private\n")
    got = {(i.module, i.name) for i in imports_of("addressable.m", f, {"addressable.x", "addressable.y"})}
    assert got == {("addressable.x", "T"), ("addressable.y", None), ("addressable.y", "_hidden"),
                   ("addressable.x", "_private")}
