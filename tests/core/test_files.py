"""Reading YAML and CSV (addressable/core/files.py): a good file parses; a missing, malformed, empty or
non-UTF-8 one is one AddressableError naming it; and every YAML and CSV reader of the package goes
through these two functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from addressable.core.errors import AddressableError
from addressable.core.files import read_csv, read_yaml

ROOT = Path(__file__).resolve().parents[2]


def test_read_yaml(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("a: [1, 2]\nb: text\n")
    assert read_yaml(good, "rule file") == {"a": [1, 2], "b": "text"}
    with pytest.raises(AddressableError, match=r"^no such rule file: .*missing\.yaml$"):
        read_yaml(tmp_path / "missing.yaml", "rule file")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(AddressableError, match=r"^rule file .*bad\.yaml is not valid YAML: [^\n]+$"):
        read_yaml(bad, "rule file")


def test_read_csv(tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text("name,time_us\nk,1.5\n")
    assert read_csv(good, dtype={"name": str}).to_dict(orient="records") == [{"name": "k", "time_us": 1.5}]
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "ragged.csv").write_text("a,b\n1,2\n1,2,3,4\n")
    (tmp_path / "latin1.csv").write_bytes("name\ncaf\xe9\n".encode("latin-1"))
    for name in ("empty.csv", "ragged.csv", "latin1.csv"):
        with pytest.raises(AddressableError, match=rf"^cannot read .*{name}: [^\n]+$"):
            read_csv(tmp_path / name)


def _parses_a_file(node: ast.AST) -> bool:
    """A call yaml.safe_load / yaml.load / pd.read_csv whose first argument is not text already in memory
    (io.StringIO(...), or `raw`: an --option value)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
            and node.func.attr in ("safe_load", "load", "read_csv") and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("yaml", "pd")):
        return False
    arg = node.args[0]
    string_io = isinstance(arg, ast.Call) and getattr(arg.func, "attr", "") == "StringIO"
    return not string_io and not (isinstance(arg, ast.Name) and arg.id == "raw")


def test_every_yaml_and_csv_file_is_read_here() -> None:
    """No module but core/files.py parses a YAML or CSV file. (Text already in memory is parsed where its
    format lives: a wins file sniffed for JSON, ncu's output, an --option value.)"""
    calls = [f"{f.relative_to(ROOT)}:{node.lineno}" for f in sorted((ROOT / "addressable").rglob("*.py"))
             if f != ROOT / "addressable" / "core" / "files.py"
             for node in ast.walk(ast.parse(f.read_text())) if _parses_a_file(node)]
    assert not calls, calls
