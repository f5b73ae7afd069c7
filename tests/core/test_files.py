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


def test_every_yaml_and_csv_file_is_read_here() -> None:
    """No module but core/files.py calls yaml.safe_load/yaml.load or pandas.read_csv on a file. (Text already
    in memory may be parsed where its format lives: a wins file sniffed for JSON, ncu's output, an --option value.)"""
    calls = []
    for f in sorted((ROOT / "addressable").rglob("*.py")):
        if f.name == "files.py" and f.parent.name == "core":
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("safe_load", "load", "read_csv") and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id in ("yaml", "pd") and node.args:
                arg = node.args[0]
                in_memory = isinstance(arg, ast.Call) and getattr(arg.func, "attr", "") == "StringIO" or \
                    isinstance(arg, ast.Name) and arg.id == "raw"
                if not in_memory:
                    calls.append(f"{f.relative_to(ROOT)}:{node.lineno}")
    assert not calls, calls
